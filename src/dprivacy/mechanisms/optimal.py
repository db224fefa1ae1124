r"""The optimal ε·d-private mechanism for a given prior and gain (or loss), by linear programming.

For a prior π on a finite metric space (Y, d), a gain matrix g[y, w] (or a loss matrix l[y, w]) on
guesses w ∈ W and a privacy level ε, the mechanism of largest expected gain (smallest expected loss)
among all ε·d-private mechanisms is the solution of a linear program in the entries of a channel
H : Y → W (ElSalamouny et al. 2014 §3.4 and §5.1; Alvim et al. 2015 §6, Def 22 / Prop 23; Chatzikokolakis et al. 2013 §4.2, Def 7):

.. math::

    \max_H \sum_{y, w} \pi_y\, g[y, w]\, H[y, w] \quad\text{s.t.}\quad H \ge 0,\;
    \sum_w H[y, w] = 1,\; e^{-\varepsilon d(y, y')} H[y, w] \le H[y', w].

Only the privacy constraints of the space's *essential pairs* are written (ElSalamouny et al. 2013 Prop 1 for graph
metrics, where they are the edges; :meth:`MetricSpace.essential_pairs` for any metric), each in both
orientations and for every output column. The LP optimum is checked against the theory in the tests:
Σμ for d-regular priors where a tight-constraints mechanism exists (ElSalamouny et al. 2014 Thm 2, Thm 4), the
Table 1 / Table 2 values of Alvim et al. 2015, and the truncated geometric mechanism on a line (Chatzikokolakis et al. 2013 Thm 10).

This module is the front door, :func:`optimal_mechanism`. The LP's model and its result are
:mod:`.lp_model`, its solvers :mod:`.lp_solve` (with :mod:`.lp_engine` and :mod:`.decomposition`), the
certified repair of their channels :mod:`.repair`, and the LP on a spanner's edges :mod:`.spanner`; their
public names are re-exported here.
"""

from __future__ import annotations

from typing import Sequence

from ..spaces import MetricSpace
from .lp_model import OptimalResult, no_privacy_bound, privacy_constraints
from .lp_solve import (AUTO_CG_POINTS, AUTO_FULL_ROWS, AUTO_FULL_SPARSE_ROWS, AUTO_RETRY_GAP, AUTO_SPARSE_PAIRS_PER_POINT,
                       DEFAULT_GAP, EXPONENTIAL_FALLBACK_POINTS, LATE_REPAIR_GRACE, MAX_CONSTRAINT_ROWS, MAX_VARIABLES,
                       NEGATIVE_ATOL, REPAIR_RESERVE_MAX, REPAIR_RESERVE_SHARE, ROW_SUM_ATOL, STALLED, check_problem,
                       lp_plan, solve)
from .repair import certified_repair, lift_work, private_lift
from .spanner import optimal_mechanism_spanner
from .tent_lp import TENT_ENTRIES, TENT_REPAIR_SHARE, TENT_REPAIR_WORK

__all__ = ["AUTO_CG_POINTS", "AUTO_FULL_ROWS", "AUTO_FULL_SPARSE_ROWS", "AUTO_RETRY_GAP", "AUTO_SPARSE_PAIRS_PER_POINT",
           "DEFAULT_GAP", "EXPONENTIAL_FALLBACK_POINTS", "LATE_REPAIR_GRACE", "MAX_CONSTRAINT_ROWS", "MAX_VARIABLES",
           "NEGATIVE_ATOL", "OptimalResult", "REPAIR_RESERVE_MAX", "REPAIR_RESERVE_SHARE", "ROW_SUM_ATOL", "STALLED",
           "TENT_ENTRIES", "TENT_REPAIR_SHARE", "TENT_REPAIR_WORK", "certified_repair", "lift_work", "lp_plan",
           "no_privacy_bound", "optimal_mechanism", "privacy_constraints", "private_lift"]


def optimal_mechanism(
    space: MetricSpace,
    prior,
    *,
    epsilon: float,
    gain=None,
    loss=None,
    outputs: Sequence | None = None,
    method: str = "auto",
    gap: float = DEFAULT_GAP,
    time_limit: float | None = None,
    progress=None,
    pairs: str = "essential",
    solver: str = "highs-ipm",
    options: dict | None = None,
    repair: bool = True,
    dilation: float = 1.1,
):
    r"""The ε·d-private mechanism of optimal utility for ``prior``, by linear programming, with a
    certified bracket on the optimum.

    Solves

    .. math::

        \max_{H : Y \to W} \sum_{y, w} \pi_y\, g[y, w]\, H[y, w]
        \quad\text{s.t.}\quad H[y, w] \ge 0,\quad \sum_w H[y, w] = 1,\quad
        H[y, w] \le e^{\varepsilon d(y, y')} H[y', w]

    (or minimizes Σ π_y l[y, w] H[y, w] for a loss). The utility model is ElSalamouny et al. 2014 §3.4 (binary gain,
    eq. (2)–(3)), Alvim et al. 2015 §6 (gain functions, Def 22, Prop 23) and Chatzikokolakis et al. 2013 §4.2 (expected loss under
    an optimal remap, Def 7). Privacy on the space's essential pairs implies it on all pairs (ElSalamouny et al. 2013
    Prop 1; :meth:`MetricSpace.essential_pairs`), so only those constraints are ever needed.

    Every answer carries a **bracket** on the true optimum OPT: ``value`` is the utility of the
    returned channel, which is re-checked exactly (:func:`dprivacy.measures.check_privacy`), so
    value ≤ OPT (gain; ≥ for a loss); ``bound`` is a Lagrangian bound from the solver's duals
    (:func:`dprivacy.mechanisms.lp_engine.lagrangian_bound`), valid whatever the solver's tolerances,
    so OPT ≤ bound (gain; ≥ for a loss). ``gap`` is their relative distance.

    Parameters
    ----------
    space : MetricSpace
        The secrets Y with their (unscaled) metric d.
    prior : array_like (n,)
        The prior π on Y (validated, never renormalized).
    epsilon : float
        Privacy level ε ≥ 0; the mechanism is ε·d-private.
    gain : array_like (n, k), optional
        ``gain[y, w]``: the gain of guessing w when the secret is y. Default (with ``loss`` also None):
        the binary gain g_b(y, w) = [y = w] on W = Y (ElSalamouny et al. 2014 §3.4), for which the value is the
        posterior Bayes vulnerability (Alvim et al. 2015 Prop 24).
    loss : array_like (n, k), optional
        ``loss[y, w]``: the loss of guessing w when the secret is y (e.g. the distance matrix);
        the expected loss is minimized. Give at most one of ``gain`` and ``loss``.
    outputs : sequence, optional
        Labels of the guesses W (the columns of the gain/loss matrix, hence of the channel). Default:
        the space's labels when W has n elements, else ``0..k-1``.
    method : {"auto", "full", "dantzig-wolfe", "constraint-generation", "spanner"}
        "full": one LP with every essential pair's constraint (scipy's ``linprog``, HiGHS); when HiGHS
        fails on it numerically (status 2–4 on this feasible, bounded LP), "dantzig-wolfe" solves it
        instead and ``method`` and ``solver_message`` say so.
        "dantzig-wolfe": :func:`dprivacy.mechanisms.decomposition.dantzig_wolfe`, a master LP of n
        row-sum rows over rays of the privacy cone (each column of a private channel is one), priced
        by LPs of n variables whose pair constraints are added lazily; never builds the n·|W|-variable
        LP. "constraint-generation": :func:`dprivacy.mechanisms.lp_engine.constraint_generation`, which
        starts from a few constraints per output and adds the violated ones (HiGHS through
        ``highspy``, warm-started). "spanner": the LP on a spanner's edges at ε/δ (CCS 2014,
        :func:`dprivacy.mechanisms.spanner.optimal_mechanism_spanner`), a certified but not exactly
        optimal mechanism; its bound comes from the same edges at ε (a relaxation). "auto": "full"
        when the full LP has at most ``AUTO_FULL_ROWS`` privacy rows (on graph metrics the essential
        pairs are the edges), else "dantzig-wolfe" — except on a
        line (equally spaced points, metric c·|i − j|, guesses = points, a loss monotone in |y − w|,
        the binary gain included), where it is "truncated-geometric": the truncated geometric
        mechanism with its optimal remap, optimal for every prior by Chatzikokolakis et al. 2013 Thm 8 (Ghosh et al.), with
        ``bound`` = ``value`` on the strength of that theorem (``count:1000`` in 0.1 s, where the LP
        did not finish in 300 s). For the binary gain, where the decomposition or constraint generation
        would run, auto returns the tent LP's channel (method "tent-lp": ElSalamouny et al. 2014's tight-constraints
        columns with the row sums relaxed) when its certified gain is within ``gap`` of the tent bound —
        the case of a prior in the region where tight-constraints is optimal (ElSalamouny et al. 2014 Thm 4).
    gap : float
        Relative gap (bound − value)/|bound| at which Dantzig–Wolfe or constraint generation stops
        (default 1e−7).
    time_limit : float, optional
        Seconds for the whole call, counted from its start: the tent LP, the full LP or every round of
        constraint generation get what is left (HiGHS's own ``time_limit``); when it runs out the call
        returns the best certified mechanism found so far with its honest gap (``status`` 1, ``reason``
        naming this limit). Only the final repair and exact check of the returned channel run after it,
        and HiGHS checks its limit between iterations (an interior-point iteration or the crossover of a
        large full LP can overrun it). Without any solved round, that is the best constant channel
        (0·d-private), with the no-privacy bound Σ_y max_w π_y g[y, w].
    progress : callable, optional
        ``progress(round)`` with a :class:`~dprivacy.mechanisms.lp_engine.Round` after each round of
        constraint generation.
    pairs : {"essential", "all"}
        For ``method="full"``: the essential pairs (default) or every pair at finite distance (the
        baseline of ``benchmarks/bench_lp.py``).
    solver : {"highs-ipm", "highs", "highs-ds"}
        For ``method="full"`` and ``"spanner"``: the HiGHS solver of :func:`scipy.optimize.linprog`.
        Default: interior point with crossover, which on the grid benchmarks was faster than dual
        simplex and returned channels within rounding of exact privacy.
    options : dict, optional
        Passed to ``linprog`` (e.g. ``{"primal_feasibility_tolerance": 1e-9}``).
    repair : bool
        Lift the solver's channel onto the privacy constraints with :func:`certified_repair` (see
        Notes). Default True.
    dilation : float
        For ``method="spanner"``: the spanner's target dilation δ.

    Returns
    -------
    OptimalResult (SpannerOptimalResult for ``method="spanner"``)
        ``ok`` (a channel was returned and passes the exact check), ``status`` and ``message``, the
        ``channel`` and its ``value``, the ``bound`` and ``gap``, the LP size and timing, and the
        verification of the channel (``smallest_epsilon``, ``private``, ``row_sum_error``,
        ``clipped``). A failed solve is a result with ``solved`` False (no channel) and the solver's message,
        never an exception; bad input raises ``ValueError``/``TypeError``.

    Notes
    -----
    **Optimizing over H : Y → W with "guess = output" loses nothing.** A user who sees the output z
    of a mechanism K : Y → Z and guesses w = R(z) obtains the expected gain of the cascade KR : Y → W
    used with the identity guess, and KR is again ε·d-private: each column (KR)[·, w] is a
    non-negative combination of columns of K, and the privacy constraints are linear and homogeneous
    (post-processing). So the best (K, R) equals the LP optimum over H : Y → W, and ``value``
    (computed with the optimal remap) equals ``objective`` up to the solver's tolerance.

    **Zero-prior outputs of the binary gain.** For the binary gain only the columns of outputs with
    π_w > 0 are variables (the others are returned as zero columns): merging a zero-prior output's
    column into another column keeps privacy (sum of private columns) and never lowers the gain, so
    the optimum is unchanged.

    **Cleaning the solver's output.** HiGHS satisfies constraints only within its feasibility
    tolerance: entries may be slightly negative, rows may sum to 1 only approximately, and a privacy
    constraint may be violated by a tiny absolute amount, which for a tiny entry is a large *ratio*.
    Three recorded steps, nothing silent:

    1. negative entries are set to 0 (their total mass is ``clipped``, the most negative raw entry
       ``min_entry``; a raw entry below −``NEGATIVE_ATOL`` makes the result unsuccessful, status −1),
       and each row is divided by its sum (the raw error is ``row_sum_error``; above ``ROW_SUM_ATOL``
       the result is unsuccessful); ``raw_smallest_epsilon`` is the privacy level of this channel;
    2. with ``repair`` (default), :func:`certified_repair` lifts every column onto the privacy
       constraints and renormalizes rows; the largest mass added to a row is ``repair_mass``;
    3. the returned channel is checked with :func:`dprivacy.measures.check_privacy`:
       ``smallest_epsilon`` and ``private`` (log-ratio tolerance 1e−9). ``ok`` requires it.

    The essential pairs of a general metric are found with a relative tolerance
    (``spaces.METRIC_RTOL`` = 1e−9): a pair whose distance equals a detour through a third point only
    up to that tolerance is left out, so its constraint holds up to a factor e^{ε d · 1e−9}.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.4
       (utility), Thm 4 (where tight-constraints is optimal).
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 1 (constraints on
       adjacent answers).
    .. [3] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Thm 8 (the truncated geometric is
       universally optimal on a line).
    """
    problem = check_problem(space, prior, epsilon=epsilon, gain=gain, loss=loss, outputs=outputs, method=method,
                            gap=gap, time_limit=time_limit, pairs=pairs, solver=solver, options=options)
    if method == "spanner":
        return optimal_mechanism_spanner(space, problem.p, epsilon=problem.eps, dilation=dilation, gain=gain, loss=loss,
                                         outputs=outputs, method=solver, options=options, repair=repair,
                                         exact=False, time_limit=problem.time_limit, progress=progress)
    return solve(problem, progress=progress, repair=repair)
