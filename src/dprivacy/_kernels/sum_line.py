r"""The tight-constraints mechanism on a sum query's answers, without the n×n matrix.

The answers of a sum query with per-row sensitivity Δ (in answer units) are the integers 0..n−1, adjacent
iff |i − j| ≤ Δ, so the graph distance is d(i, j) = ⌈|i − j|/Δ⌉ (ElSalamouny et al. 2014 §7.1; ``sum:U,V`` has n = U·V + 1
and Δ = V). Φ = [e^{−ε⌈|i−j|/Δ⌉}] is **symmetric Toeplitz**: it is the leading n×n block of the circulant
matrix C of its kernel g(m) = e^{−ε⌈|m|/Δ⌉} wrapped on P ≥ 2n − 1 points, so Φx is one real FFT of
length P (O(n log n); a real table's sum has n ≈ 150,000 answers, whose dense Φ would take 180 GB).
:func:`solve_sum_line` solves Φ x = b (b = 1: the tight-constraints diagonal z, ElSalamouny et al. 2014 Prop 7; b = π:
regularity of a prior, Def 4) and decides the signs of x.

**Is Φ positive definite?** Not always. Φ is a finite section of the Laurent operator with symbol

.. math:: \hat g(\omega) = (1-\alpha)\sum_{j\ge 0}\alpha^j D_{j\Delta}(\omega)
          = \frac{1-\alpha}{\sin(\omega/2)}\,\operatorname{Im}\frac{e^{i\omega/2}}{1-\alpha e^{i\Delta\omega}},
          \qquad \alpha = e^{-\varepsilon},

(D_L the Dirichlet kernel), which is negative somewhere for small ε when Δ ≥ 3 (Δ = 15: below ε ≈ 1.85),
so for large n Φ is then indefinite. Both certificates below hold whatever the spectrum; only the first
needs positive definiteness.

**Certificate 1 (existence or non-existence; Φ̃ positive definite).** By Cauchy interlacing λ_min(Φ̃) ≥
λ_min(C̃) = min DFT(wrapped kernel), minus the FFT's rounding allowance (:func:`.spectrum.fft_rounding`
× √P × ‖kernel‖₂, as for grids). When this λ is positive, CG (preconditioned by the size-n Strang
circulant when its spectrum is positive) gives x with residual r = b − Φ̃x, and max_y |x_y − x*_y| ≤
(‖r‖₂ + δ)/λ =: e with δ the rounding allowance of the FFT residual (:func:`rounding_floor`). min x > e
proves x* > 0; some x_y < −e proves x*_y < 0 (x* is the only solution). This is the grid solver's
certificate (:mod:`.solve`), "certified" in the shared vocabulary.

**Certificate 2 (non-existence, any Φ̃): Farkas.** {x ≥ 0 : Φ̃x = b} is empty iff some y has
Φ̃y ≥ 0 and bᵀy < 0 (Farkas' lemma; Φ̃ symmetric). With i the most negative entry of the computed x
and w ≈ Φ̃⁻¹e_i, y = w + τ x has Φ̃y ≈ e_i + τ b ≥ 0 and bᵀy ≈ x_i + τ bᵀx < 0 for small τ > 0. The
check is a posteriori and does not trust the solver: min(fl(Φ̃y)) > δ_y (the FFT's rounding allowance
for y) and the correctly rounded ``math.fsum`` of b·y (b = 1: Σy) is negative. Used when Φ̃ is not
certified positive definite (MINRES then gives x and w); "certified" as well.

Anything else is "undecided" (e.g. a positive x without a positive λ: Φ̃ indefinite, the residual
bounds nothing). The object decided on is the float64 Φ̃ = fl(exp(−ε⌈|i−j|/Δ⌉)), entry for entry the
matrix the dense solver factorizes (:mod:`.phi_solve`).

The mechanism itself is implicit: row y is H[y, ·] = z · e^{−ε⌈|y−·|/Δ⌉} (n numbers, computed on demand),
sampled exactly after quantisation to integers (:mod:`dprivacy.sampling.exact`); its accuracy for every
true answer at once is two more Toeplitz products (:meth:`SumLineMechanism.accuracy`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._validate import check_epsilon, check_positive_int
from ..spaces import SumLineSpace
from .implicit import ImplicitTightMechanism
from .krylov import pcg
from .phi_solve import TightResult, decide, margin_of, tight_reason
from .spectrum import fft_rounding
from .threshold_search import Probe, _always_exists, bracket_threshold, check_search

_U = float(np.finfo(np.float64).eps) / 2

#: Relative residual ‖b − Φx‖₂/‖b‖₂ at which the Krylov solve first stops.
DEFAULT_TOL = 1e-11

#: Iteration budget of one solve (CG or MINRES).
MAX_ITER = 4000


def _fft():
    import scipy.fft as sf

    return sf


def sum_kernel(n: int, delta: int, epsilon: float) -> np.ndarray:
    """g(m) = fl(exp(−ε·⌈m/Δ⌉)) for m = 0..n−1: the first row of Φ̃ (the same floats as the dense
    ``exp(−ε d)`` of :func:`dprivacy.queries.sum_space`)."""
    m = np.arange(n, dtype=np.int64)
    d = np.ceil(m / delta)
    return np.exp(-epsilon * d)


class SumLineOperator:
    """Φ̃ = [g(|i − j|)] on 0..n−1 as an FFT operator (circulant embedding on P ≥ 2n − 1 points).

    Attributes: ``n``, ``delta``, ``epsilon``, ``kernel`` (g(0..n−1)), ``P``, ``spectrum`` (eigenvalues of
    the embedding C̃), ``embedding_min``, ``embedding_max_abs``, ``kernel_sum`` (Σ over the torus = a bound
    on every row sum of |C̃|), ``kernel_norm2``.
    """

    def __init__(self, n: int, delta: int, epsilon: float, *, workers: int | None = None):
        self.n = check_positive_int(n, name="n")
        self.delta = check_positive_int(delta, name="delta")
        self.epsilon = check_epsilon(epsilon)
        self.workers = workers
        sf = _fft()
        g = sum_kernel(self.n, self.delta, self.epsilon)
        self.kernel = g
        p = sf.next_fast_len(max(2 * self.n - 1, 2), real=True)
        emb = np.zeros(p)
        emb[: self.n] = g
        if self.n > 1:
            emb[p - self.n + 1:] = g[1:][::-1]
        self.P = p
        self._emb = emb
        self.spectrum = sf.rfft(emb, workers=workers).real  # C̃ is symmetric: its DFT is real
        self.embedding_min = float(self.spectrum.min())
        self.embedding_max_abs = float(np.abs(self.spectrum).max())
        self.kernel_sum = float(emb.sum())
        self.kernel_norm2 = float(np.linalg.norm(emb))
        self._strang = None

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """Φ̃x (x of shape (n,)) by one real FFT pair of length P."""
        sf = _fft()
        f = sf.rfft(np.asarray(x, dtype=np.float64), n=self.P, workers=self.workers)
        f *= self.spectrum
        return sf.irfft(f, n=self.P, workers=self.workers)[: self.n]

    def convolve(self, kernel: np.ndarray, x: np.ndarray) -> np.ndarray:
        """[Σ_j k(|i − j|) x_j]_i for another even kernel k(0..n−1) (the accuracy sums)."""
        sf = _fft()
        emb = np.zeros(self.P)
        emb[: self.n] = kernel
        if self.n > 1:
            emb[self.P - self.n + 1:] = kernel[1:][::-1]
        f = sf.rfft(np.asarray(x, dtype=np.float64), n=self.P, workers=self.workers) * sf.rfft(emb, workers=self.workers).real
        return sf.irfft(f, n=self.P, workers=self.workers)[: self.n]

    def eigenvalue_lower_bound(self) -> float:
        """A certified lower bound on λ_min(Φ̃) (Cauchy interlacing with C̃, minus the FFT's rounding
        allowance); ≤ 0 means Φ̃ is not certified positive definite."""
        return self.embedding_min - fft_rounding(self.P) * math.sqrt(self.P) * self.kernel_norm2

    def strang(self):
        """The Strang circulant preconditioner (size n, kernel g(min(m, n − m))) as a function r ↦ M⁻¹r,
        or None when its spectrum is not positive (then CG runs unpreconditioned)."""
        if self._strang is None:
            sf = _fft()
            n = self.n
            m = np.arange(n)
            c = self.kernel[np.minimum(m, n - m)]
            lam = sf.rfft(c, workers=self.workers).real
            self._strang = (lam,) if lam.min() > 1e-8 * lam.max() else (None,)
        lam = self._strang[0]
        if lam is None:
            return None
        sf = _fft()
        n = self.n
        return lambda r: sf.irfft(sf.rfft(r, workers=self.workers) / lam, n=n, workers=self.workers)

    def abs_strang(self):
        """r ↦ |S|⁻¹r with S the Strang circulant and |S| its absolute value (eigenvalues |λ_k|, floored at
        1e-6·max): the symmetric positive definite preconditioner MINRES needs when Φ is indefinite."""
        sf = _fft()
        n = self.n
        m = np.arange(n)
        lam = np.abs(sf.rfft(self.kernel[np.minimum(m, n - m)], workers=self.workers).real)
        lam = np.maximum(lam, 1e-6 * lam.max())
        return lambda r: sf.irfft(sf.rfft(r, workers=self.workers) / lam, n=n, workers=self.workers)

    def rounding_floor(self, x: np.ndarray, bnorm: float) -> float:
        """δ: a bound on ‖fl(b − Φ̃x) − (b − Φ̃x)‖₂ for the FFT product (first-order model with the safety
        factor of :func:`.spectrum.fft_rounding`, as :func:`.solve.rounding_floor` for grids)."""
        xn = float(np.linalg.norm(x))
        return fft_rounding(self.P) * self.embedding_max_abs * xn + 2 * _U * (bnorm + self.kernel_sum * xn)


@dataclass
class SumLineSolution:
    """One solve of Φ̃x = b on a sum line with its sign decision (in b's scale): ``x``, ``status``
    ("exists"/"absent"/"undecided"), ``certainty`` ("certified"/"undecided"), ``certificate`` ("residual
    bound", "Farkas" or "none"), ``margin``, ``error_bound`` (∞ when no λ), ``lambda_min`` (the certified
    lower bound on λ_min(Φ̃), ≤ 0 when none), ``rnorm`` (‖b − Φ̃x‖₂), ``method`` ("cg"/"minres"),
    ``iterations``, ``note``."""

    x: np.ndarray
    status: str
    certainty: str
    certificate: str
    margin: float
    error_bound: float
    lambda_min: float
    rnorm: float
    method: str
    iterations: int
    note: str = ""
    op: SumLineOperator | None = field(default=None, repr=False)


def _minres(op: SumLineOperator, b: np.ndarray, x0, rtol: float, maxiter: int, progress=None):
    from scipy.sparse.linalg import LinearOperator, minres

    a = LinearOperator((op.n, op.n), matvec=lambda v: op.matvec(np.ravel(v)), dtype=np.float64)
    pre = op.abs_strang()
    m = LinearOperator((op.n, op.n), matvec=lambda v: pre(np.ravel(v)), dtype=np.float64)
    count = [0]

    def cb(_):
        count[0] += 1
        if progress is not None:
            progress(count[0], math.nan)  # MINRES reports no residual per iteration

    x, _info = minres(a, b, x0=x0, rtol=rtol, maxiter=maxiter, M=m, callback=cb)
    return x, count[0]


def solve_sum_line(n: int, delta: int, epsilon: float, b: np.ndarray | None = None, *, tol: float = DEFAULT_TOL,
                   max_iter: int = MAX_ITER, x0: np.ndarray | None = None, operator: SumLineOperator | None = None,
                   farkas: bool = True, progress=None) -> SumLineSolution:
    """Solve Φ̃x = b (default b = 1) on the sum line 0..n−1 with Δ = ``delta`` and decide the signs of x
    with the certificates of the module notes. b is divided by its largest entry first (exact for b = 1,
    so the uniform prior and the vector of ones are the same system, ElSalamouny et al. 2014 Prop 8). ``progress(k,
    relative residual)`` after every Krylov iteration (NaN for MINRES)."""
    op = operator if operator is not None else SumLineOperator(n, delta, epsilon)
    n = op.n
    b = np.ones(n) if b is None else np.asarray(b, dtype=np.float64)
    if b.shape != (n,):
        raise ValueError(f"b has shape {b.shape}, expected ({n},)")
    scale = float(np.abs(b).max()) or 1.0
    bn = b / scale
    beta = float(np.linalg.norm(np.where(bn == 1.0, 0.0, _U * np.abs(bn))))
    bnorm = float(np.linalg.norm(bn))
    lam = op.eigenvalue_lower_bound()
    pd = lam > 0
    if x0 is None:
        x = bn / op.matvec(np.ones(n))
    else:
        x = np.asarray(x0, dtype=np.float64) / scale
    iterations = 0
    if pd:
        method = "cg"
        apply_m = op.strang()
        target = tol * bnorm
        out = pcg(op.matvec, bn, x0=x, apply_m=apply_m, target=target, max_iter=max_iter, progress=progress)
        x, r, iterations = out.x, out.residual, out.iterations
        while True:
            rnorm = float(np.linalg.norm(r))
            delta_r = op.rounding_floor(x, bnorm) + beta
            eb = (rnorm + delta_r) / lam
            margin = margin_of(x, eb)
            status = decide(margin)
            if status != "undecided" or iterations >= max_iter or rnorm <= 2 * delta_r:
                break
            goal = max(rnorm / 1e3, 2 * delta_r)
            out = pcg(op.matvec, bn, x0=x, apply_m=apply_m, target=goal, max_iter=max_iter - iterations,
                      progress=progress, start_iteration=iterations)
            if not float(np.linalg.norm(out.residual)) < rnorm:
                break
            x, r, iterations = out.x, out.residual, iterations + out.iterations
        certificate = "residual bound" if status != "undecided" else "none"
        note = (f"CG{' + Strang preconditioner' if apply_m is not None else ''}, {iterations} iterations, "
                f"‖b − Φz‖₂ = {rnorm:.3g}, λ_min(Φ) ≥ {lam:.4g} (circulant embedding, Cauchy interlacing), "
                f"error bound {eb:.3g}")
    else:
        method = "minres"
        x, iterations = _minres(op, bn, x, tol, max_iter, progress)
        r = bn - op.matvec(x)
        rnorm = float(np.linalg.norm(r))
        eb, margin, status, certificate = math.inf, 0.0, "undecided", "none"
        note = (f"MINRES (|Strang| preconditioner), {iterations} iterations, ‖b − Φz‖₂ = {rnorm:.3g}; Φ is not positive definite "
                f"(its circulant embedding has eigenvalue {op.embedding_min:.3g}), so the residual bounds nothing")
    if status == "undecided" and farkas and np.isfinite(x).all() and x.min() < 0:
        ok, how = _farkas(op, bn, x, tol, max_iter, progress)
        if ok:
            status, certificate, margin = "absent", "Farkas", -math.inf
        note += "; " + how
    return SumLineSolution(x=x * scale, status=status, certainty="certified" if status != "undecided" else "undecided",
                           certificate=certificate, margin=float(margin), error_bound=eb * scale, lambda_min=lam,
                           rnorm=rnorm * scale, method=method, iterations=iterations, note=note, op=op)


def _farkas(op: SumLineOperator, b: np.ndarray, x: np.ndarray, tol: float, max_iter: int,
            progress=None) -> tuple[bool, str]:
    """Look for y with Φ̃y ≥ 0 and bᵀy < 0 (no x ≥ 0 solves Φ̃x = b), checked a posteriori in floats with
    rounding allowances (module notes)."""
    i = int(np.argmin(x))
    e = np.zeros(op.n)
    e[i] = 1.0
    if op.eigenvalue_lower_bound() > 0:
        w = pcg(op.matvec, e, x0=None, apply_m=op.strang(), target=tol, max_iter=max_iter, progress=progress).x
    else:
        w = _minres(op, e, None, tol, max_iter, progress)[0]
    s = float(np.abs(b * x).sum()) or 1.0
    for frac in (0.5, 0.25, 0.1, 0.01):
        tau = frac * (-x[i]) / s
        y = w + tau * x
        py = op.matvec(y)
        dy = op.rounding_floor(y, 0.0)
        total = math.fsum((b * y).tolist())  # b·y: exact products for b = 1; correctly rounded sum
        prod_err = _U * float(np.abs(b * y).sum()) if not np.all(b == 1.0) else 0.0
        if py.min() > dy and total + prod_err < 0:
            return True, (f"Farkas certificate: a vector y with Φy ≥ {py.min():.3g} > rounding allowance {dy:.3g} and "
                          f"Σ y·b = {total:.3g} < 0, so Φz = b has no solution z ≥ 0")
    return False, "no Farkas certificate found (Φy ≥ 0 with Σ y·b < 0 could not be verified)"


# ---------------------------------------------------------------------------------------------
# The tight-constraints result and the implicit mechanism
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SumLineTightResult(TightResult):
    """Outcome of :func:`tight_constraints_sum_line`: a :class:`dprivacy.mechanisms.tight.TightResult` on the
    sum line 0..n−1 with Δ (fields as the dense result; ``condition`` is None, ``nullity`` 0 when Φ̃ is
    certified positive definite), plus ``n``, ``delta``, ``certificate`` ("residual bound", "Farkas",
    "none"), ``lambda_min``, ``iterations``, ``elapsed`` (seconds) and ``.mechanism`` (a
    :class:`SumLineMechanism`, None unless existence is certified)."""

    n: int = 0
    delta: int = 1
    certificate: str = "none"
    lambda_min: float = -math.inf
    iterations: int = 0
    elapsed: float = 0.0
    space: SumLineSpace | None = field(default=None, repr=False)

    @property
    def mechanism(self):
        if not self.exists:
            return None
        m = self.__dict__.get("_mechanism")
        if m is None:
            m = SumLineMechanism(self.n, self.delta, self.z, epsilon=self.epsilon, space=self.space,
                                 certificate=self)
            object.__setattr__(self, "_mechanism", m)
        return m


def tight_constraints_sum_line(n: int, delta: int, *, epsilon: float, tol: float = DEFAULT_TOL,
                               max_iter: int = MAX_ITER, x0=None, space: SumLineSpace | None = None,
                               progress=None) -> SumLineTightResult:
    """The tight-constraints mechanism for ε·d on the sum line (answers 0..n−1, d(i, j) = ⌈|i − j|/Δ⌉,
    ElSalamouny et al. 2014 §7.1), or why there is none, without forming Φ (ElSalamouny et al. 2014 Def 6, Prop 6–8, Thm 4).

    ``sum:U,V`` is n = U·V + 1, Δ = V. Existence is decided by the certificates of the module notes.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 6, Prop 6,
       Prop 7, Prop 8, Thm 4, §7.1.
    """
    t0 = time.perf_counter()
    e = check_epsilon(epsilon)
    n = check_positive_int(n, name="n")
    delta = check_positive_int(delta, name="delta")
    if delta >= n - 1:
        # Every two answers adjacent (sum:1,V): a clique, ball-size symmetric, z = 1/(1 + (n−1)e^{−ε}) for every
        # ε (ElSalamouny et al. 2014 Prop 9); Φ = αJ + (1 − α)I is positive definite, but its circulant embedding is not, so the
        # Krylov certificates cannot decide it.
        alpha = math.exp(-e)
        s = 1.0 + (n - 1) * alpha
        z = np.full(n, 1.0 / s)
        bound = (n + 2) * _U / s  # rounding in the sum s and its reciprocal
        how = ("closed form: the answers form a clique (Δ ≥ n − 1), ball-size symmetric, z = 1/(1 + (n − 1)e^(−ε)) "
               "(ElSalamouny et al. 2014 Prop 9) (certified)")
        return SumLineTightResult(
            exists=True, epsilon=e, z=z, negative=(np.zeros(0, dtype=np.intp), np.zeros(0)),
            reason=tight_reason("exists", z, 0, bound, how, undecided_why=""), residual=float((n + 1) * _U),
            condition=None, error_bound=bound, margin=margin_of(z, bound), certainty="certified", singular=False,
            nullity=0, method="closed-form", n=n, delta=delta, certificate="closed form", lambda_min=1.0 - alpha,
            iterations=0, elapsed=time.perf_counter() - t0, space=space)
    sol = solve_sum_line(n, delta, e, tol=tol, max_iter=max_iter, x0=x0, progress=progress)

    z = sol.x
    neg = np.flatnonzero(z < 0)
    how = f"{sol.note} ({sol.certainty}: {sol.certificate})" if sol.status != "undecided" else sol.note
    reason = tight_reason(sol.status, z, neg.size, sol.error_bound, how,
                          undecided_why="no certificate: Φ not certified positive definite or residual at its rounding floor")
    pd = sol.lambda_min > 0
    return SumLineTightResult(
        exists=sol.status == "exists", epsilon=e, z=z, negative=(neg, z[neg]), reason=reason,
        residual=float(sol.rnorm), condition=None, error_bound=float(sol.error_bound), margin=sol.margin,
        certainty=sol.certainty, singular=False if pd else None, nullity=0 if pd else None, method=sol.method,
        n=n, delta=delta, certificate=sol.certificate, lambda_min=sol.lambda_min, iterations=sol.iterations,
        elapsed=time.perf_counter() - t0, space=space,
    )


class _Prober:
    """Existence probes for :func:`.threshold_search.bracket_threshold`, warm-started."""

    def __init__(self, n, delta, tol, max_iter, progress=None):
        self.n, self.delta, self.tol, self.max_iter, self.progress = n, delta, tol, max_iter, progress
        self.probes = []
        self._last = None

    def __call__(self, eps: float) -> str:
        sol = solve_sum_line(self.n, self.delta, eps, tol=self.tol, max_iter=self.max_iter, x0=self._last)
        if np.isfinite(sol.x).all() and sol.method == "cg":
            self._last = sol.x
        self.probes.append(Probe(float(eps), sol.status, float(sol.x.min())))
        if self.progress is not None:
            self.progress(self.probes[-1])
        return sol.status


def tight_threshold_sum_line(n: int, delta: int, *, tol: float = 1e-4, scan: int = 3, scan_factor: float = 3.0,
                             solver_tol: float = DEFAULT_TOL, max_iter: int = MAX_ITER, lo: float | None = None,
                             hi: float | None = None, eps_min: float | None = None, progress=None):
    """Bracket the threshold ε* above which the tight-constraints mechanism exists on the sum line (the
    search of :func:`.threshold_search.bracket_threshold`, each probe a certified :func:`solve_sum_line`;
    ``lo``/``hi`` an optional starting bracket, ``eps_min`` the smallest ε probed, default 1e-3;
    ``progress(probe)`` after each probe).
    Δ = 1 is a line (ε* = 0, closed form)."""
    n = check_positive_int(n, name="n")
    delta = check_positive_int(delta, name="delta")
    tol, scan, scan_factor, lo, hi = check_search(tol, scan, scan_factor, lo, hi)
    eps_min = 1e-3 if eps_min is None else check_epsilon(eps_min, name="eps_min")
    if delta == 1 or n <= 2:
        return _always_exists(tol, "closed form", "Δ = 1 (or n ≤ 2): the answers form a path, where the truncated "
                              "geometric is the tight-constraints mechanism for every ε > 0 (ElSalamouny et al. 2014 §6.1)")
    if delta >= n - 1:
        return _always_exists(tol, "by ElSalamouny et al. 2014 Prop 9", "Δ ≥ n − 1: the answers form a clique, which is ball-size "
                              "symmetric: a tight-constraints mechanism exists for every ε > 0 (ElSalamouny et al. 2014 Prop 9)")
    probe = _Prober(n, delta, solver_tol, max_iter, progress)
    return bracket_threshold(probe, lo=lo, hi=hi, start=1.0, eps_min=eps_min, tol=tol, scan=scan,
                             scan_factor=scan_factor, suffix=lambda p: f" ({len(p.probes)} FFT solves on n = {n})")


def regularity_sum_line(n: int, delta: int, prior, *, epsilon: float, tol: float = DEFAULT_TOL) -> SumLineSolution:
    """Whether ``prior`` on the sum line is ε·d-regular (ElSalamouny et al. 2014 Def 4: μΦ = π with μ ≥ 0), by the same
    certified solve with b = π ("exists": regular, "absent": not regular, "undecided")."""
    pi = np.asarray(prior, dtype=np.float64).ravel()
    if pi.shape != (n,):
        raise ValueError(f"the prior has {pi.size} entries, expected {n}")
    return solve_sum_line(n, delta, check_epsilon(epsilon), pi, tol=tol)


def _running_max(v: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(cumulative maximum of v along ``axis``, the index along ``axis`` of the last entry attaining it)."""
    m = np.maximum.accumulate(v, axis=axis)
    shape = [1] * v.ndim
    shape[axis] = v.shape[axis]
    pos = np.arange(v.shape[axis]).reshape(shape)
    return m, np.maximum.accumulate(np.where(v == m, pos, -1), axis=axis)


def _left_max_product(a: np.ndarray, delta: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """max over y ≤ o of a(y) − ε⌈(o − y)/Δ⌉ for every o, and a y attaining it (O(n), no loop over o).

    With u = o + Δ − 1 and Q, R the quotient and remainder by Δ, ⌈(o − y)/Δ⌉ = Q(u) − Q(y) − [R(y) > R(u)]
    for y ≤ o. So the value is max(max_{y ≤ o} b(y), ε + max{b(y) : y ≤ o, R(y) > R(u)}) − ε Q(u) with
    b(y) = a(y) + ε Q(y); apart from y = o itself, the y ≤ o with R(y) > R(u) are exactly those of the
    blocks Q(y) ≤ Q(u) − 2, whose maxima come from a suffix maximum over remainders within each block and a
    prefix maximum over blocks (a (blocks × Δ) array)."""
    n = a.size
    y = np.arange(n)
    b = a + eps * (y // delta)
    prefix, prefix_arg = _running_max(b, 0)
    qu, ru = np.divmod(y + delta - 1, delta)
    value, arg = prefix - eps * qu, prefix_arg
    blocks = -(-n // delta)
    bb = np.full(blocks * delta, -np.inf)
    bb[:n] = b
    sm, sarg = _running_max(bb.reshape(blocks, delta)[:, ::-1], 1)  # suffix maxima over remainders
    above = np.full((blocks, delta), -np.inf)  # above[k, t] = max_{r > t} b[kΔ + r]
    above_r = np.zeros((blocks, delta), dtype=np.int64)
    above[:, :-1] = sm[:, ::-1][:, 1:]
    above_r[:, :-1] = (delta - 1 - sarg[:, ::-1])[:, 1:]
    upto, upto_block = _running_max(above, 0)  # ... over the blocks ≤ k
    ok = np.flatnonzero(qu >= 2)
    k, t = qu[ok] - 2, ru[ok]
    cheaper = upto[k, t] + eps - eps * qu[ok]
    blk = np.maximum(upto_block[k, t], 0)
    take = cheaper > value[ok]
    value[ok[take]] = cheaper[take]
    arg = arg.copy()
    arg[ok[take]] = (blk * delta + above_r[blk, t])[take]
    own = a >= value
    return np.where(own, a, value), np.where(own, y, arg)


def line_max_product(log_prior: np.ndarray, delta: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(max_y [log π_y − ε⌈|y − o|/Δ⌉], argmax_y) for every answer o of the sum line: the max-convolution of
    the prior with the mechanism's kernel in log space (no underflow at large ε·d), in O(n) by one pass from
    each side (:func:`_left_max_product`)."""
    a = np.asarray(log_prior, dtype=np.float64)
    gl, al = _left_max_product(a, delta, epsilon)
    gr, ar = _left_max_product(a[::-1], delta, epsilon)
    gr, ar = gr[::-1], (a.size - 1 - ar)[::-1]
    right = gr > gl
    return np.where(right, gr, gl), np.where(right, ar, al)


class SumLineMechanism(ImplicitTightMechanism):
    """The tight-constraints mechanism on the sum line, implicit: z and the metric, rows on demand.

    H[y, o] = z_o e^{−ε⌈|y − o|/Δ⌉} (ElSalamouny et al. 2014 Def 6), private by Prop 6 (z ≥ 0 certified). A
    :class:`~dprivacy.mechanisms.base.Mechanism` on a :class:`~dprivacy.spaces.SumLineSpace`: the measures
    take its hooks (utility and leakage by :func:`line_max_product`, capacity log₂ Σz, privacy by Prop 6),
    and it samples exactly (:meth:`sample_answer`, :meth:`sample_indices`).
    """

    space_type = SumLineSpace

    def __init__(self, n: int, delta: int, z: np.ndarray, *, epsilon: float, space: SumLineSpace | None = None,
                 certificate=None, atol: float = 1e-8):
        n = check_positive_int(n, name="n")
        delta = check_positive_int(delta, name="delta")
        if space is None:
            space = SumLineSpace(n, delta)
        elif not isinstance(space, SumLineSpace) or (space.n, space.delta) != (n, delta):
            raise ValueError(f"space must be the SumLineSpace of n = {n} answers with Δ = {delta}, got {space!r}")
        self.delta = delta
        self._op = None
        super().__init__(space, z, epsilon=epsilon, certificate=certificate, atol=atol)

    def _phi_matvec(self, x: np.ndarray) -> np.ndarray:
        return self.op.matvec(x)

    def _max_convolution(self, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(divide="ignore"):
            g, arg = line_max_product(np.log(prior), self.delta, self.epsilon)
        return np.exp(g), arg

    @property
    def sampler(self):
        raise AttributeError("the sum-line mechanism has no grid sampler: use sample_answer or sample_indices")

    def sample_indices(self, secrets, *, rng=None) -> np.ndarray:
        """One output answer per secret answer: each distinct secret's row quantised once and drawn exactly
        (:meth:`sample_answer`), one uniform integer per draw from ``rng`` (None: the release-grade source)."""
        from ..sampling import as_generator

        idx = np.asarray(secrets)
        if idx.size and (not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= self.n):
            raise ValueError(f"secret indices must be integers in 0..{self.n - 1}")
        gen = as_generator(rng)
        out = np.empty(idx.shape, dtype=np.int64)
        flat = idx.ravel()
        res = out.ravel()
        for y in np.unique(flat):
            at = np.flatnonzero(flat == y)
            res[at] = self.row_sampler(int(y)).sample(np.zeros(at.size, dtype=np.intp), gen)
        return out

    @property
    def op(self) -> SumLineOperator:
        if self._op is None:
            self._op = SumLineOperator(self.n, self.delta, self.epsilon)
        return self._op

    def row(self, y: int) -> np.ndarray:
        """H[y, ·] (n floats; sums to (Φz)_y = 1 up to the solver's residual)."""
        return self.rows(int(y))

    # -- exact sampling -------------------------------------------------------------------------

    def mixing_weight(self) -> float:
        """γ of the uniform mixture, the same for every row (so the mixture keeps ε·d-privacy by the
        mediant inequality, :func:`dprivacy.sampling.exact.mixing_weight`): 0 when every entry of H is
        representable with PRECISION_BITS relative bits at 2^-WEIGHT_BITS, else n·2^(PRECISION_BITS − WEIGHT_BITS)."""
        from ..sampling.exact import PRECISION_BITS, WEIGHT_BITS

        floor = 2.0 ** (PRECISION_BITS - WEIGHT_BITS)
        zmin = float(self.z.min())
        log_min = (math.log(zmin) if zmin > 0 else -math.inf) - self.epsilon * math.ceil((self.n - 1) / self.delta)
        return 0.0 if log_min >= math.log(floor) else min(1.0, self.n * floor)

    def quantised_rows(self, ys) -> np.ndarray:
        """Integer weights (rows sum to 2^WEIGHT_BITS) of the mixed rows ``ys``."""
        from ..sampling.exact import quantise_rows

        g = self.mixing_weight()
        rows = np.stack([self.row(y) for y in ys])
        rows /= rows.sum(axis=1, keepdims=True)
        if g > 0:
            rows = (1.0 - g) * rows + g / self.n
        return quantise_rows(rows, gamma=0.0)

    def delivered_epsilon(self, y: int, weights_y: np.ndarray | None = None) -> float:
        """The ε delivered by the quantised channel on the constraint pairs of y: max over y' with
        0 < |y − y'| ≤ Δ (graph distance 1) and outputs o of |ln w[y, o] − ln w[y', o]| (exact integers)."""
        ys = [yy for yy in range(max(0, y - self.delta), min(self.n, y + self.delta + 1)) if yy != y]
        if not ys:
            return 0.0
        w = self.quantised_rows([y] + ys).astype(np.float64)
        with np.errstate(divide="ignore"):
            lw = np.log(w)
        return float(np.abs(lw[1:] - lw[0][None, :]).max())

    def row_sampler(self, y: int):
        """The exact sampler of row y: the row quantised to integers summing to 2^62, with its delivered ε."""
        from ..sampling.exact import ExactSampler, WEIGHT_BITS

        w = self.quantised_rows([y])
        eps_d = self.delivered_epsilon(y)
        return ExactSampler(w, WEIGHT_BITS, self.mixing_weight(), eps_d, self.epsilon, eps_d - self.epsilon,
                            np.cumsum(w, axis=1))

    def sample_answer(self, y: int, rng=None):
        """One release from row y: (output index, :meth:`row_sampler`), one uniform integer from ``rng``
        (None: the release-grade source)."""
        from ..sampling import as_generator

        sampler = self.row_sampler(y)
        return int(sampler.sample(np.array([0]), as_generator(rng))[0]), sampler

    # -- accuracy (every true answer at once) ----------------------------------------------------

    def expected_abs_errors(self) -> np.ndarray:
        """E|o − y| for every true answer y: Σ_o z_o e^{−ε⌈|o−y|/Δ⌉}|o − y| = (K * z)_y with
        K(m) = e^{−ε⌈m/Δ⌉}·m (one FFT product)."""
        m = np.arange(self.n, dtype=np.float64)
        return np.maximum(self.op.convolve(self.op.kernel * m, self.z), 0.0)

    def accuracy(self, *, confidence: float = 0.95) -> tuple[float, int]:
        """(max_y E|o − y|, the smallest t with P(|o − y| > t) ≤ 1 − confidence for every true y) of the channel
        that :meth:`sample_answer` draws from: H mixed with the uniform distribution at weight γ =
        :meth:`mixing_weight` (on Superstore's 149,911 answers at ε = 5, E|error| is 3.00 where H alone gives
        1.40). Exact up to FFT rounding (~1e-12) and the integer quantisation of the rows (a relative
        2^-30 per entry); by bisection on t, one FFT product per step."""
        g = self.mixing_weight()
        n = self.n
        m = np.arange(n)
        y = m.astype(np.float64)
        # the uniform part: E|o − y| = (y(y+1) + (n−1−y)(n−y)) / (2n), P(|o − y| > t) = (#o farther than t) / n
        uniform_mean = (y * (y + 1.0) + (n - 1.0 - y) * (n - y)) / (2.0 * n)
        mean = float(((1.0 - g) * self.expected_abs_errors() + g * uniform_mean).max())
        delta = 1.0 - confidence

        def worst_tail(t: int) -> float:
            inside = self.op.convolve(np.where(m <= t, self.op.kernel, 0.0), self.z)  # P(|o − y| ≤ t) (row sum ≈ 1)
            far = (np.maximum(y - t, 0.0) + np.maximum(n - 1.0 - y - t, 0.0)) / n
            return float(((1.0 - g) * (1.0 - inside) + g * far).max())

        lo, hi = 0, self.n - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if worst_tail(mid) <= delta + 1e-12:
                hi = mid
            else:
                lo = mid + 1
        return mean, int(lo)
