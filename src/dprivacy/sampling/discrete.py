r"""Exact samplers for the discrete Laplace (two-sided geometric) and discrete staircase distributions, in integer
arithmetic.

Reference: C. Canonne, G. Kamath, T. Steinke, *The Discrete Gaussian for Differential Privacy*,
NeurIPS 2020 (arXiv:2004.00010), Algorithm 1 (Bernoulli(exp(−γ))) and Algorithm 2 (discrete Laplace);
cited as **CKS 2020**. The paper is not among the five papers of the bibliography.

The two-sided geometric mechanism (Chatzikokolakis et al. 2013 Fig 2 (iv); universally optimal for counting queries) adds
K with P(K = k) ∝ α^{|k|}, α = e^{−ε/Δ}. Drawn as the difference of two floating-point geometric
variates (numpy's inversion), its probabilities are only as exact as float64 logarithms. Here every
step is a comparison of uniformly drawn *integers* (numpy's bounded integers are exact: Lemire's
rejection method), so P(K = k) is exactly ∝ e^{−|k|·s/t} for the rational s/t used.

**The rational.** ε/Δ is rounded *down* to s/t with t = 2^``DENOMINATOR_BITS`` (exact rational
arithmetic on the float64 values of ε and Δ), so the noise is at least as wide as asked and the
mechanism is (s/t·Δ)-private with ε − Δ·2^−40 < s/t·Δ ≤ ε, reported as ``delivered_epsilon``.

Everything is vectorized: all pending draws advance one loop iteration together.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: t = 2^DENOMINATOR_BITS: ε/Δ is rounded down to a multiple of 1/t. Products t·K and U + t·V stay below
#: 2^63 while K, V < 2^23 (probabilities below 1/2^23! and e^{−2^23}; exceeding them raises).
DENOMINATOR_BITS = 40

_LIMIT = np.uint64(1) << np.uint64(63)


def bernoulli_exp(num: np.ndarray, den: int, generator: np.random.Generator) -> np.ndarray:
    r"""Independent Bernoulli(exp(−γ_i)) draws for γ_i = num_i/den ∈ [0, 1] (CKS 2020, Algorithm 1).

    For γ ∈ [0, 1]: draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first A_k = 0; the output is 1
    iff that k is odd. P(output = 1) = Σ_k odd P(first zero at k) = Σ_j (−γ)^j / j! = e^{−γ}. Each
    Bernoulli(γ/k) is the exact comparison ``integers(0, den·k) < num``.
    """
    num = np.asarray(num, dtype=np.uint64)
    den = int(den)
    if den <= 0 or (num.size and int(num.max()) > den):
        raise ValueError(f"bernoulli_exp needs 0 ≤ num ≤ den with den > 0; got den={den}, max num={int(num.max())}")
    out = np.empty(num.size, dtype=bool)
    active = np.arange(num.size)
    k = 1
    while active.size:
        high = den * k
        if high >= 1 << 63:
            raise OverflowError("bernoulli_exp: the loop ran past k = 2^23 (probability below 1/2^23!)")
        a = generator.integers(0, high, size=active.size, dtype=np.uint64) < num[active]
        out[active[~a]] = (k % 2) == 1
        active = active[a]
        k += 1
    return out


def _geometric_count(size: int, generator: np.random.Generator) -> np.ndarray:
    """V = the number of successes of Bernoulli(e^{−1}) before the first failure: P(V = v) = e^{−v}(1 − e^{−1})."""
    v = np.zeros(size, dtype=np.uint64)
    active = np.arange(size)
    one = np.ones(size, dtype=np.uint64)
    while active.size:
        a = bernoulli_exp(one[: active.size], 1, generator)
        active = active[a]
        v[active] += np.uint64(1)
    return v


def discrete_laplace(size: int, s: int, t: int, generator: np.random.Generator) -> np.ndarray:
    r"""``size`` independent draws of the discrete Laplace Z with P(Z = z) ∝ exp(−|z|·s/t), s, t positive
    integers (CKS 2020, Algorithm 2).

    Each attempt: U ~ Uniform{0, …, t−1}; keep it with probability e^{−U/t}; V ~ geometric (above);
    X = U + t·V is then geometric with P(X = x) ∝ e^{−x/t}; Y = ⌊X/s⌋ is geometric with ratio
    e^{−s/t}; a fair sign B, rejecting (B = 1, Y = 0) so that 0 is not counted twice; Z = (1 − 2B)·Y.
    """
    s, t = int(s), int(t)
    if s <= 0 or t <= 0:
        raise ValueError(f"discrete_laplace needs positive integers s, t; got s={s}, t={t}")
    if t >= 1 << 62:
        raise ValueError(f"discrete_laplace: t = {t} is too large for 64-bit integer arithmetic (t < 2^62)")
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        keep, y = _geometric_attempts(pending.size, s, t, generator, "discrete_laplace")
        idx = pending[keep]
        b = generator.integers(0, 2, size=idx.size, dtype=np.int8)
        ok = ~((b == 1) & (y == 0))
        z = y[ok].astype(np.int64)
        out[idx[ok]] = np.where(b[ok] == 1, -z, z)
        pending = np.concatenate([pending[~keep], idx[~ok]])
    return out


@dataclass(frozen=True)
class GeometricNoise:
    """The rational used for a two-sided geometric noise of ratio e^{−ε/Δ}.

    Attributes
    ----------
    s, t : int
        The noise has P(K = k) ∝ e^{−|k|·s/t}, s/t ≤ ε/Δ.
    alpha : float
        e^{−s/t} (for accuracy statements).
    delivered_epsilon : float
        s/t·Δ ≤ ε: the privacy level the noise actually provides for sensitivity Δ.
    """

    s: int
    t: int
    alpha: float
    delivered_epsilon: float


def geometric_parameters(epsilon: float, sensitivity: float, *, bits: int = DENOMINATOR_BITS) -> GeometricNoise:
    """s/t = ε/Δ rounded down to a multiple of 2^−bits, exactly (from the float64 values of ε and Δ)."""
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive finite number for geometric noise, got {epsilon!r}")
    if not (np.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be a positive finite number, got {sensitivity!r}")
    exact = Fraction(float(epsilon)) / Fraction(float(sensitivity))
    t = 1 << bits
    s = (exact.numerator * t) // exact.denominator
    if s == 0:
        raise ValueError(f"ε/Δ = {float(exact):.3g} is below 2^-{bits}: the noise would have no finite scale "
                         "(use a larger ε or a smaller sensitivity)")
    if s >= 1 << 62:
        # the sampler works in 64-bit integers (ε = 1e8 on a count ended in "Python int too large to
        # convert to C long"); at this ε/Δ the noise is 0 with probability 1 − 2e^{−2^22} anyway
        raise ValueError(f"ε/Δ = {float(exact):.3g} is above {2 ** (62 - bits):,}, the largest the exact sampler takes "
                         "(the noise would be 0 except with probability about 2e^(−ε/Δ)): use a smaller ε")
    ratio = Fraction(s, t)
    return GeometricNoise(s, t, float(np.exp(-float(ratio))), float(ratio * Fraction(float(sensitivity))))


def two_sided_geometric(size: int, epsilon: float, sensitivity: float, generator: np.random.Generator):
    """``size`` exact draws of the two-sided geometric noise for ε and sensitivity Δ, and its parameters."""
    params = geometric_parameters(epsilon, sensitivity)
    return discrete_laplace(size, params.s, params.t, generator), params


def geometric(size: int, s: int, t: int, generator: np.random.Generator) -> np.ndarray:
    r"""``size`` independent draws of the one-sided geometric G with P(G = g) = (1 − e^{−s/t})·e^{−g·s/t}, g ≥ 0
    (CKS 2020, Algorithm 2 without its sign): X = U + t·V as in :func:`discrete_laplace`, G = ⌊X/s⌋."""
    s, t = int(s), int(t)
    if s <= 0 or t <= 0 or t >= 1 << 62:
        raise ValueError(f"geometric needs positive integers s, t < 2^62; got s={s}, t={t}")
    out = np.empty(size, dtype=np.uint64)
    pending = np.arange(size)
    while pending.size:
        keep, y = _geometric_attempts(pending.size, s, t, generator, "geometric")
        out[pending[keep]] = y
        pending = pending[~keep]
    return out


def _geometric_attempts(m: int, s: int, t: int, generator, name: str):
    """m attempts of CKS 2020 Algorithm 2's core: U ~ Uniform{0, …, t−1} kept with probability e^{−U/t}, V geometric
    (ratio e^{−1}), and for the kept ones Y = ⌊(U + t·V)/s⌋, geometric with ratio e^{−s/t}: (kept mask, Y)."""
    u = generator.integers(0, t, size=m, dtype=np.uint64)
    keep = bernoulli_exp(u, t, generator)
    u = u[keep]
    v = _geometric_count(u.size, generator)
    if u.size and int(v.max()) >= (1 << 63) // t - 1:
        raise OverflowError(f"{name}: a geometric count too large for 64-bit arithmetic")
    return keep, (u + np.uint64(t) * v) // np.uint64(s)


def bernoulli_exp_ratio(size: int, s: int, t: int, generator: np.random.Generator) -> np.ndarray:
    """``size`` independent Bernoulli(e^{−s/t}) draws for any s/t ≥ 0: e^{−s/t} = (e^{−1})^{⌊s/t⌋}·e^{−(s mod t)/t},
    the product of independent draws of :func:`bernoulli_exp` (CKS 2020, Algorithm 1), each made only while the
    previous ones all came out 1."""
    s, t = int(s), int(t)
    if s < 0 or t <= 0:
        raise ValueError(f"bernoulli_exp_ratio needs s ≥ 0 and t > 0; got s={s}, t={t}")
    out = bernoulli_exp(np.full(size, s % t, dtype=np.uint64), t, generator)
    alive = np.flatnonzero(out)
    for _ in range(s // t):
        if not alive.size:
            break
        ok = bernoulli_exp(np.ones(alive.size, dtype=np.uint64), 1, generator)
        out[alive[~ok]] = False
        alive = alive[ok]
    return out


def staircase(size: int, delta: int, r: int, s: int, t: int, generator: np.random.Generator) -> np.ndarray:
    r"""``size`` independent draws of the discrete staircase noise K of Geng and Viswanath (2016), exactly, with
    b = e^{−s/t}: for |k| = g·Δ + j (g ≥ 0, 0 ≤ j < Δ), P(K = k) ∝ b^g if j < r and b^{g+1} otherwise.

    The magnitude is M = G·Δ + J with G one-sided geometric of ratio b (:func:`geometric`) and J independent of it,
    P(J = j) ∝ 1 for j < r and b for r ≤ j < Δ, drawn by rejection: J uniform on 0..Δ−1 (exact bounded integers),
    kept if J < r, else kept with probability b (:func:`bernoulli_exp_ratio`), so a round keeps a draw with
    probability (r + (Δ − r)·b)/Δ. A fair sign, rejecting (−, 0) so that 0 is not counted twice, as in
    :func:`discrete_laplace`. Returns int64, or Python integers (object array) where G·Δ + J would not fit 63 bits.
    """
    delta, r = int(delta), int(r)
    if not 1 <= r <= delta:
        raise ValueError(f"staircase needs 1 ≤ r ≤ Δ; got r={r}, Δ={delta}")
    g_out = np.zeros(size, dtype=np.uint64)
    j_out = np.zeros(size, dtype=np.int64)
    neg = np.zeros(size, dtype=bool)
    pending = np.arange(size)
    while pending.size:
        g = geometric(pending.size, s, t, generator)
        j = np.empty(pending.size, dtype=np.int64)
        todo = np.arange(pending.size)
        while todo.size:
            u = generator.integers(0, delta, size=todo.size, dtype=np.int64)
            keep = u < r
            outer = np.flatnonzero(~keep)
            keep[outer] = bernoulli_exp_ratio(outer.size, s, t, generator)
            j[todo[keep]] = u[keep]
            todo = todo[~keep]
        sign = generator.integers(0, 2, size=pending.size, dtype=np.int8) == 1
        ok = ~(sign & (g == 0) & (j == 0))
        g_out[pending[ok]], j_out[pending[ok]], neg[pending[ok]] = g[ok], j[ok], sign[ok]
        pending = pending[~ok]
    if size and int(g_out.max()) < ((1 << 63) - delta) // delta:
        m = g_out.astype(np.int64) * np.int64(delta) + j_out
    else:
        m = g_out.astype(object) * delta + j_out.astype(object)
    return np.where(neg, -m, m)
