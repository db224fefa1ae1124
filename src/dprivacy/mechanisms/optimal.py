r"""The optimal ε·d-private mechanism for a given prior and gain (or loss), by linear programming.

For a prior π on a finite metric space (Y, d), a gain matrix g[y, w] (or a loss matrix l[y, w]) on
guesses w ∈ W and a privacy level ε, the mechanism of largest expected gain (smallest expected loss)
among all ε·d-private mechanisms is the solution of a linear program in the entries of a channel
H : Y → W (seed 000 §3.4 and §5.1; seed 001 §6, Def 22 / Prop 23; seed 002 §4.2, Def 7):

.. math::

    \max_H \sum_{y, w} \pi_y\, g[y, w]\, H[y, w] \quad\text{s.t.}\quad H \ge 0,\;
    \sum_w H[y, w] = 1,\; e^{-\varepsilon d(y, y')} H[y, w] \le H[y', w].

Only the privacy constraints of the space's *essential pairs* are written (seed 004 Prop 1 for graph
metrics, where they are the edges; :meth:`MetricSpace.essential_pairs` for any metric), each in both
orientations and for every output column. The LP optimum is checked against the theory in the tests:
Σμ for d-regular priors where a tight-constraints mechanism exists (seed 000 Thm 2, Thm 4), the
Table 1 / Table 2 values of seed 001, and the truncated geometric mechanism on a line (seed 002 Thm 10).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from .._validate import as_float_matrix, as_prior, check_epsilon
from ..channels import Channel
from ..measures.privacy import PRIVACY_RTOL, check_privacy
from ..measures.utility import expected_loss, utility
from ..results import Result
from ..spaces import MetricSpace

#: Largest LP (number of channel entries n·|W|) this module will build; beyond it the constraint
#: matrix alone needs gigabytes and HiGHS would not finish in reasonable time.
MAX_VARIABLES = 10_000_000

#: Elements per block of the max-times product in :func:`private_lift` (bounds memory to ~32 MB).
_LIFT_ELEMENTS = 4_000_000

#: A raw LP entry more negative than this is not rounding noise: the result is marked unsuccessful.
#: Privacy-constraint rows above which the LP is refused before building (each row has two non-zeros;
#: HiGHS needs tens of bytes per row, and the solve time grows faster than the size).
MAX_CONSTRAINT_ROWS = 20_000_000

NEGATIVE_ATOL = 1e-7  # HiGHS's default primal feasibility tolerance; the certified repair absorbs it

#: A raw row sum further than this from 1 is not rounding noise either (HiGHS' default feasibility
#: tolerance is 1e-7).
ROW_SUM_ATOL = 1e-6

_METHODS = ("auto", "full", "constraint-generation", "dantzig-wolfe", "spanner", "truncated-geometric")
_SOLVERS = ("highs-ipm", "highs", "highs-ds")
_PAIRS = ("essential", "all")

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


@dataclass(frozen=True)
class OptimalResult(Result):
    """Outcome of :func:`optimal_mechanism`, in the style of ``scipy.optimize.OptimizeResult``.

    Attributes
    ----------
    status : int
        The solver's status code (``scipy.optimize.linprog``: 0 optimal, 1 iteration/time limit,
        2 infeasible, 3 unbounded, 4 numerical difficulties; 5 (``STALLED``) a Dantzig–Wolfe run that stopped
        without closing its gap, its bracket honest); -1 when the solver reported success but
        the returned point was rejected here (an entry below −1e−9 or a row sum off by more than
        1e−6; see ``solver_message``). The LP itself is always feasible (a constant channel is private)
        and bounded (H is stochastic), so statuses 2 and 3 would signal numerical trouble.
    solver_message : str
        The solver's message (with the reason for rejection appended when ``status`` is -1); ``reason``
        is the sentence to show a user.
    channel : Channel or None
        The optimal mechanism Y → W (rows: the space's points, columns: the guesses), or None when the
        solve failed. When ``implicit`` is set this is its float64 rendering, whose underflowed
        entries make it fail the check as stored; use ``mechanism``.
    value : float
        Expected gain (``kind == "gain"``) or expected loss (``kind == "loss"``) of ``channel`` for the
        prior under its optimal remap (computed by :mod:`dprivacy.measures`, not taken from the
        solver); NaN when the solve failed. Equals ``objective`` up to solver tolerance (see
        :func:`optimal_mechanism`, Notes).
    objective : float
        The LP objective reported by the solver (gain or loss, same sign convention as ``value``).
        It is not an upper bound certificate: HiGHS satisfies the constraints within its feasibility
        tolerance, so it may exceed the true optimum by about that tolerance.
    kind : str
        "gain" or "loss".
    remap : ndarray or None
        The optimal deterministic remap of ``channel`` (output index ↦ guess index) used for ``value``.
    pairs : str
        "essential" or "all": which privacy constraints were written.
    n_pairs : int
        Number of unordered pairs {y, y'} constrained (each written in both orientations).
    n_variables, n_constraints : int
        Size of the LP: n·|W| variables; n equalities plus 2·n_pairs·|W| inequalities.
    seconds : float
        Wall-clock time of the solver call.
    build_seconds : float
        Wall-clock time spent building the sparse constraint matrices.
    smallest_epsilon : float
        The smallest ε' for which the returned (cleaned) channel is ε'·d-private
        (:func:`dprivacy.measures.check_privacy`); NaN when the solve failed.
    private : bool
        Whether the returned channel passes ``check_privacy`` at the requested ε (relative tolerance
        ``dprivacy.measures.privacy.PRIVACY_RTOL`` on ε·d plus the float64 rounding floor).
    row_sum_error : float
        max_y |Σ_w H[y, w] − 1| of the raw solver output, before cleaning.
    clipped : float
        Total probability mass of the negative raw entries that were set to 0.
    min_entry : float
        The smallest raw entry returned by the solver (negative values are rounding noise).
    raw_smallest_epsilon : float
        ``smallest_epsilon`` of the solver's channel after clipping and renormalizing, before the
        repair (equal to ``smallest_epsilon`` when ``repair`` was off; NaN when the time limit had run out).
    repair_mass : float
        Largest probability mass the repair added to a row before renormalizing (0 without repair).
    epsilon_checked : float
        The ε at which the channel was checked (the requested ε).
    method : str
        "full", "constraint-generation" or "truncated-geometric" (seed 002 Thm 8): what produced the
        channel.
    bound : float
        A bound on the true optimum from the other side: OPT ≤ bound for a gain, OPT ≥ bound for a
        loss (a Lagrangian bound from the solver's duals, :func:`~dprivacy.mechanisms.lp_engine.lagrangian_bound`,
        valid whatever the solver's tolerances). ``value`` is on the near side (the returned channel is
        private), so OPT lies between ``value`` and ``bound``.
    gap : float
        Relative gap |bound − value| / max(|bound|, |value|) (inf when the channel is not certified).
    rounds : int
        Rounds of constraint generation (0 for the full LP).
    history : tuple of lp_engine.Round
        Per-round restricted LP size, objective, bound and certified value.
    implicit : Mechanism or None
        The optimal mechanism kept implicit, when a float64 matrix cannot hold it: the truncated
        geometric mechanism with its remap (:class:`~dprivacy.mechanisms.geometric.TruncatedGeometricMechanism`)
        where ε·d ≳ 708 makes entries underflow; ``private`` and ``smallest_epsilon`` are then those of
        its exact log-entries.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.4, Thm 4.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 1.
    """

    status: int
    solver_message: str
    channel: Channel | None
    value: float
    objective: float
    kind: str
    remap: np.ndarray | None
    pairs: str
    n_pairs: int
    n_variables: int
    n_constraints: int
    seconds: float
    build_seconds: float
    smallest_epsilon: float
    private: bool
    row_sum_error: float
    clipped: float
    min_entry: float
    raw_smallest_epsilon: float
    repair_mass: float
    epsilon_checked: float = float("nan")
    space: MetricSpace | None = field(default=None, repr=False, compare=False)
    method: str = "full"
    bound: float = float("nan")
    gap: float = float("nan")
    rounds: int = 0
    history: tuple = field(default=(), repr=False, compare=False)
    implicit: Any = field(default=None, repr=False, compare=False)

    _json_exclude = ("channel", "remap", "implicit")

    @property
    def solved(self) -> bool:
        """The solver returned a channel (which may still fail the privacy check: ``ok`` says both)."""
        return self.channel is not None

    @property
    def ok(self) -> bool:
        """An optimal mechanism was found *and* the returned channel passes the exact privacy check at ε
        (never ok with a channel that is not private)."""
        return bool(self.solved and self.private)

    @property
    def reason(self) -> str:
        if not self.solved:
            return f"the linear program failed: {self.solver_message}"
        if not self.private and self.implicit is not None:
            return (f"the mechanism's exact log-entries fail the privacy check: smallest ε "
                    f"{self.smallest_epsilon:.12g} > {self.epsilon_checked:.12g}")
        if not self.private:
            return (f"the LP's channel (after the certified repair) is not ε·d-private as stored in float64: its smallest "
                    f"ε is {self.smallest_epsilon:.12g} > {self.epsilon_checked:.12g}; at large ε·d the entries "
                    "e^(−ε d) underflow to 0 beside positive ones, so this stored channel is not private")
        how = "by seed 002 Thm 8, no LP" if self.method == "truncated-geometric" else "by linear programming"
        return (f"{'optimal' if self.status == 0 else 'best found'} for the prior {how} "
                f"({self.method}: {self.solver_message}); value {self.value:.12g}, bound {self.bound:.12g}, relative gap "
                f"{self.gap:.3g}; privacy certified by the exact check of the returned channel (smallest ε "
                f"{self.smallest_epsilon:.12g}" + (", on its exact log-entries: kept implicit, since float64 "
                "entries below 1e-308 would underflow" if self.implicit is not None else "") + ")")

    @property
    def mechanism(self):
        """The optimal mechanism when ``ok`` (a :class:`~dprivacy.mechanisms.base.DenseMechanism`, or
        ``implicit`` when set), else None."""
        if not self.ok:
            return None
        if self.implicit is not None:
            return self.implicit
        from .base import DenseMechanism, PrivacyCertificate

        cert = PrivacyCertificate(True, self.epsilon_checked, "numerical-check", self.reason,
                                  smallest_epsilon=self.smallest_epsilon, rigorous=False)
        return DenseMechanism(self.channel, self.space, epsilon=self.epsilon_checked, name="optimal", certificate=cert)

    def __bool__(self) -> bool:
        return self.ok


def privacy_constraints(space: MetricSpace, *, epsilon: float, n_outputs: int, pairs: str = "essential"):
    r"""The privacy constraints of an LP over a channel H : Y → W as a sparse matrix ``A`` with A·x ≤ 0.

    The variable vector is x = vec(H) in row-major order (entry H[y, w] is x[y·|W| + w]). For every
    ordered pair (a, b) of the chosen unordered pairs and every column w, one row reads

    .. math:: e^{-\varepsilon d(a, b)} H[a, w] - H[b, w] \le 0,

    i.e. H[a, w] ≤ e^{ε d(a,b)} H[b, w] (seed 000 Def 1). Writing the factor e^{−εd} ∈ (0, 1] on the
    left keeps every coefficient of A in [−1, 1], which is better conditioned than e^{+εd} when some
    distances are large. Pairs at infinite distance (extended metrics, seed 002 §3) are not constrained.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    n_outputs : int
        |W|, the number of columns of H.
    pairs : {"essential", "all"}
        "essential": the pairs of :meth:`MetricSpace.essential_pairs` (the edges of a graph metric;
        enough by seed 004 Prop 1). "all": every pair at finite distance (the baseline).

    Returns
    -------
    A : scipy.sparse.csr_array, shape (2·P·|W|, n·|W|)
    n_pairs : int
        P, the number of unordered pairs.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 1.
    """
    if pairs == "essential":
        i, j = space.essential_pairs()
    elif pairs == "all":
        i, j = np.triu_indices(space.n, k=1)
    else:
        raise ValueError(f"pairs must be one of {', '.join(map(repr, _PAIRS))}; got {pairs!r}")
    i = np.asarray(i, dtype=np.intp)
    j = np.asarray(j, dtype=np.intp)
    d = space.distances[i, j]
    finite = np.isfinite(d)
    i, j, d = i[finite], j[finite], d[finite]
    m = int(n_outputs)
    a = np.concatenate([i, j])  # both orientations of each pair
    b = np.concatenate([j, i])
    factor = np.exp(-epsilon * np.concatenate([d, d]))
    k = a.size
    w = np.tile(np.arange(m, dtype=np.intp), k)
    rows = np.arange(k * m, dtype=np.intp)
    col_a = np.repeat(a * m, m) + w
    col_b = np.repeat(b * m, m) + w
    data = np.concatenate([np.repeat(factor, m), np.full(k * m, -1.0)])
    A = sparse.coo_array(
        (data, (np.concatenate([rows, rows]), np.concatenate([col_a, col_b]))),
        shape=(k * m, space.n * m),
    ).tocsr()
    return A, int(i.size)


def _row_sum_constraints(n: int, m: int):
    # Row y of A_eq has ones on the m entries of row y of H.
    cols = np.arange(n * m, dtype=np.intp)
    return sparse.csr_array((np.ones(n * m), (cols // m, cols)), shape=(n, n * m))


def _objective_matrix(n: int, gain, loss) -> tuple[np.ndarray, str]:
    if gain is not None and loss is not None:
        raise ValueError("give either gain or loss, not both")
    if gain is None and loss is None:
        return np.eye(n), "gain"  # the binary gain g_b(y, w) = [y = w] on W = Y (seed 000 §3.4)
    name = "gain" if gain is not None else "loss"
    g = as_float_matrix(gain if gain is not None else loss, name=name)
    if g.shape[0] != n:
        raise ValueError(f"{name} has {g.shape[0]} rows, expected {n} (one per secret); columns are guesses")
    if not np.isfinite(g).all():
        y, w = np.argwhere(~np.isfinite(g))[0]
        raise ValueError(f"{name} must be finite; entry [{y}, {w}] is {g[y, w]}")
    return g, name


def _output_labels(outputs, space: MetricSpace, m: int, binary: bool) -> list:
    if outputs is None:
        return space.labels if (binary or m == space.n) else list(range(m))
    if isinstance(outputs, (str, bytes)):
        raise TypeError(f"outputs must be a sequence of labels, one per guess, got the string {outputs!r}")
    labels = list(outputs)
    if len(labels) != m:
        raise ValueError(f"outputs has {len(labels)} labels, expected {m} (one per column of the gain/loss matrix)")
    return labels


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

    (or minimizes Σ π_y l[y, w] H[y, w] for a loss). The utility model is seed 000 §3.4 (binary gain,
    eq. (2)–(3)), seed 001 §6 (gain functions, Def 22, Prop 23) and seed 002 §4.2 (expected loss under
    an optimal remap, Def 7). Privacy on the space's essential pairs implies it on all pairs (seed 004
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
        the binary gain g_b(y, w) = [y = w] on W = Y (seed 000 §3.4), for which the value is the
        posterior Bayes vulnerability (seed 001 Prop 24).
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
        mechanism with its optimal remap, optimal for every prior by seed 002 Thm 8 (Ghosh et al.), with
        ``bound`` = ``value`` on the strength of that theorem (``count:1000`` in 0.1 s, where the LP
        did not finish in 300 s). For the binary gain, where the decomposition or constraint generation
        would run, auto returns the tent LP's channel (method "tent-lp": seed 000's tight-constraints
        columns with the row sums relaxed) when its certified gain is within ``gap`` of the tent bound —
        the case of a prior in the region where tight-constraints is optimal (seed 000 Thm 4).
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
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.4
       (utility), Thm 4 (where tight-constraints is optimal).
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 1 (constraints on
       adjacent answers).
    .. [3] ``002_3df4dd999d47c651.txt``: Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Thm 8 (the truncated geometric is
       universally optimal on a line).
    """
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
    gap = _check_gap(gap)
    time_limit = _check_time_limit(time_limit)
    started = time.perf_counter()  # the time limit covers every stage from here (tent LP, rounds, repair)
    plan_from = method
    plan = _plan(space, g, kind, m, method, pairs, kept_size=int((p > 0).sum()) if binary else m)
    if plan[0] == "truncated-geometric":
        return _solve_universal(space, eps, p, g, kind, binary, labels)
    if method == "spanner":
        from .spanner import optimal_mechanism_spanner

        return optimal_mechanism_spanner(space, p, epsilon=eps, dilation=dilation, gain=gain, loss=loss,
                                         outputs=outputs, method=solver, options=options, repair=repair,
                                         exact=False, time_limit=time_limit, progress=progress)

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
    ctx = _Context(space, eps, p, g, kind, binary, labels, kept, m, repair, c_all,
                   None if time_limit is None else started + time_limit)
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
    "truncated-geometric" (no LP) where seed 002 Thm 8 applies, "spanner", or "full" /
    "constraint-generation" by the size of the full LP."""
    if method == "truncated-geometric" or (method == "auto" and pairs == "essential"):
        why_not = _universal_line_reason(space, g, kind, m)
        if why_not is None:
            return "truncated-geometric", 0, 0
        if method == "truncated-geometric":
            raise ValueError(f"method='truncated-geometric' (seed 002 Thm 8) does not apply: {why_not}")
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
    LP). The algorithm is "truncated-geometric" (seed 002 Thm 8: no LP), "spanner", "full" or
    "constraint-generation"; the rows are 2 × constraint pairs × outputs (for the binary gain, every
    output counted). For size estimates before a solve (the command line's memory guard)."""
    g, kind = _objective_matrix(space.n, gain, loss)
    method_, rows, _ = _plan(space, g, kind, g.shape[1], method, pairs, kept_size=g.shape[1])
    return method_, rows


def _universal_line_reason(space: MetricSpace, g: np.ndarray, kind: str, m: int) -> str | None:
    """None when the truncated geometric mechanism is the optimum (seed 002 Thm 8, after Ghosh,
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
    monotone loss on a line (seed 002 Thm 8). The remap is post-processing, so the returned channel
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
                 "prior and monotone loss (seed 002 Thm 8; Ghosh, Roughgarden, Sundararajan 2009)"),
        channel=channel, value=measured.value, objective=measured.value, kind=kind,
        remap=np.arange(g.shape[1]), pairs="none", n_pairs=0, n_variables=0, n_constraints=0, seconds=seconds,
        build_seconds=0.0, smallest_epsilon=check.smallest_epsilon, private=check.ok, row_sum_error=0.0,
        clipped=0.0, min_entry=float(channel.matrix.min()), raw_smallest_epsilon=nan, repair_mass=0.0, epsilon_checked=eps,
        space=space, method="truncated-geometric", bound=measured.value, gap=0.0,
        implicit=mech if implicit else None,
    )


@dataclass
class _Context:
    space: MetricSpace
    eps: float
    p: np.ndarray
    g: np.ndarray
    kind: str
    binary: bool
    labels: list
    kept: np.ndarray
    m: int
    repair: bool
    c_all: np.ndarray
    deadline: float | None = None  # time.perf_counter() reading at which the time limit runs out


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
#: lift is made). Without them a channel one lift short of certification was replaced by the constant one.
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
        # the repair's alternations run after the engine and need their share of the limit (one lift
        # after the deadline was not enough on 50×50 Manhattan at 600 s: the constant channel came back)
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
        # stopped early: the best round's channel was repaired and checked already; repairing the raw
        # point again after the deadline could fail and leave only the constant channel (seen on a
        # 19×15 grid of 200 km cells at ε = 4 per cell: round 2 certified gap 2.0e-4, and the
        # result fell back to another engine's gap 7.6e-4)
        return _finish(ctx, best["channel"], out.objective, bound, status, out.message, size, lenient=True)
    return _finish(ctx, out.raw, out.objective, bound, status, out.message, size, lenient=True)


#: The share of the caller's time limit that the repair of the tent LP's channel may take.
TENT_REPAIR_SHARE = 0.1

#: The tent LP (binary gain) is solved when its dense matrix has at most this many entries.
TENT_ENTRIES = 20_000_000

#: ... and its channel is repaired only when a lift costs at most this many (pair, column) products
#: (:func:`lift_work`; densely, 50×50 with 1,900 outputs took over 15 minutes, so only its bound was used).
TENT_REPAIR_WORK = 1_000_000_000


def _tent_bracket(ctx: _Context, *, time_limit: float | None = None, share: float | None = None):
    r"""A quick bracket for the binary gain from the *tent LP*

    .. math:: \max \sum_w \pi_w t_w \quad\text{s.t.}\quad \sum_w e^{-\varepsilon d(y, w)}\, t_w \le 1\ (y \in Y),\ t \ge 0

    (over the kept outputs w). Upper bound: every private channel has H[y, w] ≥ e^{−εd(y,w)} H[w, w]
    (privacy between y and w), so with t_w = H[w, w] its rows summing to 1 give Σ_w e^{−εd(y,w)} t_w ≤ 1:
    the tent LP's optimum is ≥ OPT, and so is Σ μ for any dual-feasible μ ≥ 0 (Φᵀμ ≥ π), which is what
    is returned (the solver's duals scaled up until feasible, so the bound does not rest on its
    tolerance). These are seed 000's tight-constraints columns (Def 6) with the row sums relaxed to ≤ 1.
    Lower bound: the columns t_w e^{−εd(·, w)} (private: tents), rows renormalised and repaired by
    :func:`certified_repair`, then checked exactly by the caller.

    Returns (channel n × m, its gain, the bound, the dual-feasible μ) — the channel None (gain −inf) when its repair would
    cost more than ``TENT_REPAIR_WORK`` or when ``time_limit`` (seconds, HiGHS's own limit for the LP)
    ran out before the repair — or None when too large, out of time, or the LP fails.
    """
    n, kept = ctx.space.n, ctx.kept
    if n * kept.size > TENT_ENTRIES:
        return None
    t0 = time.perf_counter()
    with np.errstate(over="ignore", under="ignore"):
        phi = np.exp(-ctx.eps * ctx.space.distances[:, kept])
    phi[~np.isfinite(phi)] = 0.0
    pi = ctx.p[kept]
    opts = None if time_limit is None else {"time_limit": float(time_limit)}
    res = linprog(-pi, A_ub=phi, b_ub=np.ones(n), bounds=(0, None), method="highs", options=opts)
    if res.status != 0 or res.x is None:
        return None
    mu = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)
    cover = phi.T @ mu
    if (cover <= 0).any():
        return None
    mu_feasible = mu * max(1.0, float((pi / cover).max()))  # Φᵀμ ≥ π: dual feasible
    bound = float(mu_feasible.sum())
    t = np.clip(np.asarray(res.x, dtype=np.float64), 0.0, None)
    out_of_time = time_limit is not None and time.perf_counter() - t0 >= time_limit
    if lift_work(ctx.space, max(1, int((t > 0).sum()))) > TENT_REPAIR_WORK or out_of_time:
        return None, float("-inf"), bound, mu_feasible  # the bound only: the repair would cost too much (or no time is left)
    h = np.zeros((n, ctx.m))
    h[:, kept] = phi * t[None, :]
    sums = h.sum(axis=1)
    if (sums <= 0).any():
        return None
    deadline = ctx.deadline
    if share is not None:
        # the tent channel is a start and a fallback, not the answer (unless the prior is regular): its
        # repair may take at most TENT_REPAIR_SHARE of the call's limit (on grid:30x30 with a Dirichlet
        # prior it took 36 s, and with --time-limit 30 the decomposition was left 0.001 s)
        own = time.perf_counter() + TENT_REPAIR_SHARE * share
        deadline = own if deadline is None else min(deadline, own)
    h, _ = certified_repair(h / sums[:, None], ctx.space, epsilon=ctx.eps, deadline=deadline)
    if not check_privacy(h, ctx.space, epsilon=ctx.eps).ok:
        return None, float("-inf"), bound, mu_feasible  # the bound stands; the channel could not be repaired (in time)
    return h, float(utility(Channel._trusted(h, ctx.space.labels, ctx.labels), ctx.p).value), bound, mu_feasible


def _tent_closes_gap(ctx: _Context, tent, gap: float, started: float) -> "OptimalResult | None":
    """The repaired tent-LP channel as the answer when its certified gain is within ``gap`` of the tent
    bound, else None. That is the case where seed 000's tight-constraints mechanism is optimal: when the
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
                  "the tent LP's channel (seed 000's tight-constraints columns, Def 6, with the row sums relaxed to "
                  "≤ 1) is optimal within the gap: its certified gain meets the tent bound, as where the prior is "
                  "ε·d-regular and the tight-constraints mechanism is optimal (seed 000 Thm 4)", size, already_full=True)
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
    if not check_privacy(r, ctx.space, epsilon=ctx.eps).ok:
        return float("-inf"), None
    return float((ctx.c_all[:, ctx.kept] * r).sum()), r


def _constant_channel(ctx: _Context) -> tuple[np.ndarray, float]:
    """The best constant channel (every secret mapped to the guess of largest Σ_y c[y, w]): 0·d-private."""
    col = ctx.c_all.sum(axis=0)
    w = int(col.argmax())
    h = np.zeros((ctx.space.n, ctx.m))
    h[:, w] = 1.0
    return h, float(col[w])


def no_privacy_bound(c_all: np.ndarray) -> float:
    """Σ_y max_w c[y, w] for the gain form c = π·g (or −π·l): every channel, private or not, earns at most each
    secret's best guess, so this bounds the optimum whatever ε (the bound when no LP bound could be had)."""
    return float(np.asarray(c_all).max(axis=1).sum())


def _no_privacy_bound(ctx: _Context) -> float:
    return no_privacy_bound(ctx.c_all)


def _relative_gap(bound_gain: float, value_gain: float) -> float:
    if not (np.isfinite(bound_gain) and np.isfinite(value_gain)):
        return float("inf")
    scale = max(abs(bound_gain), abs(value_gain))
    return 0.0 if scale == 0 else float(max(bound_gain - value_gain, 0.0) / scale)


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
        # better, that is returned instead (a time limit before the first round gave the constant channel, 1/225 on
        # grid:15x15, where private channels reach 0.05: review)
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


def certified_repair(h, space: MetricSpace, *, epsilon: float, rounds: int = 6,
                     alternations: int = 60, deadline: float | None = None,
                     late_grace: float = 0.0) -> tuple[np.ndarray, float]:
    r"""An ε·d-private channel next to ``h`` (an LP solution that meets its constraints only up to the
    solver's tolerance), and the largest mass the repair moved in a row (max_y Σ_w |out − h|[y, w] / 2).

    The lift of :func:`private_lift` at a level ε' ≤ ε makes every column satisfy the ε'·d constraints
    exactly, but its rows sum to s_y ≥ 1, and renormalising row y by s_y multiplies a ratio between rows
    y, y' by s_{y'}/s_y ≤ e^{ρ}, ρ = ln(max s / min s). So the renormalised channel is
    (ε'·d + ρ)-private. Three steps, in order:

    1. **Alternate** lift at ε and renormalise. Each round's ρ is the mass the lift had to add, which
       shrinks geometrically (on an 8×8 grid LP solution perturbed by 1e−7: ρ = 7e−8, then 1e−9 after 5
       rounds). Stop when ρ ≤ ``PRIVACY_RTOL``·ε·d_min: every log-ratio is then within ρ of ε·d, i.e. the
       channel passes :func:`~dprivacy.measures.check_privacy` at its relative tolerance, at a cost in value of order ρ.
    2. From there, try to make it *strict*: lift at ε' = ε − ρ(1 + 10⁻³)/d_min (d_min the smallest
       positive distance) and renormalise; if (ε − ε')·d_min ≥ ρ' for the new spread ρ', the result is
       ε·d-private with no tolerance at all, and it is returned.
    3. If the alternation did not settle: the same ε'-step from ``h`` for ``rounds`` rounds, and if that
       does not settle either (distances of very different sizes amplify ρ/d_min), bisection on
       ε' ∈ [0, ε] — at ε' = 0 the lift is constant down each column, all row sums are equal and
       ρ = 0, so the result is always private, but it may cost much of the value (measured: 5% on the
       perturbed 8×8 solution above, which step 1 repairs at a cost of 1e−8).

    ``deadline`` (a ``time.perf_counter()`` reading) stops the repair between lifts, after the first,
    once ``late_grace`` seconds past it: the channel reached so far is returned, possibly not private —
    the caller's exact check decides.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1.
    """
    h = np.asarray(h, dtype=np.float64)
    d = space.distances
    pos = d[(d > 0) & np.isfinite(d)]
    if pos.size == 0:
        return h, 0.0
    dmin = float(pos.min())

    def moved(out):
        return float(0.5 * np.abs(out - h).sum(axis=1).max())

    def attempt(start, e_lift, exact_check=True):
        lifted = private_lift(start, space, epsilon=e_lift)
        sums = lifted.sum(axis=1)
        rho = float(np.log(sums.max() / sums.min()))
        # The ρ condition is sufficient, not necessary: when it fails, the exact check decides.
        good = (epsilon - e_lift) * dmin >= rho or (
            exact_check and check_privacy(lifted / sums[:, None], space, epsilon=epsilon).ok)
        return lifted / sums[:, None], rho, good

    def late() -> bool:
        return deadline is not None and time.perf_counter() >= deadline + late_grace

    # 1. alternate lift (at ε) and renormalisation
    m = h
    for k in range(alternations):
        if k and late():  # at least one lift: it certifies a channel that is private already
            return m, moved(m)
        m, rho, _ = attempt(m, epsilon, exact_check=False)
        if rho <= PRIVACY_RTOL * epsilon * dmin:
            # 2. one strict step
            strict, rho2, good = attempt(m, max(0.0, epsilon - (rho * (1.0 + 1e-3) + 1e-15) / dmin), exact_check=False)
            return (strict, moved(strict)) if good else (m, moved(m))
    # 3. ε'-steps from h, then bisection
    e_lift = float(epsilon)
    for _ in range(rounds):
        if late():
            return m, moved(m)
        out, rho, good = attempt(h, e_lift)
        if good:
            return out, moved(out)
        e_lift = max(0.0, epsilon - (rho * (1.0 + 1e-3) + 1e-15) / dmin)
    lo, hi = 0.0, e_lift
    best, _, _ = attempt(h, lo)
    for _ in range(40):
        if late():
            break
        mid = 0.5 * (lo + hi)
        cand, _, good = attempt(h, mid)
        if good:
            lo, best = mid, cand
        else:
            hi = mid
        if hi - lo <= 1e-6 * epsilon:
            break
    return best, moved(best)


def _separable_lift(space: MetricSpace) -> bool:
    from ..spaces import GridSpace

    return isinstance(space, GridSpace) and space.metric == "manhattan"


def lift_work(space: MetricSpace, columns: int) -> int:
    """Products one :func:`private_lift` of ``columns`` columns costs: n·m by the separable scans of a
    Manhattan grid, n²·m by the max-times product elsewhere."""
    n = space.n
    return n * columns * (4 if _separable_lift(space) else n)


def _lift_manhattan_grid(h: np.ndarray, width: int, height: int, q: float) -> np.ndarray:
    """:func:`private_lift` on a Manhattan grid: e^{−εd} = q^{|dx|}·q^{|dy|} (q = e^{−ε·step}) is
    separable, so the max-times product is two 1-D transforms, each a forward and a backward scan
    (max_j q^{|i−j|} x_j = the larger of the two running maxima): O(n·m) instead of O(n²·m)."""
    m = h.shape[1]
    g = h.reshape(height, width, m).copy()
    for axis in (1, 0):
        size = g.shape[axis]
        take = (lambda i: g[:, i]) if axis == 1 else (lambda i: g[i])
        for i in range(1, size):
            np.maximum(take(i), q * take(i - 1), out=take(i))
        for i in range(size - 2, -1, -1):
            np.maximum(take(i), q * take(i + 1), out=take(i))
    return g.reshape(width * height, m)


def private_lift(h, space: MetricSpace, *, epsilon: float) -> np.ndarray:
    r"""The smallest matrix Ĥ ≥ H whose columns satisfy the ε·d-privacy constraints.

    .. math:: \hat H[b, w] = \max_a e^{-\varepsilon d(a, b)} H[a, w]

    (a = b included, so Ĥ ≥ H). Each column of Ĥ satisfies Ĥ[b, w] ≥ e^{−εd(b,c)} Ĥ[c, w] for all
    b, c: if Ĥ[c, w] = e^{−εd(a,c)} H[a, w] then e^{−εd(b,c)} Ĥ[c, w] ≤ e^{−εd(a,b)} H[a, w] ≤ Ĥ[b, w]
    by the triangle inequality d(a, b) ≤ d(a, c) + d(c, b). Entries already satisfying the constraints
    are unchanged, so for a channel violating them only by the LP solver's tolerance the lift adds
    mass of the order of that tolerance. Rows of Ĥ sum to at least 1 (not renormalized here).

    Parameters
    ----------
    h : ndarray (n, m)
        Non-negative matrix, rows indexed by the space's points.
    space : MetricSpace
        Its distances must satisfy the triangle inequality for the result to be private.
    epsilon : float

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1.
    """
    h = np.asarray(h, dtype=np.float64)
    n, m = h.shape
    if n != space.n:
        raise ValueError(f"matrix has {n} rows but the space has {space.n} points")
    if _separable_lift(space):
        return _lift_manhattan_grid(h, space.width, space.height, float(np.exp(-epsilon * space.step)))
    d = space.distances
    with np.errstate(invalid="ignore"):
        phi = np.exp(-epsilon * d)
    phi[np.isinf(d)] = 0.0  # ε = 0 with d = ∞ gives nan; infinitely distant points do not constrain
    out = np.empty_like(h)
    block = max(1, _LIFT_ELEMENTS // max(n * m, 1))
    for b0 in range(0, n, block):
        b1 = min(n, b0 + block)
        # out[b, w] = max_a phi[b, a] * h[a, w], a max-times matrix product on a block of rows b
        out[b0:b1] = (phi[b0:b1, :, None] * h[None, :, :]).max(axis=1)
    return out

