r"""Certified lower bounds on the smallest eigenvalue of a grid's Φ = exp(−ε d).

The sign of the solution z of Φ z = 1 decides whether a tight-constraints mechanism exists
(ElSalamouny et al. 2014 Prop 7–8). An iterative solver only gives z up to its residual r = 1 − Φ z, and

.. math:: \|z - z^*\|_\infty \le \|z - z^*\|_2 = \|\Phi^{-1} r\|_2 \le \|r\|_2 / \lambda_{\min}(\Phi),

so a *lower* bound on λ_min(Φ) turns a residual into a bound on the error of every entry. Two
independent bounds are available; the larger one is used.

**The symbol.** Φ is a finite section of the convolution (Laurent) operator L on ℓ²(Z²) with the
kernel k(n) = exp(−ε s ρ(n)), ρ the unit-step metric and s the grid step. For x supported on the grid,

.. math:: x^\top \Phi x = \langle x, L x\rangle = (2\pi)^{-2}\int_{[-\pi,\pi]^2}\hat k(\omega)\,|\hat x(\omega)|^2\,d\omega
          \ge \bigl(\inf_\omega \hat k(\omega)\bigr)\,\|x\|_2^2,

with k̂(ω) = Σ_n k(n) e^{−iω·n} the symbol; so λ_min(Φ) ≥ inf k̂ for every grid size. With a = ε s:

* Manhattan: k = g⊗g with g(t) = e^{−a|t|}, whose symbol is (1 − q²)/(1 − 2q cos ω + q²), q = e^{−a},
  smallest at ω = π: (1 − q)/(1 + q) = tanh(a/2). So inf k̂ = tanh²(a/2) (sharp).
* Chebyshev: max(|x|, |y|) = (|x + y| + |x − y|)/2, so k(x, y) = g(u) g(v) with u = x + y, v = x − y and
  g(t) = e^{−a|t|/2}; (u, v) ranges over the sublattice u ≡ v (mod 2), hence
  k̂(ξ) = [ĝ(θ₁)ĝ(θ₂) + ĝ(θ₁+π)ĝ(θ₂+π)]/2 with θ = ((ξ₁+ξ₂)/2, (ξ₁−ξ₂)/2). By AM–GM this is at least
  √(ĝ(θ₁)ĝ(θ₁+π)) √(ĝ(θ₂)ĝ(θ₂+π)), and ĝ(θ)ĝ(θ+π) = (1−p²)²/((1+p²)² − 4p²cos²θ) ≥ ((1−p²)/(1+p²))²
  with p = e^{−a/2}, i.e. ≥ tanh²(a/2). So inf k̂ ≥ tanh²(a/2), the same as Manhattan.
* Euclidean: e^{−a‖x‖} is a positive-definite function on R² with Fourier transform
  F(ξ) = 2πa/(a² + ‖ξ‖²)^{3/2} > 0, and Poisson summation gives k̂(ω) = Σ_{m∈Z²} F(ω + 2πm). Every
  term is positive, so dropping terms and replacing each ‖ω + 2πm‖ by its maximum over a small cell of
  ω's gives a lower bound on k̂ over that cell; the minimum over a partition of [0, π]² (k̂ is even in
  each coordinate) bounds inf k̂ from below. With 40×40 cells and |m| ≤ 12 the bound is within about
  6 % of the true infimum (33 ms).

**The embedding.** Φ is a principal submatrix of its circulant embedding C (see
:mod:`.operator`), so λ_min(Φ) ≥ λ_min(C) (Cauchy interlacing) and λ_min(C) is the smallest entry of
the FFT of the wrapped kernel. This is useful only when positive; the FFT's own rounding is
subtracted (standard error model, ``FFT_SAFETY`` times the first-order bound).

Both bounds are for the exact Φ; the float Φ̃ = fl(exp(−ε d)) actually used differs by at most
u·‖Φ‖₁ in the 2-norm (Gershgorin on the entrywise rounding), which is subtracted as well, so the bound
holds for Φ̃ too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .operator import GridConstraintsOperator

_U = float(np.finfo(np.float64).eps) / 2

#: Safety factor on first-order FFT rounding estimates (Higham, ASNA §24.1: relative normwise error
#: of a radix-2 FFT ≤ log₂N·η with η ≈ 5u for accurately computed twiddle factors).
FFT_SAFETY = 10.0

#: Cells per axis of [0, π] and aliases per axis (|m| ≤ M) in the Euclidean symbol bound.
EUCLIDEAN_CELLS = 40
EUCLIDEAN_ALIASES = 12


@dataclass(frozen=True)
class EigenvalueBound:
    """A certified lower bound on λ_min(Φ̃) and where it comes from.

    ``value`` is the bound used (the larger of the two, or −inf if neither is positive);
    ``symbol`` the analytic bound inf k̂ (for the exact Φ, before the rounding allowance);
    ``embedding`` the smallest eigenvalue of the circulant embedding minus its FFT rounding allowance;
    ``source`` is "symbol", "embedding" or "none".
    """

    value: float
    symbol: float
    embedding: float
    source: str

    @property
    def positive_definite(self) -> bool:
        """Whether Φ̃ is certified positive definite."""
        return self.value > 0


def fft_rounding(n_fft: int) -> float:
    """First-order relative rounding of a length-``n_fft`` FFT convolution, with :data:`FFT_SAFETY`."""
    return FFT_SAFETY * 5 * _U * max(math.log2(max(n_fft, 2)), 1.0)


@lru_cache(maxsize=256)
def symbol_lower_bound(metric: str, a: float) -> float:
    """A lower bound on inf_ω k̂(ω) for the kernel e^{−a ρ(n)} on Z² (see module notes).

    ``a`` = ε · step (the kernel's decay per unit offset). Exact (sharp) for Manhattan; for Chebyshev
    the same value, a proven lower bound; for Euclidean a cell-wise Poisson-summation bound.
    """
    if a <= 0:
        raise ValueError(f"a = ε·step must be positive, got {a}")
    if metric in ("manhattan", "chebyshev"):
        return math.tanh(a / 2) ** 2
    if metric != "euclidean":
        raise ValueError(f"no symbol bound for metric {metric!r}")
    c, m_max = EUCLIDEAN_CELLS, EUCLIDEAN_ALIASES
    edges = np.linspace(0.0, np.pi, c + 1)
    m = 2 * np.pi * np.arange(-m_max, m_max + 1)
    # Largest |ω_i + 2π m_i| over the cell [edges[k], edges[k+1]]: attained at an end point.
    far = np.maximum(np.abs(edges[:-1, None] + m[None, :]), np.abs(edges[1:, None] + m[None, :]))  # (c, 2M+1)
    far2 = far**2
    total = np.zeros((c, c))
    for k in range(c):  # rows of cells, to keep memory at c·(2M+1)² floats
        r2 = far2[k][:, None] + far2[:, None, :]  # (c, 2M+1, 2M+1): (other-axis cell, m1, m2)
        f = 2 * np.pi * a / (a * a + r2) ** 1.5
        total[k] = f.sum(axis=(1, 2))
    # The float sum of positive terms is within (#terms)·u relative of the real one.
    return float(total.min()) * (1 - (2 * m_max + 1) ** 2 * _U * 4)


def eigenvalue_lower_bound(op: GridConstraintsOperator) -> EigenvalueBound:
    """Certified lower bound on λ_min of the float Φ̃ of ``op`` (see module notes)."""
    g = op.grid
    a = op.epsilon * g.step
    sym = symbol_lower_bound(g.metric, a)
    p, q = op.torus
    # Eigenvalues of C by FFT: per-entry error ≤ ‖error‖₂ ≤ rounding · ‖DFT K‖₂ = rounding · √(PQ) ‖K‖₂.
    emb = op.embedding_min - fft_rounding(p * q) * math.sqrt(p * q) * op.kernel_norm2
    # Φ̃ − Φ: each entry rounded once (relative u), so ‖Φ̃ − Φ‖₂ ≤ u · max row sum ≤ u · Σ_torus K.
    entry_rounding = 2 * _U * op.kernel_sum
    sym_t = sym - entry_rounding
    emb_t = emb  # the embedding was built from the float kernel: it bounds Φ̃ directly
    if max(sym_t, emb_t) <= 0:
        return EigenvalueBound(-math.inf, sym, emb, "none")
    if sym_t >= emb_t:
        return EigenvalueBound(sym_t, sym, emb, "symbol")
    return EigenvalueBound(emb_t, sym, emb, "embedding")
