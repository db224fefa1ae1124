r"""Optimal mechanisms on larger spaces: the linear program with privacy constraints on a spanner.

Reference: N. E. Bordenabe, K. Chatzikokolakis, C. Palamidessi, *Optimal geo-indistinguishable
mechanisms for location privacy*, CCS 2014 (arXiv:1402.5029), section "Reducing the number of
constraints" (cited below as **CCS 2014, spanner theorem**; the paper is not among
the five papers of the bibliography, so no result number is given).

The LP of :mod:`dprivacy.mechanisms.optimal` writes one privacy constraint per ordered essential pair
and output. On a Euclidean grid almost every pair is essential (every offset with coprime
coordinates), so the LP has about n³ constraints. With a δ-spanner G = (Y, E) of (Y, d)
(:mod:`dprivacy.spanners`), the spanner theorem: if a channel H satisfies, for every edge
(y, y') ∈ E and every output z,

.. math:: H[y, z] \le e^{(\varepsilon/\delta)\, d(y, y')}\, H[y', z],

then H is ε·d-private. (Chain the edge constraints along a d_G-shortest path from y to y': the factors
multiply to e^{(ε/δ) d_G(y, y')} ≤ e^{ε d(y, y')}.) Solving the LP over these 2·|E|·|W| constraints
instead gives a private mechanism whose utility is at most the true optimum and at least the optimum
at ε/δ (whose channel is (ε/δ)·d-private, hence feasible here).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from numbers import Real
from typing import Sequence

import numpy as np

from ..results import Result
from .._validate import as_prior, check_epsilon
from ..measures.privacy import check_privacy
from ..spaces import MetricSpace
from ..spanners import SpannerResult, build_spanner, spanner_space
from .lp_engine import Round
from .lp_model import OptimalResult, _objective_matrix, no_privacy_bound
from .lp_solve import optimal_lp

#: ``exact="auto"`` solves the exact LP for comparison only when its worst-case size (all ordered pairs,
#: n(n−1)·|W| privacy constraints) is at most this (n ≤ 37 when W = Y; about a second on a 6×6 grid).
EXACT_AUTO_CONSTRAINTS = 50_000

#: Default relative margin on the LP's privacy level: the edge constraints are written at
#: ε(1 − margin)/δ. The solver's feasibility tolerance and the repair's renormalization
#: (:func:`dprivacy.mechanisms.optimal.optimal_mechanism`, Notes) change log-ratios by about 1e−9 in
#: absolute terms; with no margin this makes ``check_privacy`` report ε·(1 + 1e−10) on the pairs
#: where the spanner's dilation is attained (seen on grid:15x15, binary gain). The margin leaves a
#: slack ε·margin·d(y, y') ≥ 1e−6 on every pair of a unit grid at ε = 1, and costs a relative change
#: of the value of order 1e−6.
DEFAULT_MARGIN = 1e-6


@dataclass(frozen=True)
class SpannerOptimalResult(Result):
    """Outcome of :func:`optimal_mechanism_spanner`.

    Attributes
    ----------
    status, solver_message, channel, value, objective, kind, remap
        As in :class:`~dprivacy.mechanisms.lp_model.OptimalResult`, for the LP on the spanner's edges
        (``solved``: the LP returned a channel).
    epsilon : float
        The requested ε (the mechanism is meant to be ε·d-private).
    lp_epsilon : float
        ε(1 − margin)/δ with δ the spanner's achieved dilation: the level of the edge constraints.
    margin : float
        The relative safety margin used (``DEFAULT_MARGIN`` unless given).
    dilation : float
        The spanner's achieved dilation.
    spanner : SpannerResult
    n_edges : int
        |E|.
    n_variables, n_constraints : int
        Size of the spanner LP: n·|W| variables; n equalities plus 2·|E|·|W| inequalities.
    all_pairs_constraints : int
        n + n(n−1)·|W|: the size of the LP with every pair constrained, for comparison.
    seconds : float
        Wall-clock time of the LP solver call.
    build_seconds : float
        Time to build the LP's sparse matrices.
    spanner_seconds : float
        Time to build the spanner and compute its dilation.
    certify_seconds : float
        Time of the final privacy check on the original space.
    smallest_epsilon : float
        Certified by :func:`dprivacy.measures.check_privacy` on the original space (not on the
        spanner): the smallest ε' for which the returned channel is ε'·d-private. NaN if the solve
        failed.
    private : bool
        Whether the channel passes ``check_privacy`` at ε (relative tolerance ``PRIVACY_RTOL`` on ε·d plus the rounding floor).
    lp : OptimalResult
        The underlying solve (its ``smallest_epsilon`` refers to the spanner metric d_G at ε/δ).
    exact : OptimalResult or None
        The exact LP (essential pairs at ε) when it was solved.
    exact_value, exact_seconds : float
        Its value and solver time (NaN when not solved or failed).
    exact_n_constraints : int or None
    optimality_loss : float
        How much worse than the exact optimum the spanner's mechanism is: exact − value for a gain,
        value − exact for a loss (≥ 0 up to solver tolerance); NaN without the exact solve.
    relative_loss : float
        ``optimality_loss`` / |exact value| (NaN when undefined).
    bound : float
        Lagrangian bound of the relaxation (the spanner's edges at ε): OPT ≤ bound for a gain, ≥ for a
        loss; NaN when not computed.
    gap : float
        Relative gap between ``value`` and ``bound`` (inf when either is missing or the channel is not
        certified).
    method : str
        "spanner".
    """

    status: int
    solver_message: str
    channel: object
    value: float
    objective: float
    kind: str
    remap: np.ndarray | None
    epsilon: float
    lp_epsilon: float
    margin: float
    dilation: float
    spanner: SpannerResult
    n_edges: int
    n_variables: int
    n_constraints: int
    all_pairs_constraints: int
    seconds: float
    build_seconds: float
    spanner_seconds: float
    certify_seconds: float
    smallest_epsilon: float
    private: bool
    lp: OptimalResult
    exact: OptimalResult | None
    exact_value: float
    exact_seconds: float
    exact_n_constraints: int | None
    optimality_loss: float
    relative_loss: float
    bound: float = float("nan")
    gap: float = float("nan")
    method: str = "spanner"
    space: MetricSpace | None = field(default=None, repr=False, compare=False)
    #: never kept implicit (the spanner LP's channel is dense); here so that every optimal result reads alike
    implicit: None = field(default=None, repr=False, compare=False)

    @property
    def mechanism(self):
        """The mechanism as a :class:`~dprivacy.mechanisms.base.DenseMechanism` when ``ok``, else None
        (privacy certified by the exact check on the original space)."""
        if not self.ok or self.space is None:
            return None
        from .base import DenseMechanism, PrivacyCertificate

        cert = PrivacyCertificate(True, self.epsilon, "numerical-check", self.reason,
                                  smallest_epsilon=self.smallest_epsilon, rigorous=False)
        return DenseMechanism(self.channel, self.space, epsilon=self.epsilon, name="optimal-spanner", certificate=cert)

    @property
    def solved(self) -> bool:
        """The LP returned a channel (which may still fail the check: ``ok`` says both)."""
        return self.channel is not None

    @property
    def ok(self) -> bool:
        """A channel was found *and* it passes the exact privacy check on the original space at ε."""
        return bool(self.solved and self.private)

    def __bool__(self) -> bool:
        return self.ok

    @property
    def reason(self) -> str:
        if not self.solved:
            return f"the spanner LP failed: {self.solver_message}"
        if not self.private:
            return (f"the spanner LP's channel fails the exact privacy check on the original space: smallest ε "
                    f"{self.smallest_epsilon:.12g} > {self.epsilon:.12g}")
        return (f"spanner LP (dilation {self.dilation:.6g}, edges at ε/δ = {self.lp_epsilon:.6g}): value {self.value:.12g}, "
                f"bound {self.bound:.12g} (the edges at ε), relative gap {self.gap:.3g}; privacy certified by the exact "
                f"check on the original space (smallest ε {self.smallest_epsilon:.12g})")


def _spanner_gap(lp, bound: float, private: bool) -> float:
    if not (lp.solved and private and math.isfinite(bound)):
        return float("inf")
    v, b = (lp.value, bound) if lp.kind == "gain" else (-lp.value, -bound)
    scale = max(abs(v), abs(b))
    return 0.0 if scale == 0 else max(b - v, 0.0) / scale


def optimal_mechanism_spanner(
    space: MetricSpace,
    prior,
    *,
    epsilon: float,
    dilation: float = 1.1,
    spanner: SpannerResult | None = None,
    spanner_method: str = "auto",
    gain=None,
    loss=None,
    outputs: Sequence | None = None,
    method: str = "highs-ipm",
    options: dict | None = None,
    repair: bool = True,
    exact: bool | str = "auto",
    exact_options: dict | None = None,
    margin: float = DEFAULT_MARGIN,
    bound: bool = True,
    time_limit: float | None = None,
    progress=None,
) -> SpannerOptimalResult:
    r"""A near-optimal ε·d-private mechanism by the LP restricted to a spanner's edges (CCS 2014).

    Solves

    .. math::

        \max_{H : Y \to W} \sum_{y, w} \pi_y\, g[y, w]\, H[y, w]
        \quad\text{s.t.}\quad H \ge 0,\ \sum_w H[y, w] = 1,\
        H[y, w] \le e^{(\varepsilon/\delta)\, d(y, y')} H[y', w]\ \ \forall (y, y') \in E,\ w \in W

    (or minimizes the expected loss), with G = (Y, E) a spanner of achieved dilation δ (the level
    actually written is ε(1 − ``margin``)/δ, see ``DEFAULT_MARGIN``). By the spanner
    theorem (CCS 2014) the solution is ε·d-private; this is then *certified* on the original space
    with :func:`dprivacy.measures.check_privacy` (``smallest_epsilon``, ``private``). Its value lies
    between the exact optimum at ε/δ and the exact optimum at ε (module docstring).

    The LP itself is :func:`dprivacy.mechanisms.optimal.optimal_mechanism` on the space (Y, d_G)
    whose essential pairs are the edges (:func:`spanner_space`), at ε/δ: the same constraint builder,
    solver call, cleaning and repair (the repair lifts onto (ε/δ)·d_G-privacy, which implies
    ε·d-privacy).

    Parameters
    ----------
    space : MetricSpace
    prior : array_like (n,)
    epsilon : float
        Privacy level ε ≥ 0 for the original metric d.
    dilation : float
        Target dilation δ ≥ 1 of the spanner (ignored when ``spanner`` is given). Default 1.1, which on
        a Euclidean grid gives the king graph (achieved 1/cos(π/8) ≈ 1.0824 on large grids).
    spanner : SpannerResult, optional
        A spanner built beforehand (e.g. to reuse it over several ε).
    spanner_method : {"auto", "greedy", "offsets"}
        How to build the spanner (:func:`build_spanner`).
    gain, loss, outputs, method, options, repair
        As in :func:`~dprivacy.mechanisms.optimal.optimal_mechanism`.
    exact : bool or "auto"
        Also solve the exact LP (essential pairs at ε) to report ``optimality_loss``. "auto": only when
        n(n−1)·|W| ≤ ``EXACT_AUTO_CONSTRAINTS``.
    exact_options : dict, optional
        ``linprog`` options for the exact solve (e.g. a ``time_limit``); default ``options``.
    margin : float
        Relative safety margin in [0, 1) on the LP's privacy level (``DEFAULT_MARGIN`` = 1e−6): the
        edge constraints are written at ε(1 − margin)/δ so that the solver's ~1e−9 log-ratio
        inaccuracies do not push the certified ε above ε. With ``margin=0`` the LP is exactly the one
        of the spanner theorem (e.g. the exact optimum for δ = 1 on a graph metric), and
        ``private`` may then fail by about 1e−9.
    bound : bool
        Also solve the *relaxation* — the same edges at ε instead of ε/δ, constraints that every
        ε·d-private channel meets — whose Lagrangian bound is on the other side of the true optimum:
        ``value`` ≤ OPT ≤ ``bound`` for a gain (reversed for a loss), with relative ``gap``. Default True
        (about doubles the time).
    time_limit : float, optional
        Seconds for the whole call: each LP solve gets what is left of it, and the bound LP and the exact LP are
        skipped when less than 5% is left (``bound`` is then the bound without privacy, Σ_y π_y max_w gain(y, w)).
    progress : callable, optional
        Called with a :class:`~dprivacy.mechanisms.lp_engine.Round` (in gain form: a loss negated, as the other
        methods report) after the spanner LP is solved and certified (round 1, bound: the one without privacy)
        and after the bound LP (round 2).

    Returns
    -------
    SpannerOptimalResult
        A failed solve is a result with ``solved`` False (no channel) and the solver's message.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1, §7.2
       (the privacy constraints the spanner relaxes).
    """
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    started = time.perf_counter()
    eps = check_epsilon(epsilon, allow_zero=True)
    n = space.n
    as_prior(prior, n)  # validate before the (possibly long) spanner construction
    g, kind = _objective_matrix(n, gain, loss)
    m = g.shape[1]
    if exact not in (True, False, "auto"):
        raise ValueError(f"exact must be True, False or 'auto'; got {exact!r}")
    if isinstance(margin, bool) or not isinstance(margin, Real) or not 0.0 <= float(margin) < 1.0:
        raise ValueError(f"margin must be a number in [0, 1), got {margin!r}")
    margin = float(margin)

    if spanner is None:
        spanner = build_spanner(space, dilation=dilation, method=spanner_method)
    elif not isinstance(spanner, SpannerResult):
        raise TypeError(f"spanner must be a SpannerResult, got {type(spanner).__name__}")
    proxy = spanner_space(space, spanner)
    if not math.isfinite(spanner.dilation):
        raise ValueError(
            f"the spanner does not connect the pair {spanner.worst} at finite distance (dilation inf); "
            "its constraints would not imply privacy"
        )
    lp_eps = eps * (1.0 - margin) / spanner.dilation

    # the limit goes to optimal_lp itself (not only to linprog's options), so that a solve it stops returns the
    # best constant channel with an honest bound, as every method does, not a failure; it bounds the whole call
    # (spanner, LP, bound LP, exact LP), as docs/user_guide/theory.rst says: each solve gets what is left, and the bound LP and
    # the exact LP are skipped when less than 5% of it is left
    def left():
        return None if time_limit is None else max(float(time_limit) - (time.perf_counter() - started), 1e-3)

    common = dict(gain=gain, loss=loss, outputs=outputs, method="full", solver=method, repair=repair)
    lp = optimal_lp(proxy, prior, epsilon=lp_eps, options=options, time_limit=left(), **common)
    t1 = time.perf_counter()
    if lp.solved:
        check = check_privacy(lp.channel, space, epsilon=eps)
        smallest, private = check.smallest_epsilon, check.ok
    else:
        smallest, private = float("nan"), False
    certify_seconds = time.perf_counter() - t1
    sign = 1.0 if kind == "gain" else -1.0
    # no privacy: each secret guessed at its best (valid whatever happens next; the bound LP tightens it)
    free_bound = sign * no_privacy_bound(sign * as_prior(prior, n)[:, None] * g)

    def report(k: int, bound_now: float, rows: int) -> None:
        if progress is not None and lp.solved:
            value = sign * lp.value if private else float("nan")
            progress(Round(round=k, rows=int(rows), objective=sign * lp.value, bound=sign * bound_now,
                           certified=value, gap=_spanner_gap(lp, bound_now, private), violated=0,
                           seconds=time.perf_counter() - started, columns=m))

    report(1, free_bound, lp.n_constraints)
    relaxed_bound = float("nan")
    if bound and lp.solved:
        relaxed_bound = free_bound  # unless the bound LP below does better
    if bound and lp.solved and (time_limit is None or left() > 0.05 * float(time_limit)):
        # ε on the spanner's edges: implied by ε·d-privacy (each edge is a pair of the space), so a relaxation.
        relaxed = optimal_lp(proxy, prior, epsilon=eps, options=options, time_limit=left(), **common)
        if relaxed.solved and np.isfinite(relaxed.bound):
            relaxed_bound = min(relaxed.bound, free_bound) if kind == "gain" else max(relaxed.bound, free_bound)
            report(2, relaxed_bound, relaxed.n_constraints)

    run_exact = exact is True or (exact == "auto" and n * (n - 1) * m <= EXACT_AUTO_CONSTRAINTS
                                  and (time_limit is None or left() > 0.05 * float(time_limit)))
    ex = None
    exact_value = exact_seconds = optimality_loss = relative_loss = float("nan")
    if run_exact:
        ex = optimal_lp(space, prior, epsilon=eps, options=exact_options if exact_options is not None else options,
                               pairs="essential", time_limit=left(), **common)
        exact_seconds = ex.seconds
        if ex.solved:
            exact_value = ex.value
            if lp.solved:
                optimality_loss = (exact_value - lp.value) if lp.kind == "gain" else (lp.value - exact_value)
                relative_loss = optimality_loss / abs(exact_value) if exact_value != 0 else float("nan")

    return SpannerOptimalResult(
        status=lp.status, solver_message=lp.solver_message, channel=lp.channel, value=lp.value,
        objective=lp.objective, kind=lp.kind, remap=lp.remap, epsilon=eps, lp_epsilon=lp_eps, margin=margin,
        dilation=spanner.dilation, spanner=spanner, n_edges=spanner.n_edges, n_variables=lp.n_variables,
        n_constraints=lp.n_constraints, all_pairs_constraints=n + n * (n - 1) * m, seconds=lp.seconds,
        build_seconds=lp.build_seconds, spanner_seconds=spanner.seconds, certify_seconds=certify_seconds,
        smallest_epsilon=smallest, private=private, lp=lp, exact=ex, exact_value=exact_value,
        exact_seconds=exact_seconds, exact_n_constraints=None if ex is None else ex.n_constraints,
        optimality_loss=optimality_loss, relative_loss=relative_loss, bound=relaxed_bound,
        gap=_spanner_gap(lp, relaxed_bound, private), space=space,
    )
