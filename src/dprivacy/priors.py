"""Regular priors: the region of priors on which d-privacy bounds utility (seed 000 §4).

For a metric space (Y, d) and a privacy level ε, the *privacy-constraints matrix* is
Φ = [e^{−ε d(y, y')}] (seed 000 Def 3). A prior π is *ε·d-regular* when π = μΦ for some row vector
μ ≥ 0 (seed 000 Def 4; seed 004 Def 5 for graph metrics). Regular priors

* have bounded ratios π_y / π_y' ≤ e^{ε d(y, y')} (seed 000 Prop 1) and entries between
  1/Σ_y' e^{ε d(y,y')} and 1/Σ_y' e^{−ε d(y,y')} (Prop 2);
* are exactly the convex combinations Σ_y γ_y c^y of the *corner priors*
  c^y_{y'} = φ_{yy'} / Σ_{y''} φ_{yy''} (Def 5, Prop 3), with γ_y = μ_y Σ_{y'} φ_{yy'};
* admit the utility bound U ≤ Σ_y μ_y for every d-private mechanism (Thm 2, in :mod:`dprivacy.bounds`).

Deciding regularity is a sign test on the solution of the linear system μΦ = π. This module does it
honestly in floating point: the solve reports an error bound on μ (the residual, its rounding and
that of Φ's entries, times ‖Φ^{-1}‖: exact for n ≤ 512, a safety-scaled LAPACK estimate above), the
decision says how sure it is (``margin``), and when Φ is singular (seed 004 App. B:
α = e^{−ε} = 1/3 on the cube with antipodal edges) the solution is not unique and a linear program
decides whether *some* solution is non-negative.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
from scipy.linalg import lapack
from scipy.optimize import linprog

from .results import Result
from ._validate import as_float_matrix, as_prior, as_rng, check_epsilon
from .spaces import MetricSpace

__all__ = [
    "RegularityResult",
    "RegularityBatch",
    "RegularityTester",
    "constraints_matrix",
    "corner_priors",
    "probability_bounds",
    "regularity",
    "sample_regular_priors",
]

_EPS = np.finfo(np.float64).eps

#: Below this reciprocal condition number (times n) the eigen-decomposition is computed to look for
#: a numerical null space of Φ.
SINGULAR_RCOND_FACTOR = 100.0

#: Eigenvalues |λ| ≤ NULL_RTOL_FACTOR · n · eps · λ_max are treated as zero: Φ's entries are only known
#: to relative precision eps, so by Weyl's inequality such eigenvalues cannot be told apart from 0.
NULL_RTOL_FACTOR = 10.0

#: Up to this size ‖Φ^{-1}‖_1 is computed exactly (one more n×n solve) from the factorization; above it, LAPACK's
#: estimator (a lower bound, in practice within a factor 3, Higham 1988) is multiplied by
#: :data:`CONDITION_SAFETY`.
EXACT_INVERSE_NORM_MAX_N = 512
CONDITION_SAFETY = 10.0

#: HiGHS feasibility tolerances used by the singular-Φ linear programs.
LP_TOLERANCE = 1e-10


def _space_of(space) -> MetricSpace:
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a dprivacy MetricSpace, got {type(space).__name__}")
    return space


def constraints_matrix(space: MetricSpace, *, epsilon: float) -> np.ndarray:
    """The privacy-constraints matrix Φ of ε·d: φ_{yy'} = e^{−ε d(y, y')} (seed 000 Def 3).

    Symmetric, unit diagonal, entries in [0, 1] (0 at infinite distance). Dense n × n: refused with a
    ``MemoryError`` when it would not fit (grids have structured solvers instead).

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 3.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 4.
    """
    from ._validate import check_epsilon
    from .spaces import _check_dense_fits

    sp = _space_of(space)
    e = check_epsilon(epsilon)
    _check_dense_fits(sp.n, "the privacy-constraints matrix")
    with np.errstate(invalid="ignore"):
        return np.exp(-e * sp.distances)


def corner_priors(space: MetricSpace, *, epsilon: float) -> np.ndarray:
    r"""The corner priors of ε·d, one per row: c^y_{y'} = φ_{yy'} / \sum_{y''} φ_{yy''} (seed 000 Def 5).

    Row y is the regular prior "maximally biased" towards y: its entry y attains the upper bound of
    seed 000 Prop 2, and it is regular with μ = e_y / Σ_{y'} φ_{yy'}. The regular priors are exactly the
    convex hull of these rows (Prop 3).

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 5, Prop 3.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 6, Prop 4.
    """
    phi = constraints_matrix(space, epsilon=epsilon)
    return phi / phi.sum(axis=1, keepdims=True)


def probability_bounds(space: MetricSpace, *, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Bounds on every entry of a regular prior (seed 000 Prop 2).

    Returns ``(lower, upper)`` with lower_y = 1 / \sum_{y'} e^{ε d(y,y')} and
    upper_y = 1 / \sum_{y'} e^{−ε d(y,y')}. Points at infinite distance make ``lower`` 0 (the ratio
    bound of Prop 1 is vacuous across components).

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Prop 2.
    """
    space = _space_of(space)
    e = check_epsilon(epsilon)
    d = space.distances
    with np.errstate(over="ignore"):
        up = np.exp(e * d).sum(axis=1)
    lower = 1.0 / up
    upper = 1.0 / np.exp(-e * d).sum(axis=1)
    return lower, upper


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegularityResult(Result):
    r"""Whether a prior π is ε·d-regular (seed 000 Def 4), with its certificate.

    Attributes
    ----------
    regular : bool
        The decision: some μ ≥ 0 satisfies μΦ = π, certified against the numerical error reported
        below. False both when π is certainly not regular and when it lies on the boundary of the
        region within rounding (``boundary``), where floating point cannot decide.
    mu : ndarray (n,)
        A solution of μΦ = π. When Φ is invertible it is *the* solution. When Φ is (numerically)
        singular and π is regular, it is the non-negative solution with the smallest Σμ (the best
        bound of seed 000 Thm 2); when π is not regular, the solution whose smallest entry is largest
        (so ``negative`` says how far from regular π is at best). ``nan`` when μΦ = π has no solution.
    gamma : ndarray (n,)
        γ_y = μ_y Σ_{y'} φ_{yy'}: the coefficients of π over the corner priors (seed 000 Prop 3);
        they sum to 1 and are all ≥ 0 iff π is regular.
    mu_sum : float
        Σ_y μ_y. For a regular prior this is the utility bound of seed 000 Thm 2.
    mu_sum_max : float
        The largest Σμ over non-negative solutions (equal to ``mu_sum`` unless the solution is not
        unique).
    mu_sum_error : float
        Bound on the error of ``mu_sum`` (direct solves: ‖Φ^{-1}1‖_1 · the residual bound).
    residual : float
        ‖μΦ − π‖_∞ as computed.
    error_bound : float
        Bound on ‖μ − μ_exact‖_∞ for the direct solve: ‖Φ^{-1}‖_∞ (‖r‖_∞ + (n+2)·eps·‖|Φ||μ| + π‖_∞),
        covering the residual, its rounding, and the rounding of Φ's entries. For the linear-program
        path it is the feasibility tolerance.
    margin : float
        min_y μ_y / error_bound. margin > 1: certainly regular (strictly inside the region);
        margin < −1: certainly not regular; |margin| ≤ 1: on the boundary of the region within
        rounding error, undecided (e.g. the corner priors, whose μ has exact zeros): ``regular`` is
        False, ``boundary`` True, and ``reason`` says so. A prior below the lower bound of seed 000
        Prop 2 (e.g. with a zero entry) is certainly not regular whatever the margin.
    method : str
        "cholesky" or "lu" (direct solve of the factored Φ), "eigh" (solve through the
        eigen-decomposition, used only if LU breaks down on a matrix with no numerically zero
        eigenvalue), or "lp" (Φ numerically singular: decided by linear programming).
    rcond : float
        Reciprocal condition number of Φ in the 1-norm (estimated for large n).
    nullity : int
        Numerical dimension of the null space of Φ, hence of the affine set {μ : μΦ = π} when it is
        non-empty. 0 when Φ is invertible.
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
        ``"certified"`` (the error bound uses the exact ‖Φ⁻¹‖, or a certified eigenvalue bound on the
        grid solver's path), ``"exact"`` (a corner prior, regular by construction) or ``"estimated"``
        (above :data:`EXACT_INVERSE_NORM_MAX_N` points ‖Φ⁻¹‖ is LAPACK's estimate times a safety factor:
        the decision is verified numerically, not certified).

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 4, Prop 3.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
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
    certainty: str = "certified"

    def __post_init__(self):
        if not self.reason:  # the vocabulary: reason is always a sentence
            how = {"exact": "exactly (a corner prior)", "estimated": "verified numerically"}.get(self.certainty, "certified")
            mn = float(np.min(self.mu)) if np.size(self.mu) else math.nan
            text = (f"regular ({how}): μΦ = π with every μ_y ≥ 0 (smallest μ_y = {mn:.6g}, margin "
                    f"{self.margin:.3g} error bounds; seed 000 Def 4)") if self.regular else "not regular"
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


@dataclass(frozen=True)
class RegularityBatch:
    """Vectorized regularity of k priors (rows), from :meth:`RegularityTester.test_many`.

    Arrays of length k (``mu`` and ``gamma`` are k×n); see :class:`RegularityResult` for the meaning.
    """

    regular: np.ndarray
    mu: np.ndarray
    gamma: np.ndarray
    mu_sum: np.ndarray
    residual: np.ndarray
    error_bound: np.ndarray
    margin: np.ndarray
    method: str
    boundary: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.regular.shape[0])

    @property
    def certain(self) -> np.ndarray:
        return np.abs(self.margin) > 1.0


# ---------------------------------------------------------------------------------------------
# The tester: factor Φ once, test many priors
# ---------------------------------------------------------------------------------------------


class RegularityTester:
    r"""Tests priors for ε·d-regularity (seed 000 Def 4) against one factorization of Φ.

    Φ is symmetric; it is factored once by Cholesky when positive definite (e.g. Euclidean and
    Hamming metrics), else by LU with partial pivoting. Its reciprocal condition number decides the
    path: when Φ is numerically singular (eigenvalues |λ| ≤ 10 n eps λ_max, seed 004 App. B) the
    eigen-decomposition gives the null space, and each prior is decided by linear programs (HiGHS):
    consistency of μΦ = π, then max_μ min_y μ_y over the solutions, then min Σμ.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
        The privacy level; Φ = exp(−ε d).

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 4, Prop 3.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 5, Appendix B.

    Examples
    --------
    >>> from dprivacy import spaces
    >>> t = RegularityTester(spaces.line(5), epsilon=1.0)
    >>> t.test([0.2] * 5).regular
    True
    """

    def __init__(self, space: MetricSpace, *, epsilon: float):
        self.space = _space_of(space)
        self.epsilon = check_epsilon(epsilon)
        phi = constraints_matrix(self.space, epsilon=self.epsilon)
        self.phi = phi
        n = phi.shape[0]
        self.n = n
        self.row_sums = phi.sum(axis=1)
        self._anorm = float(np.abs(phi).sum(axis=0).max())
        self._factor = None
        self.method = "lu"
        self.rcond = 0.0
        try:
            c, lower = sla.cho_factor(phi, lower=False, check_finite=False)
            rc, info = lapack.dpocon(c, self._anorm)
            self._factor = ("cholesky", (c, lower))
            self.method = "cholesky"
            self.rcond = float(rc)
        except np.linalg.LinAlgError:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sla.LinAlgWarning)
                lu, piv = sla.lu_factor(phi, check_finite=False)
            if np.all(np.diag(lu) != 0):
                rc, info = lapack.dgecon(lu, self._anorm, norm="1")
                self.rcond = float(rc)
                self._factor = ("lu", (lu, piv))
        # Numerical null space: only looked for when the factorization is (nearly) singular.
        self.nullity = 0
        self._eig = None
        if self._factor is None or self.rcond < SINGULAR_RCOND_FACTOR * n * _EPS:
            lam, vec = np.linalg.eigh(phi)
            tol = NULL_RTOL_FACTOR * n * _EPS * float(np.abs(lam).max())
            null = np.abs(lam) <= tol
            self.nullity = int(null.sum())
            self._eig = (lam, vec, null)
            if self.rcond == 0.0 or self._factor is None:
                self.rcond = float(np.abs(lam).min() / np.abs(lam).max())
            if self.nullity:
                self.method = "lp"
            elif self._factor is None:  # pragma: no cover - LU failed yet no eigenvalue is tiny
                self.method = "eigh"
        self._inv_norm = None
        self._w1 = None
        self._prop2 = probability_bounds(self.space, epsilon=self.epsilon)

    def _below_prop2(self, P: np.ndarray) -> np.ndarray:
        """Rows of P with an entry certainly below the lower bound of seed 000 Prop 2 (so certainly
        not regular): the bound is a necessary condition, checked with a relative margin for rounding."""
        lower, _ = self._prop2
        return (P < lower * (1 - 1e-9) - 1e-300).any(axis=1)

    # -- linear algebra on the factorization ---------------------------------------------------
    def _solve(self, rhs: np.ndarray) -> np.ndarray:
        kind, f = self._factor if self._factor is not None else ("eigh", None)
        if kind == "cholesky":
            return sla.cho_solve(f, rhs, check_finite=False)
        if kind == "lu":
            return sla.lu_solve(f, rhs, check_finite=False)
        lam, vec, _ = self._eig
        return vec @ ((vec.T @ rhs) / (lam[:, None] if rhs.ndim == 2 else lam))

    def inverse_norm(self) -> float:
        """‖Φ^{-1}‖_1 (= ‖Φ^{-1}‖_∞, Φ being symmetric): exact for n ≤ 512, else LAPACK's estimate
        times a safety factor of 10."""
        if self._inv_norm is None:
            if self.nullity:
                self._inv_norm = math.inf
            elif self.n <= EXACT_INVERSE_NORM_MAX_N:
                inv = self._solve(np.eye(self.n))
                self._inv_norm = float(np.abs(inv).sum(axis=0).max())
            else:
                self._inv_norm = CONDITION_SAFETY / (self.rcond * self._anorm)
        return self._inv_norm

    def _tight_diagonal_norm(self) -> float:
        # ‖Φ^{-1} 1‖_1 bounds |Σμ − Σμ̂| = |(Φ^{-1}1)·r| by ‖Φ^{-1}1‖_1 ‖r‖_∞.
        if self._w1 is None:
            self._w1 = float(np.abs(self._solve(np.ones(self.n))).sum())
        return self._w1

    # -- public API -----------------------------------------------------------------------------
    def test(self, prior) -> RegularityResult:
        """Decide whether ``prior`` is ε·d-regular; see :class:`RegularityResult`."""
        p = as_prior(prior, self.n)
        if self.nullity:
            return self._test_singular(p)
        b = self.test_many(p[None, :])
        mu = b.mu[0]
        return self._result_direct(p, mu, float(b.residual[0]), float(b.error_bound[0]))


    def test_many(self, priors) -> RegularityBatch:
        """Decide regularity of each row of ``priors`` (k × n) with one multi-right-hand-side solve.

        For a singular Φ the rows are decided one by one by :meth:`test` (linear programs).
        """
        P = as_float_matrix(priors, name="priors")
        if P.shape[1] != self.n:
            raise ValueError(f"priors has {P.shape[1]} columns, expected {self.n} (one per secret)")
        P = _check_rows(P)
        if self.nullity:
            rs = [self.test(row) for row in P]
            return RegularityBatch(
                regular=np.array([r.regular for r in rs]),
                mu=np.stack([r.mu for r in rs]),
                gamma=np.stack([r.gamma for r in rs]),
                mu_sum=np.array([r.mu_sum for r in rs]),
                residual=np.array([r.residual for r in rs]),
                error_bound=np.array([r.error_bound for r in rs]),
                margin=np.array([r.margin for r in rs]),
                method=self.method,
                boundary=np.array([r.boundary for r in rs]),
            )
        rhs = P.T  # Φ symmetric: μΦ = π  ⇔  Φ μ^T = π^T
        M = self._solve(rhs)
        R = rhs - self.phi @ M
        M = M + self._solve(R)  # one step of iterative refinement
        R = rhs - self.phi @ M
        res = np.abs(R).max(axis=0)
        rounding = (self.n + 2) * _EPS * (self.phi @ np.abs(M) + np.abs(rhs)).max(axis=0)
        err = self.inverse_norm() * (res + rounding)
        err = np.maximum(err, np.finfo(np.float64).tiny)
        mins = M.min(axis=0)
        mu = M.T
        below = self._below_prop2(P)
        return RegularityBatch(
            regular=(mins > err) & ~below,
            boundary=(np.abs(mins) <= err) & ~below,
            mu=mu,
            gamma=mu * self.row_sums,
            mu_sum=mu.sum(axis=1),
            residual=res,
            error_bound=err,
            margin=mins / err,
            method=self.method,
        )

    # -- result construction ----------------------------------------------------------------
    def _corner_of(self, p: np.ndarray) -> int | None:
        """y when ``p`` is the corner prior c^y = φ_y / Σφ_y (seed 000 Def 5) up to the rounding of its own
        computation (a few units in the last place per entry), else None."""
        y = int(np.argmax(p))
        c = self.phi[y] / self.row_sums[y]
        tol = 8 * self.n * np.finfo(np.float64).eps
        return y if np.all(np.abs(p - c) <= tol * np.maximum(c, np.finfo(np.float64).tiny)) else None

    def _result_direct(self, p, mu, residual, err) -> RegularityResult:
        mins = float(mu.min())
        if abs(mins) <= err:
            y = self._corner_of(p)
            if y is not None:
                # A corner prior is regular by construction: μ = e_y / Σ_{y'} φ_{yy'} exactly (seed 000 Def 5,
                # Prop 3); it lies on the boundary of the region, where floating point alone cannot decide.
                exact = np.zeros(self.n)
                exact[y] = 1.0 / self.row_sums[y]
                gamma = np.zeros(self.n)
                gamma[y] = 1.0
                return RegularityResult(
                    regular=True, mu=exact, gamma=gamma, mu_sum=float(exact[y]), mu_sum_max=float(exact[y]),
                    mu_sum_error=0.0, residual=residual, error_bound=0.0, margin=math.inf, method="corner",
                    rcond=self.rcond, nullity=0, consistent=True, reason=None, boundary=True, certainty="exact")
        below = bool(self._below_prop2(p[None, :])[0])
        regular = mins > err and not below
        boundary = abs(mins) <= err and not below
        neg = np.flatnonzero(mu < -err)
        total_res = err / self.inverse_norm() if np.isfinite(self.inverse_norm()) else math.nan
        mu_sum = float(mu.sum())
        reason = None
        if below:
            lower, _ = self._prop2
            y = int(np.argmax(lower - p))
            reason = (f"π[{y}] = {p[y]:.6g} is below the lower bound {lower[y]:.6g} that every regular prior "
                      "satisfies (seed 000 Prop 2)")
            if neg.size:
                reason = _negative_reason(mu, neg, err) + "; " + reason
        elif boundary:
            reason = (f"undecided: π lies on the boundary of the region within rounding (min μ = {mins:.3g}, "
                      f"error bound {err:.3g}); floating point cannot tell whether it is regular")
        elif not regular:
            reason = _negative_reason(mu, neg, err)
        return RegularityResult(
            regular=bool(regular),
            mu=mu,
            gamma=mu * self.row_sums,
            mu_sum=mu_sum,
            mu_sum_max=mu_sum,
            mu_sum_error=self._tight_diagonal_norm() * total_res,
            residual=residual,
            error_bound=err,
            margin=mins / err,
            method=self.method,
            rcond=self.rcond,
            nullity=0,
            consistent=True,
            negative=neg,
            negative_values=mu[neg],
            reason=reason,
            boundary=bool(boundary),
            certainty="estimated" if self.n > EXACT_INVERSE_NORM_MAX_N else "certified",
        )

    def _test_singular(self, p: np.ndarray) -> RegularityResult:
        lam, vec, null = self._eig
        n = self.n
        vr, lr, v0 = vec[:, ~null], lam[~null], vec[:, null]
        # μΦ = π is solvable iff π has no component along the null space of Φ (Φ symmetric).
        comp = v0.T @ p
        cons_tol = NULL_RTOL_FACTOR * n * _EPS * max(1.0, float(np.linalg.norm(p)))
        nan = np.full(n, np.nan)
        common = dict(method=self.method, rcond=self.rcond, nullity=self.nullity)
        if np.abs(comp).max() > cons_tol:
            return RegularityResult(
                regular=False, mu=nan, gamma=nan, mu_sum=math.nan, mu_sum_max=math.nan,
                mu_sum_error=math.nan, residual=math.nan, error_bound=cons_tol, margin=-math.inf,
                consistent=False,
                reason=(
                    f"μΦ = π has no solution: Φ is singular (null space of dimension {self.nullity}) "
                    f"and π has a component of size {np.abs(comp).max():.3g} along it "
                    f"(tolerance {cons_tol:.2g})"
                ),
                **common,
            )
        # The solutions are μ = μ_0 + (null space); in the eigenbasis of the non-zero eigenvalues
        # the constraints V_r^T μ = Λ_r^{-1} V_r^T π have orthonormal rows (well conditioned).
        a_eq = vr.T
        b_eq = (vr.T @ p) / lr
        opts = dict(primal_feasibility_tolerance=LP_TOLERANCE, dual_feasibility_tolerance=LP_TOLERANCE)
        # LP 1: maximize t subject to μ_y ≥ t and the equations (variables μ, t).
        c = np.zeros(n + 1)
        c[-1] = -1.0
        a_ub = np.hstack([-np.eye(n), np.ones((n, 1))])
        a_eq1 = np.hstack([a_eq, np.zeros((a_eq.shape[0], 1))])
        lp1 = linprog(c, A_ub=a_ub, b_ub=np.zeros(n), A_eq=a_eq1, b_eq=b_eq,
                      bounds=[(None, None)] * n + [(None, 1.0)], method="highs", options=opts)
        if lp1.status != 0:  # pragma: no cover - the LP is feasible and bounded by construction
            raise RuntimeError(f"HiGHS failed on the regularity LP: {lp1.message}")
        t = float(lp1.x[-1])
        lp_tol = 100 * LP_TOLERANCE * max(1.0, float(np.abs(b_eq).max()))
        regular = t >= -lp_tol
        if regular:
            lo = min(0.0, t)
            bounds = [(lo, None)] * n
            lp_min = linprog(np.ones(n), A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs", options=opts)
            lp_max = linprog(-np.ones(n), A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs", options=opts)
            mu = lp_min.x if lp_min.status == 0 else lp1.x[:n]
            mu_sum_max = float(-lp_max.fun) if lp_max.status == 0 else math.nan
            neg = np.zeros(0, dtype=np.intp)
            reason = None
        else:
            mu = lp1.x[:n]
            mu_sum_max = math.nan
            neg = np.flatnonzero(mu < -lp_tol)
            reason = (
                f"no solution of μΦ = π is non-negative (Φ singular, solutions form an affine set of "
                f"dimension {self.nullity}); the best one has min μ = {t:.6g}. " + _negative_reason(mu, neg, lp_tol)
            )
        residual = float(np.abs(self.phi @ mu - p).max())
        mu_sum = float(mu.sum())
        return RegularityResult(
            regular=bool(regular), mu=mu, gamma=mu * self.row_sums, mu_sum=mu_sum,
            mu_sum_max=mu_sum_max if regular else math.nan, mu_sum_error=n * lp_tol,
            residual=residual, error_bound=lp_tol, margin=t / lp_tol, consistent=True,
            negative=neg, negative_values=mu[neg], reason=reason, **common,
        )


def _check_rows(P: np.ndarray) -> np.ndarray:
    # Vectorized version of as_prior for many rows.
    if not np.isfinite(P).all():
        i, j = np.argwhere(~np.isfinite(P))[0]
        raise ValueError(f"priors must be finite; entry [{i}, {j}] is {P[i, j]}")
    if (P < 0).any():
        i, j = np.argwhere(P < 0)[0]
        raise ValueError(f"priors must be non-negative; entry [{i}, {j}] is {P[i, j]:.6g}")
    s = P.sum(axis=1)
    bad = np.flatnonzero(np.abs(s - 1.0) > 1e-9)
    if bad.size:
        raise ValueError(f"each prior must sum to 1; row {bad[0]} sums to {s[bad[0]]:.12g}")
    return P


def _negative_reason(mu: np.ndarray, neg: np.ndarray, tol: float) -> str:
    if neg.size == 0:
        k = int(np.argmin(mu))
        return f"μ[{k}] = {mu[k]:.6g} is below −{tol:.2g}"
    order = neg[np.argsort(mu[neg])]
    shown = ", ".join(f"μ[{int(i)}] = {mu[i]:.6g}" for i in order[:5])
    more = f" (and {order.size - 5} more)" if order.size > 5 else ""
    return f"{neg.size} negative entr{'y' if neg.size == 1 else 'ies'} of μ: {shown}{more}"


def regularity(space: MetricSpace, prior, *, epsilon: float, method: str = "auto") -> RegularityResult:
    """Whether ``prior`` is ε·d-regular on ``space`` (seed 000 Def 4), with the certificate μ ≥ 0,
    μΦ = π, the corner coefficients γ (Prop 3) and Σμ (the Thm 2 bound); or, when it is not, which
    entries of μ are negative and by how much. A regular prior is one for which the tight-constraints
    mechanism, when it exists, is optimal (seed 000 Thm 4).

    ``method``: ``"dense"`` factorizes Φ (:class:`RegularityTester`; for many priors on the same space
    build one tester); ``"structured"`` solves Φμ = π by conjugate gradients on the FFT operator of a
    grid (:func:`dprivacy.structured.regularity.regularity_grid`, no n×n matrix); ``"auto"`` takes the
    structured solver on grids above the same size as :func:`dprivacy.mechanisms.tight.tight_constraints`.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 4, Prop 3.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 5.
    """
    from .spaces import GridSpace

    if method not in ("auto", "dense", "structured"):
        raise ValueError(f"method must be one of 'auto', 'dense', 'structured'; got {method!r}")
    if method == "auto":
        from .mechanisms.tight import STRUCTURED_MIN_CELLS

        method = "structured" if isinstance(space, GridSpace) and space.n > STRUCTURED_MIN_CELLS else "dense"
    if method == "structured":
        if not isinstance(space, GridSpace):
            raise ValueError(f"method='structured' needs a grid (GridSpace), got {space.name}")
        from .structured.regularity import regularity_grid

        return regularity_grid(space, prior, epsilon=epsilon)
    return RegularityTester(space, epsilon=epsilon).test(prior)


def sample_regular_priors(space: MetricSpace, *, epsilon: float, size: int | None = None, rng=None,
                          concentration: float = 1.0, return_gamma: bool = False):
    r"""Random ε·d-regular priors: π = Σ_y γ_y c^y with γ ~ Dirichlet(concentration · 1).

    By seed 000 Prop 3 every such π is regular (μ = γ / Φ1 ≥ 0), and every regular prior arises. The
    distribution is uniform on the *simplex of coefficients γ* (for concentration 1), pushed forward
    through the linear map γ ↦ γC (C: the corner priors as rows); it is **not** the uniform
    distribution on the polytope of regular priors, which the map distorts.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    size : int, optional
        Number of priors; None returns a single prior of shape (n,).
    rng : Generator, int or None
    concentration : float
        Dirichlet parameter (< 1 favours priors near the corners, > 1 near their barycentre).
    return_gamma : bool
        Also return the coefficients γ.

    Returns
    -------
    priors : ndarray, shape (size, n) or (n,)
    gamma : ndarray, same shape (only with ``return_gamma``)

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 5, Prop 3
       (the regular priors are the convex hull of the corner priors).
    """
    c = corner_priors(space, epsilon=epsilon)
    gen = as_rng(rng)
    conc = check_epsilon(concentration, name="concentration")
    n = c.shape[0]
    k = 1 if size is None else int(size)
    if size is not None and (isinstance(size, bool) or k != size or k < 0):
        raise ValueError(f"size must be a non-negative integer or None, got {size!r}")
    gamma = gen.dirichlet(np.full(n, conc), size=k)
    pri = gamma @ c
    pri /= pri.sum(axis=1, keepdims=True)  # remove rounding drift so the result passes as_prior
    if size is None:
        pri, gamma = pri[0], gamma[0]
    return (pri, gamma) if return_gamma else pri
