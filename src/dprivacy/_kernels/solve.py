r"""The tight-constraints mechanism of a large grid: Φ z = 1 by FFT-based Krylov methods, with a
certificate for the signs of z.

A tight-constraints mechanism for ε·d exists iff Φ z = 1 has a solution z ≥ 0, and it is then
H[y, y'] = e^{−ε d(y, y')} z_{y'} (ElSalamouny et al. 2014 Def 6, Prop 7; existence ⇔ the uniform prior is ε·d-regular,
Prop 8). :func:`dprivacy.mechanisms.tight.tight_constraints` factorizes the dense Φ; on a W×H grid
(ElSalamouny et al. 2014 §7.2 uses 100×100 at 1 km) this module never forms Φ: it multiplies by it with FFTs
(:class:`.operator.GridConstraintsOperator`) and solves by preconditioned conjugate gradients, so a
million-cell grid takes seconds and tens of MB.

**Certificate.** With z the computed vector, r = 1 − Φ̃z its residual and λ ≤ λ_min(Φ̃) a certified
lower bound (:mod:`.spectrum`), the exact solution z* of Φ̃ z = 1 satisfies

.. math:: \max_y |z_y - z^*_y| \le \|z - z^*\|_2 \le (\|r\|_2 + \delta)/\lambda =: b,

with δ a bound on the rounding in computing r by FFT (first-order model, :func:`.spectrum.fft_rounding`
× λ_max(C) × ‖z‖₂, plus the subtraction). Then min z > b proves z* > 0 (the mechanism exists) and some
z_y < −b proves z*_y < 0 (it does not: Φ̃ is invertible, so z* is the only candidate). Otherwise the
answer is "undecided"; the solver first tightens the residual down to its rounding floor before
giving up. The bound uses the 2-norm of r for an ∞-norm question, so it is pessimistic by up to √n;
it is still far below the entries of z except within a hair of the threshold ε.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from .._validate import check_epsilon
from ..spaces import GridSpace
from .krylov import KrylovOutcome, pcg
from .operator import GridConstraintsOperator
from .phi_solve import TightResult, decide, margin_of, tight_reason
from .spectrum import EigenvalueBound, eigenvalue_lower_bound, fft_rounding

_U = float(np.finfo(np.float64).eps) / 2
_METHODS = ("auto", "cg", "minres")
_PRECONDITIONERS = ("auto", "none", "embedding", "circulant")

#: Below this a = ε·step the embedding preconditioner (one extra full-size FFT per iteration, fewer
#: iterations) beats the quarter-size circulant one in total time. On 300×300 (benchmarks/bench_structured.py,
#: part "preconditioners"): embedding 3-4× fewer iterations and 1.4-2.5× less time at a = 0.1, but the
#: circulant one is faster from a = 0.3 up (Euclidean and Chebyshev).
EMBEDDING_BELOW_A = 0.2

#: Default relative residual ‖1 − Φz‖₂ / √n at which CG first stops.
DEFAULT_TOL = 1e-10


@dataclass(frozen=True)
class GridTightResult(TightResult):
    """Outcome of :func:`tight_constraints_grid`: a :class:`dprivacy.mechanisms.tight.TightResult`
    (the fields of the dense result) with the grid solver's own below.

    Attributes
    ----------
    exists : bool
        True only when z ≥ 0 is certified (every entry exceeds the error bound). False when the
        mechanism certainly does not exist *or* when the computation cannot tell (``certainty ==
        "undecided"``; ``reason`` says why).
    epsilon : float
    grid : GridSpace
    z : ndarray, shape (n,)
        The computed diagonal (cell order row·W + col).
    negative : (ndarray, ndarray)
        Indices and values of the negative entries of ``z``.
    reason : str
    residual : float
        ‖Φ̃z − 1‖∞ as computed (FFT).
    residual_norm : float
        ‖Φ̃z − 1‖₂ (the certificate uses this one).
    condition : float or None
        Upper bound on the 2-norm condition number, λ_max(C) / λ (the dense result reports a 1-norm
        estimate instead). None when Φ̃ is not certified positive definite.
    error_bound : float
        b above: a bound on max_y |z_y − z*_y|; inf when no eigenvalue bound is available.
    margin : float
        min z / error_bound: > 1 exists, < −1 does not exist, otherwise undecided.
    certainty : str
        "certified", "closed-form" (a Manhattan grid, :mod:`.closed_form`) or "undecided" (the shared
        vocabulary of :mod:`.phi_solve`).
    singular : bool or None
        False when Φ̃ is certified positive definite; None otherwise.
    nullity : int or None
        0 when Φ̃ is certified positive definite; None otherwise.
    method : str
        "cg" (conjugate gradients, possibly preconditioned), "minres" or "closed-form".
    preconditioner : str
        "none", "embedding" or "circulant".
    iterations : int
    converged : bool
        Whether the requested ``tol`` was reached.
    eigenvalue_bound : EigenvalueBound
    elapsed : float
        Seconds spent.
    history : tuple of float
        Relative residual after each iteration.
    """

    grid: GridSpace = field(repr=False)
    residual_norm: float
    preconditioner: str
    iterations: int
    converged: bool
    eigenvalue_bound: EigenvalueBound = field(repr=False)
    elapsed: float = 0.0
    history: tuple = field(repr=False, default=())

    @property
    def z_grid(self) -> np.ndarray:
        """z as an (H, W) array (row = grid row)."""
        return self.z.reshape(self.grid.height, self.grid.width)

    @cached_property
    def mechanism(self):
        """The :class:`.implicit.ImplicitTightMechanism` (z and the grid; no n×n matrix), or None when
        existence is not certified. Built once (its sampler's table is kept with it)."""
        if not self.exists:
            return None
        from .implicit import ImplicitTightMechanism

        return ImplicitTightMechanism(self.grid, self.z, epsilon=self.epsilon, certificate=self)

    @property
    def channel(self):
        """The dense :class:`~dprivacy.channels.Channel` H = Φ diag(z) when it exists — only for grids
        whose n×n matrix fits in memory (``MemoryError`` otherwise); None when existence is not
        certified. Use :attr:`mechanism` on large grids."""
        m = self.mechanism
        return None if m is None else m.channel


def empty_negative():
    return np.zeros(0, dtype=np.intp), np.zeros(0)


def tight_constraints_grid(
    grid: GridSpace,
    *,
    epsilon: float,
    tol: float = DEFAULT_TOL,
    method: str = "auto",
    preconditioner: str = "auto",
    x0: np.ndarray | None = None,
    max_iter: int = 5000,
    refine: bool = True,
    workers: int | None = None,
    progress: Callable[[int, float], None] | None = None,
    operator: GridConstraintsOperator | None = None,
) -> GridTightResult:
    """The tight-constraints mechanism for ε·d on a grid, or why there is none (ElSalamouny et al. 2014 Def 6,
    Prop 6–8), without forming the n×n matrix.

    Solves Φ z = 1, Φ = exp(−ε d), by conjugate gradients on the FFT operator (Φ is certified positive
    definite by :func:`.spectrum.eigenvalue_lower_bound` for the Euclidean, Manhattan and Chebyshev grid
    metrics), and decides existence from the certificate in the module notes.

    Parameters
    ----------
    grid : GridSpace
    epsilon : float
    tol : float
        Stop when ‖1 − Φz‖₂ ≤ tol·√n (relative residual).
    method : {"auto", "cg", "minres"}
        "auto": CG when Φ̃ is certified positive definite (always, for the three grid metrics), else
        MINRES (``scipy.sparse.linalg.minres``, which needs only symmetry; without a lower bound on
        λ_min the residual bounds nothing, so the answer is then "undecided" and says so). "cg"
        refuses a Φ̃ that is not certified positive definite; "minres" can be asked for explicitly (the
        certificate then applies as for CG). MINRES reports no residual to ``progress`` (NaN).
    preconditioner : {"auto", "none", "embedding", "circulant"}
        M⁻¹ = leading block of the embedding's inverse (one extra full FFT per iteration, few
        iterations), or of a grid-sized circulant approximation (a quarter of the cost, more iterations
        at small ε·step). "auto": "embedding" when its spectrum is positive and ε·step <
        :data:`EMBEDDING_BELOW_A`, else "circulant".
    x0 : ndarray, optional
        Starting vector (warm start, e.g. z at a nearby ε). Default: 1/(Φ1) (the exact answer on a torus).
    max_iter : int
        Total iteration budget (refinement included).
    refine : bool
        When the first answer is undecided, keep iterating with smaller residual targets until the
        signs are certain or the residual reaches its rounding floor.
    workers : int, optional
        FFT threads.
    progress : callable, optional
        ``progress(iteration, relative_residual)`` after every iteration (relative residual
        ‖1 − Φz‖₂/√n as updated by the recursion).
    operator : GridConstraintsOperator, optional
        Reuse an operator already built for this grid and ε.

    Returns
    -------
    GridTightResult
    """
    t0 = time.perf_counter()
    if not isinstance(grid, GridSpace):
        raise TypeError(f"grid must be a GridSpace, got {type(grid).__name__}")
    e = check_epsilon(epsilon)
    gs = solve_grid(grid, e, np.ones(grid.n), tol=tol, method=method, preconditioner=preconditioner, x0=x0,
                    max_iter=max_iter, refine=refine, workers=workers, progress=progress, operator=operator)
    return _result(grid, e, gs, time.perf_counter() - t0)


@dataclass
class GridSolution:
    """One certified solve of Φ x = b on a grid (:func:`solve_grid`), in b's scale.

    ``x``, ``residual`` (b − Φ̃x by FFT); ``status``/``margin``/``certainty`` as in
    :mod:`.phi_solve` (one decision for dense and grid solves); ``error_bound``: bound on
    ‖x − x*‖₂ ≥ max_y |x_y − x*_y|; ``rnorm`` = ‖residual‖₂; ``bound``: the eigenvalue bound;
    ``method``, ``preconditioner``, ``iterations``, ``converged``, ``history``; ``op`` the operator.
    """

    x: np.ndarray
    residual: np.ndarray
    status: str
    certainty: str
    margin: float
    error_bound: float
    rnorm: float
    bound: EigenvalueBound
    method: str
    preconditioner: str
    iterations: int
    converged: bool
    history: tuple
    op: GridConstraintsOperator


def solve_grid(grid: GridSpace, e: float, b: np.ndarray, *, tol: float = DEFAULT_TOL, method: str = "auto",
               preconditioner: str = "auto", x0: np.ndarray | None = None, max_iter: int = 5000,
               refine: bool = True, workers: int | None = None, progress=None,
               operator: GridConstraintsOperator | None = None) -> GridSolution:
    """Solve Φ x = b on ``grid`` by preconditioned CG (or MINRES) on the FFT operator and decide the
    signs of x with the certificate of the module notes: the one grid solve behind tight-constraints
    (b = 1) and regularity (b = π).

    b is first divided by its largest entry (exact for a constant b, so the uniform prior and the
    vector of ones are the same system: ElSalamouny et al. 2014 Prop 8 holds by construction), and the answer scaled
    back. When the first answer is undecided and ``refine``, CG goes on with smaller residual targets
    until the signs are certain or the residual reaches its rounding floor.
    """
    tol = check_epsilon(tol, name="tol")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, _METHODS))}; got {method!r}")
    if preconditioner not in _PRECONDITIONERS:
        raise ValueError(f"preconditioner must be one of {', '.join(map(repr, _PRECONDITIONERS))}; got {preconditioner!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if operator is None:
        op = GridConstraintsOperator(grid, e, workers=workers)
    else:
        if operator.grid is not grid or operator.epsilon != e:
            raise ValueError("operator was built for another grid or ε")
        op = operator
    n = grid.n
    bound = eigenvalue_lower_bound(op)
    pd = bound.positive_definite
    if method == "auto":
        method = "cg" if pd else "minres"
    if method == "cg" and not pd:
        raise ValueError(
            "method='cg' needs Φ certified positive definite, but no positive lower bound on its "
            f"smallest eigenvalue was found (symbol {bound.symbol:.3g}, embedding {bound.embedding:.3g}); "
            "use method='minres'"
        )
    a = e * grid.step
    if preconditioner == "auto":
        preconditioner = "embedding" if (op.embedding_min > 0 and a < EMBEDDING_BELOW_A) else "circulant"
    apply_m = op.preconditioner(preconditioner)

    b = np.asarray(b, dtype=np.float64)
    scale = float(np.abs(b).max()) or 1.0
    bn = b / scale
    beta = float(np.linalg.norm(np.where(bn == 1.0, 0.0, _U * np.abs(bn))))  # rounding of the division
    if x0 is None:
        x = bn / op.matvec(np.ones(n))  # the exact answer on a torus for b = 1
    else:
        x = np.asarray(x0, dtype=np.float64).ravel() / scale
        if x.shape != (n,):
            raise ValueError(f"x0 has {x.size} entries, expected {n} (one per cell)")
    sqrt_n = math.sqrt(n)
    bnorm = float(np.linalg.norm(bn))
    floor_rel = rounding_floor(op, x, bnorm) / sqrt_n
    target_rel = max(tol, 2 * floor_rel)
    iterations, history = 0, []

    def solve(x, target_rel, budget):
        if method == "cg":
            return pcg(op.matvec, bn, x0=x, apply_m=apply_m, target=target_rel * sqrt_n, max_iter=budget,
                       progress=progress, start_iteration=iterations)
        return _minres(op, bn, x, apply_m, target_rel * sqrt_n, budget, progress, iterations)

    out = solve(x, target_rel, max_iter)
    iterations += out.iterations
    history += out.history
    converged = out.converged
    cert = _certify(op, bound, out, bnorm, beta)
    while refine and cert["status"] == "undecided" and pd and iterations < max_iter:
        current = cert["rnorm"]
        floor = 2 * cert["delta"]
        if current <= floor:
            break  # the residual cannot be trusted any lower
        need = bound.value * abs(cert["min_x"]) - cert["delta"]  # a residual below this decides
        goal = max(min(current / 1e3, need / 2) if need > 0 else current / 1e3, floor)
        out = solve(out.x, goal / sqrt_n, max_iter - iterations)
        iterations += out.iterations
        history += out.history[1:]
        cert = _certify(op, bound, out, bnorm, beta)
        if not cert["rnorm"] < current:
            break
    status = cert["status"]
    return GridSolution(
        x=out.x * scale, residual=out.residual * scale, status=status,
        certainty="certified" if status != "undecided" else "undecided", margin=cert["margin"],
        error_bound=cert["error_bound"] * scale, rnorm=cert["rnorm"] * scale, bound=bound, method=method,
        preconditioner=preconditioner, iterations=iterations, converged=bool(converged or out.converged),
        history=tuple(history), op=op,
    )


def rounding_floor(op: GridConstraintsOperator, x: np.ndarray, bnorm: float | None = None) -> float:
    """δ: rounding in computing b − Φ̃x by FFT, in the 2-norm (first-order model with safety factor);
    ``bnorm`` = ‖b‖₂ (√n for b = 1)."""
    p, q = op.torus
    xn = float(np.linalg.norm(x))
    bn = math.sqrt(op.n) if bnorm is None else bnorm
    return fft_rounding(p * q) * op.embedding_max_abs * xn + 2 * _U * (bn + op.kernel_sum * xn)


def _certify(op, bound: EigenvalueBound, out: KrylovOutcome, bnorm: float, beta: float) -> dict:
    """The sign decision of :mod:`.phi_solve` with the grid's error bound (‖r‖₂ + δ + β)/λ."""
    x = out.x
    rnorm = float(np.linalg.norm(out.residual))
    delta = rounding_floor(op, x, bnorm) + beta
    eb = (rnorm + delta) / bound.value if bound.positive_definite else math.inf
    margin = margin_of(x, eb)
    return dict(status=decide(margin), error_bound=eb, margin=float(margin), min_x=float(x.min()), delta=delta,
                rnorm=rnorm)


def _minres(op, b, x, apply_m, target, budget, progress, start) -> KrylovOutcome:
    from scipy.sparse.linalg import LinearOperator, minres

    n = op.n
    history = []
    nb = float(np.linalg.norm(b))
    a = op.as_linear_operator()
    m = None if apply_m is None else LinearOperator((n, n), matvec=lambda v: apply_m(np.ravel(v)), dtype=np.float64)
    count = [0]

    def cb(xk):
        count[0] += 1
        if progress is not None:
            progress(start + count[0], float("nan"))

    r0 = b - op.matvec(x)
    xs, info = minres(a, b, x0=x, rtol=target / nb, maxiter=budget, M=m, callback=cb)
    r = b - op.matvec(xs)
    history = [float(np.linalg.norm(r0)) / nb, float(np.linalg.norm(r)) / nb]
    return KrylovOutcome(x=xs, residual=r, iterations=count[0], converged=bool(np.linalg.norm(r) <= target), history=history)


def _result(grid, e, gs: GridSolution, elapsed: float) -> GridTightResult:
    z = gs.x
    neg_idx = np.flatnonzero(z < 0)
    status = gs.status
    eb, margin, bound, pd = gs.error_bound, gs.margin, gs.bound, gs.bound.positive_definite
    how = (
        f"{gs.method}{'' if gs.preconditioner == 'none' else ' + ' + gs.preconditioner + ' preconditioner'}, "
        f"{gs.iterations} iterations, ‖1 − Φz‖₂ = {gs.rnorm:.3g}, λ_min(Φ) ≥ {bound.value:.4g} "
        f"(from the {bound.source})"
    )
    w = grid.width
    if status == "exists":
        how = f"every entry of z exceeds the error bound {eb:.3g} (margin {margin:.3g}); " + how
    if not pd:
        why = ("Φ is not certified positive definite: no positive lower bound on λ_min from the symbol, "
               f"{bound.symbol:.3g}, or the circulant embedding, {bound.embedding:.3g}, so the residual does not "
               "bound the error of z")
    else:
        why = "residual at its rounding floor or iteration budget spent"
    reason = tight_reason(status, z, neg_idx.size, eb, how, undecided_why=why,
                          where=lambda i: f" (row {i // w}, col {i % w})")
    resid = gs.residual
    return GridTightResult(
        exists=status == "exists", epsilon=e, grid=grid, z=z,
        negative=(neg_idx, z[neg_idx]) if neg_idx.size else empty_negative(), reason=reason,
        residual=float(np.abs(resid).max()), residual_norm=float(np.linalg.norm(resid)),
        condition=gs.op.embedding_max / bound.value if pd else None, error_bound=eb, margin=margin,
        certainty=gs.certainty, singular=False if pd else None, nullity=0 if pd else None, method=gs.method,
        preconditioner=gs.preconditioner, iterations=gs.iterations, converged=gs.converged,
        eigenvalue_bound=bound, elapsed=elapsed, history=gs.history,
    )
