"""Regular priors: the region of priors on which d-privacy bounds utility (ElSalamouny et al. 2014 §4).

For a metric space (Y, d) and a privacy level ε, the *privacy-constraints matrix* is
Φ = [e^{−ε d(y, y')}] (ElSalamouny et al. 2014 Def 3). A prior π is *ε·d-regular* when π = μΦ for some row vector
μ ≥ 0 (ElSalamouny et al. 2014 Def 4; ElSalamouny et al. 2013 Def 5 for graph metrics). Regular priors

* have bounded ratios π_y / π_y' ≤ e^{ε d(y, y')} (ElSalamouny et al. 2014 Prop 1) and entries between
  1/Σ_y' e^{ε d(y,y')} and 1/Σ_y' e^{−ε d(y,y')} (Prop 2);
* are exactly the convex combinations Σ_y γ_y c^y of the *corner priors*
  c^y_{y'} = φ_{yy'} / Σ_{y''} φ_{yy''} (Def 5, Prop 3), with γ_y = μ_y Σ_{y'} φ_{yy'};
* admit the utility bound U ≤ Σ_y μ_y for every d-private mechanism (Thm 2, in :mod:`dprivacy.bounds`).

Deciding regularity is a sign test on the solution of the linear system μΦ = π, and so is the
existence of a tight-constraints mechanism (Φz = 1): both go through the one certified solve of
:mod:`dprivacy._kernels.phi_solve` (dense Φ) or :mod:`dprivacy._kernels.solve` (grids), with one set of
constants, one certainty vocabulary and one description of a singular Φ (ElSalamouny et al. 2013 App. B:
α = e^{−ε} = 1/3 on the cube with antipodal edges, where a linear program decides whether *some*
solution is non-negative). The solve reports a componentwise error bound on μ, the decision says how
sure it is (``margin``, ``certainty``), corner priors (on the boundary of the region, where floating
point alone cannot decide) are recognised by one test for dense spaces and grids, and the uniform prior
is decided by the tight-constraints solve itself (ElSalamouny et al. 2014 Prop 8: it is regular iff a tight-constraints
mechanism exists, with μ = z/|Y|).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._kernels import phi_solve as _ps
from ._kernels.prior_decision import RegularityResult, _below_prop2, _corner_rows, decide_prior
from ._validate import as_float_matrix, as_prior, check_epsilon
from .sampling import as_generator
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

def _space_of(space) -> MetricSpace:
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a dprivacy MetricSpace, got {type(space).__name__}")
    return space


def constraints_matrix(space: MetricSpace, *, epsilon: float) -> np.ndarray:
    """The privacy-constraints matrix Φ of ε·d: φ_{yy'} = e^{−ε d(y, y')} (ElSalamouny et al. 2014 Def 3).

    Symmetric, unit diagonal, entries in [0, 1] (0 at infinite distance). Dense n × n: refused with a
    ``MemoryError`` when it would not fit (grids have structured solvers instead).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 3.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
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
    r"""The corner priors of ε·d, one per row: c^y_{y'} = φ_{yy'} / \sum_{y''} φ_{yy''} (ElSalamouny et al. 2014 Def 5).

    Row y is the regular prior "maximally biased" towards y: its entry y attains the upper bound of
    ElSalamouny et al. 2014 Prop 2, and it is regular with μ = e_y / Σ_{y'} φ_{yy'}. The regular priors are exactly the
    convex hull of these rows (Prop 3).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 5, Prop 3.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 6, Prop 4.
    """
    phi = constraints_matrix(space, epsilon=epsilon)
    return phi / phi.sum(axis=1, keepdims=True)


def probability_bounds(space: MetricSpace, *, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Bounds on every entry of a regular prior (ElSalamouny et al. 2014 Prop 2).

    Returns ``(lower, upper)`` with lower_y = 1 / \sum_{y'} e^{ε d(y,y')} and
    upper_y = 1 / \sum_{y'} e^{−ε d(y,y')}. Points at infinite distance make ``lower`` 0 (the ratio
    bound of Prop 1 is vacuous across components).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
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
# Results (RegularityResult, the result of one prior, is :mod:`dprivacy._kernels.prior_decision`'s)
# ---------------------------------------------------------------------------------------------


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
    r"""Tests priors for ε·d-regularity (ElSalamouny et al. 2014 Def 4) against one factorization of Φ.

    The factorization, the error bound, the sign decision and the singular path are those of
    :class:`dprivacy._kernels.phi_solve.PhiFactor`, which :func:`dprivacy.tight_constraints` uses for
    Φz = 1: Cholesky when Φ is positive definite (e.g. Euclidean and Hamming metrics), else LU; when Φ is
    numerically singular (ElSalamouny et al. 2013 App. B) the eigen-decomposition gives the null space and each prior is
    decided by linear programs (HiGHS): consistency of μΦ = π, then max_μ min_y μ_y over the solutions,
    then min and max Σμ over the non-negative ones.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
        The privacy level; Φ = exp(−ε d).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 4, Prop 3.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
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
        self.n = phi.shape[0]
        self.row_sums = phi.sum(axis=1)
        self._fac = _ps.PhiFactor(phi)
        self.rcond = self._fac.rcond
        self.nullity = self._fac.nullity
        self.method = "eigh+linprog" if self.nullity else self._fac.kind
        self._lower = probability_bounds(self.space, epsilon=self.epsilon)[0]

    def inverse_norm(self) -> float:
        """‖Φ̃⁻¹‖₁ (= ‖Φ̃⁻¹‖∞, Φ being symmetric): from the explicit inverse up to the shared
        ``INVERSE_LIMIT`` points, else LAPACK's estimate times a safety factor; inf when Φ is singular."""
        return self._fac.inverse_norm()

    # -- public API -----------------------------------------------------------------------------
    def test(self, prior) -> RegularityResult:
        """Decide whether ``prior`` is ε·d-regular; see :class:`RegularityResult`."""
        p = as_prior(prior, self.n)
        sol = self._fac.solve(p, exact_fallback=False, sum_range=True)
        return self._decide(p, sol)


    def _decide(self, p: np.ndarray, sol) -> RegularityResult:
        exact = (lambda: self._fac.exact(p)) if self.n <= _ps.EXACT_LIMIT and not self.nullity else None
        return decide_prior(p, sol, row=lambda y: self.phi[y], row_sums=self.row_sums, lower=self._lower,
                            rcond=self.rcond, exact=exact)

    def test_many(self, priors) -> RegularityBatch:
        """Decide regularity of each row of ``priors`` (k × n) with one multi-right-hand-side solve.

        The same decision as :meth:`test` row by row: corner priors, rows the float solve cannot decide
        (priors within rounding of the boundary), and every row when Φ is singular go through :meth:`test`.
        """
        P = as_float_matrix(priors, name="priors")
        if P.shape[1] != self.n:
            raise ValueError(f"priors has {P.shape[1]} columns, expected {self.n} (one per secret)")
        P = _check_rows(P)
        k = P.shape[0]
        if self.nullity:
            rows = range(k)
            M = np.empty((k, self.n))
            regular, boundary = np.zeros(k, dtype=bool), np.zeros(k, dtype=bool)
            res, err, margin = np.empty(k), np.empty(k), np.empty(k)
        else:
            X, B, margins, resid = self._fac.solve_many(P.T)  # Φ symmetric: μΦ = π ⇔ Φ μ^T = π^T
            M = X.T.copy()
            status = np.array([_ps.decide(m) for m in margins])
            below = _below_prop2(P, self._lower)
            regular = (status == "exists") & ~below
            boundary = np.zeros(k, dtype=bool)
            res, err, margin = resid.copy(), B.max(axis=0), margins.copy()
            corners = _corner_rows(P, self.phi) & ~below
            rows = np.flatnonzero(((status == "undecided") & ~below) | corners)
        for j in rows:  # the full decision of test(): corners, exact re-solve, linear programs
            r = self.test(P[j])
            M[j], regular[j], boundary[j] = r.mu, r.regular, r.boundary
            res[j], err[j], margin[j] = r.residual, r.error_bound, r.margin
        return RegularityBatch(regular=regular, mu=M, gamma=M * self.row_sums, mu_sum=M.sum(axis=1), residual=res,
                               error_bound=err, margin=margin, method=self.method, boundary=boundary)


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


def regularity(space: MetricSpace, prior, *, epsilon: float, method: str = "auto") -> RegularityResult:
    """Whether ``prior`` is ε·d-regular on ``space`` (ElSalamouny et al. 2014 Def 4), with the certificate μ ≥ 0,
    μΦ = π, the corner coefficients γ (Prop 3) and Σμ (the Thm 2 bound); or, when it is not, which
    entries of μ are negative and by how much. A regular prior is one for which the tight-constraints
    mechanism, when it exists, is optimal (ElSalamouny et al. 2014 Thm 4).

    ``method``: ``"dense"`` factorizes Φ (:class:`RegularityTester`; for many priors on the same space
    build one tester); ``"structured"`` solves Φμ = π by conjugate gradients on the FFT operator of a
    grid (no n×n matrix); ``"auto"`` takes the structured solver on grids above
    :data:`~dprivacy._kernels.dispatch.STRUCTURED_MIN_CELLS` ``["regularity"]`` cells (where it is faster,
    measured), else the dense one. Both decide with the certified solve that
    :func:`dprivacy.tight_constraints` uses, and recognise the corner priors with one test.

    The uniform prior is decided by :func:`dprivacy.tight_constraints` itself (same ``method``): by
    ElSalamouny et al. 2014 Prop 8 it is regular iff a tight-constraints mechanism exists, and then μ = z/|Y|. So the
    two front doors cannot disagree, closed forms included (a line, a Manhattan grid, a ball-size
    symmetric space), and they describe a singular Φ with the same nullity.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 4, Prop 3.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 5.
    """
    from .spaces import GridSpace, SumLineSpace
    from ._kernels.dispatch import takes_structured

    space = _space_of(space)
    e = check_epsilon(epsilon)
    if method not in ("auto", "dense", "structured"):
        raise ValueError(f"method must be one of 'auto', 'dense', 'structured'; got {method!r}")
    grid = isinstance(space, (GridSpace, SumLineSpace))
    if method == "structured" and not grid:
        raise ValueError(f"method='structured' needs a grid (GridSpace) or a sum line (SumLineSpace), got {space.name}")
    p = as_prior(prior, space.n)
    if np.all(p == p[0]):
        return _uniform_regularity(space, p, e, method)
    if method == "structured" or (method == "auto" and takes_structured(space, "regularity")):
        from ._kernels.dispatch import SUM_LINE_DENSE_FALLBACK
        from ._kernels.regularity import regularity_grid, regularity_line

        if not isinstance(space, SumLineSpace):
            return regularity_grid(space, p, epsilon=e)
        r = regularity_line(space, p, epsilon=e)
        if r.certain or method == "structured" or space.n > SUM_LINE_DENSE_FALLBACK:
            return r
        # undecided by the sum-line certificates: the dense certified tester decides
    return RegularityTester(space, epsilon=e).test(p)


def _uniform_regularity(space: MetricSpace, p: np.ndarray, e: float, method: str) -> RegularityResult:
    """The uniform prior through the tight-constraints solve (ElSalamouny et al. 2014 Prop 8: μ = z/|Y|)."""
    from .mechanisms.tight import tight_constraints

    t = tight_constraints(space, epsilon=e, method=method)
    p0 = float(p[0])
    if t.exists:
        status = "exists"
    elif not getattr(t, "consistent", True):
        status = "inconsistent"
    else:
        status = "absent" if t.decided else "undecided"
    sol = _ps.PhiSolution(
        x=t.z * p0, status=status, certainty=t.certainty, method=t.method, residual=t.residual * p0,
        condition=t.condition, error_bound=t.error_bound * p0, margin=t.margin, singular=bool(t.singular),
        nullity=t.nullity, note="" if t.decided and math.isfinite(t.error_bound) else f"{t.reason}; ")
    n = space.n
    if hasattr(t, "grid") or hasattr(t, "delta"):  # grid or sum-line solvers: rows and row sums matrix-free
        from ._kernels.regularity import constraints_operator

        row_sums = constraints_operator(space, e).matvec(np.ones(n))
        return decide_prior(p, sol, row=lambda y: np.exp(-e * space.distances_from(y)), row_sums=row_sums,
                            lower=None, rcond=math.nan, mu_sum_error=math.sqrt(n) * sol.error_bound, corners=False)
    phi = constraints_matrix(space, epsilon=e)
    rcond = 1.0 / t.condition if t.condition else math.nan
    return decide_prior(p, sol, row=lambda y: phi[y], row_sums=phi.sum(axis=1),
                        lower=probability_bounds(space, epsilon=e)[0], rcond=rcond, mu_sum_error=n * sol.error_bound,
                        corners=False)


def sample_regular_priors(space: MetricSpace, *, epsilon: float, size: int | None = None, rng=None,
                          concentration: float = 1.0, return_gamma: bool = False):
    r"""Random ε·d-regular priors: π = Σ_y γ_y c^y with γ ~ Dirichlet(concentration · 1).

    By ElSalamouny et al. 2014 Prop 3 every such π is regular (μ = γ / Φ1 ≥ 0), and every regular prior arises. The
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
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 5, Prop 3
       (the regular priors are the convex hull of the corner priors).
    """
    c = corner_priors(space, epsilon=epsilon)
    gen = as_generator(rng)
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
