"""The tight-constraints mechanism and the test of its existence.

A mechanism H : Y → Y is *tight-constraints* for the metric ε·d (ElSalamouny et al. 2014 Def 6; ElSalamouny et al. 2013 Def 7) when
every privacy constraint towards a diagonal entry is tight:

    h_{y y'} = e^{−ε d(y, y')} h_{y' y'}   for all y, y'.

Writing z = diag(H), the rows of such an H sum to one iff Φ z = 1 with Φ = exp(−ε d) (ElSalamouny et al. 2014 Prop 7,
the diagonal characterization), so the tight-constraints mechanisms are exactly H = Φ diag(z) for the
*non-negative* solutions z of Φ z = 1. One exists iff the uniform prior is ε·d-regular (ElSalamouny et al. 2014
Prop 8; ElSalamouny et al. 2013 Lemma 4); when it exists it is ε·d-private (Prop 6) and optimal for the binary gain
for every ε·d-regular prior at once (Thm 4, Cor 3). On a ball-size symmetric space z is constant
(Prop 9). Φ may be singular (ElSalamouny et al. 2013 App. B: the cube with antipodal edges at e^{−ε} = 1/3); then
the solutions form an affine space and we look for a non-negative one with a linear program.

Existence is a question about the *signs* of a computed vector, so each answer says how sure it is:
every entry of z is compared with a bound on its forward error, and a sign that rounding could flip
makes the answer "undecided" rather than a guess. The solve and the decision are those of
:mod:`dprivacy._kernels.phi_solve` (dense Φ) and :mod:`dprivacy._kernels.solve` (grids), shared with
:func:`dprivacy.regularity` and :func:`dprivacy.tight_threshold`, so that Prop 8 holds by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._kernels import phi_solve as _ps
from .._kernels.dispatch import takes_structured
from .._kernels.phi_solve import TightResult, tight_reason
from .._validate import check_epsilon
from ..channels import Channel
from ..graphs import distance_counts
from ..spaces import MetricSpace

#: Relative tolerance when comparing distances for ball-size symmetry.
SYMMETRY_RTOL = 1e-9

_METHODS = ("auto", "dense", "structured", "closed-form", "exact")


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
        The diagonal: the computed solution of Φ z = 1 (ElSalamouny et al. 2014 Prop 7). When Φ is singular, the
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
        One word of the shared vocabulary :data:`dprivacy._kernels.phi_solve.CERTAINTY`:
        ``"certified"`` (decided by a rigorous error bound), ``"estimated"`` (an error bound built on
        LAPACK's condition estimate, above :data:`~dprivacy._kernels.phi_solve.INVERSE_LIMIT` points:
        verified numerically, not certified), ``"exact"`` (rational arithmetic on Φ̃), ``"closed-form"``
        (a closed form: Prop 9, a line, a Manhattan grid), ``"numerical"`` (Φ singular to working
        precision: decided by a linear program on its numerical null space; verified numerically, not
        certified), ``"undecided"``.
    singular : bool or None
        Whether Φ is singular to working precision; None when not examined.
    nullity : int or None
        dim ker Φ (numerically). When Φz = 1 is consistent its solutions form an affine space of this
        dimension (0: the solution is unique). None when not examined (ball-size symmetric spaces above
        :data:`~dprivacy._kernels.phi_solve.EXAMINE_LIMIT` points). The regularity tester reports the
        same number for the same Φ (:func:`dprivacy._kernels.phi_solve.describe_singular`).
    method : str
        How z was computed: ``"closed-form"``, ``"cholesky"``, ``"lu"``, ``"eigh"``, ``"exact"``,
        ``"eigh+linprog"`` (singular Φ).
    consistent : bool
        False only when Φ is singular and Φz = 1 has no solution at all.
    """

    channel: Channel | None = field(default=None, repr=False)
    space: MetricSpace | None = field(default=None, repr=False, compare=False)
    consistent: bool = True

    @property
    def mechanism(self):
        """The tight-constraints mechanism as a :class:`~dprivacy.mechanisms.base.DenseMechanism` (None
        when it does not exist), private by ElSalamouny et al. 2014 Prop 6 (z ≥ 0 on a metric)."""
        if not self.exists or self.channel is None:
            return None
        m = self.__dict__.get("_mechanism")
        if m is None:
            from .base import DenseMechanism, LogMechanism, PrivacyCertificate, log_underflows

            rigorous = self.certainty in _ps.RIGOROUS
            how = {"certified": "certified by a forward-error bound", "exact": "exact in rational arithmetic",
                   "closed-form": "by a closed form",
                   "estimated": "verified numerically with a condition estimate"}.get(self.certainty, "verified numerically")
            cert = PrivacyCertificate(True, self.epsilon, "theorem",
                                      f"z ≥ 0 ({how}); a tight-constraints mechanism with z ≥ 0 on a metric is ε·d-private "
                                      "(ElSalamouny et al. 2014 Prop 6); its constraints towards the diagonal are tight (Def 6)",
                                      smallest_epsilon=self.epsilon, rigorous=rigorous)
            log_h = None
            if self.space is not None and (self.channel.matrix < np.finfo(np.float64).tiny).any():
                # only then the n×n log-entries (a second matrix): zeros at infinite distance are exact, the rest not
                with np.errstate(divide="ignore"):
                    log_h = -self.epsilon * self.space.distances + np.log(self.z)[None, :]
            if log_h is not None and log_underflows(log_h):
                # entries e^{−εd}·z below the smallest normal float64: the stored matrix is not private although
                # the mechanism is; keep it by its exact log-entries
                m = LogMechanism(log_h, self.space, epsilon=self.epsilon, name="tight-constraints", certificate=cert)
            else:
                m = DenseMechanism(self.channel, self.space, epsilon=self.epsilon, name="tight-constraints", certificate=cert)
            object.__setattr__(self, "_mechanism", m)
        return m



# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def tight_constraints(space: MetricSpace, *, epsilon: float, method: str = "auto", progress=None) -> TightResult:
    r"""The tight-constraints mechanism for ε·d on ``space``, or why there is none.

    Solves Φ z = 1 with Φ_{yy'} = e^{−ε d(y,y')} (ElSalamouny et al. 2014 Prop 7) and, when z ≥ 0, returns the
    mechanism H = Φ diag(z), i.e. H[y, y'] = e^{−ε d(y,y')} z_{y'} (ElSalamouny et al. 2014 Def 6, Eq. 12). It exists
    iff the uniform prior is ε·d-regular (ElSalamouny et al. 2014 Prop 8), and it is then ε·d-private (Prop 6) and
    optimal for every ε·d-regular prior (Thm 4).

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
        The privacy parameter; the metric is ε·d.
    method : {"auto", "dense", "structured", "closed-form", "exact"}
        ``"auto"``: a closed form where the theory gives one (equally spaced points on a line and
        Manhattan grids of every size, :func:`path_structure`; ball-size symmetric spaces, Prop 9), the
        structured FFT + CG solver on the other grids above
        :data:`~dprivacy._kernels.dispatch.STRUCTURED_MIN_CELLS` cells (where it is faster, measured), else
        ``"dense"``. On grids above that size the result is a :class:`~dprivacy._kernels.solve.GridTightResult`
        with the same fields and an implicit ``.mechanism`` (z and the metric, no n×n matrix).
        ``"dense"``: factorize Φ (Cholesky when positive definite, else LU), refine, bound the error,
        and fall back to exact arithmetic (n ≤ :data:`~dprivacy._kernels.phi_solve.EXACT_LIMIT`) when a
        sign is in doubt; a singular Φ goes to the eigendecomposition + linear program path
        (:mod:`dprivacy._kernels.phi_solve`). ``"structured"``: the grid solver (conjugate gradients on
        the FFT operator). ``"closed-form"``: the closed form of the space (ValueError when it has none).
        ``"exact"``: rational arithmetic on Φ̃ (n ≤ EXACT_LIMIT).
    progress : callable, optional
        ``progress(iteration, relative_residual)`` after every iteration of the grid solver.

    Returns
    -------
    TightResult
        A :class:`TightConstraintsResult` (dense paths) or a :class:`~dprivacy._kernels.solve.GridTightResult`
        (grids above the crossover): the same fields and ``.mechanism``.

    Notes
    -----
    The error bound and the vocabulary of ``certainty`` are those of :mod:`dprivacy._kernels.phi_solve`,
    the one certified solve of Φ x = b that :func:`dprivacy.regularity` and :func:`dprivacy.tight_threshold`
    use too: componentwise, |z̃ − z*| ≤ |Φ̃⁻¹| (|r| + γ(1 + |Φ̃||z̃|)) with r the residual in extended
    precision, evaluated with the explicit inverse up to
    :data:`~dprivacy._kernels.phi_solve.INVERSE_LIMIT` points ("certified") and with LAPACK's condition
    estimate above ("estimated": verified numerically, not certified).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 6, Prop 6,
       Prop 7, Thm 4, Prop 8, Cor 3, Prop 9.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 7, Prop 7, Lemma 3,
       Thm 3.
    """
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    e = check_epsilon(epsilon)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, _METHODS))}; got {method!r}")
    from ..spaces import GridSpace, SumLineSpace

    grid = isinstance(space, GridSpace)
    line = isinstance(space, SumLineSpace)
    if line and (method == "structured" or (method == "auto" and takes_structured(space, "tight"))):
        from .._kernels.dispatch import SUM_LINE_DENSE_FALLBACK
        from .._kernels.sum_line import tight_constraints_sum_line

        r = tight_constraints_sum_line(space.n, space.delta, epsilon=e, space=space, progress=progress)
        if r.decided or method == "structured" or space.n > SUM_LINE_DENSE_FALLBACK:
            return r
        method = "dense"  # undecided by the sum-line certificates: the dense certified solve decides
    if method == "structured":
        if not grid:
            raise ValueError(f"method='structured' needs a grid (GridSpace) or a sum line (SumLineSpace), got {space.name}")
        from .._kernels.solve import tight_constraints_grid

        return tight_constraints_grid(space, epsilon=e, progress=progress)
    if method in ("auto", "closed-form"):
        path = path_structure(space)
        if path is not None:
            if path[0] == "manhattan" and (method == "closed-form" or takes_structured(space, "tight")):
                from .._kernels.closed_form import manhattan_tight_grid

                return manhattan_tight_grid(space, epsilon=e)
            if not (path[0] == "line" and grid and method == "auto" and takes_structured(space, "tight")):
                return _path_closed_form(space, path, e)  # (a long 1×N grid takes the grid solver below: no n×n)
        if method == "auto" and takes_structured(space, "tight"):
            from .._kernels.solve import tight_constraints_grid

            return tight_constraints_grid(space, epsilon=e, progress=progress)
        if method == "closed-form":
            return ball_size_symmetric_tight(space, epsilon=e)
        profile = _ball_profile(space)
        if profile is not None:
            return _closed_form(space, space.distances, profile, e)
    if method == "exact" and space.n > _ps.EXACT_LIMIT:
        raise ValueError(f"method='exact' is limited to {_ps.EXACT_LIMIT} points; the space has {space.n}")
    phi = _constraints(space.distances, e)
    sol = _ps.solve_phi(phi, exact=(method == "exact"))
    res = _result(space, phi, e, sol)
    return _undecided_near_zero(space, e, res) if sol.singular and sol.status == "exists" else res


#: Below this ε·(largest distance) a Φ singular to working precision is the all-ones matrix plus rounding, not a
#: singular Φ of the space: its numerical null space decides nothing about the true, non-singular Φ.
NEAR_ZERO_SCALE = 1e-6


def _undecided_near_zero(space: MetricSpace, e: float, res: "TightConstraintsResult") -> "TightConstraintsResult":
    """At ε·d this small, Φ = e^{−εd} = 11ᵀ − εD + O(ε²) is 11ᵀ to working precision, and the linear program on its
    numerical null space finds the constant channel (z = 1/n) for any space: grid:3x3 at ε = 1e-14 and 1e-300
    would "exist" where z tends to D⁻¹1/(1ᵀD⁻¹1), with a negative centre entry, as ε → 0. So the answer is
    undecided, with that limit's smallest entry named."""
    from dataclasses import replace

    d = space.distances
    fin = d[np.isfinite(d)]
    if not (fin.size and e * float(fin.max()) < NEAR_ZERO_SCALE):
        return res
    limit = ""
    if np.isfinite(d).all():
        try:
            w = np.linalg.solve(d, np.ones(space.n))
            if abs(w.sum()) > 0:
                w = w / w.sum()
                limit = (f"; as ε → 0, z tends to D⁻¹1/(1ᵀD⁻¹1), whose smallest entry is {w.min():.4g}"
                         + (" (negative: the mechanism does not exist for every small enough ε)" if w.min() < 0 else ""))
        except np.linalg.LinAlgError:
            pass
    reason = (f"undecided: ε·(largest distance) = {e * float(fin.max()):.3g} is below {NEAR_ZERO_SCALE:g}, where Φ = e^(−εd) "
              "is the all-ones matrix to working precision: float64 cannot tell the sign of z = Φ⁻¹1" + limit)
    return replace(res, exists=False, channel=None, certainty="undecided", reason=reason, margin=0.0,
                   error_bound=float("inf"))


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
      the diagonal of the truncated geometric mechanism (ElSalamouny et al. 2014 §6.1; Chatzikokolakis et al. 2013 Fig 2 (iv)).
    * ``("manhattan", grid)``: a Manhattan grid, where e^{−ε(|Δx|+|Δy|)} = e^{−ε|Δx|} e^{−ε|Δy|} makes
      Φ = Φ_rows ⊗ Φ_cols and z = z_rows ⊗ z_cols (ElSalamouny et al. 2014 §6: regularity of the uniform prior).

    In both cases z > 0 for every ε > 0, so the tight-constraints mechanism exists for every ε > 0 and
    the threshold ε* is 0. Returns None for other spaces.
    """
    from ..spaces import GridSpace, SumLineSpace

    if isinstance(space, GridSpace):
        if space.metric != "manhattan" and min(space.width, space.height) == 1:  # grid:1xN is a line, any metric
            return ("line", float(space.step), np.arange(space.n))
        return ("manhattan", space) if space.metric == "manhattan" else None
    if isinstance(space, SumLineSpace):  # a path iff Δ = 1 (or n ≤ 2), known without the distances
        return ("line", 1.0, np.arange(space.n)) if space.delta == 1 or space.n <= 2 else None
    x = space.coordinates
    if x is None or x.ndim != 2 or x.shape[1] != 1:
        x = _line_embedding(space)
        if x is None:
            return None
    else:
        x = x[:, 0]
    found = _line_path(x, space.distances)
    return None if found is None else ("line", found[0], found[1])


def _line_embedding(space: MetricSpace):
    """Positions x on a line with |x_i − x_j| = d(i, j), when the metric is one (a path graph from an edge list, a
    matrix file of a line), else None: x = d(a, ·) from an end point a (the farthest point from point 0). Read from
    the distances, not the space's name, so that 'threshold graph:path.txt' agrees with line:3 (it always exists)."""
    d = space.distances
    n = space.n
    if n < 2 or not np.isfinite(d).all():
        return None
    a = int(np.argmax(d[0]))
    x = d[a].astype(np.float64)
    from ..spaces import METRIC_RTOL, distance_floor

    ok = np.abs(np.abs(x[:, None] - x[None, :]) - d) <= METRIC_RTOL * np.maximum(d, distance_floor(d))
    return x if ok.all() else None


def path_diagonal(path, epsilon: float) -> np.ndarray:
    """The closed-form z of :func:`path_structure`'s spaces (in the space's point order): the
    Kac–Murdock–Szegő diagonal on a line, its Kronecker product on a Manhattan grid
    (:mod:`dprivacy._kernels.closed_form`)."""
    from .._kernels.closed_form import kms_diagonal, manhattan_diagonal

    if path[0] == "line":
        _, s, k = path
        return kms_diagonal(k.size, math.exp(-epsilon * s))[k]
    return manhattan_diagonal(path[1], epsilon)


def _path_closed_form(space: MetricSpace, path, e: float) -> TightConstraintsResult:
    z = path_diagonal(path, e)
    phi = _constraints(space.distances, e)
    h = phi * z[None, :]
    residual = float(np.abs(_ps.residual(phi, z)).max())
    what = ("equally spaced points on a line: Φ is Kac–Murdock–Szegő and z is the truncated geometric diagonal"
            if path[0] == "line" else "a Manhattan grid: Φ = Φ_rows ⊗ Φ_cols and z = z_rows ⊗ z_cols")
    return TightConstraintsResult(
        exists=True, epsilon=e, z=z, channel=Channel._trusted(h, space.labels, space.labels),
        negative=_empty_negative(), reason=f"exists for every ε > 0: {what} (closed form, z > 0)",
        residual=residual, condition=None, error_bound=0.0, margin=math.inf, certainty="closed-form",
        singular=False, nullity=0, method="closed-form", space=space,
    )


def ball_size_symmetric_tight(space: MetricSpace, *, epsilon: float) -> TightConstraintsResult:
    r"""The tight-constraints mechanism of a ball-size symmetric space, in closed form (ElSalamouny et al. 2014 Prop 9).

    A space is ball-size symmetric (ElSalamouny et al. 2014 Def 7) when every point sees the same number n_r of points
    at each distance r. Then every row of Φ sums to s = Σ_r n_r e^{−ε r}, so the constant vector
    z = 1/s solves Φ z = 1 and

    .. math:: h_{yy'} = e^{-\varepsilon d(y,y')} \big/ \textstyle\sum_r n_r e^{-\varepsilon r},

    which exists for every ε > 0. (The paper's statement prints e^{+d}; the derivation above it, and
    Def 6, give e^{−d}.) Distance-regular and vertex-transitive graphs are ball-size symmetric; on a
    clique this is randomized response. Whether Φ is singular (then there are other tight-constraints
    mechanisms, ElSalamouny et al. 2013 App. B) is examined with the shared factorization of
    :mod:`dprivacy._kernels.phi_solve` up to its ``EXAMINE_LIMIT`` points (``nullity``, as the
    regularity tester reports it); above, ``nullity`` is None (not examined).

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
        why = distance_counts(space, rtol=SYMMETRY_RTOL).reason or "the row sums of d differ"
        raise ValueError(f"space {space.name!r} is not ball-size symmetric (ElSalamouny et al. 2014 Def 7): {why}")
    return _closed_form(space, space.distances, profile, e)


# ---------------------------------------------------------------------------------------------
# Ball-size symmetry (ElSalamouny et al. 2014 Def 7, Prop 9)
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
        # relative to the sums themselves: a floor of 1 let grid:3x3:step=1e-10 (sums of 1e-9) pass
        if np.abs(s - s[0]).max() > 4 * rtol * abs(s[0]):
            return None
    counts = distance_counts(space, rtol=rtol)
    return (counts.distances, counts.counts) if counts.symmetric else None


def _closed_form(space: MetricSpace, d: np.ndarray, profile, e: float) -> TightConstraintsResult:
    radii, counts = profile
    s = float(np.sum(counts * np.exp(-e * radii)))
    n = d.shape[0]
    z = np.full(n, 1.0 / s)
    phi = _constraints(d, e)
    h = phi * z[None, :]
    residual = float(np.abs(_ps.residual(phi, z)).max())
    bound = (n + 2) * _ps.UNIT_ROUNDOFF / s  # rounding in the sum s and its reciprocal
    nullity = condition = None
    if n <= _ps.EXAMINE_LIMIT:  # the same factorization, and so the same nullity, as the regularity tester
        fac = _ps.PhiFactor(phi)
        nullity, condition = fac.nullity, fac.condition
    reason = (
        f"exists: the space is ball-size symmetric, so z is constant = 1/Σ_r n_r e^(−εr) = {1 / s:.6g} "
        f"(ElSalamouny et al. 2014 Prop 9); {_ps.describe_singular(nullity)}"
    )
    return TightConstraintsResult(
        exists=True, epsilon=e, z=z, channel=Channel._trusted(h, space.labels, space.labels),
        negative=_empty_negative(), reason=reason, residual=residual, condition=condition,
        error_bound=bound, margin=math.inf, certainty="closed-form",
        singular=None if nullity is None else nullity > 0, nullity=nullity, method="closed-form", space=space,
    )


# ---------------------------------------------------------------------------------------------
# Solving Φ z = 1 with a certificate: the shared kernel dprivacy._kernels.phi_solve
# ---------------------------------------------------------------------------------------------


def _constraints(d: np.ndarray, e: float) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return np.exp(-e * d)


def _empty_negative():
    return np.zeros(0, dtype=np.intp), np.zeros(0)


def _result(space: MetricSpace, phi: np.ndarray, e: float, sol: _ps.PhiSolution) -> TightConstraintsResult:
    z = sol.x
    # An inconsistent system has no solution at all: the least-squares z's signs explain nothing.
    neg_idx = np.flatnonzero(z < 0) if sol.status != "inconsistent" else np.zeros(0, dtype=np.intp)
    negative = (neg_idx, z[neg_idx])
    exists = sol.status == "exists"
    channel = Channel._trusted(phi * z[None, :], space.labels, space.labels) if exists else None
    how = _ps.how_decided(sol.certainty, sol.margin, sol.nullity, x="z")
    if sol.status == "inconsistent":
        reason = f"does not exist: Φz = 1 has no solution: {sol.note}{_ps.describe_singular(sol.nullity)}"
    else:
        cond = f"condition estimate {sol.condition if sol.condition is not None else float('nan'):.3g}"
        reason = tight_reason(sol.status, z, neg_idx.size, sol.error_bound, sol.note + how, undecided_why=cond)
    return TightConstraintsResult(
        exists=exists, epsilon=e, z=z, channel=channel, negative=negative, reason=reason,
        residual=sol.residual, condition=sol.condition, error_bound=sol.error_bound,
        margin=sol.margin, certainty=sol.certainty, singular=sol.singular, nullity=sol.nullity,
        method=sol.method, space=space, consistent=sol.consistent,
    )
