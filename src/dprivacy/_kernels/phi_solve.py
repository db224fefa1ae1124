r"""The certified solve of Φ x = b and the decision on the signs of x (one routine for every caller).

Φ = [e^{−ε d(y, y')}] is the privacy-constraints matrix (ElSalamouny et al. 2014 Def 3): symmetric, unit diagonal.
Three theory objects are sign tests on a solution of a system with Φ, and all three call this module:

* a tight-constraints mechanism exists iff Φ z = 1 has a solution z ≥ 0 (ElSalamouny et al. 2014 Def 6, Prop 7),
  :func:`dprivacy.tight_constraints`, and the threshold's existence probe :func:`dprivacy.tight_threshold`;
* a prior π is ε·d-regular iff μ Φ = π has a solution μ ≥ 0 (Def 4), :func:`dprivacy.regularity`.

So that one question always gets one answer, there is one set of constants, one certainty vocabulary
(:data:`CERTAINTY`), one description of a singular Φ (:func:`describe_singular`) and one result of
Φ z = 1 with its sentence (:class:`TightResult`, :func:`tight_reason`). Prop 8 (a
tight-constraints mechanism exists iff the uniform prior is regular, with z = |Y|·μ) holds *by
construction*: the right-hand side is normalised by its largest entry before the solve
(b ← b / max b, exact for a constant b), so the uniform prior and the vector of ones are the same
float64 system, solved by the same instructions, and the two decisions are the same bit for bit.

**What is decided.** The object decided on is the float64 matrix Φ̃ = fl(exp(−ε d)) (each entry within
a few units in the last place of the real Φ) and the given float right-hand side; the papers' question
differs from this one only for entries of x within ~κ(Φ)·1e-16 of 0.

**Error bound (Φ numerically invertible).** With x̃ the refined float solution, r = b − Φ̃ x̃ computed in
extended precision where it is cheap (unit roundoff u_r, else float64's u) and x* = Φ̃⁻¹ b, x̃ − x* =
−Φ̃⁻¹ r and the rounding in forming r is at most γ = (n+1)u_r/(1−(n+1)u_r) times (|b| + |Φ̃||x̃|). So,
componentwise,

.. math:: |\tilde x - x^*| \le |\tilde\Phi^{-1}|\,\bigl(|r| + \gamma\,(|b| + |\tilde\Phi||\tilde x|) + \beta\bigr),

β the rounding of the normalisation of b (0 for a constant b). Up to :data:`INVERSE_LIMIT` points the
explicit inverse from the same factorization is used (its own rounding is a second-order term): the
decision is ``"certified"``. Above, ‖Φ̃⁻¹‖ is LAPACK's 1-norm *estimate* (a lower bound, rarely off by
more than 3) times :data:`ESTIMATE_SAFETY`: the decision is ``"estimated"`` — verified numerically,
not certified. Up to :data:`EXACT_LIMIT` points an undecided answer can be re-solved in exact rational
arithmetic (``"exact"``).

**Singular Φ** (ElSalamouny et al. 2013 App. B: the cube with antipodal edges at e^{−ε} = 1/3). Φ is treated as
singular when LAPACK's reciprocal condition estimate is at most :data:`SINGULAR_RCOND_FACTOR`·n·eps and
eigenvalues lie within :data:`NULL_RTOL_FACTOR`·n·eps·λ_max of zero (by Weyl's inequality such eigenvalues
cannot be told from 0, Φ's entries being known to relative precision eps); their number is the nullity.
Then Φ x = b is solvable iff b has no component along the null space (:data:`NULL_RTOL_FACTOR`·n·eps·‖b‖₂),
its solutions form the affine space x₀ + ker Φ, and a linear program (HiGHS) looks in it for x ≥ 0:
max t subject to x₀ + N w ≥ t. That decision rests on the numerical null space and the LP's
tolerances: ``"numerical"`` (verified numerically, not certified).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..results import Result

#: Undecided float answers are re-solved in exact rational arithmetic up to this many points.
EXACT_LIMIT = 40

#: Up to this many points the error bound uses the explicit inverse of Φ̃ (componentwise, rigorous up
#: to second-order rounding terms): "certified". Above, LAPACK's estimate of ‖Φ̃⁻¹‖₁ times
#: :data:`ESTIMATE_SAFETY` (Hager–Higham estimates are lower bounds, rarely off by more than 3):
#: "estimated".
INVERSE_LIMIT = 2000
ESTIMATE_SAFETY = 10.0

#: Closed forms (ball-size symmetric spaces, ElSalamouny et al. 2014 Prop 9) examine Φ's nullity with this module's
#: factorization up to this many points (one Cholesky, O(n³/3), on top of an O(n²) answer); above, the
#: nullity is reported as not examined (None).
EXAMINE_LIMIT = 512

#: Steps of iterative refinement.
REFINE_STEPS = 3

#: The eigen-decomposition is computed to look for a numerical null space of Φ when the reciprocal
#: condition estimate is at most SINGULAR_RCOND_FACTOR · n · eps (or the factorization breaks down).
SINGULAR_RCOND_FACTOR = 100.0

#: Eigenvalues |λ| ≤ NULL_RTOL_FACTOR · n · eps · λ_max count as zero; b is consistent with a singular Φ
#: when its component along the null space is at most NULL_RTOL_FACTOR · n · eps · ‖b‖₂ (b normalised).
NULL_RTOL_FACTOR = 10.0

#: Singular Φ: the max–min LP value t decides (t > LP_TOL·scale: a non-negative solution exists; t <
#: −LP_TOL·scale: none does; in between: undecided). HiGHS runs with feasibility tolerances LP_FEASIBILITY.
LP_TOL = 1e-9
LP_FEASIBILITY = 1e-10

#: Residuals of many right-hand sides are computed in extended precision while k·n² stays below this
#: (np.longdouble has no BLAS); above it in float64, with float64's unit roundoff in γ (still rigorous).
EXTENDED_BUDGET = 2**26

_EPS = float(np.finfo(np.float64).eps)
_U = UNIT_ROUNDOFF = _EPS / 2
_U_EXT = float(np.finfo(np.longdouble).eps) / 2
_CHUNK_ELEMENTS = 2**21

#: The certainty vocabulary, shared by every result that decides a sign (tight-constraints, regularity,
#: the threshold's probes, on dense spaces and on grids). Only the first four are proofs.
CERTAINTY = {
    "exact": "decided in exact rational arithmetic on the float64 Φ (or exact by construction)",
    "closed-form": "given by a closed form the theory proves",
    "certified": "every sign is beyond a rigorous error bound",
    "estimated": "verified numerically: every sign is beyond an error bound built on LAPACK's condition estimate (not a proof)",
    "numerical": "verified numerically: Φ is singular to working precision and a linear program decided on its numerical null space (not a proof)",
    "undecided": "rounding could change the answer",
}
RIGOROUS = frozenset({"exact", "closed-form", "certified"})


def describe_singular(nullity: int | None) -> str:
    """The one description of Φ's (numerical) singularity, used by every result that reports it."""
    if nullity is None:
        return "whether Φ is singular was not examined"
    if nullity == 0:
        return "Φ is invertible to working precision (the solution is unique)"
    return (f"Φ is singular to working precision (nullity {nullity}): the solutions of Φx = b, when there are any, "
            f"form an affine space of dimension {nullity}")


def how_decided(certainty: str, margin: float, nullity: int | None = 0, *, x: str = "x") -> str:
    """The one sentence on how a sign decision was reached (``x``: the vector's name in the text)."""
    text = {
        "certified": f"every sign is certain (min {x} / error bound = {margin:.3g})",
        "estimated": (f"verified numerically: every sign is beyond an error bound built on LAPACK's condition "
                      f"estimate (min {x} / bound = {margin:.3g}; not a proof above {INVERSE_LIMIT} points)"),
        "exact": "decided in exact rational arithmetic on the float64 Φ",
        "numerical": "verified numerically by a linear program on the numerical null space of Φ",
        "closed-form": "by a closed form",
        "undecided": "rounding could change the answer",
    }[certainty]
    if nullity:
        text += "; " + describe_singular(nullity)
    return text


def decide(margin: float) -> str:
    """The sign decision from a margin min_y x_y / bound_y: "exists" (every entry certainly positive)
    when > 1, "absent" (some entry certainly negative) when < −1, else "undecided"."""
    if margin > 1.0:
        return "exists"
    if margin < -1.0:
        return "absent"
    return "undecided"


def margin_of(x: np.ndarray, bound) -> float:
    """min_y x_y / b_y (signed; b a scalar or per-entry bound); 0 when x is not finite."""
    if not np.isfinite(x).all():
        return 0.0
    b = np.broadcast_to(np.asarray(bound, dtype=np.float64), x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(b > 0, x / b, np.sign(x) * np.inf)
    return float(np.nanmin(ratios)) if ratios.size else math.inf


@dataclass
class PhiSolution:
    """One solve of Φ x = b with its certificate.

    ``status``: "exists" (a solution x ≥ 0 is shown to exist), "absent" (none exists), "undecided",
    "inconsistent" (Φ singular and Φx = b has no solution at all). ``x``: the computed solution (singular
    Φ: the one whose smallest entry is largest; inconsistent: the least-squares one), in b's scale.
    ``certainty``: a key of :data:`CERTAINTY`. ``method``: "cholesky", "lu", "eigh" (no factorization
    but no null space either), "exact", "eigh+linprog" (singular Φ). ``residual``: ‖Φ̃x − b‖∞.
    ``condition``: estimate of κ₁(Φ) (None when not examined). ``error_bound``: max_y of the per-entry
    bound ``bounds`` on |x − x*|. ``margin``: min_y x_y / bound_y. ``singular``, ``nullity``: see
    :func:`describe_singular`. ``sum_range``: singular Φ with a non-negative solution: the smallest and
    largest Σx over the non-negative solutions, and ``x_min_sum`` the solution attaining the smallest.
    """

    x: np.ndarray
    status: str
    certainty: str
    method: str
    residual: float
    condition: float | None
    error_bound: float
    margin: float
    singular: bool
    nullity: int
    bounds: np.ndarray | None = field(default=None, repr=False)
    note: str = ""
    sum_range: tuple[float, float] | None = None
    x_min_sum: np.ndarray | None = field(default=None, repr=False)

    @property
    def consistent(self) -> bool:
        return self.status != "inconsistent"


@dataclass(frozen=True)
class TightResult(Result):
    """What every solve of Φ z = 1 returns (ElSalamouny et al. 2014 Def 6, Prop 6–8): whether the tight-constraints
    mechanism exists at ε, its diagonal z and the certificate of the decision. The dense solver returns
    a :class:`~dprivacy.mechanisms.tight.TightConstraintsResult` and the grid solver a
    :class:`~dprivacy._kernels.solve.GridTightResult`; both are TightResults with the fields below, and
    ``.mechanism`` (None when it does not exist). The fields are documented on
    :class:`~dprivacy.mechanisms.tight.TightConstraintsResult`; the front door
    :func:`dprivacy.tight_constraints` and the kernels below it both build TightResults, so the type is
    defined here, with the decision it reports.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
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


def tight_reason(status: str, z: np.ndarray, n_negative: int, error_bound: float, how: str, *,
                 undecided_why: str, where=lambda i: "") -> str:
    """The one sentence of every tight-constraints result (dense and grid): exists / does not exist (the
    most negative entry of z, ElSalamouny et al. 2014 Prop 8) / undecided, then how it was decided. ``where(i)`` names
    entry i further (a grid gives its row and column)."""
    if status == "exists":
        return f"exists: Φz = 1 has a non-negative solution (min z = {z.min():.6g}); {how}"
    if status == "absent":
        i = int(np.argmin(z))
        return (f"does not exist: z has {n_negative} negative entr{'y' if n_negative == 1 else 'ies'}, the smallest "
                f"z[{i}]{where(i)} = {z[i]:.6g} (the uniform prior is not ε·d-regular, ElSalamouny et al. 2014 Prop 8); {how}")
    return f"undecided: min z = {z.min():.3g} is within the error bound {error_bound:.3g} of 0 ({undecided_why}); {how}"


def residual(phi: np.ndarray, x: np.ndarray, b: np.ndarray | None = None, *, extended: bool = True) -> np.ndarray:
    """r = b − Φ x (b = 1 by default), accumulated in extended precision (np.longdouble) in row chunks
    when ``extended``; x and b may be (n,) or (n, k)."""
    n = phi.shape[0]
    if b is None:
        b = np.ones(x.shape)
    if not extended:
        return b - phi @ x
    xl = x.astype(np.longdouble)
    out = np.empty(x.shape, dtype=np.longdouble)
    k = 1 if x.ndim == 1 else x.shape[1]
    step = max(1, _CHUNK_ELEMENTS // max(n * k, 1))
    for a in range(0, n, step):
        out[a : a + step] = b[a : a + step].astype(np.longdouble) - phi[a : a + step].astype(np.longdouble) @ xl
    return out.astype(np.float64)


def _normalise(B: np.ndarray):
    """(B / max_col, the per-column scale, the per-entry rounding of the division): exact where an
    entry equals its column's largest one (a constant column becomes the vector of ones, exactly)."""
    scale = np.abs(B).max(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    Bn = B / scale
    beta = np.where(Bn == 1.0, 0.0, _U * np.abs(Bn))
    return Bn, scale, beta


class PhiFactor:
    """Φ factored once — Cholesky when it succeeds (Φ positive definite), else LU — with its numerical
    null space when the factorization says Φ is nearly singular; :meth:`solve` and :meth:`solve_many`
    decide the signs of Φ⁻¹b for any number of right-hand sides (see the module notes).
    """

    def __init__(self, phi: np.ndarray):
        from scipy import linalg as sla
        from scipy.linalg import lapack

        phi = np.asarray(phi, dtype=np.float64)
        self.phi = phi
        n = phi.shape[0]
        self.n = n
        self.anorm = float(np.abs(phi).sum(axis=0).max()) if n else 0.0
        self.kind = "eigh"
        self.rcond = 0.0
        self._f = None
        try:
            c, lower = sla.cho_factor(phi, lower=True, check_finite=False)
            rc, _ = lapack.dpocon(c, self.anorm, uplo="L")
            self._f, self.kind, self.rcond = (c, lower), "cholesky", float(rc)
        except (sla.LinAlgError, np.linalg.LinAlgError):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sla.LinAlgWarning)
                lu, piv = sla.lu_factor(phi, check_finite=False)
            if np.all(np.diag(lu) != 0):
                rc, _ = lapack.dgecon(lu, self.anorm, norm="1")
                self._f, self.kind, self.rcond = (lu, piv), "lu", float(rc)
        self.nullity = 0
        self._eig = None
        if self._f is None or self.rcond <= SINGULAR_RCOND_FACTOR * n * _EPS:
            lam, vec = sla.eigh(phi, check_finite=False)
            null = np.abs(lam) <= NULL_RTOL_FACTOR * n * _EPS * float(np.abs(lam).max())
            self.nullity = int(null.sum())
            self._eig = (lam, vec, null)
            if self._f is None:
                self.rcond = float(np.abs(lam).min() / np.abs(lam).max())
        self._inverse = self._abs_inverse = None

    # -- the factorization ---------------------------------------------------------------------
    @property
    def singular(self) -> bool:
        return self.nullity > 0

    @property
    def condition(self) -> float:
        """1/rcond: LAPACK's estimate of the 1-norm condition number (inf when singular)."""
        return 1.0 / self.rcond if self.rcond > 0 else math.inf

    @property
    def rigorous(self) -> bool:
        """Whether a decision of :meth:`solve_many` is certified (n ≤ :data:`INVERSE_LIMIT`)."""
        return self.n <= INVERSE_LIMIT

    def _apply_inverse(self, B: np.ndarray) -> np.ndarray:
        from scipy import linalg as sla

        if self.kind == "cholesky":
            return sla.cho_solve(self._f, B, check_finite=False)
        if self.kind == "lu":
            return sla.lu_solve(self._f, B, check_finite=False)
        lam, vec, _ = self._eig
        return vec @ ((vec.T @ B) / (lam[:, None] if B.ndim == 2 else lam))

    def inverse(self) -> np.ndarray:
        """Φ̃⁻¹ from the factorization (cached)."""
        if self._inverse is None:
            from scipy import linalg as sla
            from scipy.linalg import lapack

            if self.kind == "cholesky":
                inv, info = lapack.dpotri(self._f[0], lower=1)
                inv = np.tril(inv)
                inv = inv + np.tril(inv, -1).T
            elif self.kind == "lu":
                inv, info = lapack.dgetri(*self._f)
            else:
                inv, info = self._apply_inverse(np.eye(self.n)), 0
            if info != 0:
                raise sla.LinAlgError(f"matrix inversion failed (LAPACK info={info})")
            self._inverse = inv
        return self._inverse

    def inverse_norm(self) -> float:
        """‖Φ̃⁻¹‖₁ (= ‖Φ̃⁻¹‖∞, Φ being symmetric): from the explicit inverse up to :data:`INVERSE_LIMIT`
        points, else LAPACK's estimate times :data:`ESTIMATE_SAFETY`; inf when Φ is singular."""
        if self.singular:
            return math.inf
        if self.rigorous:
            return float(np.abs(self.inverse()).sum(axis=0).max())
        return ESTIMATE_SAFETY / (self.rcond * self.anorm) if self.rcond > 0 else math.inf

    # -- many right-hand sides, Φ invertible -----------------------------------------------------
    def solve_many(self, B: np.ndarray):
        """Solve Φ X = B (B: n × k) with iterative refinement and a per-entry error bound.

        Returns (X, bounds, margins, residuals): X and the per-entry bounds (n × k) in B's scale, the
        margin of each column (min_y x_y / bound_y) and ‖B − Φ̃X‖∞ per column. Φ must not be singular.
        """
        from scipy import linalg as sla

        if self.singular:
            raise ValueError("Φ is singular: decide each right-hand side with solve()")
        n, k = B.shape
        Bn, scale, beta = _normalise(B)
        extended = k * n * n <= EXTENDED_BUDGET
        u_r = _U_EXT if extended else _U
        with np.errstate(all="ignore"):
            X = self._apply_inverse(Bn)
            R = residual(self.phi, X, Bn, extended=extended)
            rn = np.abs(R).max(axis=0)
            for _ in range(REFINE_STEPS):
                active = np.isfinite(rn) & (rn > 0)
                if not active.any():
                    break
                Xn = X[:, active] + self._apply_inverse(R[:, active])
                Rn = residual(self.phi, Xn, Bn[:, active], extended=extended)
                rnn = np.abs(Rn).max(axis=0)
                better = rnn < rn[active]
                if not better.any():
                    break
                cols = np.flatnonzero(active)[better]
                X[:, cols], R[:, cols], rn[cols] = Xn[:, better], Rn[:, better], rnn[better]
        gamma = (n + 1) * u_r / (1 - (n + 1) * u_r)
        slack = np.abs(R) + gamma * (np.abs(Bn) + np.abs(self.phi) @ np.abs(X)) + beta
        if self.rigorous:
            try:
                if self._abs_inverse is None:
                    self._abs_inverse = np.abs(self.inverse())
                bounds = self._abs_inverse @ slack
            except sla.LinAlgError:
                bounds = np.full_like(slack, np.inf)
        else:
            eta = ESTIMATE_SAFETY / (self.rcond * self.anorm) if self.rcond > 0 else np.inf
            bounds = np.broadcast_to(eta * slack.max(axis=0), slack.shape).copy()
        # back to B's scale: the product X·scale is rounded once more (scale is a column's largest entry, not a power
        # of two), so each bound grows by that rounding, u·|X·scale|, and is itself rounded up
        X = X * scale
        bounds = bounds * scale * (1 + 2 * _U) + _U * np.abs(X)
        margins = np.array([margin_of(X[:, j], bounds[:, j]) for j in range(k)])
        return X, bounds, margins, rn * scale

    # -- one right-hand side, any Φ ------------------------------------------------------------
    def solve(self, b: np.ndarray | None = None, *, exact_fallback: bool = True, sum_range: bool = False) -> PhiSolution:
        """Decide whether Φ x = b (b = 1 by default) has a solution x ≥ 0, with its certificate.

        ``exact_fallback``: re-solve an undecided answer in rational arithmetic (n ≤ :data:`EXACT_LIMIT`).
        ``sum_range``: on a singular Φ, also the smallest and largest Σx over the non-negative solutions.
        """
        b = np.ones(self.n) if b is None else np.asarray(b, dtype=np.float64)
        if self.singular:
            return self._solve_singular(b, sum_range)
        X, bounds, margins, rn = self.solve_many(b[:, None])
        x, bnd, margin = X[:, 0], bounds[:, 0], float(margins[0])
        status = decide(margin)
        certainty = ("certified" if self.rigorous else "estimated") if status != "undecided" else "undecided"
        sol = PhiSolution(x=x, status=status, certainty=certainty, method=self.kind, residual=float(rn[0]),
                          condition=self.condition, error_bound=float(bnd.max()) if bnd.size else 0.0,
                          margin=margin, singular=False, nullity=0, bounds=bnd)
        if status == "undecided" and exact_fallback and self.n <= EXACT_LIMIT:
            ex = self.exact(b)
            ex.condition = self.condition
            ex.note = f"the float solve could not decide (margin {margin:.3g}); "
            return ex
        return sol

    def exact(self, b: np.ndarray | None = None) -> PhiSolution:
        """Solve Φ̃ x = b in rational arithmetic (every float is a rational), by Gaussian elimination."""
        n = self.n
        if n > EXACT_LIMIT:
            raise ValueError(f"exact solve is limited to {EXACT_LIMIT} points, got {n}")
        b = np.ones(n) if b is None else np.asarray(b, dtype=np.float64)
        a = [[Fraction(float(v)) for v in row] + [Fraction(float(bi))] for row, bi in zip(self.phi, b)]
        for col in range(n):
            piv = next((r for r in range(col, n) if a[r][col] != 0), None)
            if piv is None:
                sol = self._solve_singular(b, False, force=True)
                sol.note = "Φ̃ is exactly singular; "
                return sol
            a[col], a[piv] = a[piv], a[col]
            p = a[col][col]
            for r in range(col + 1, n):
                f = a[r][col] / p
                if f:
                    row_r, row_c = a[r], a[col]
                    for k in range(col, n + 1):
                        row_r[k] -= f * row_c[k]
        xf = [Fraction(0)] * n
        for r in range(n - 1, -1, -1):
            s = a[r][n] - sum(a[r][k] * xf[k] for k in range(r + 1, n))
            xf[r] = s / a[r][r]
        x = np.array([float(v) for v in xf])
        negative = any(v < 0 for v in xf)
        status = "absent" if negative else "exists"  # x ≥ 0 exactly (zeros included)
        r = residual(self.phi, x, b)
        return PhiSolution(
            x=x, status=status, certainty="exact", method="exact", residual=float(np.abs(r).max()),
            condition=None, error_bound=0.0, margin=-math.inf if negative else math.inf, singular=False,
            nullity=0, bounds=np.zeros(n),
        )

    # -- singular Φ ---------------------------------------------------------------------------------
    def _solve_singular(self, b: np.ndarray, sum_range: bool, force: bool = False) -> PhiSolution:
        """Φ singular to working precision: Φx = b is empty or x₀ + ker Φ; look in it for x ≥ 0 by
        maximizing t subject to x₀ + N w ≥ t (HiGHS). ``force``: treat the smallest eigenvalue as zero
        (Φ̃ exactly singular although no eigenvalue is below the tolerance)."""
        from scipy import linalg as sla
        from scipy.optimize import linprog

        n = self.n
        if self._eig is None:
            lam, vec = sla.eigh(self.phi, check_finite=False)
            null = np.abs(lam) <= NULL_RTOL_FACTOR * n * _EPS * float(np.abs(lam).max())
            self._eig = (lam, vec, null)
        lam, vec, null = self._eig
        if force and not null.any():
            null = null.copy()
            null[np.argmin(np.abs(lam))] = True
        k = int(null.sum())
        scale_b = float(np.abs(b).max()) or 1.0
        bn = b / scale_b
        vr, lr, nb = vec[:, ~null], lam[~null], vec[:, null]
        x0 = vr @ ((vr.T @ bn) / lr)
        comp = float(np.abs(nb.T @ bn).max())
        cons_tol = NULL_RTOL_FACTOR * n * _EPS * max(1.0, float(np.linalg.norm(bn)))
        common = dict(condition=self.condition, singular=True, nullity=k)
        if comp > cons_tol:
            res0 = float(np.abs(residual(self.phi, x0, bn)).max()) * scale_b
            return PhiSolution(
                x=x0 * scale_b, status="inconsistent", certainty="numerical", method="eigh", residual=res0,
                error_bound=math.inf, margin=-math.inf,
                note=f"b has a component of size {comp:.3g} along the null space of Φ (tolerance {cons_tol:.2g}); ",
                **common,
            )
        c = np.zeros(k + 1)
        c[-1] = -1.0
        a_ub = np.hstack([-nb, np.ones((n, 1))])
        scale = max(1.0, float(np.abs(x0).max()))
        opts = dict(primal_feasibility_tolerance=LP_FEASIBILITY, dual_feasibility_tolerance=LP_FEASIBILITY)
        lp = linprog(c, A_ub=a_ub, b_ub=x0, bounds=[(None, None)] * k + [(None, scale)], method="highs", options=opts)
        if lp.status != 0:
            return PhiSolution(
                x=x0 * scale_b, status="undecided", certainty="undecided", method="eigh+linprog",
                residual=float(np.abs(residual(self.phi, x0, bn)).max()) * scale_b, error_bound=math.inf,
                margin=0.0, note=f"the linear program failed ({lp.message}); ", **common,
            )
        w, t = lp.x[:k], float(lp.x[-1])
        x = x0 + nb @ w
        tol = LP_TOL * scale
        margin = t / tol
        status = decide(margin)
        sums = None
        x_min = None
        if sum_range and status == "exists":
            ones = nb.sum(axis=0)
            bounds = [(None, None)] * k
            lo = linprog(ones, A_ub=-nb, b_ub=x0, bounds=bounds, method="highs", options=opts)
            hi = linprog(-ones, A_ub=-nb, b_ub=x0, bounds=bounds, method="highs", options=opts)
            base = float(x0.sum())
            if lo.status == 0:
                x_min = (x0 + nb @ lo.x) * scale_b
            sums = (base + float(lo.fun) if lo.status == 0 else math.nan,
                    base - float(hi.fun) if hi.status == 0 else math.nan)
            sums = (sums[0] * scale_b, sums[1] * scale_b)
        return PhiSolution(
            x=x * scale_b, status=status, certainty="numerical" if status != "undecided" else "undecided",
            method="eigh+linprog", residual=float(np.abs(residual(self.phi, x, bn)).max()) * scale_b,
            error_bound=tol * scale_b, margin=margin, bounds=np.full(n, tol * scale_b), sum_range=sums,
            x_min_sum=x_min, **common,
        )


def solve_phi(phi: np.ndarray, b: np.ndarray | None = None, *, exact: bool = False) -> PhiSolution:
    """Decide whether Φ x = b (b = 1 by default) has a solution x ≥ 0 (see :class:`PhiFactor`);
    ``exact``: in rational arithmetic from the start (n ≤ :data:`EXACT_LIMIT`)."""
    if exact:
        n = np.asarray(phi).shape[0]
        if n > EXACT_LIMIT:
            raise ValueError(f"exact solve is limited to {EXACT_LIMIT} points, got {n}")
        return _ExactOnly(phi).exact(b)
    return PhiFactor(phi).solve(b)


class _ExactOnly(PhiFactor):
    """A PhiFactor that skips the float factorization (for method="exact")."""

    def __init__(self, phi):
        self.phi = np.asarray(phi, dtype=np.float64)
        self.n = self.phi.shape[0]
        self.anorm = float(np.abs(self.phi).sum(axis=0).max()) if self.n else 0.0
        self.kind, self.rcond, self._f, self.nullity, self._eig = "exact", 0.0, None, 0, None
        self._inverse = self._abs_inverse = None
