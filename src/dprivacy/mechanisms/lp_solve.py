r"""Solving the optimal-mechanism LP (:mod:`.lp_model`): which algorithm for which problem, and the
certified answer of each.

* The plan (:func:`_plan`): the truncated geometric mechanism with its optimal remap where Chatzikokolakis et al. 2013 Thm 8
  makes it optimal (a line, a loss monotone in the distance; no LP), else by the size of the full LP the full
  LP (scipy's ``linprog``, HiGHS), constraint generation (:mod:`.lp_engine`) or Dantzig–Wolfe decomposition
  (:mod:`.decomposition`).
* For the binary gain the engines start from the *tent LP*, ElSalamouny et al. 2014's tight-constraints columns (Def 6)
  with the row sums relaxed, whose dual bounds the optimum and whose channel, repaired, is returned where it
  meets that bound (a prior in the region where tight-constraints is optimal, ElSalamouny et al. 2014 Thm 4).
* Every channel returned is cleaned, repaired (:mod:`.repair`) and checked exactly
  (:func:`dprivacy.measures.check_privacy`), with a certified bracket value ≤ OPT ≤ bound (gain form); a
  solve stopped by its time limit returns the best certified channel it has, or the best constant channel.

The front door is :func:`dprivacy.mechanisms.optimal.optimal_mechanism`, which also offers the spanner LP.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

import numpy as np
from scipy.optimize import linprog

from .._validate import as_prior, check_epsilon
from ..channels import Channel
from ..measures.privacy import check_privacy
from ..measures.utility import expected_loss, utility
from ..spaces import MetricSpace
from .lp_engine import _relative_gap
from .lp_model import (_PAIRS, OptimalResult, Problem, _Context, _objective_matrix, _output_labels,
                       _row_sum_constraints, no_privacy_bound, privacy_constraints)
from .repair import certified_repair
from .tent_lp import _tent_bracket

#: Largest LP (number of channel entries n·|W|) this module will build; beyond it the constraint
#: matrix alone needs gigabytes and HiGHS would not finish in reasonable time.
MAX_VARIABLES = 10_000_000

#: Privacy-constraint rows above which the LP is refused before building (each row has two non-zeros;
#: HiGHS needs tens of bytes per row, and the solve time grows faster than the size).
MAX_CONSTRAINT_ROWS = 20_000_000

#: A raw LP entry more negative than this is not rounding noise: the result is marked unsuccessful (HiGHS's
#: default primal feasibility tolerance; the certified repair absorbs the smaller ones).
NEGATIVE_ATOL = 1e-7

#: A raw row sum further than this from 1 is not rounding noise either (HiGHS' default feasibility
#: tolerance is 1e-7).
ROW_SUM_ATOL = 1e-6

_METHODS = ("auto", "full", "constraint-generation", "dantzig-wolfe", "spanner", "truncated-geometric")
_SOLVERS = ("highs-ipm", "highs", "highs-ds")

#: ``status`` of a Dantzig–Wolfe run that stopped without closing its gap (no improving ray within the
#: solvers' tolerances, or a failed master): an iteration-limit-like status, with the honest bracket.
STALLED = 5

#: Default relative gap at which constraint generation stops.
DEFAULT_GAP = 1e-7

#: ``method="auto"`` solves the full LP when it has at most ``AUTO_FULL_ROWS`` privacy rows, or at most
#: ``AUTO_FULL_SPARSE_ROWS`` on a sparse graph (at most ``AUTO_SPARSE_PAIRS_PER_POINT`` constraint pairs
#: per point: graph metrics and Manhattan grids, whose edges are all the LP needs); constraint
#: generation up to ``AUTO_CG_POINTS`` points; Dantzig–Wolfe decomposition above, falling back on
#: constraint generation with the time left when it stalls on ill-conditioned pricing problems.
#: Measured with the world-cities prior in one run (benchmarks/RESULTS.md): full wins on 4×4 (0.03 s
#: against 0.07 s DW, 0.02 s CG) and on grid:8x8:manhattan (0.50 s, DW 0.61 s); 6×6
#: Euclidean CG 0.24 s, full 0.58 s, DW 0.62 s; DW wins from grid:12x12:manhattan (4.3 s, full 10.3 s,
#: CG 14.3 s) and 10×10 Euclidean (DW 14.5 s, CG 43 s). On sparse graphs the full LP only up to
#: ``AUTO_FULL_SPARSE_ROWS``: measured 2026-11-26 (benchmarks/bench_auto_crossover.py, each pair one
#: after the other) with the world-cities prior, grid:8x8:manhattan (13,664 rows) full 0.72 s, DW 0.87 s;
#: grid:10x10:manhattan (34,920 rows) full 5.0 s, DW 1.67 s; grid:12x12:manhattan full 13.9 s, DW 3.2 s;
#: and (a Dirichlet prior, after the decomposition's scaled pricing rows and master ladder) sum:20,3
#: (21,594 rows) full 0.88 s, DW 0.69 s; sum:30,3 (48,594) 3.9 s against 2.6 s; sum:40,3 (86,394)
#: 11.5 s against 2.7 s.
AUTO_FULL_ROWS = 8_000
AUTO_FULL_SPARSE_ROWS = 20_000
AUTO_SPARSE_PAIRS_PER_POINT = 4
AUTO_CG_POINTS = 64
#: A decomposition that stalled within this relative gap is returned as it is by ``method="auto"``
#: (above it constraint generation gets the time left). Measured on a 19×15 grid of 200 km cells at
#: ε = 4 per cell (the world-cities prior): the decomposition stalled at gap 1.1e-6 after 80 s, where
#: constraint generation had reached 1.75e-4 after 300 s.
AUTO_RETRY_GAP = 1e-5


def check_problem(space: MetricSpace, prior, *, epsilon: float, gain=None, loss=None, outputs: Sequence | None = None,
                  method: str = "auto", gap: float = DEFAULT_GAP, time_limit: float | None = None,
                  pairs: str = "essential", solver: str = "highs-ipm", options: dict | None = None) -> Problem:
    """The arguments of :func:`~dprivacy.mechanisms.optimal.optimal_mechanism`, checked (TypeError or ValueError
    naming the first that is wrong) and put in the form the solvers take: the prior, the gain or loss matrix and
    its kind, the output labels."""
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    eps = check_epsilon(epsilon, allow_zero=True)
    n = space.n
    p = as_prior(prior, n)
    g, kind = _objective_matrix(n, gain, loss)
    m = g.shape[1]
    binary = gain is None and loss is None
    labels = _output_labels(outputs, space, m, binary=binary)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, _METHODS))}; got {method!r}")
    if pairs not in _PAIRS:
        raise ValueError(f"pairs must be one of {', '.join(map(repr, _PAIRS))}; got {pairs!r}")
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {', '.join(map(repr, _SOLVERS))}; got {solver!r}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict of linprog options, got {type(options).__name__}")
    return Problem(space, eps, p, g, kind, binary, labels, method, pairs, solver, options, _check_gap(gap),
                   _check_time_limit(time_limit))


def optimal_lp(space: MetricSpace, prior, *, epsilon: float, gain=None, loss=None, outputs: Sequence | None = None,
               method: str = "auto", gap: float = DEFAULT_GAP, time_limit: float | None = None, progress=None,
               pairs: str = "essential", solver: str = "highs-ipm", options: dict | None = None,
               repair: bool = True) -> OptimalResult:
    """:func:`~dprivacy.mechanisms.optimal.optimal_mechanism` by every method but ``"spanner"``: the LP
    itself, which the spanner LP (:mod:`.spanner`) solves on its spanner's edges."""
    problem = check_problem(space, prior, epsilon=epsilon, gain=gain, loss=loss, outputs=outputs, method=method,
                            gap=gap, time_limit=time_limit, pairs=pairs, solver=solver, options=options)
    if problem.method == "spanner":
        raise ValueError("method='spanner' is optimal_mechanism's (optimal_mechanism_spanner); optimal_lp solves the LP")
    return solve(problem, progress=progress, repair=repair)


def solve(problem: Problem, *, progress=None, repair: bool = True) -> OptimalResult:
    """The optimal-mechanism LP of a checked problem, by the method its plan names (:func:`_plan`): the
    truncated geometric mechanism where Chatzikokolakis et al. 2013 Thm 8 makes it optimal, else the full LP, Dantzig–Wolfe
    decomposition or constraint generation, with the certified finish."""
    space, eps, p, g, kind, binary, labels = (problem.space, problem.eps, problem.p, problem.g, problem.kind,
                                              problem.binary, problem.labels)
    method, pairs, solver, options = problem.method, problem.pairs, problem.solver, problem.options
    gap, time_limit = problem.gap, problem.time_limit
    n, m = space.n, g.shape[1]
    started = time.perf_counter()  # the time limit covers every stage from here (tent LP, rounds, repair)
    plan_from = method
    plan = _plan(space, g, kind, m, method, pairs, kept_size=int((p > 0).sum()) if binary else m)
    if plan[0] == "truncated-geometric":
        return _solve_universal(space, eps, p, g, kind, binary, labels)
    # Gain form: maximise Σ c·H, c = π·g (gain) or −π·l (loss).
    c_all = p[:, None] * g if kind == "gain" else -(p[:, None] * g)
    kept = np.flatnonzero(p > 0) if binary else np.arange(m)
    if kept.size == 0:  # cannot happen for a valid prior; kept for clarity
        kept = np.arange(m)
    c = c_all[:, kept]
    mk = kept.size
    if n * mk > MAX_VARIABLES:
        raise ValueError(
            f"the LP would have {n}x{mk} = {n * mk:,} variables, over MAX_VARIABLES = {MAX_VARIABLES:,}; "
            "use a structured mechanism (tight-constraints, geometric, Laplace) for a space this large"
        )
    method, rows_est, n_pairs_est = plan
    auto = plan_from == "auto"
    if method == "full" and rows_est > MAX_CONSTRAINT_ROWS:
        raise ValueError(
            f"the LP would have {rows_est:,} privacy constraints ({n_pairs_est:,} pairs x {mk} outputs x 2), over "
            f"MAX_CONSTRAINT_ROWS = {MAX_CONSTRAINT_ROWS:,} (about {rows_est * 1600 / 2**30:.0f} GiB for HiGHS, measured "
            "1.5 KB a row); use "
            "method='constraint-generation', a graph metric (edges only), or tight-constraints where it exists"
        )
    ctx = _Context(**vars(problem), kept=kept, m=m, repair=repair, c_all=c_all,
                   deadline=None if time_limit is None else started + time_limit)
    if method == "full":
        return _solve_full(ctx, c, pairs, solver, options, time_limit, started, gap, progress)
    if method == "dantzig-wolfe":
        res = _solve_decomposed(ctx, c, gap, time_limit, progress, started, tent_shortcut=auto)
        left = _left(time_limit, started)
        retry = res.status == 4 or (res.status == STALLED and not res.gap <= AUTO_RETRY_GAP)
        if auto and retry and (left is None or left > 1.0):
            other = _solve_generated(ctx, c, gap, time_limit, progress, started, tent_shortcut=False)
            return other if _better(other, res) else res
        return res
    return _solve_generated(ctx, c, gap, time_limit, progress, started, tent_shortcut=auto)


def _better(a: "OptimalResult", b: "OptimalResult") -> bool:
    """Whether result ``a`` is the better answer: a certified channel first, then the smaller gap."""
    if a.ok != b.ok:
        return a.ok
    return a.gap < b.gap


def _plan(space: MetricSpace, g: np.ndarray, kind: str, m: int, method: str, pairs: str,
          kept_size: int) -> tuple[str, int, int]:
    """(the algorithm ``method`` resolves to, the privacy rows of its full LP, the constraint pairs):
    "truncated-geometric" (no LP) where Chatzikokolakis et al. 2013 Thm 8 applies, "spanner", or "full" /
    "constraint-generation" by the size of the full LP."""
    if method == "truncated-geometric" or (method == "auto" and pairs == "essential"):
        why_not = _universal_line_reason(space, g, kind, m)
        if why_not is None:
            return "truncated-geometric", 0, 0
        if method == "truncated-geometric":
            raise ValueError(f"method='truncated-geometric' (Chatzikokolakis et al. 2013 Thm 8) does not apply: {why_not}")
    n = space.n
    n_pairs_est = space.constraint_pairs()[0].size if pairs == "essential" else n * (n - 1) // 2
    rows_est = 2 * n_pairs_est * kept_size
    if method == "auto":
        sparse = n_pairs_est <= AUTO_SPARSE_PAIRS_PER_POINT * n
        if rows_est <= AUTO_FULL_ROWS or pairs == "all" or (sparse and rows_est <= AUTO_FULL_SPARSE_ROWS):
            method = "full"
        elif n <= AUTO_CG_POINTS:
            method = "constraint-generation"
        else:
            method = "dantzig-wolfe"
    return method, rows_est, n_pairs_est


def lp_plan(space: MetricSpace, *, gain=None, loss=None, method: str = "auto", pairs: str = "essential") -> tuple[str, int]:
    """What :func:`optimal_mechanism` would run, without running it: (algorithm, privacy rows of the full
    LP). The algorithm is "truncated-geometric" (Chatzikokolakis et al. 2013 Thm 8: no LP), "spanner", "full" or
    "constraint-generation"; the rows are 2 × constraint pairs × outputs (for the binary gain, every
    output counted). For size estimates before a solve (the command line's memory guard)."""
    g, kind = _objective_matrix(space.n, gain, loss)
    method_, rows, _ = _plan(space, g, kind, g.shape[1], method, pairs, kept_size=g.shape[1])
    return method_, rows


def _universal_line_reason(space: MetricSpace, g: np.ndarray, kind: str, m: int) -> str | None:
    """None when the truncated geometric mechanism is the optimum (Chatzikokolakis et al. 2013 Thm 8, after Ghosh,
    Roughgarden, Sundararajan 2009): the space is a line whose metric is c·|k_i − k_j| on equally spaced
    points, the guesses are its points (W = Y), and the loss is monotone in the distance — for every
    secret y, l(y, w) non-decreasing as w moves away from y (a gain: non-increasing). Else the reason."""
    from .geometric import _grid_positions, line_coordinates

    n = space.n
    if m != n:
        return f"the guesses are not the points of the line ({m} columns for {n} points)"
    try:
        x = line_coordinates(space)
        k, _ = _grid_positions(x, space.name)
    except (TypeError, ValueError) as exc:
        return str(exc)
    if n < 2:
        return None
    order = np.argsort(k)
    d = space.distances[np.ix_(order, order)]
    c = d[0, 1]
    steps = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    if not (np.isfinite(c) and c > 0 and np.allclose(d, c * steps, rtol=1e-12, atol=0.0)):
        return "its metric is not a multiple of the line distance |i − j| (e.g. a sum query's ⌈|i − j|/v⌉)"
    loss = (g if kind == "loss" else -g)[np.ix_(order, order)]
    dl = np.diff(loss, axis=1)  # dl[y, w] = l(y, w+1) − l(y, w)
    right = np.arange(n - 1)[None, :] >= np.arange(n)[:, None]  # the step w → w+1 moves away from y
    tol = 1e-12 * max(1.0, float(np.abs(loss).max()))
    if (dl[right] < -tol).any() or (dl[~right] > tol).any():
        return "the loss is not monotone in the distance |y − w| for every secret y"
    return None


def _solve_universal(space: MetricSpace, eps: float, p: np.ndarray, g: np.ndarray, kind: str, binary: bool,
                     labels: list) -> "OptimalResult":
    """The truncated geometric mechanism with its optimal remap: optimal for every prior and every
    monotone loss on a line (Chatzikokolakis et al. 2013 Thm 8). The remap is post-processing, so the returned channel
    Y → W is private; it is re-checked all the same — on its exact log-entries when a float64 matrix
    cannot hold it (ε·d ≳ 708), where the mechanism is returned implicit."""
    from .geometric import TruncatedGeometricMechanism, truncated_geometric

    t0 = time.perf_counter()
    tg = truncated_geometric(space, epsilon=eps)
    implicit = isinstance(tg, TruncatedGeometricMechanism)
    if kind == "loss":
        measured = expected_loss(tg, p, g)
    else:
        measured = utility(tg, p, None if binary else g)
    remap = np.asarray(measured.remap, dtype=np.intp)
    if implicit:
        mech = tg.remapped(remap, outputs=labels)
        channel = None
    else:
        h = tg.matrix
        remapped = np.zeros((space.n, g.shape[1]))
        np.add.at(remapped.T, remap, h.T)  # column z of TG goes to guess remap[z]
        mech = Channel._trusted(remapped, space.labels, labels)
        channel = mech
    check = check_privacy(mech, space, epsilon=eps)
    if implicit:
        channel = Channel._trusted(mech.rows(np.arange(space.n)), space.labels, labels)
    seconds = time.perf_counter() - t0
    nan = float("nan")
    return OptimalResult(
        status=0,
        solver_message=("the truncated geometric mechanism with its optimal remap, universally optimal on a line for every "
                 "prior and monotone loss (Chatzikokolakis et al. 2013 Thm 8; Ghosh, Roughgarden, Sundararajan 2009)"),
        channel=channel, value=measured.value, objective=measured.value, kind=kind,
        remap=np.arange(g.shape[1]), pairs="none", n_pairs=0, n_variables=0, n_constraints=0, seconds=seconds,
        build_seconds=0.0, smallest_epsilon=check.smallest_epsilon, private=check.ok, row_sum_error=0.0,
        clipped=0.0, min_entry=float(channel.matrix.min()), raw_smallest_epsilon=nan, repair_mass=0.0, epsilon_checked=eps,
        space=space, method="truncated-geometric", bound=measured.value, gap=0.0,
        implicit=mech if implicit else None,
    )


def _check_gap(gap) -> float:
    if isinstance(gap, bool) or not isinstance(gap, (int, float, np.floating, np.integer)) or not (0.0 <= float(gap) < 1.0):
        raise ValueError(f"gap must be a number in [0, 1) (a relative gap), got {gap!r}")
    return float(gap)


def _check_time_limit(time_limit):
    if time_limit is None:
        return None
    if (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float, np.floating, np.integer))
            or not np.isfinite(time_limit) or time_limit <= 0):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    return float(time_limit)


#: Seconds the certified repair may run past the time limit (cheap lifts, e.g. 0.1 s along a 50×50
#: Manhattan grid, then still settle; a dense lift of 2,500 points takes 30 s, so there only the first
#: lift is made). Without them, a channel one lift short of certification would give way to the constant one.
LATE_REPAIR_GRACE = 2.0

#: Share of the time limit kept for the certified repair after the decomposition, at most this many
#: seconds.
REPAIR_RESERVE_SHARE = 0.05
REPAIR_RESERVE_MAX = 15.0


def _left(time_limit, started: float) -> float | None:
    """Seconds left of ``time_limit`` counted from ``started`` (None: no limit; at least 1 ms, so a
    solver asked for it stops at once with its time-limit status)."""
    if time_limit is None:
        return None
    return max(time_limit - (time.perf_counter() - started), 1e-3)


def _solve_full(ctx: _Context, c: np.ndarray, pairs: str, solver: str, options, time_limit,
                started: float, gap: float, progress) -> "OptimalResult":
    from .lp_engine import lagrangian_bound_matrix

    space, eps, n, mk = ctx.space, ctx.eps, ctx.space.n, ctx.kept.size
    t0 = time.perf_counter()
    a_ub, n_pairs = privacy_constraints(space, epsilon=eps, n_outputs=mk, pairs=pairs)
    a_eq = _row_sum_constraints(n, mk)
    build = time.perf_counter() - t0
    opts = dict(options or {})
    if time_limit is not None:
        opts.setdefault("time_limit", _left(time_limit, started))
    t1 = time.perf_counter()
    res = linprog(-c.ravel(), A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]), A_eq=a_eq, b_eq=np.ones(n),
                  bounds=(0, None), method=solver, options=opts or None)
    seconds = time.perf_counter() - t1
    size = dict(pairs=pairs, n_pairs=n_pairs, n_variables=n * mk, n_constraints=n + a_ub.shape[0],
                seconds=seconds, build_seconds=build, method="full")
    status, message = int(res.status), str(res.message)
    if status == 1 and time_limit is not None:
        message = (f"time limit of {time_limit:g} s reached ({message})" if "time" in message.lower() else
                   f"stopped before the optimum ({message})")
    if res.status != 0 or res.x is None:
        left = _left(time_limit, started)
        if status in (2, 3, 4) and (left is None or left > 1.0):
            # The LP is feasible and bounded (module docstring), so these statuses are the solver's
            # numerical trouble, not an answer (measured: count:300, ε = 0.5, distance loss, 180,901 rows:
            # "HiGHS Status 4: Solve error" after 229 s, where the decomposition gives the optimum in
            # 0.8 s). The same LP is solved by decomposition instead, and the result says so.
            other = _solve_decomposed(ctx, c, gap, time_limit, progress, started)
            return replace(other, solver_message=f"the full LP failed: {message}; solved by Dantzig–Wolfe "
                                                 f"decomposition instead: {other.solver_message}")
        return _fallback_or_failed(ctx, status, message, size, time_limit)
    marg = getattr(getattr(res, "ineqlin", None), "marginals", None)
    bound = float("inf")
    if marg is not None:
        lam = np.asarray(marg, dtype=np.float64)
        # linprog's marginals are ∂objective/∂b_ub of the minimisation; λ = −marginals ≥ 0 here.
        # Both signs give valid bounds (negative multipliers are set to 0); keep the smaller.
        bound = min(lagrangian_bound_matrix(c, a_ub, -lam), lagrangian_bound_matrix(c, a_ub, lam))
    return _finish(ctx, np.asarray(res.x, dtype=np.float64).reshape(n, mk), float(-res.fun), bound, status,
                   message, size)


def _solve_decomposed(ctx: _Context, c: np.ndarray, gap: float, time_limit, progress,
                      started: float, *, tent_shortcut: bool = False) -> "OptimalResult":
    """Dantzig–Wolfe decomposition over the privacy cone (:mod:`dprivacy.mechanisms.decomposition`),
    started for the binary gain from the tent LP's dual (its bracket kept)."""
    from .decomposition import dantzig_wolfe

    space, eps, n = ctx.space, ctx.eps, ctx.space.n
    tent = _tent_bracket(ctx, time_limit=_left(time_limit, started), share=time_limit) if ctx.binary else None
    if tent_shortcut and (done := _tent_closes_gap(ctx, tent, gap, started)) is not None:
        return done
    center = center_bound = None
    if tent is not None:
        center, center_bound = tent[3], tent[2]
    left = _left(time_limit, started)
    if left is not None:
        # the repair's alternations run after the engine and need their share of the limit (one lift after
        # the deadline is not enough on 50×50 Manhattan at 600 s, and the constant channel would be returned)
        left = max(left - min(REPAIR_RESERVE_SHARE * time_limit, REPAIR_RESERVE_MAX), 1e-3)
    out = dantzig_wolfe(space, c, epsilon=eps, center=center,
                        center_bound=float("inf") if center_bound is None else center_bound, gap=gap,
                        time_limit=left, progress=progress)
    if left is not None and out.status == "time-limit":
        # the engine ran on its share of the caller's limit (the tent LP came before, the repair comes
        # after): name the caller's limit, which is the one the user gave
        out.message = out.message.replace(f"time limit of {left:g} s", f"time limit of {time_limit:g} s (the decomposition's "
                                          f"share {left:.3g} s)")
    status = {"optimal": 0, "gap": 0, "time-limit": 1, "stalled": STALLED, "failed": 4}[out.status]
    size = _engine_size(out, n, started, "dantzig-wolfe")
    bound = out.bound if tent is None else min(out.bound, tent[2])
    if tent is not None and tent[0] is not None and (out.raw is None or tent[1] > out.objective):
        return _finish(ctx, tent[0], out.objective, bound, status,
                       f"{out.message}; the repaired tent-LP channel is better than the master's and is returned",
                       size, already_full=True, lenient=True)
    if out.raw is None:
        return _fallback_or_failed(ctx, status, out.message, size, time_limit, bound=bound)
    return _finish(ctx, out.raw, out.objective, bound, status, out.message, size, lenient=True)


def _engine_size(out, n: int, started: float, method: str) -> dict:
    """The size and history fields of an OptimalResult from an engine's outcome."""
    return dict(pairs="generated", n_pairs=out.n_pairs, n_variables=n * out.active, n_constraints=n + out.rows,
                seconds=time.perf_counter() - started, build_seconds=0.0, method=method,
                rounds=len(out.rounds), history=tuple(out.rounds))


def _solve_generated(ctx: _Context, c: np.ndarray, gap: float, time_limit, progress,
                     started: float, *, tent_shortcut: bool = False) -> "OptimalResult":
    from .lp_engine import CERTIFY_EVERY_ROUND_ELEMENTS, constraint_generation

    space, eps, n, mk = ctx.space, ctx.eps, ctx.space.n, ctx.kept.size
    peaks = ctx.kept if ctx.binary else _output_points(ctx)
    t0 = started
    tent = _tent_bracket(ctx, time_limit=_left(time_limit, started), share=time_limit) if ctx.binary else None
    if tent_shortcut and (done := _tent_closes_gap(ctx, tent, gap, started)) is not None:
        return done

    best = {"value": float("-inf"), "channel": None}  # the best round's channel as certified

    def certify(h):
        value, channel = _certified_value(ctx, h)
        if value > best["value"]:
            best.update(value=value, channel=channel)
        return value

    every = n * n * mk <= CERTIFY_EVERY_ROUND_ELEMENTS
    out = constraint_generation(space, c, peaks, epsilon=eps, certify=certify if every else None, gap=gap,
                                time_limit=time_limit, progress=progress, started=started)
    status = {"optimal": 0, "gap": 0, "time-limit": 1, "memory": 4, "failed": 4}[out.status]
    size = _engine_size(out, n, t0, "constraint-generation")
    bound = out.bound if tent is None else min(out.bound, tent[2])
    if out.status in ("optimal", "gap") and out.raw is not None:
        return _finish(ctx, out.raw, out.objective, bound, status, out.message, size, lenient=True)
    if tent is not None and tent[0] is not None:
        certified = [r.certified for r in out.rounds if np.isfinite(r.certified)]
        if out.raw is None or (certified and tent[1] > max(certified)) or (not certified and not every):
            return _finish(ctx, tent[0], out.objective, bound, status,
                           f"{out.message}; the repaired tent-LP channel certified better than any round and is returned",
                           size, already_full=True, lenient=True)
    if out.raw is None:
        return _fallback_or_failed(ctx, status, out.message, size, time_limit, bound=bound)
    if best["channel"] is not None:
        # stopped early: the best round's channel is repaired and checked already; repairing the raw point
        # again after the deadline can fail and leave only the constant channel (on a 19×15 grid of 200 km
        # cells at ε = 4 per cell, round 2 is certified at gap 2.0e-4 and the raw point's repair fails)
        return _finish(ctx, best["channel"], out.objective, bound, status, out.message, size, lenient=True)
    return _finish(ctx, out.raw, out.objective, bound, status, out.message, size, lenient=True)


def _tent_closes_gap(ctx: _Context, tent, gap: float, started: float) -> "OptimalResult | None":
    """The repaired tent-LP channel as the answer when its certified gain is within ``gap`` of the tent
    bound, else None. That is the case where ElSalamouny et al. 2014's tight-constraints mechanism is optimal: when the
    prior is in the region of ε·d-regular priors (Thm 4), the tent LP's optimum has every row summing
    to 1 — the tight-constraints channel — and its gain equals the bound. Measured on grid:30x30 with the
    uniform prior (certified regular): the bracket closed at gap 6e-9 before constraint generation
    started, which then ran to the 300 s time limit and returned that same bracket. Taken under
    ``method="auto"`` only (a method asked for by name runs)."""
    if tent is None or tent[0] is None or not np.isfinite(tent[1]) or _relative_gap(tent[2], tent[1]) > gap:
        return None
    n = ctx.space.n
    size = dict(pairs="none", n_pairs=0, n_variables=ctx.kept.size, n_constraints=n,
                seconds=time.perf_counter() - started, build_seconds=0.0, method="tent-lp", rounds=0, history=())
    res = _finish(ctx, tent[0], tent[1], tent[2], 0,
                  "the tent LP's channel (ElSalamouny et al. 2014's tight-constraints columns, Def 6, with the row sums relaxed to "
                  "≤ 1) is optimal within the gap: its certified gain meets the tent bound, as where the prior is "
                  "ε·d-regular and the tight-constraints mechanism is optimal (ElSalamouny et al. 2014 Thm 4)", size, already_full=True)
    # the check in _finish decides; a channel that failed it is no answer here (the LP runs instead)
    return res if res.ok and res.gap <= gap else None


def _output_points(ctx: _Context) -> np.ndarray:
    """The point of the space each output column peaks at: the output itself when W = Y, else the
    point where the column's gain is largest."""
    if ctx.m == ctx.space.n:
        return np.arange(ctx.m, dtype=np.intp)
    return np.asarray(ctx.c_all.argmax(axis=0), dtype=np.intp)


def _repaired(ctx: _Context, h: np.ndarray) -> tuple[np.ndarray, float]:
    h = np.clip(h, 0.0, None)
    h = h / h.sum(axis=1, keepdims=True)
    if ctx.repair:
        return certified_repair(h, ctx.space, epsilon=ctx.eps, deadline=ctx.deadline)
    return h, 0.0


def _certified_value(ctx: _Context, h: np.ndarray) -> tuple[float, np.ndarray | None]:
    """Gain-form value Σ c·H of the repaired restricted channel and that channel if it passes the exact
    check, else (−inf, None)."""
    r, _ = _repaired(ctx, h)
    if not check_privacy(r, ctx.space, epsilon=ctx.eps, smallest=False).ok:
        return float("-inf"), None
    return float((ctx.c_all[:, ctx.kept] * r).sum()), r


def _constant_channel(ctx: _Context) -> tuple[np.ndarray, float]:
    """The best constant channel (every secret mapped to the guess of largest Σ_y c[y, w]): 0·d-private."""
    col = ctx.c_all.sum(axis=0)
    w = int(col.argmax())
    h = np.zeros((ctx.space.n, ctx.m))
    h[:, w] = 1.0
    return h, float(col[w])


def _no_privacy_bound(ctx: _Context) -> float:
    return no_privacy_bound(ctx.c_all)


def _fallback_or_failed(ctx: _Context, status: int, message: str, size: dict, time_limit,
                        bound: float = float("inf")) -> "OptimalResult":
    """Without a solved LP: at a time limit, the best constant channel with the no-privacy bound (or a
    better ``bound`` when one is known: an honest, if wide, bracket); otherwise a failed result."""
    if status != 1 or time_limit is None:
        return _failed(status, message, ctx.kind, size, space=ctx.space, eps=ctx.eps)
    h, _ = _constant_channel(ctx)
    full = dict(size)
    return _finish(ctx, h, float("nan"), min(_no_privacy_bound(ctx), bound), 1,
                   f"{message}; no round finished: the best constant channel is returned", full,
                   already_full=True, lenient=True, constant=True)


#: The exponential fallback is tried up to this many points (its n×n matrix and its check).
EXPONENTIAL_FALLBACK_POINTS = 3000


def _exponential_fallback(ctx: _Context, constant_value: float):
    """The exponential mechanism (:func:`~dprivacy.mechanisms._exponential.exponential`, H[y, z] ∝ e^{−(ε/2)·d(y, z)},
    ε·d-private), followed by the remap z ↦ argmax_w Σ_y c[y, w]·H[y, z] that is best for the prior and the gain
    (post-processing): an n × m channel, or None when it is not better than the best constant channel, when its
    entries underflow, or beyond :data:`EXPONENTIAL_FALLBACK_POINTS` points."""
    from ._exponential import exponential
    from .base import LogMechanism

    n = ctx.space.n
    if n > EXPONENTIAL_FALLBACK_POINTS:
        return None
    mech = exponential(ctx.space, epsilon=ctx.eps)
    if isinstance(mech, LogMechanism):  # its float64 entries underflow: not private as a stored matrix
        return None
    e = np.asarray(mech.matrix, dtype=np.float64)
    score = e.T @ ctx.c_all  # [z, w]: the gain of guessing w on output z
    guess = score.argmax(axis=1)
    if float(score[np.arange(n), guess].sum()) <= constant_value:
        return None
    h = np.zeros((n, ctx.m))
    np.add.at(h.T, guess, e.T)
    return h


def _finish(ctx: _Context, raw: np.ndarray, objective_gain: float, bound_gain: float, status: int, message: str,
            size: dict, *, already_full: bool = False, lenient: bool = False, constant: bool = False) -> "OptimalResult":
    space, eps, n = ctx.space, ctx.eps, ctx.space.n
    min_entry = float(raw.min())
    row_sum_error = float(np.abs(raw.sum(axis=1) - 1.0).max())
    reject = None
    if not np.isfinite(raw).all():
        reject = "non-finite entries in the solution"
    elif min_entry < -NEGATIVE_ATOL:
        reject = f"raw entry {min_entry:.3g} below -{NEGATIVE_ATOL:g}"
    elif row_sum_error > ROW_SUM_ATOL and not lenient:
        reject = f"a row sums to 1 only within {row_sum_error:.3g} (> {ROW_SUM_ATOL:g})"
    if reject is not None:
        return _failed(-1, f"{message}; rejected: {reject}", ctx.kind, size, row_sum_error=row_sum_error,
                       min_entry=min_entry, space=space, eps=eps)
    neg = raw < 0
    clipped = float(-raw[neg].sum()) if neg.any() else 0.0
    h = np.where(neg, 0.0, raw)
    h /= h.sum(axis=1, keepdims=True)
    if not already_full:
        full = np.zeros((n, ctx.m))
        full[:, ctx.kept] = h
        h = full
    repair_mass = 0.0
    if constant:
        # Every row is the same point mass: 0·d-private exactly, nothing to repair or check.
        from ..measures.privacy import PrivacyResult

        raw_eps = 0.0
        check = PrivacyResult(True, eps, 0.0, None, 0.0, 0.0, 0)
    else:
        late = ctx.deadline is not None and time.perf_counter() >= ctx.deadline
        # (a diagnostic only: skipped once the time limit has run out)
        raw_eps = float("nan") if late else check_privacy(h, space, epsilon=eps).smallest_epsilon
        if ctx.repair:
            # After the time limit the repair still makes one lift (which certifies a channel that is
            # private already, e.g. the repaired tent channel), no more.
            h, repair_mass = certified_repair(h, space, epsilon=eps, deadline=ctx.deadline, late_grace=LATE_REPAIR_GRACE)
        check = check_privacy(h, space, epsilon=eps)
    if not check.ok and status in (1, STALLED):
        # A time-limited intermediate point that the repair could not certify: fall back on the best
        # constant channel, which is private, rather than return nothing.
        h, _ = _constant_channel(ctx)
        message = f"{message}; the last round's channel could not be certified, the best constant channel is returned"
        check = check_privacy(h, space, epsilon=eps)
    channel, measured, value_gain = _measured(ctx, h)
    if status in (1, STALLED):
        # a stopped solve returns what it has; where the exponential mechanism with the prior's best remap does
        # better, that is returned instead (before the first round that is the constant channel, 1/225 on
        # grid:15x15, where private channels reach 0.05)
        expo = _exponential_fallback(ctx, value_gain if check.ok else -np.inf)
        if expo is not None:
            expo_check = check_privacy(expo, space, epsilon=eps)
            if expo_check.ok:
                h, check = expo, expo_check
                channel, measured, value_gain = _measured(ctx, h)
                message += ("; the exponential mechanism at ε/2 with the best remap for the prior does better than the "
                            "solver's channel and is returned")
    sign = 1.0 if ctx.kind == "gain" else -1.0
    rel = _relative_gap(bound_gain, value_gain) if check.ok else float("inf")
    return OptimalResult(
        status=status, solver_message=message, channel=channel, value=measured.value,
        objective=sign * objective_gain, kind=ctx.kind, remap=measured.remap, smallest_epsilon=check.smallest_epsilon,
        private=check.ok, row_sum_error=row_sum_error, clipped=clipped, min_entry=min_entry,
        raw_smallest_epsilon=raw_eps, repair_mass=repair_mass, epsilon_checked=eps, space=space,
        bound=sign * bound_gain, gap=rel, **size,
    )


def _measured(ctx: _Context, h: np.ndarray):
    """(channel, its measure, its value in gain units) of an n × m channel for the problem ``ctx``."""
    channel = Channel._trusted(h, ctx.space.labels, ctx.labels)
    if ctx.kind == "loss":
        measured = expected_loss(channel, ctx.p, ctx.g)
        return channel, measured, -measured.value
    measured = utility(channel, ctx.p, None if ctx.binary else ctx.g)
    return channel, measured, measured.value


def _failed(status, message, kind, size, *, row_sum_error=float("nan"), min_entry=float("nan"), space=None,
            eps=float("nan")) -> OptimalResult:
    nan = float("nan")
    return OptimalResult(
        status=status, solver_message=message, channel=None, value=nan, objective=nan, kind=kind,
        remap=None, smallest_epsilon=nan, private=False, row_sum_error=row_sum_error, clipped=nan,
        min_entry=min_entry, raw_smallest_epsilon=nan, repair_mass=nan, epsilon_checked=eps, space=space, **size,
    )


