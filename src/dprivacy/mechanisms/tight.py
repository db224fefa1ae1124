"""The tight-constraints mechanism and the test of its existence.

A mechanism H : Y → Y is *tight-constraints* for the metric ε·d (seed 000 Def 6; seed 004 Def 7) when
every privacy constraint towards a diagonal entry is tight:

    h_{y y'} = e^{−ε d(y, y')} h_{y' y'}   for all y, y'.

Writing z = diag(H), the rows of such an H sum to one iff Φ z = 1 with Φ = exp(−ε d) (seed 000 Prop 7,
the diagonal characterization), so the tight-constraints mechanisms are exactly H = Φ diag(z) for the
*non-negative* solutions z of Φ z = 1. One exists iff the uniform prior is ε·d-regular (seed 000
Prop 8; seed 004 Lemma 4); when it exists it is ε·d-private (Prop 6) and optimal for the binary gain
for every ε·d-regular prior at once (Thm 4, Cor 3). On a ball-size symmetric space z is constant
(Prop 9). Φ may be singular (seed 004 App. B: the cube with antipodal edges at e^{−ε} = 1/3); then
the solutions form an affine space and we look for a non-negative one with a linear program.

Existence is a question about the *signs* of a computed vector, so each answer says how sure it is:
every entry of z is compared with a bound on its forward error (see :func:`tight_constraints`), and a
sign that rounding could flip makes the answer "undecided" rather than a guess. The object decided
on is the float64 matrix Φ̃ = fl(exp(−ε d)) (each entry within a few units in the last place of the
real Φ; the papers' question differs from this one only for z within ~κ(Φ)·1e-16 of 0).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..results import Result
from .._validate import check_epsilon
from ..channels import Channel
from ..spaces import MetricSpace

#: Undecided float answers are re-solved in exact rational arithmetic up to this many points.
EXACT_LIMIT = 40

#: The error bound first uses LAPACK's 1-norm estimate of ‖Φ⁻¹‖ times :data:`ESTIMATE_SAFETY`
#: (Hager–Higham estimates are lower bounds, rarely off by more than 3). When that decides the signs
#: with |margin| > :data:`TRUST_ESTIMATE` (so the estimate would have to be low by a factor over 10⁶ to
#: change the answer) it is kept; otherwise, up to INVERSE_LIMIT points, the explicit inverse of Φ̃
#: gives the componentwise bound (rigorous up to second-order rounding terms).
INVERSE_LIMIT = 2000
ESTIMATE_SAFETY = 3.0
TRUST_ESTIMATE = 1e6

#: Steps of iterative refinement (residuals in extended precision where the platform has it).
REFINE_STEPS = 3

#: Φ is treated as singular when LAPACK's reciprocal condition estimate is at most n·eps and an
#: eigenvalue lies within n·eps·‖Φ‖₂ of zero (numpy's rank convention).
_EPS = float(np.finfo(np.float64).eps)

#: Φz = 1 counts as consistent when the least-squares residual is at most this (‖·‖∞).
CONSISTENCY_TOL = 1e-8

#: In the singular case, a max–min LP value below −LP_TOL proves that no non-negative solution exists.
LP_TOL = 1e-9

#: Relative tolerance when comparing distances for ball-size symmetry.
SYMMETRY_RTOL = 1e-9

_U = _EPS / 2
_U_RESIDUAL = float(np.finfo(np.longdouble).eps) / 2
_RESIDUAL_CHUNK_ELEMENTS = 2**21
_METHODS = ("auto", "dense", "structured", "closed-form", "exact")

#: On grids with more cells than this, ``method="auto"`` takes the structured FFT + CG solver (measured:
#: 16×16 dense 5 ms vs structured 1 ms; 50×50 0.83 s vs 3 ms; benchmarks/RESULTS.md).
STRUCTURED_MIN_CELLS = 256


@dataclass(frozen=True)
class TightResult(Result):
    """What every solve of Φ z = 1 returns (seed 000 Def 6, Prop 6–8): whether the tight-constraints
    mechanism exists at ε, its diagonal z and the certificate of the decision. The dense solver returns
    a :class:`TightConstraintsResult` and the grid solver a
    :class:`~dprivacy.structured.GridTightResult`; both are TightResults with the fields below, and
    ``.mechanism`` (None when it does not exist). The fields are documented on
    :class:`TightConstraintsResult`.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 6, Prop 6,
       Prop 7.
    """

    exists: bool
    epsilon: float
    z: np.ndarray = field(repr=False)
    negative: tuple = field(repr=False)
    reason: str
    residual: float
    condition: float | None
    error_bound: float
    margin: float
    certainty: str
    singular: bool | None
    nullity: int | None
    method: str

    @property
    def decided(self) -> bool:
        """True unless rounding (or an unconverged solve) could change the answer."""
        return self.certainty != "undecided"

    @property
    def min_z(self) -> float:
        """The smallest entry of z."""
        return float(self.z.min()) if self.z.size else math.inf

    @property
    def ok(self) -> bool:
        """The common flag of :class:`dprivacy.results.Result` (here: ``exists``)."""
        return bool(self.exists)

    def __bool__(self) -> bool:
        return bool(self.exists)


@dataclass(frozen=True)
class TightConstraintsResult(TightResult):
    """Outcome of :func:`tight_constraints` on a dense space (a :class:`TightResult`).

    Attributes
    ----------
    exists : bool
        True only when a tight-constraints mechanism is shown to exist: z ≥ 0 with every sign certain
        (or exact). False when it does not exist *or* when the computation cannot tell (then
        ``certainty == "undecided"`` and ``reason`` says why).
    epsilon : float
        The ε of the metric ε·d.
    z : ndarray, shape (n,)
        The diagonal: the computed solution of Φ z = 1 (seed 000 Prop 7). When Φ is singular, the
        non-negative solution found (or, if none, the solution whose smallest entry is largest); when
        Φz = 1 is inconsistent, the least-squares solution.
    channel : Channel or None
        H[y, y'] = e^{−ε d(y, y')} z_{y'} when ``exists``; None otherwise (never a matrix with negative
        entries).
    negative : (ndarray, ndarray)
        Indices and values of the negative entries of ``z`` (empty when none).
    reason : str
        One or two sentences: why it exists or not, and how the answer was obtained.
    residual : float
        ‖Φ̃ z − 1‖∞ (computed in extended precision when available).
    condition : float or None
        Estimate of the 1-norm condition number κ₁(Φ) (LAPACK ``pocon``/``gecon``); None for the
        closed form.
    error_bound : float
        Bound on max_y |z_y − z*_y|, z* the exact solution of Φ̃ z = 1 (0 for exact arithmetic).
    margin : float
        min_y z_y / b_y with b_y the per-entry error bound: > 1 means every entry is certainly
        positive (exists), < −1 means some entry is certainly negative (does not exist); in between the
        float computation cannot decide. ±inf for exact answers.
    certainty : str
        ``"certified"`` (decided by the error bound), ``"estimated"`` (decided by an error bound built on
        LAPACK's condition estimate, above :data:`INVERSE_LIMIT` points: verified numerically, not
        certified), ``"exact"`` (rational arithmetic on Φ̃),
        ``"closed-form"`` (seed 000 Prop 9), ``"numerical"`` (Φ singular to working precision: decided
        on its numerical null space, see :data:`CONSISTENCY_TOL`, :data:`LP_TOL`), ``"undecided"``.
    singular : bool or None
        Whether Φ is singular to working precision; None when not examined (closed form).
    nullity : int or None
        dim ker Φ. When Φz = 1 is consistent its solutions form an affine space of this dimension
        (0: the solution is unique). None when not examined.
    method : str
        How z was computed: ``"closed-form"``, ``"cholesky"``, ``"lu"``, ``"exact"``,
        ``"eigh+linprog"`` (singular Φ), ``"eigh"`` (singular and inconsistent).
    """

    channel: Channel | None = field(default=None, repr=False)
    space: MetricSpace | None = field(default=None, repr=False, compare=False)

    @property
    def mechanism(self):
        """The tight-constraints mechanism as a :class:`~dprivacy.mechanisms.base.DenseMechanism` (None
        when it does not exist), private by seed 000 Prop 6 (z ≥ 0 on a metric)."""
        if not self.exists or self.channel is None:
            return None
        m = self.__dict__.get("_mechanism")
        if m is None:
            from .base import DenseMechanism, PrivacyCertificate

            rigorous = self.certainty in ("certified", "exact", "closed-form")
            how = {"certified": "certified by a forward-error bound", "exact": "exact in rational arithmetic",
                   "closed-form": "by the closed form of Prop 9",
                   "estimated": "verified numerically with a condition estimate"}.get(self.certainty, "verified numerically")
            cert = PrivacyCertificate(True, self.epsilon, "theorem",
                                      f"z ≥ 0 ({how}); a tight-constraints mechanism with z ≥ 0 on a metric is ε·d-private "
                                      "(seed 000 Prop 6); its constraints towards the diagonal are tight (Def 6)",
                                      smallest_epsilon=self.epsilon, rigorous=rigorous)
            m = DenseMechanism(self.channel, self.space, epsilon=self.epsilon, name="tight-constraints", certificate=cert)
            object.__setattr__(self, "_mechanism", m)
        return m


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def tight_constraints(space: MetricSpace, *, epsilon: float, method: str = "auto") -> TightResult:
    r"""The tight-constraints mechanism for ε·d on ``space``, or why there is none.

    Solves Φ z = 1 with Φ_{yy'} = e^{−ε d(y,y')} (seed 000 Prop 7) and, when z ≥ 0, returns the
    mechanism H = Φ diag(z), i.e. H[y, y'] = e^{−ε d(y,y')} z_{y'} (seed 000 Def 6, Eq. 12). It exists
    iff the uniform prior is ε·d-regular (seed 000 Prop 8), and it is then ε·d-private (Prop 6) and
    optimal for every ε·d-regular prior (Thm 4).

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
        The privacy parameter; the metric is ε·d.
    method : {"auto", "dense", "structured", "closed-form", "exact"}
        ``"auto"``: a closed form where the theory gives one (equally spaced points on a line and
        Manhattan grids, :func:`path_structure`; ball-size symmetric spaces, Prop 9), the structured
        FFT + CG solver on grids above :data:`STRUCTURED_MIN_CELLS` cells (it returns a
        :class:`~dprivacy.structured.GridTightResult` with the same fields and an implicit
        ``.mechanism``), else ``"dense"``.
        ``"dense"``: factorize Φ (Cholesky when positive definite, else LU), refine, bound the error,
        and fall back to exact arithmetic (n ≤ :data:`EXACT_LIMIT`) when a sign is in doubt; a singular
        Φ goes to the eigendecomposition + linear program path. ``"structured"``: the grid solver.
        ``"closed-form"``: as :func:`ball_size_symmetric_tight`. ``"exact"``: rational arithmetic on Φ̃
        (n ≤ EXACT_LIMIT).

    Returns
    -------
    TightResult
        A :class:`TightConstraintsResult` (dense paths) or a :class:`~dprivacy.structured.GridTightResult`
        (the grid solver): the same fields and ``.mechanism``.

    Notes
    -----
    **Error bound.** With z̃ the refined float solution, r = 1 − Φ̃ z̃ computed in extended precision
    (unit roundoff u_r) and z* = Φ̃⁻¹ 1, z̃ − z* = −Φ̃⁻¹ r and rounding in forming r is at most
    γ = (n+1)u_r/(1−(n+1)u_r) times (1 + |Φ̃||z̃|). Hence, componentwise,

    .. math:: |\tilde z - z^*| \le |\tilde\Phi^{-1}|\,\bigl(|r| + \gamma\,(1 + |\tilde\Phi||\tilde z|)\bigr).

    The normwise form ‖z̃ − z*‖∞ ≤ η (‖r‖∞ + γ(1 + ‖|Φ̃||z̃|‖∞)) is evaluated first with
    η = 3 × LAPACK's estimate of ‖Φ̃⁻¹‖₁ (= ‖Φ̃⁻¹‖∞ since Φ̃ is symmetric). The estimate is a lower
    bound on the norm, so this is trusted only when it decides every sign by a factor over
    :data:`TRUST_ESTIMATE`; otherwise (n ≤ :data:`INVERSE_LIMIT`) the componentwise form is evaluated
    with the explicit inverse from the same factorization, whose own rounding is a second-order term.
    Above INVERSE_LIMIT points the estimate-based bound is all there is and is not rigorous.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 6, Prop 6,
       Prop 7, Thm 4, Prop 8, Cor 3, Prop 9.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 7, Prop 7, Lemma 3,
       Thm 3.
    """
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    e = check_epsilon(epsilon)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, _METHODS))}; got {method!r}")
    from ..spaces import GridSpace

    if method == "structured" or (method == "auto" and isinstance(space, GridSpace) and space.n > STRUCTURED_MIN_CELLS
                                  and path_structure(space) is None):
        if not isinstance(space, GridSpace):
            raise ValueError(f"method='structured' needs a grid (GridSpace), got {space.name}")
        from ..structured import tight_constraints_grid

        return tight_constraints_grid(space, epsilon=e)
    d = space.distances
    if method == "closed-form":
        return ball_size_symmetric_tight(space, epsilon=e)
    if method == "auto":
        path = path_structure(space)
        if path is not None:
            return _path_closed_form(space, path, e)
        profile = _ball_profile(space)
        if profile is not None:
            return _closed_form(space, d, profile, e)
    if method == "exact" and space.n > EXACT_LIMIT:
        raise ValueError(f"method='exact' is limited to {EXACT_LIMIT} points; the space has {space.n}")
    phi = _constraints(d, e)
    sol = _solve_phi(phi, exact=(method == "exact"))
    return _result(space, phi, e, sol)


def _line_path(x: np.ndarray, d: np.ndarray):
    """(c·q, positions k) when d = c·|x_i − x_j| on equally spaced x (x = x_0 + q·k, k a permutation of
    0..n−1), else None. Exact comparisons up to a relative 1e-12: the closed form is about this metric."""
    n = x.size
    if n < 2 or not np.isfinite(d).all():
        return None
    order = np.argsort(x)
    gaps = np.diff(x[order])
    q = float(gaps.mean())
    if not q > 0 or np.abs(gaps - q).max() > 1e-12 * q:
        return None
    k = np.empty(n, dtype=np.intp)
    k[order] = np.arange(n)
    c = float(d[order[0], order[1]]) / q
    if not c > 0 or np.abs(d - c * q * np.abs(k[:, None] - k[None, :])).max() > 1e-12 * c * q * n:
        return None
    return c * q, k


def path_structure(space: MetricSpace):
    """Whether Φ = e^{−ε d} has a known closed-form inverse on ``space``:

    * ``("line", s, k)``: points equally spaced on a line with d = s·|k_i − k_j| (counting queries,
      ``line:N``, ``count:U``). Φ is the Kac–Murdock–Szegő matrix [α^{|k_i−k_j|}], α = e^{−εs}, whose
      inverse is tridiagonal; Φz = 1 has the solution z = (1−α)/(1+α) inside and 1/(1+α) at the two ends,
      the diagonal of the truncated geometric mechanism (seed 000 §6.1; seed 002 Fig 2 (iv)).
    * ``("manhattan", grid)``: a Manhattan grid, where e^{−ε(|Δx|+|Δy|)} = e^{−ε|Δx|} e^{−ε|Δy|} makes
      Φ = Φ_rows ⊗ Φ_cols and z = z_rows ⊗ z_cols (seed 000 §6: regularity of the uniform prior).

    In both cases z > 0 for every ε > 0, so the tight-constraints mechanism exists for every ε > 0 and
    the threshold ε* is 0. Returns None for other spaces.
    """
    from ..spaces import GridSpace

    if isinstance(space, GridSpace):
        return ("manhattan", space) if space.metric == "manhattan" else None
    x = space.coordinates
    if x is None or x.ndim != 2 or x.shape[1] != 1:
        return None
    found = _line_path(x[:, 0], space.distances)
    return None if found is None else ("line", found[0], found[1])


def _kms_diagonal(n: int, alpha: float) -> np.ndarray:
    """z with Φz = 1 for the n×n Kac–Murdock–Szegő matrix Φ = [α^{|i−j|}]: (1−α)/(1+α) inside,
    1/(1+α) at the ends (1 for n = 1)."""
    if n == 1:
        return np.ones(1)
    z = np.full(n, math.tanh(-math.log(alpha) / 2.0) if alpha > 0 else 1.0)  # (1−α)/(1+α), no cancellation
    z[0] = z[-1] = 1.0 / (1.0 + alpha)
    return z


def path_diagonal(path, epsilon: float) -> np.ndarray:
    """The closed-form z of :func:`path_structure`'s spaces (in the space's point order)."""
    if path[0] == "line":
        _, s, k = path
        return _kms_diagonal(k.size, math.exp(-epsilon * s))[k]
    grid = path[1]
    zx = _kms_diagonal(grid.width, math.exp(-epsilon * grid.step))
    zy = _kms_diagonal(grid.height, math.exp(-epsilon * grid.step))
    return np.kron(zy, zx)  # cell index = row·W + col


def _path_closed_form(space: MetricSpace, path, e: float) -> TightConstraintsResult:
    z = path_diagonal(path, e)
    phi = _constraints(space.distances, e)
    h = phi * z[None, :]
    residual = float(np.abs(_residual(phi, z)).max())
    what = ("equally spaced points on a line: Φ is Kac–Murdock–Szegő and z is the truncated geometric diagonal"
            if path[0] == "line" else "a Manhattan grid: Φ = Φ_rows ⊗ Φ_cols and z = z_rows ⊗ z_cols")
    return TightConstraintsResult(
        exists=True, epsilon=e, z=z, channel=Channel._trusted(h, space.labels, space.labels),
        negative=_empty_negative(), reason=f"exists for every ε > 0: {what} (closed form, z > 0)",
        residual=residual, condition=None, error_bound=0.0, margin=math.inf, certainty="closed-form",
        singular=False, nullity=0, method="closed-form", space=space,
    )


def ball_size_symmetric_tight(space: MetricSpace, *, epsilon: float) -> TightConstraintsResult:
    r"""The tight-constraints mechanism of a ball-size symmetric space, in closed form (seed 000 Prop 9).

    A space is ball-size symmetric (seed 000 Def 7) when every point sees the same number n_r of points
    at each distance r. Then every row of Φ sums to s = Σ_r n_r e^{−ε r}, so the constant vector
    z = 1/s solves Φ z = 1 and

    .. math:: h_{yy'} = e^{-\varepsilon d(y,y')} \big/ \textstyle\sum_r n_r e^{-\varepsilon r},

    which exists for every ε > 0. (The paper's statement prints e^{+d}; the derivation above it, and
    Def 6, give e^{−d}.) Distance-regular and vertex-transitive graphs are ball-size symmetric; on a
    clique this is randomized response. Whether Φ is singular (other tight-constraints mechanisms,
    seed 004 App. B) is not examined: use ``tight_constraints(..., method="dense")`` for that.

    Raises
    ------
    ValueError
        If the space is not ball-size symmetric (the message names two points whose distance
        profiles differ).
    """
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    e = check_epsilon(epsilon)
    profile = _ball_profile(space)
    if profile is None:
        from ..graphs import distance_counts

        why = distance_counts(space, rtol=SYMMETRY_RTOL).reason or "the row sums of d differ"
        raise ValueError(f"space {space.name!r} is not ball-size symmetric (seed 000 Def 7): {why}")
    return _closed_form(space, space.distances, profile, e)


# ---------------------------------------------------------------------------------------------
# Ball-size symmetry (seed 000 Def 7, Prop 9)
# ---------------------------------------------------------------------------------------------


def _ball_profile(space: MetricSpace, rtol: float = SYMMETRY_RTOL):
    """(radii, counts) shared by every point if the space is ball-size symmetric, else None.

    Cheap necessary conditions first (equal numbers of infinite distances, equal row sums of d and
    d²), so that a space that is not symmetric, such as a grid, is rejected in O(n²) without sorting;
    the decision and the counts n_r then come from :func:`dprivacy.graphs.distance_counts`.
    """
    d = space.distances
    fin = np.isfinite(d)
    ninf = d.shape[0] - fin.sum(axis=1)
    if (ninf != ninf[0]).any():
        return None
    dz = np.where(fin, d, 0.0)
    for s in (dz.sum(axis=1), np.einsum("ij,ij->i", dz, dz)):
        if np.abs(s - s[0]).max() > 4 * rtol * max(abs(s[0]), 1.0):
            return None
    from ..graphs import distance_counts  # lazily: graphs sits beside mechanisms, not below them

    counts = distance_counts(space, rtol=rtol)
    return (counts.distances, counts.counts) if counts.symmetric else None


def _closed_form(space: MetricSpace, d: np.ndarray, profile, e: float) -> TightConstraintsResult:
    radii, counts = profile
    s = float(np.sum(counts * np.exp(-e * radii)))
    n = d.shape[0]
    z = np.full(n, 1.0 / s)
    phi = _constraints(d, e)
    h = phi * z[None, :]
    residual = float(np.abs(_residual(phi, z)).max())
    bound = (n + 2) * _U / s  # rounding in the sum s and its reciprocal
    reason = (
        f"exists: the space is ball-size symmetric, so z is constant = 1/Σ_r n_r e^(−εr) = {1 / s:.6g} "
        "(seed 000 Prop 9); uniqueness not examined (method='dense' examines Φ)"
    )
    return TightConstraintsResult(
        exists=True, epsilon=e, z=z, channel=Channel._trusted(h, space.labels, space.labels),
        negative=_empty_negative(), reason=reason, residual=residual, condition=None,
        error_bound=bound, margin=math.inf, certainty="closed-form", singular=None, nullity=None,
        method="closed-form", space=space,
    )


# ---------------------------------------------------------------------------------------------
# Solving Φ z = 1 with a certificate
# ---------------------------------------------------------------------------------------------


@dataclass
class _Solution:
    z: np.ndarray
    status: str  # "exists", "absent", "undecided", "inconsistent"
    certainty: str
    method: str
    residual: float
    condition: float | None
    error_bound: float
    margin: float
    singular: bool
    nullity: int
    note: str = ""


def _constraints(d: np.ndarray, e: float) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return np.exp(-e * d)


def _empty_negative():
    return np.zeros(0, dtype=np.intp), np.zeros(0)


def _residual(phi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """r = 1 − Φ z, accumulated in extended precision (np.longdouble) in row chunks."""
    n = phi.shape[0]
    zl = z.astype(np.longdouble)
    out = np.empty(n, dtype=np.longdouble)
    step = max(1, _RESIDUAL_CHUNK_ELEMENTS // max(n, 1))
    for a in range(0, n, step):
        out[a : a + step] = 1 - phi[a : a + step].astype(np.longdouble) @ zl
    return out.astype(np.float64)


class _Factor:
    """A factorization of Φ: Cholesky when it succeeds (Φ positive definite), else LU."""

    def __init__(self, phi: np.ndarray):
        from scipy import linalg as sla
        from scipy.linalg import lapack

        n = phi.shape[0]
        self.n = n
        self.anorm = float(np.abs(phi).sum(axis=0).max())
        try:
            self.c, self.lower = sla.cho_factor(phi, lower=True, check_finite=False)
            self.kind = "cholesky"
            rcond, _ = lapack.dpocon(self.c, self.anorm, uplo="L")
        except sla.LinAlgError:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sla.LinAlgWarning)
                self.lu, self.piv = sla.lu_factor(phi, check_finite=False)
            self.kind = "lu"
            if not np.all(np.diag(self.lu)):
                rcond = 0.0
            else:
                rcond, _ = lapack.dgecon(self.lu, self.anorm, norm="1")
        self.rcond = float(rcond)

    def solve(self, b: np.ndarray) -> np.ndarray:
        from scipy import linalg as sla

        if self.kind == "cholesky":
            return sla.cho_solve((self.c, self.lower), b, check_finite=False)
        return sla.lu_solve((self.lu, self.piv), b, check_finite=False)

    def inverse(self) -> np.ndarray:
        from scipy import linalg as sla
        from scipy.linalg import lapack

        if self.kind == "cholesky":
            inv, info = lapack.dpotri(self.c, lower=1)
            inv = np.tril(inv)
            inv = inv + np.tril(inv, -1).T
        else:
            inv, info = lapack.dgetri(self.lu, self.piv)
        if info != 0:
            raise sla.LinAlgError(f"matrix inversion failed (LAPACK info={info})")
        return inv


def _solve_phi(phi: np.ndarray, *, exact: bool = False, exact_limit: int = EXACT_LIMIT) -> _Solution:
    """Decide whether Φ z = 1 has a non-negative solution, with a certificate (see module notes)."""
    from scipy import linalg as sla

    n = phi.shape[0]
    if exact:
        return _exact_solve(phi)
    fac = _Factor(phi)
    if fac.rcond <= n * _EPS:
        sol = _singular_solve(phi, fac.rcond)
        if sol is not None:
            return sol
    ones = np.ones(n)
    with np.errstate(all="ignore"):
        z = fac.solve(ones)
        r = _residual(phi, z)
        rn = np.abs(r).max()
        for _ in range(REFINE_STEPS):
            if not np.isfinite(rn) or rn == 0.0:
                break
            z_new = z + fac.solve(r)
            r_new = _residual(phi, z_new)
            rn_new = np.abs(r_new).max()
            if not rn_new < rn:
                break
            z, r, rn = z_new, r_new, rn_new
    gamma = (n + 1) * _U_RESIDUAL / (1 - (n + 1) * _U_RESIDUAL)
    slack = np.abs(r) + gamma * (1.0 + np.abs(phi) @ np.abs(z))
    eta = ESTIMATE_SAFETY / (fac.rcond * fac.anorm) if fac.rcond > 0 else np.inf
    bound = np.full(n, eta * slack.max())
    margin = _margin(z, bound)
    rigorous = n <= INVERSE_LIMIT
    if rigorous:
        try:
            bound = np.abs(fac.inverse()) @ slack
        except sla.LinAlgError:
            bound = np.full(n, np.inf)
        margin = _margin(z, bound)
    condition = 1.0 / fac.rcond if fac.rcond > 0 else math.inf
    # Above INVERSE_LIMIT the bound rests on LAPACK's condition *estimate* (a lower bound on ‖Φ⁻¹‖,
    # times ESTIMATE_SAFETY): a decision there is "verified numerically", not certified.
    decided = "certified" if rigorous else "estimated"
    if margin > 1.0:
        status, certainty = "exists", decided
    elif margin < -1.0:
        status, certainty = "absent", decided
    else:
        status, certainty = "undecided", "undecided"
    sol = _Solution(
        z=z, status=status, certainty=certainty, method=fac.kind, residual=float(rn),
        condition=condition, error_bound=float(bound.max()), margin=margin, singular=False, nullity=0,
    )
    if status == "undecided" and n <= exact_limit:
        ex = _exact_solve(phi)
        ex.condition = condition
        ex.note = f"the float solve could not decide (margin {margin:.3g}); "
        return ex
    return sol


def _margin(z: np.ndarray, bound: np.ndarray) -> float:
    """min_y z_y / b_y (signed); 0 when z is not finite."""
    if not np.isfinite(z).all():
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(bound > 0, z / bound, np.sign(z) * np.inf)
    return float(np.nanmin(ratios))


def _exact_solve(phi: np.ndarray) -> _Solution:
    """Solve Φ̃ z = 1 in rational arithmetic (every float is a rational), by Gaussian elimination."""
    n = phi.shape[0]
    if n > EXACT_LIMIT:
        raise ValueError(f"exact solve is limited to {EXACT_LIMIT} points, got {n}")
    a = [[Fraction(float(x)) for x in row] + [Fraction(1)] for row in phi]
    rank_def = False
    for col in range(n):
        piv = next((r for r in range(col, n) if a[r][col] != 0), None)
        if piv is None:
            rank_def = True
            break
        a[col], a[piv] = a[piv], a[col]
        p = a[col][col]
        for r in range(col + 1, n):
            f = a[r][col] / p
            if f:
                row_r, row_c = a[r], a[col]
                for k in range(col, n + 1):
                    row_r[k] -= f * row_c[k]
    if rank_def:
        sol = _singular_solve(phi, 0.0, force=True)
        sol.note = "Φ̃ is exactly singular; "
        return sol
    zf = [Fraction(0)] * n
    for r in range(n - 1, -1, -1):
        s = a[r][n] - sum(a[r][k] * zf[k] for k in range(r + 1, n))
        zf[r] = s / a[r][r]
    z = np.array([float(x) for x in zf])
    negative = any(x < 0 for x in zf)
    status = "absent" if negative else "exists"
    r = _residual(phi, z)
    return _Solution(
        z=z, status=status, certainty="exact", method="exact", residual=float(np.abs(r).max()),
        condition=None, error_bound=0.0, margin=-math.inf if negative else math.inf,
        singular=False, nullity=0,
    )


def _singular_solve(phi: np.ndarray, rcond: float, force: bool = False) -> _Solution | None:
    """Φ singular to working precision (seed 004 App. B): the solution set of Φz = 1 is empty or an
    affine space z0 + ker Φ. Look in it for z ≥ 0 by maximizing t subject to z0 + N w ≥ t (HiGHS).

    Returns None when the eigendecomposition finds no eigenvalue within the rank tolerance (the
    caller then treats Φ as ill-conditioned but invertible), unless ``force``.
    """
    from scipy import linalg as sla
    from scipy.optimize import linprog

    n = phi.shape[0]
    lam, vec = sla.eigh(phi, check_finite=False)
    tol = n * _EPS * float(np.abs(lam).max())
    null = np.abs(lam) <= tol
    if force and not null.any():
        null[np.argmin(np.abs(lam))] = True
    k = int(null.sum())
    if k == 0:
        return None
    condition = 1.0 / rcond if rcond > 0 else math.inf
    vr, lr, nb = vec[:, ~null], lam[~null], vec[:, null]
    ones = np.ones(n)
    z0 = vr @ ((vr.T @ ones) / lr)
    res0 = float(np.abs(_residual(phi, z0)).max())
    common = dict(condition=condition, singular=True, nullity=k)
    if not res0 <= CONSISTENCY_TOL:
        return _Solution(
            z=z0, status="inconsistent", certainty="numerical", method="eigh", residual=res0,
            error_bound=math.inf, margin=-math.inf, **common,
        )
    c = np.zeros(k + 1)
    c[-1] = -1.0
    a_ub = np.hstack([-nb, np.ones((n, 1))])
    scale = max(1.0, float(np.abs(z0).max()))
    lp = linprog(
        c, A_ub=a_ub, b_ub=z0, bounds=[(None, None)] * k + [(None, scale)], method="highs"
    )
    if lp.status != 0:
        return _Solution(
            z=z0, status="undecided", certainty="undecided", method="eigh+linprog", residual=res0,
            error_bound=math.inf, margin=0.0, note=f"the linear program failed ({lp.message}); ", **common,
        )
    w, t = lp.x[:k], float(lp.x[-1])
    z = z0 + nb @ w
    res = float(np.abs(_residual(phi, z)).max())
    if z.min() >= 0:
        status, margin = "exists", math.inf
    elif t < -LP_TOL * scale:
        status, margin = "absent", t / (LP_TOL * scale)
    else:
        status, margin = "undecided", t / (LP_TOL * scale)
    return _Solution(
        z=z, status=status, certainty="numerical" if status != "undecided" else "undecided",
        method="eigh+linprog", residual=res, error_bound=LP_TOL * scale, margin=margin, **common,
    )


def _result(space: MetricSpace, phi: np.ndarray, e: float, sol: _Solution) -> TightConstraintsResult:
    z = sol.z
    # An inconsistent system has no solution at all: the least-squares z's signs explain nothing.
    neg_idx = np.flatnonzero(z < 0) if sol.status != "inconsistent" else np.zeros(0, dtype=np.intp)
    negative = (neg_idx, z[neg_idx])
    exists = sol.status == "exists"
    channel = Channel._trusted(phi * z[None, :], space.labels, space.labels) if exists else None
    how = {
        "certified": f"every sign is certain (min z / error bound = {sol.margin:.3g})",
        "estimated": (f"verified numerically: every sign is beyond an error bound built on LAPACK's condition estimate "
                      f"(min z / bound = {sol.margin:.3g}; not a proof above {INVERSE_LIMIT} points)"),
        "exact": "decided in exact rational arithmetic on the float64 Φ",
        "numerical": f"Φ is singular to working precision (nullity {sol.nullity})",
        "undecided": "",
    }[sol.certainty]
    if sol.singular and sol.status != "inconsistent":
        how += f"; the solutions of Φz = 1 form an affine space of dimension {sol.nullity}"
    if sol.status == "exists":
        reason = f"exists: Φz = 1 has a non-negative solution (min z = {z.min():.6g}); {sol.note}{how}"
    elif sol.status == "absent":
        worst = int(np.argmin(z))
        reason = (
            f"does not exist: z has {neg_idx.size} negative entr{'y' if neg_idx.size == 1 else 'ies'}, "
            f"the smallest z[{worst}] = {z[worst]:.6g} (the uniform prior is not ε·d-regular, "
            f"seed 000 Prop 8); {sol.note}{how}"
        )
    elif sol.status == "inconsistent":
        reason = (
            f"does not exist: Φ is singular (nullity {sol.nullity}) and Φz = 1 has no solution "
            f"(least-squares residual {sol.residual:.3g} > {CONSISTENCY_TOL:g})"
        )
    else:
        reason = (
            f"undecided: min z = {z.min():.3g} is within the error bound {sol.error_bound:.3g} of 0 "
            f"(condition estimate {sol.condition if sol.condition is not None else float('nan'):.3g}); "
            f"{sol.note}rounding could change the answer"
        )
    return TightConstraintsResult(
        exists=exists, epsilon=e, z=z, channel=channel, negative=negative, reason=reason,
        residual=sol.residual, condition=sol.condition, error_bound=sol.error_bound,
        margin=sol.margin, certainty=sol.certainty, singular=sol.singular, nullity=sol.nullity,
        method=sol.method, space=space,
    )
