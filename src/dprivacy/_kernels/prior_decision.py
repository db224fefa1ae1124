"""The regularity decision shared by every solver of μΦ = π (ElSalamouny et al. 2014 Def 4, Prop 2, Def 5): the dense tester
(:class:`dprivacy.priors.RegularityTester`), the grid and sum-line solvers (:mod:`.regularity`), and the uniform
prior decided by the tight-constraints solve (ElSalamouny et al. 2014 Prop 8).

π is ε·d-regular iff some μ ≥ 0 solves μΦ = π. From a solve (:class:`.phi_solve.PhiSolution`) the decision is:
a prior below the lower bound of Prop 2 is never regular; a corner prior (Def 5) is regular by construction,
recognised before the signs of its μ (which lies on the boundary of the region) are read; otherwise the
certified sign decision of the solve. :class:`RegularityResult` says which, and how sure it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..results import Result
from . import phi_solve as _ps

_EPS = np.finfo(np.float64).eps

#: Relative margin of the Prop 2 test (a prior below the lower bound by more than this is certainly not
#: regular, whatever the solve says).
PROP2_RTOL = 1e-9


@dataclass(frozen=True)
class RegularityResult(Result):
    r"""Whether a prior π is ε·d-regular (ElSalamouny et al. 2014 Def 4), with its certificate.

    Attributes
    ----------
    regular : bool
        The decision: some μ ≥ 0 satisfies μΦ = π, certified against the numerical error reported
        below. False both when π is certainly not regular and when it lies on the boundary of the
        region within rounding (``boundary``), where floating point cannot decide.
    mu : ndarray (n,)
        A solution of μΦ = π. When Φ is invertible it is *the* solution. When Φ is (numerically)
        singular and π is regular, it is the non-negative solution with the smallest Σμ (the best
        bound of ElSalamouny et al. 2014 Thm 2); when π is not regular, the solution whose smallest entry is largest
        (so ``negative`` says how far from regular π is at best). ``nan`` when μΦ = π has no solution.
    gamma : ndarray (n,)
        γ_y = μ_y Σ_{y'} φ_{yy'}: the coefficients of π over the corner priors (ElSalamouny et al. 2014 Prop 3);
        they sum to 1 and are all ≥ 0 iff π is regular.
    mu_sum : float
        Σ_y μ_y. For a regular prior this is the utility bound of ElSalamouny et al. 2014 Thm 2.
    mu_sum_max : float
        The largest Σμ over non-negative solutions (equal to ``mu_sum`` unless the solution is not
        unique).
    mu_sum_error : float
        Bound on the error of ``mu_sum`` (the sum of the per-entry error bounds; √n times the 2-norm
        bound on grids).
    residual : float
        ‖μΦ − π‖_∞ as computed.
    error_bound : float
        Bound on max_y |μ_y − μ*_y|, μ* the exact solution for the float64 Φ̃ and π, from the shared
        solve (:mod:`dprivacy._kernels.phi_solve`: |Φ̃⁻¹| times the residual and its rounding; on grids
        ‖r‖₂ plus its rounding over a certified λ_min). For the linear-program path (singular Φ) it is
        the LP tolerance.
    margin : float
        min_y μ_y / (the error bound of μ_y). margin > 1: certainly regular (strictly inside the region);
        margin < −1: certainly not regular; |margin| ≤ 1: on the boundary of the region within
        rounding error, undecided (e.g. the corner priors, whose μ has exact zeros): ``regular`` is
        False, ``boundary`` True, and ``reason`` says so. A prior below the lower bound of ElSalamouny et al. 2014
        Prop 2 (e.g. with a zero entry) is certainly not regular whatever the margin.
    method : str
        "cholesky" or "lu" (direct solve of the factored Φ), "eigh" (solve through the
        eigen-decomposition, used only if LU breaks down on a matrix with no numerically zero
        eigenvalue), "eigh+linprog" (Φ numerically singular: decided by linear programming), "exact"
        (rational arithmetic), "cg"/"minres" (grids), "corner" (a corner prior), or, for the uniform
        prior, the method of the tight-constraints solve (e.g. "closed-form").
    rcond : float
        Reciprocal condition number of Φ in the 1-norm (estimated; nan when not computed).
    nullity : int or None
        Numerical dimension of the null space of Φ, hence of the affine set {μ : μΦ = π} when it is
        non-empty (0 when Φ is invertible); the same number :func:`dprivacy.tight_constraints` reports
        for the same Φ. None when not examined.
    consistent : bool
        Whether μΦ = π has a solution at all (always true for invertible Φ).
    negative : ndarray of int
        When not regular: the indices y with μ_y < −error_bound ...
    negative_values : ndarray
        ... and those entries of μ.
    reason : str
        A sentence: why π is not regular or could not be decided, or, when it is regular, the
        certificate in words (min μ and its margin over the error bound).
    boundary : bool
        π lies on the boundary of the region within rounding (|margin| ≤ 1): undecided.
    certainty : str
        The shared vocabulary :data:`dprivacy._kernels.phi_solve.CERTAINTY`: ``"certified"`` (a rigorous
        error bound: the explicit |Φ̃⁻¹|, or a certified eigenvalue bound on grids; also a prior
        certainly below the bound of Prop 2), ``"exact"`` (rational arithmetic, or a corner prior,
        regular by construction), ``"closed-form"`` (the uniform prior on a space whose tight-constraints
        diagonal has a closed form), ``"estimated"`` (above
        :data:`~dprivacy._kernels.phi_solve.INVERSE_LIMIT` points ‖Φ̃⁻¹‖ is LAPACK's estimate times a
        safety factor: verified numerically, not certified), ``"numerical"`` (Φ singular: decided by a
        linear program on its numerical null space; verified numerically, not certified) or
        ``"undecided"``.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 4, Prop 3.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 5, Appendix B.
    """

    regular: bool
    mu: np.ndarray
    gamma: np.ndarray
    mu_sum: float
    mu_sum_max: float
    mu_sum_error: float
    residual: float
    error_bound: float
    margin: float
    method: str
    rcond: float
    nullity: int
    consistent: bool
    negative: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    negative_values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    reason: str | None = None
    boundary: bool = False
    certainty: str = "undecided"

    def __post_init__(self):
        if not self.reason:  # the vocabulary: reason is always a sentence
            # "certified" only for the rigorous certainties: a singular Φ's "numerical" answer is verified
            # numerically, not certified
            how = ("exactly (a corner prior)" if self.certainty == "exact" and self.method == "corner" else
                   "certified" if self.certainty in _ps.RIGOROUS else
                   f"verified numerically, not a proof (certainty {self.certainty})")
            mn = float(np.min(self.mu)) if np.size(self.mu) else math.nan
            text = (f"regular ({how}): μΦ = π with every μ_y ≥ 0 (smallest μ_y = {mn:.6g}, margin "
                    f"{self.margin:.3g} error bounds; ElSalamouny et al. 2014 Def 4)") if self.regular else "not regular"
            object.__setattr__(self, "reason", text)

    @property
    def ok(self) -> bool:
        """The prior is ε·d-regular: the common flag of :class:`dprivacy.results.Result`, the same as
        ``regular`` (the theory's word, kept as the field)."""
        return bool(self.regular)

    def __bool__(self) -> bool:
        return bool(self.regular)

    @property
    def certain(self) -> bool:
        """True when the decision does not depend on rounding: |margin| > 1."""
        return bool(abs(self.margin) > 1.0)

    @property
    def unique(self) -> bool:
        """True when μ is the only solution of μΦ = π (Φ numerically invertible)."""
        return self.nullity == 0


def _below_prop2(P: np.ndarray, lower: np.ndarray | None) -> np.ndarray:
    """Rows of P with an entry certainly below the lower bound of ElSalamouny et al. 2014 Prop 2 (so certainly not
    regular): the bound is a necessary condition, checked with a relative margin for rounding. With
    ``lower`` None (grids, where Σ e^{εd} is not formed) only a zero entry counts (the bound is positive)."""
    if lower is None:
        return (P <= 0).any(axis=1)
    return (P < lower * (1 - PROP2_RTOL) - 1e-300).any(axis=1)


def corner_of(p: np.ndarray, row) -> int | None:
    """y when ``p`` is the corner prior c^y = φ_y / Σφ_y (ElSalamouny et al. 2014 Def 5) up to the rounding of its own
    computation (a few units in the last place per entry), else None. ``row(y)`` gives row y of Φ, so the
    one test serves dense spaces and grids (where a row is O(n) from the metric)."""
    y = int(np.argmax(p))
    r = row(y)
    c = r / r.sum()
    tol = 8 * p.size * _EPS
    return y if np.all(np.abs(p - c) <= tol * np.maximum(c, np.finfo(np.float64).tiny)) else None


def _corner_rows(P: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """:func:`corner_of` for every row of P at once (dense Φ)."""
    y = np.argmax(P, axis=1)
    rows = phi[y]
    c = rows / rows.sum(axis=1, keepdims=True)
    tol = 8 * P.shape[1] * _EPS
    return np.all(np.abs(P - c) <= tol * np.maximum(c, np.finfo(np.float64).tiny), axis=1)


def decide_prior(p: np.ndarray, sol, *, row, row_sums: np.ndarray, lower: np.ndarray | None, rcond: float,
                 exact=None, mu_sum_error: float | None = None, corners: bool = True) -> RegularityResult:
    """The regularity decision and its reason from a solve of Φμ = π (:class:`~dprivacy._kernels.phi_solve.PhiSolution`),
    whichever solver produced it: the Prop 2 test, the corner test (ElSalamouny et al. 2014 Def 5: a corner is regular by
    construction), then, when the float solve cannot decide, ``exact()`` (a rational re-solve) if given,
    then the sign decision. ``corners=False``: the decision of ``sol`` stands (the uniform prior, decided
    by the tight-constraints solve: Prop 8)."""
    below = bool(_below_prop2(p[None, :], lower)[0])
    if not below and corners:
        # A rounded corner prior lies within rounding of the boundary, on either side of it: recognise it
        # before the sign of its μ (which only says on which side the rounding fell) decides.
        y = corner_of(p, row)
        if y is not None:
            # A corner prior is regular by construction: μ = e_y / Σ_{y'} φ_{yy'} exactly (ElSalamouny et al. 2014 Def 5,
            # Prop 3); it lies on the boundary of the region, where floating point alone cannot decide.
            n = p.size
            mu = np.zeros(n)
            mu[y] = 1.0 / row_sums[y]
            gamma = np.zeros(n)
            gamma[y] = 1.0
            return RegularityResult(
                regular=True, mu=mu, gamma=gamma, mu_sum=float(mu[y]), mu_sum_max=float(mu[y]), mu_sum_error=0.0,
                residual=sol.residual, error_bound=0.0, margin=math.inf, method="corner", rcond=rcond,
                nullity=sol.nullity, consistent=True, reason=None, boundary=True, certainty="exact")
        if exact is not None and sol.status == "undecided":
            note = f"the float solve could not decide (margin {sol.margin:.3g}); "
            sol = exact()
            sol.note = note + sol.note
    return _regularity_result(p, sol, row_sums=row_sums, lower=lower, below=below, rcond=rcond,
                              mu_sum_error=mu_sum_error)


def _regularity_result(p, sol, *, row_sums, lower, below, rcond, mu_sum_error) -> RegularityResult:
    n = p.size
    common = dict(method=sol.method, rcond=rcond, nullity=sol.nullity)
    if sol.status == "inconsistent":
        nan = np.full(n, np.nan)
        return RegularityResult(
            regular=False, mu=nan, gamma=nan, mu_sum=math.nan, mu_sum_max=math.nan, mu_sum_error=math.nan,
            residual=math.nan, error_bound=math.inf, margin=-math.inf, consistent=False,
            reason=f"μΦ = π has no solution: {sol.note}{_ps.describe_singular(sol.nullity)}",
            certainty=sol.certainty, **common)
    mu = sol.x
    mu_sum = mu_sum_max = float(mu.sum())
    if sol.sum_range is not None and sol.x_min_sum is not None:
        mu = sol.x_min_sum  # the best Thm 2 bound among the non-negative solutions
        mu_sum, mu_sum_max = sol.sum_range
    elif sol.singular and sol.status != "exists":
        mu_sum_max = math.nan
    bounds = sol.bounds if sol.bounds is not None else sol.error_bound
    err = float(sol.error_bound)
    if mu_sum_error is None:
        mu_sum_error = float(np.sum(np.broadcast_to(bounds, mu.shape)))
    neg = np.flatnonzero(mu < -np.asarray(bounds))
    regular = sol.status == "exists" and not below
    boundary = sol.status == "undecided" and not below
    mins = float(sol.x.min())
    reason = None
    if below:
        if lower is None:
            zeros = np.flatnonzero(p <= 0)
            reason = (f"π[{int(zeros[0])}] = 0 ({zeros.size} zero entr{'y' if zeros.size == 1 else 'ies'}): every "
                      "entry of a regular prior is positive (ElSalamouny et al. 2014 Prop 2)")
        else:
            y = int(np.argmax(lower - p))
            reason = (f"π[{y}] = {p[y]:.6g} is below the lower bound {lower[y]:.6g} that every regular prior "
                      "satisfies (ElSalamouny et al. 2014 Prop 2)")
        if neg.size:
            reason = _negative_reason(mu, neg, err) + "; " + reason
    elif boundary:
        reason = (f"undecided: {sol.note}π lies on the boundary of the region within rounding (min μ = {mins:.3g}, "
                  f"error bound {err:.3g}); floating point cannot tell whether it is regular")
        if sol.nullity:
            reason += "; " + _ps.describe_singular(sol.nullity)
    elif not regular:
        reason = _negative_reason(mu, neg, err)
        if sol.singular:
            reason = (f"no solution of μΦ = π is non-negative ({_ps.describe_singular(sol.nullity)}); the best one "
                      f"has min μ = {mins:.6g}. " + reason)
        if sol.note:
            reason += f" ({sol.note.rstrip('; ')})"
    certainty = "certified" if below and sol.certainty not in _ps.RIGOROUS else sol.certainty
    return RegularityResult(
        regular=bool(regular), mu=mu, gamma=mu * row_sums, mu_sum=float(mu_sum), mu_sum_max=float(mu_sum_max),
        mu_sum_error=float(mu_sum_error), residual=float(sol.residual), error_bound=err, margin=float(sol.margin),
        consistent=True, negative=neg, negative_values=mu[neg], reason=reason, boundary=bool(boundary),
        certainty=certainty, **common,
    )


def _negative_reason(mu: np.ndarray, neg: np.ndarray, tol: float) -> str:
    if neg.size == 0:
        k = int(np.argmin(mu))
        if not math.isfinite(tol):  # decided by a certificate of infeasibility (Farkas), not entry by entry
            return (f"no μ ≥ 0 solves μΦ = π (certified as a whole, not entry by entry); the computed μ has "
                    f"min μ[{k}] = {mu[k]:.6g}")
        return f"μ[{k}] = {mu[k]:.6g} is below −{tol:.2g}"
    order = neg[np.argsort(mu[neg])]
    # entries at the rounding level of Φ's stored entries (−2e-18 beside −0.43: exactly 0 for the exact
    # e^{−εd}) are negative for the stored matrix only: counted apart, not listed as if they mattered
    tiny = np.abs(mu[order]) <= 1e-12 * float(np.abs(mu).max())
    big, small = order[~tiny], int(tiny.sum())
    if big.size == 0:
        big, small = order, 0
    shown = ", ".join(f"μ[{int(i)}] = {mu[i]:.6g}" for i in big[:5])
    more = f" (and {big.size - 5} more)" if big.size > 5 else ""
    rounding = (f"; {small} more within 1e-12 of the largest |μ| (the rounding of Φ's stored entries)" if small else "")
    return f"{big.size} negative entr{'y' if big.size == 1 else 'ies'} of μ: {shown}{more}{rounding}"
