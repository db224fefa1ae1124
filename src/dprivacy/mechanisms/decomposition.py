r"""The optimal-mechanism LP by Dantzig–Wolfe decomposition over the privacy cone.

Every column h_w = H[·, w] of an ε·d-private channel lies in one and the same polyhedral cone

.. math:: K = \{h \in \mathbb{R}^n_{\ge 0} : h(a) \le e^{\varepsilon d(a, b)}\, h(b)\ \text{for all } a, b\},

the LP's privacy constraints for one output (ElSalamouny et al. 2014 §3.4 and §5.1, Alvim et al. 2015 Def 22 / Prop 23, Chatzikokolakis et al. 2013
Def 7), and the columns are coupled only by the row sums Σ_w h_w = 1. The LP

.. math:: \max \sum_w \langle c_w, h_w\rangle \quad \text{s.t.}\quad \sum_w h_w = \mathbf 1,\ h_w \in K

(gain form: c = π·g, or c = −π·l for a loss) is therefore a Dantzig–Wolfe *master* over rays of K: a
variable α_k ≥ 0 per generated pair (ray r_k ∈ K, output w_k), n row-sum rows Σ_k α_k r_k = 1, objective
Σ_k α_k ⟨c_{w_k}, r_k⟩. Its solution is the channel H[·, w] = Σ_{k: w_k = w} α_k r_k, private because each
r_k is (a cone is closed under non-negative sums). The master has n rows whatever the number of outputs,
so the n·|W|-variable LP that :mod:`~dprivacy.mechanisms.lp_engine` restricts is never built.

**Pricing.** With the master's row duals u, output w can improve the master iff some r ∈ K has
⟨c_w − u, r⟩ > 0. The pricing LP maximises that over K ∩ [0, 1]^n (the box normalises the ray; every
channel entry is ≤ 1 anyway). It has n variables; its cone constraints are added lazily, shared by all
outputs (K is the same for every output): a priced ray is tested against every pair, the most violated
pair of each violating point that the LP can hold (factor e^{εd} ≤ :data:`MAX_FACTOR`) is added, and the
ray is priced again. A ray that meets every pair to 1e-9 is then replaced by its largest minorant in K,
r̃(a) = min_b e^{εd(a,b)} r(b), or by its smallest majorant r̂(a) = max_b e^{−εd(a,b)} r(b) when the
violations are only those the LP cannot hold (far entries returned as 0, which the minorant would spread
to the whole ray) — both in K exactly (triangle inequality), so the master only ever holds private
columns. The pair rows are divided by √(e^{εd}) (:data:`ROW_SCALE_POWER`), which keeps the duals'
certificates tight.

**Bound.** For any multipliers μ_w ≥ 0 on column w's pair constraints,
Σ_y max_w (c − Aᵀμ)[y, w] ≥ OPT (the Lagrangian bound of :func:`~dprivacy.mechanisms.lp_engine.lagrangian_bound`;
each column may take its own μ_w since its constraints involve only its own entries). Each pricing
LP's duals give μ_w; the bound is kept from the latest certificate of every column and holds whatever
the solver's tolerances were. For the stabilisation below the Lagrangian function
L(u) = Σ_y u_y + Σ_w max_{h ∈ K ∩ [0,1]^n} ⟨c_w − u, h⟩ ≥ OPT is also evaluated (its terms bounded
above through the same duals).

**Stabilisation.** Plain Dantzig–Wolfe tails off; the duals are smoothed (Wentges 1997): pricing runs at
u_s = α·u_c + (1 − α)·u, with u_c the point of best L so far, and α halved when smoothing prices out no
improving ray ("mispricing"). After a round that priced every output, α moves by the subgradient
1 − Σ_w h_w of L at u_s (h_w the pricing optima; Pessoa, Sadykov, Uchoa, Vanderbeck 2018): up by
0.1·(1 − α) when it makes an acute angle with u − u_c (L grows towards the master's duals), else down by
0.1. For the binary gain the caller can start u_c at the tent LP's dual
(ElSalamouny et al. 2014's tight-constraints columns with the row sums relaxed to ≤ 1), where L equals the tent bound.

**The master in the tent basis.** Where the tent matrix T = e^{−εd} has a sparse inverse M (lines and
Manhattan grids, :func:`tent_inverse`), the master's rows are M·Σ_k α_k r_k = M·1: the same LP, but the
tents are unit columns and the first masters are nearly diagonal instead of dense (on 50×50 Manhattan a
tent has about 800 entries above 1e-9). The rows' duals are u = Mᵀu'. There the spaces are lattices and
each priced ray is snapped to its exact vertex (:func:`snap_to_lattice`), so that M·r has no entries of
the solver's tolerance.

**Outputs that cannot improve** are not priced: column w's last certificate bounds its pricing value at
any u by Σ_y max(0, (c_w − Aᵀμ_w)[y] − u_y); when that is 0 the output is skipped (exactly).

**Idle outputs** (for gains ≥ 0) — those whose pricing optimum was the zero ray in :data:`IDLE_ROUNDS`
rounds in a row (on grid:14x14 the optimum uses 72 of 174 outputs, and the others price to zero round
after round) — are priced only in every :data:`IDLE_FULL_EVERY`-th round, and in any round where the
others give no ray. The bound stays valid in between (their last certificates still bound them); "no
improving ray" is only concluded after a round that priced every output.

Measured on Euclidean and Manhattan grids with the world-cities prior (``benchmarks/bench_lp_scale.py``),
this beats constraint generation on the n·|W|-variable LP from 8×8 on: the master has n rows, and the
pricing LPs have n variables and a few thousand rows.

This module runs the rounds (:func:`dantzig_wolfe`); the cone's geometry is :mod:`.privacy_cone`, the
pricing LP :mod:`.dw_pricing` and the master's helpers :mod:`.dw_master`.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..spaces import MetricSpace
from .dw_master import (ENTER_RTOL, MASTER_DUAL_TOL, MASTER_LADDER, POOL_MAX_ENTRIES, POOL_PER_POINT, _channel,
                        _enter_tol, _Pool, _pool_capacity, _purge, _run_master)
from .dw_pricing import AFRESH_LADDER, MAX_FACTOR, PAIR_ATOL, PRICING_SIMPLEX_OPTIONS, ROW_SCALE_POWER, _Pricing
from .lp_engine import MAX_MODEL_BYTES, EngineOutcome, Round, _new_highs, _relative_gap
from .privacy_cone import _cone_factors, largest_minorant, lattice_step, smallest_majorant, snap_to_lattice, tent_inverse

#: The decomposition's public names, with those of the modules it is made of (:mod:`.privacy_cone`,
#: :mod:`.dw_pricing`, :mod:`.dw_master`).
__all__ = ["AFRESH_LADDER", "ENTER_RTOL", "MASTER_DUAL_TOL", "MASTER_LADDER", "MAX_FACTOR", "PAIR_ATOL", "POOL_MAX_ENTRIES",
           "POOL_PER_POINT", "PRICING_SIMPLEX_OPTIONS", "ROW_SCALE_POWER", "dantzig_wolfe", "estimate_bytes",
           "largest_minorant", "lattice_step", "smallest_majorant", "snap_to_lattice", "tent_inverse"]

#: Ray entries below this (rays are scaled to a largest entry of 1) are left out of the master's
#: matrix: HiGHS drops matrix values below 1e-9 anyway, and keeping them slows the simplex. The
#: channel is assembled from the full rays; the row sums it misses (at most this per ray used) are
#: absorbed by the caller's certified repair.
MASTER_DROP = 1e-9

#: Columns of the master are purged (the most negative reduced costs among those at zero) when there
#: are more than this many per point, down to ``KEEP_PER_POINT`` per point; purged columns go to the
#: pool below.
PURGE_PER_POINT = 3
KEEP_PER_POINT = 2

#: Pool-and-resolve passes per round at most.
POOL_PASSES = 10

#: HiGHS options of the master's primal simplex. Its columns are dense rays with entries from 1e-9 to 1,
#: and HiGHS's default scaling makes the simplex take more and slower iterations on them: measured on a
#: master captured at its 100th solve on grid:20x20:manhattan (400 rows, ~1,560 columns, ~611,000 nonzeros),
#: warm-started from its basis, 854 iterations in 1.98 s with scaling, 281 in 0.47 s without; row-wise
#: pricing of the pivot row brings that to 0.38 s (results in benchmarks/RESULTS.md).
MASTER_SIMPLEX_OPTIONS = {"simplex_scale_strategy": 0, "simplex_price_strategy": 1}

#: The pricing LPs hold the pairs up to :data:`~.dw_pricing.MAX_FACTOR`; when the decomposition stalls above
#: its gap target (no improving ray, the bound held up by that relaxation), they are given the pairs up to
#: this factor and the rounds go on: on 5 points at ε = 6.75 (factors up to 4e10, a case hypothesis
#: generated) the run stalls at a relative gap of 1.8e-4 with the optimal objective, and with the far pairs
#: the bound meets it in the next round. Only after a stall, since from the start such pairs cost more than
#: they give (:data:`~.dw_pricing.MAX_FACTOR`).
STALL_MAX_FACTOR = 1e12

#: Outputs priced per round at most once some ray has entered (the most promising first, by the bound
#: their last certificate gives); "no improving ray" is only concluded after every output with a
#: positive bound was priced. Partial rounds lose: pricing only 200 of the 329 outputs of
#: grid:20x20:manhattan per round left the bound at the tent bound for 300 s (the smoothing centre only
#: moves when every output is priced at one point), where full rounds closed the gap in 177 s; on
#: grid:50x50:manhattan (1,627 outputs, 300 s, the master in the tent basis) 1,000 per round ended at
#: 0.2916 ≤ OPT ≤ 0.3269 (gap 0.108), every output per round at 0.2931 ≤ OPT ≤ 0.3217 (gap 0.089).
#: So every round prices every output (the limit stays for tests of partial rounds).
PRICE_PER_ROUND = 10**9

#: Pricing problems solved at once, each in its own HiGHS instance and thread (HiGHS releases the GIL):
#: the number of cores, at most 4.
PRICING_THREADS = max(1, min(4, os.cpu_count() or 1))

#: The master is solved by interior point (with crossover) from this many points on, else by the
#: warm-started primal simplex (:data:`MASTER_SIMPLEX_OPTIONS`). Measured on grid:50x50:manhattan
#: (2,500 rows, world-cities prior, 300 s, 2 threads): with HiGHS's scaling the simplex lost to
#: interior point (24–44 s against 9–27 s per solve); without it, the simplex reached gap 0.112 in 7
#: rounds against 0.119 in 5 by interior point (master 164 s against 199 s). Larger masters were not
#: measured, so interior point stays above 5,000 points.
MASTER_IPM_POINTS = 5000

#: Write the master's rows in the basis of tents where the tent matrix has a sparse inverse (lines and
#: Manhattan grids: :func:`tent_inverse`).
TENT_BASIS = True

#: A priced ray is replaced by its lattice vertex (:func:`snap_to_lattice`) when they differ by at most this.
SNAP_ATOL = 1e-7

#: Spaces with at most this many essential pairs per point (graph metrics: their edges) get all of them
#: in the pricing LPs from the start.
COMPLETE_PAIRS_PER_POINT = 16

#: The relative gap under which "no improving ray" is reported as optimal (the solvers' tolerances).
STALL_GAP = 1e-6

#: The same as an absolute gap, in the engine's units (the largest |gain| is 1): the solvers' tolerances
#: are absolute, so an optimum far smaller than the gains (a distance loss on a prior whose mass is on
#: two points, 8e-4 of the largest loss) can end 1e-9 apart, a relative gap of 1.3e-6 (an example of
#: test_optimal_mechanism_by_decomposition_is_certified_and_brackets_the_optimum's hypothesis search).
STALL_ABS = 1e-8

#: Rounds without progress of the objective or the bound after which the engine stops ("stalled").
STALL_ROUNDS = 25
#: The same once the gap is below STALL_GAP (measured on grid:14x14: the last 20 rounds of a 129 s run
#: moved nothing).
STALL_ROUNDS_CLOSE = 5


def _master_iteration_cap(n: int) -> int:
    """The same for a warm-started master run (measured there: at most about 2,000 iterations; one
    stalled run went on past the time limit for minutes)."""
    return 10 * n + 5000


#: An output whose pricing optimum was the zero ray in this many rounds in a row is *idle*: it is
#: priced only in every :data:`IDLE_FULL_EVERY`-th round (and whenever the other outputs give no ray).
#: On grid:14x14 (world-cities prior, ε = 1) the optimum uses 72 of 174 outputs, and the other ~102
#: returned the zero ray every round, 45% of the pricing time. Measured (2 threads, one run each,
#: one after the other): 14×14 35.7 s against 45.5 s (75 rounds against 71); 20×20 exact in 461.0 s
#: against 519.9 s; 20×20 Manhattan 47.2 s against 49.7 s; 50×50 Manhattan at 200 s unchanged
#: (gap 0.090). Only for non-negative gains (the binary gain): on a loss the bound needs the full rounds
#: (grid:14x14 distance loss to gap 1e-3: 203.8 s in 37 rounds with it, 191.7 s in 30 without). 0 turns
#: it off.
IDLE_ROUNDS = 2
#: Rounds k with k % IDLE_FULL_EVERY == 0 price every output, idle ones included (their certificates
#: are renewed there, so the bound and the stability centre move; measured on 14×14: every 3rd or
#: 5th round 35.7 / 34.7 s, every 10th 45.9 s).
IDLE_FULL_EVERY = 3

#: Initial smoothing weight on the stability centre.
SMOOTHING = 0.7

#: Adjust the smoothing weight each round from the subgradient at the smoothed point (Pessoa et al. 2018).
AUTO_SMOOTHING = True


def estimate_bytes(n: int, m: int) -> int:
    """Memory of :func:`dantzig_wolfe` on n points and m outputs: the n×n cone factors, tents and pair
    flags, the n×m gain and certificate matrices, a master of up to ``PURGE_PER_POINT``·n dense
    columns (values and indices in HiGHS, and the rays kept here)."""
    dense = 8 * n * n * 2 + n * n + 8 * n * m * 2
    master = (8 + 4 + 8 + 8) * PURGE_PER_POINT * n * n + 8 * _pool_capacity(n) * n
    return int(dense + master)


def dantzig_wolfe(space: MetricSpace, c: np.ndarray, *, epsilon: float, center: np.ndarray | None = None,
                  center_bound: float = float("inf"), gap: float = 1e-7, time_limit: float | None = None,
                  progress=None, threads: int | None = None) -> EngineOutcome:
    r"""Maximise Σ c[y, w]·H[y, w] over ε·d-private channels H : Y → W by Dantzig–Wolfe decomposition
    over rays of the privacy cone (module docstring).

    ``c`` is n × m (gain form). ``center`` is a starting stability centre for the duals, with
    ``center_bound`` ≥ L(center) ≥ OPT if the caller knows one (for the binary gain, the tent LP's
    dual-feasible μ, where L(μ) = Σμ: :func:`~dprivacy.mechanisms.tent_lp._tent_bracket`); without it
    the first master duals start the smoothing. Stops when the
    relative gap between the bound and the master's objective is at most ``gap`` and no ray improves
    the master at its own duals, or at ``time_limit`` seconds. ``progress(round)`` is called after each
    round with a :class:`~dprivacy.mechanisms.lp_engine.Round`. ``threads``: pricing problems solved in
    parallel (default :data:`PRICING_THREADS`); the outputs are split among them in a fixed way, so the
    result does not depend on thread timing (only, within the solvers' tolerances, on their number).

    Returns an :class:`~dprivacy.mechanisms.lp_engine.EngineOutcome` whose ``raw`` is the master's channel
    (n × m, rows summing to 1 up to the dropped ray entries); the caller certifies it.

    References
    ----------
    ElSalamouny et al. 2014 (ElSalamouny et al. 2014) §3.4, §5.1: the optimal-mechanism LP; Alvim et al. 2015
    (Alvim et al. 2015) Def 22, Prop 23; Chatzikokolakis et al. 2013 (Chatzikokolakis et al. 2013) Def 7.
    G. B. Dantzig, P. Wolfe, Decomposition principle for linear programs, Oper. Res. 8 (1960);
    P. Wentges, Weighted Dantzig–Wolfe decomposition for linear mixed-integer programming, ITOR 4 (1997);
    A. Pessoa, R. Sadykov, E. Uchoa, F. Vanderbeck, Automation and combination of linear-programming
    based stabilization techniques in column generation, INFORMS J. Comput. 30 (2018).
    """
    import highspy

    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    c = np.asarray(c, dtype=np.float64)
    n, m = c.shape
    # The solvers' tolerances are absolute (1e-9 in the master, 1e-10 in the pricing LPs); gains of
    # the size of prior entries (1e-3 on a few hundred points) made them relative errors of 1e-6 that
    # summed over the outputs into a floor under the gap (measured on grid:20x20: 8.9e-6). The engine
    # works on c scaled to a largest |entry| of 1 and reports in the caller's units.
    unit = float(np.abs(c).max()) if c.size else 1.0
    unit = unit if np.isfinite(unit) and unit > 0 else 1.0
    c = c / unit
    center_bound = float(center_bound) / unit
    need = estimate_bytes(n, m)
    if need > MAX_MODEL_BYTES:
        return EngineOutcome("failed", f"the decomposition would need about {need / 2**30:.1f} GiB ({n:,} points, "
                             f"{m:,} outputs: cone factors, tents, certificates and a master of up to "
                             f"{PURGE_PER_POINT * n:,} dense columns, and a pool), over the {MAX_MODEL_BYTES / 2**30:.0f} GiB limit",
                             None, float("nan"), float("inf"), [], 0, time.perf_counter() - t0)
    factors = _cone_factors(space, epsilon)
    with np.errstate(under="ignore"):
        tents = np.exp(-epsilon * space.distances)  # tent at y: row y (0 at infinite distance)

    master = _new_highs(time_limit)
    master.setOptionValue("primal_feasibility_tolerance", MASTER_DUAL_TOL)
    master.setOptionValue("dual_feasibility_tolerance", MASTER_DUAL_TOL)
    master.setOptionValue("simplex_iteration_limit", _master_iteration_cap(n))
    if n >= MASTER_IPM_POINTS:
        # beyond the sizes where the simplex without scaling was measured (MASTER_IPM_POINTS); with
        # scaling it had also overrun the time limit by 17 s on 50×50 (it reads the clock rarely on
        # dense columns)
        master.setOptionValue("solver", "ipm")
    else:
        master.setOptionValue("simplex_strategy", 4)  # primal simplex: added columns keep the basis primal feasible
        for key, value in MASTER_SIMPLEX_OPTIONS.items():
            master.setOptionValue(key, value)
    master.changeObjectiveSense(highspy.ObjSense.kMaximize)
    # the master's rows Σ α_k r_k = 1, written as M·Σ α_k r_k = M·1 where the tent matrix has a sparse
    # inverse M (tents become unit columns; the duals u' give the rows' duals u = Mᵀu'), and that
    # only on lattices, whose priced rays are snapped to exact vertices: an approximate vertex's M·r has
    # entries of the solver's tolerance at every point, and leaving them out of the master would make
    # its reduced costs differ from the rays' (measured on 50×50 Manhattan: 1,627 rays "improving"
    # every round that the master did not take)
    step = lattice_step(space) if TENT_BASIS else None
    transform = tent_inverse(space, epsilon, tents) if step is not None else None
    if transform is None:
        step = None
    rhs = np.ones(n) if transform is None else transform @ np.ones(n)
    drop = MASTER_DROP
    if transform is not None:
        # an entry δ left out of M·r moves the rows Σ α_k r_k by T·δ: keep that below MASTER_DROP too
        # (down to HiGHS's smallest allowed matrix value)
        drop = max(MASTER_DROP / float(tents.sum(axis=1).max()), 1e-12)
        master.setOptionValue("small_matrix_value", min(drop, 1e-9))
    master.addRows(n, rhs, rhs, 0, np.zeros(n, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
    ray_out: list[int] = []
    ray_vec: list[np.ndarray] = []
    spare = _Pool(_pool_capacity(n), c)

    def add_rays(outs, vecs):
        if not vecs:
            return
        cost, starts, idx, val = [], [], [], []
        pos = 0
        for w, r in zip(outs, vecs):
            t = r if transform is None else transform @ r
            nz = np.flatnonzero(np.abs(t) > drop)
            cost.append(float(c[:, w] @ r))
            starts.append(pos)
            idx.append(nz)
            val.append(t[nz])
            pos += nz.size
        k = len(vecs)
        master.addCols(k, np.array(cost), np.zeros(k), np.full(k, np.inf), pos, np.array(starts, dtype=np.int32),
                       np.concatenate(idx).astype(np.int32), np.concatenate(val))
        ray_out.extend(int(w) for w in outs)
        ray_vec.extend(vecs)

    # Starting rays: the constant ray on the output it serves best (so the master is feasible: the
    # constant channel), and the tent at every point on the output it serves best.
    add_rays([int(c.sum(axis=0).argmax())], [np.ones(n)])
    gains = tents @ c  # gains[y, w] = ⟨c_w, tent_y⟩
    best = gains.argmax(axis=1)
    add_rays(list(best), [tents[y].copy() for y in range(n)])

    threads = PRICING_THREADS if threads is None else max(1, int(threads))
    pricers = [_Pricing(n, factors, time_limit) for _ in range(threads)]
    pool = None
    if threads > 1:
        from .._threads import thread_pool

        pool = thread_pool("pricing", threads)  # HiGHS releases the GIL in run()
    tour_pos = _tour_positions(space.distances)
    pi_, pj_ = space.constraint_pairs()
    d = space.distances[pi_, pj_]
    ok = np.isfinite(d) & (d > 0)
    if ok.any():
        # few essential pairs (graph metrics: the edges): give them all at once. Every other pair's
        # constraint follows from them along a tight chain (ElSalamouny et al. 2013 Prop 1), so nothing is generated
        # lazily; what the solver's tolerances leave is removed by the minorant repair.
        every = int(ok.sum()) <= COMPLETE_PAIRS_PER_POINT * n
        near = ok if every else ok & (d <= d[ok].min() * (1 + 1e-9))
        for pricing in pricers:
            added = pricing.add_pairs(np.concatenate([pi_[near], pj_[near]]), np.concatenate([pj_[near], pi_[near]]))
            pricing.complete = every and added == 2 * int(near.sum())

    # q[:, w] = c_w − Aᵀμ_w from column w's latest certificate (μ = 0 to start: q = c)
    q = c.copy()
    idle = np.zeros(m, dtype=np.int64)  # rounds in a row in which output w priced to the zero ray
    idle_skip = IDLE_ROUNDS > 0 and float(c.min()) >= 0.0  # gains only (see IDLE_ROUNDS)
    alpha = SMOOTHING
    best_l = float(center_bound)
    u_center = None if center is None else np.asarray(center, dtype=np.float64) / unit
    bound = min(float(q.max(axis=1).sum()), best_l)
    rounds: list[Round] = []
    objective = float("nan")
    status, message = "failed", "not solved"
    failures: dict[str, int] = {}  # HiGHS's status of a failed pricing problem → how many
    for k in range(1, 100_000):
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                status, message = "time-limit", f"time limit of {time_limit:g} s reached after {k - 1} rounds"
                break
            master.setOptionValue("time_limit", float(master.getRunTime() + left))
        failed = False
        for passes in range(POOL_PASSES + 1):
            ms = _run_master(master)
            if ms != highspy.HighsModelStatus.kOptimal:
                if ms == highspy.HighsModelStatus.kTimeLimit:
                    status, message = "time-limit", f"time limit of {time_limit:g} s reached during round {k} ({k - 1} rounds finished)"
                else:
                    status, message = "failed", f"HiGHS: {master.modelStatusToString(ms)} in the master, round {k}"
                failed = True
                break
            sol = master.getSolution()
            u = np.asarray(sol.row_dual, dtype=np.float64)
            if transform is not None:
                u = transform.T @ u
            objective = float(master.getInfo().objective_function_value)
            if passes == POOL_PASSES:
                break
            # pool columns that improve the master at its duals re-enter (the best n first)
            back = spare.take(u, _enter_tol(objective), n)
            if not back[0]:
                break
            add_rays(*back)
        if failed:
            break
        # the channel of the last master solved to optimality (a later solve cut short by the time
        # limit leaves an intermediate point whose rows need not sum to 1)
        solved = (np.asarray(sol.col_value, dtype=np.float64).copy(), list(ray_out), list(ray_vec))
        primal = (solved[0], np.asarray(sol.col_dual, dtype=np.float64).copy())
        scale = max(abs(objective), 1e-300)
        if u_center is None:
            u_center = u.copy()
        entered = 0
        pairs_added = 0
        stop = None
        full_round = False
        while True:
            us = alpha * u_center + (1.0 - alpha) * u
            load = np.zeros(n)  # Σ_w of the pricing optima at us: the subgradient of L there is 1 − load
            # exact skip: column w's certificate bounds its pricing value at us by Σ max(0, q_w − us)
            cap = np.maximum(q - us[:, None], 0.0).sum(axis=0)
            todo = np.flatnonzero(cap > _enter_tol(scale))
            skipped = 0
            if idle_skip and not full_round and k % IDLE_FULL_EVERY != 0:
                # idle outputs wait for a full round (their last certificates still bound them)
                busy = idle[todo] < IDLE_ROUNDS
                skipped = int(todo.size - busy.sum())
                todo = todo[busy]
            todo = todo[np.argsort(-cap[todo], kind="stable")]  # the most promising outputs first
            new_out, new_vec = [], []
            # a fixed split: each pricer's sequence, and so the result, does not depend on thread timing
            parts, limit = _split_for_pricing(todo, tour_pos, len(pricers))
            if len(pricers) == 1:
                results = [_price_list(pricers[0], parts[0], c, us, u, scale, limit, deadline)]
            else:
                results = list(pool.map(lambda t: _price_list(pricers[t], parts[t], c, us, u, scale, limit, deadline),
                                        range(len(pricers))))
            order = sorted((i * len(pricers) + t, res) for t, part in enumerate(results) for i, res in enumerate(part))
            priced_all = len(order) == todo.size
            for _, (w, st, r, ats, added) in order:
                pairs_added += added
                if st == "time-limit":
                    stop = st
                    continue
                if st != "optimal":
                    # this output's pricing failed: its last certificate still bounds it (valid), no ray
                    failures[st] = failures.get(st, 0) + 1
                    continue
                # keep the certificate that bounds this column's pricing value best at us
                cands = [c[:, w] - at for at in ats]
                vals = [float(np.maximum(cq - us, 0.0).sum()) for cq in cands]
                i = int(np.argmin(vals))
                q[:, w] = cands[i]
                cap[w] = vals[i]
                top = r.max()
                idle[w] = idle[w] + 1 if top <= 0 else 0
                if top > 0 and step is not None:
                    unit_ray = r / top
                    snapped = snap_to_lattice(unit_ray, epsilon, step)
                    if np.abs(snapped - unit_ray).max() <= SNAP_ATOL:  # a vertex (else kept as priced)
                        r, top = snapped, 1.0
                if top > 0 and float((c[:, w] - us) @ r) > 0:
                    load += r
                if top > 0 and float((c[:, w] - u) @ r) > _enter_tol(scale):
                    new_out.append(w)
                    new_vec.append(r / top)
            _share_pairs(pricers)
            if stop is not None:
                break
            l_us = float(us.sum() + cap.sum())
            if l_us < best_l:
                best_l, u_center = l_us, us.copy()
            if new_vec or (alpha == 0.0 and not skipped):
                if AUTO_SMOOTHING and priced_all and new_vec:
                    # Pessoa et al. (2018): L grows along u − u_center at us when the subgradient
                    # 1 − load points that way: step back towards the centre; else further out
                    if float((1.0 - load) @ (u - u_center)) > 0:
                        alpha = alpha + 0.1 * (1.0 - alpha)
                    else:
                        alpha = max(0.0, alpha - 0.1)
                break
            if skipped:
                # no ray from the busy outputs: price the idle ones too before concluding anything
                full_round = True
                continue
            alpha = 0.0 if alpha < 0.05 else alpha / 2  # mispricing: move towards the master's duals
        bound = min(bound, best_l, float(q.max(axis=1).sum()))
        if stop is not None:
            status, message = ("time-limit", f"time limit of {time_limit:g} s reached during round {k} ({k - 1} rounds finished)") \
                if stop == "time-limit" else ("failed", stop)
            break
        add_rays(new_out, new_vec)
        entered = len(new_vec)
        g = _relative_gap(bound, objective)
        rounds.append(Round(k, _pair_rows(pricers), objective * unit, bound * unit, float("nan"), g, int(pairs_added),
                            time.perf_counter() - t0, len(ray_vec), entered))
        if progress is not None:
            progress(rounds[-1])
        if entered == 0:
            # no improving ray at the master's own duals: optimal up to the solvers' tolerances; say so
            # only when the bound confirms it
            what = (f"no ray of the privacy cone improves the master after {k} rounds ({len(ray_vec)} rays, "
                    f"{_pair_rows(pricers):,} pair constraints priced)")
            if g <= max(gap, STALL_GAP) or bound - objective <= STALL_ABS:
                status, message = "optimal", what
            elif _widen_pricing(pricers, factors, (pi_, pj_)):
                # the far pairs may close the gap: every output is priced again with them (the relaxed
                # certificates would skip them all; the bound so far stays, as a minimum)
                q, idle[:] = c.copy(), 0
                continue
            else:
                status, message = "stalled", (f"{what}, but the bound is {g:.3g} above the objective in relative "
                                              "terms: the pricing problems are too ill-conditioned here "
                                              "(e^{εd} over a needed pair spans too many orders of magnitude)")
            break
        if g <= gap:
            status, message = "gap", f"relative gap {g:.3g} ≤ {gap:g} after {k} rounds"
            break
        # below STALL_GAP the answer is already reported optimal, so a shorter standstill ends the run
        still = STALL_ROUNDS if g > STALL_GAP else STALL_ROUNDS_CLOSE
        if k > still and objective - rounds[-1 - still].objective / unit <= 1e-12 * scale \
                and bound >= rounds[-1 - still].bound / unit - 1e-12 * scale:
            what = (f"neither the objective nor the bound moved in {still} rounds (relative gap {g:.3g}): "
                    "the rays entering are within the master's tolerances")
            close = g <= max(gap, STALL_GAP) or bound - objective <= STALL_ABS
            if not close and _widen_pricing(pricers, factors, (pi_, pj_)):
                q, idle[:] = c.copy(), 0
                continue
            status, message = ("optimal" if close else "stalled"), what
            break
        if len(ray_vec) > PURGE_PER_POINT * n and k % 5 == 0:
            spare.add(*_purge(master, ray_out, ray_vec, KEEP_PER_POINT * n, primal))
    if failures:
        which = ", ".join(f"{k} ×{v}" for k, v in sorted(failures.items()))
        message += (f"; {sum(failures.values())} pricing problem(s) failed and were skipped (their last "
                    f"certificates still bound them): {which}")
    raw = _channel(*solved, n, m) if np.isfinite(objective) else None
    _share_pairs(pricers)
    pricing = pricers[0]
    lo, hi = np.minimum(pricing.a, pricing.b), np.maximum(pricing.a, pricing.b)
    n_pairs = int(np.unique(lo.astype(np.int64) * n + hi).size)
    used = 0 if raw is None else int((raw.max(axis=0) > 0).sum())
    return EngineOutcome(status, message, raw, objective * unit, bound * unit, rounds, int(pricing.a.size),
                         time.perf_counter() - t0, n_pairs, used, None)


def _widen_pricing(pricers: list, factors: np.ndarray, pairs: tuple) -> bool:
    """After a stall: give the pricing LPs the pairs up to :data:`STALL_MAX_FACTOR` (once): all of them at
    once when they are few (:data:`COMPLETE_PAIRS_PER_POINT` per point; a far pair violated only at entries
    below the solvers' tolerance is never generated lazily), else lazily. False when they already have them
    or no constraint pair lies between the two limits (nothing would change)."""
    i, j = pairs
    f = factors[i, j]
    wide = (f > MAX_FACTOR) & (f <= STALL_MAX_FACTOR)
    if pricers[0].max_factor >= STALL_MAX_FACTOR or not wide.any():
        return False
    for p in pricers:
        p.max_factor = STALL_MAX_FACTOR
        if int(wide.sum()) <= COMPLETE_PAIRS_PER_POINT * p.n:
            p.add_pairs(np.concatenate([i[wide], j[wide]]), np.concatenate([j[wide], i[wide]]))
    return True


def _price_list(pricing: _Pricing, ws, c, us, u, scale, limit: int, deadline):
    """Price outputs ``ws`` in order at the smoothed duals ``us`` (one pricer, one thread): a list of
    (w, status, ray, certificates, pairs added). Stops after ``limit`` outputs once a ray improves the
    master at its own duals ``u`` (partial pricing), or at the deadline."""
    out, found = [], 0
    for count, w in enumerate(ws):
        if count >= limit and found:
            break
        st, r, ats, added = pricing.solve(c[:, w] - us, deadline)
        out.append((int(w), st, r, ats, added))
        if st == "time-limit":
            break
        if st == "optimal" and r.max() > 0 and float((c[:, w] - u) @ r) > _enter_tol(scale):
            found += 1
    return out


def _tour_positions(dist: np.ndarray) -> np.ndarray:
    """Position of each output on a nearest-neighbour tour of the space (from point 0). The pricing LPs
    of nearby outputs have nearby optima, so pricing them one after another warm-starts each simplex
    from a close basis."""
    n = dist.shape[0]
    pos = np.empty(n, dtype=np.int64)
    free = np.ones(n, dtype=bool)
    at = 0
    for i in range(n):
        pos[at] = i
        free[at] = False
        if i + 1 < n:
            row = np.where(free, dist[at], np.inf)
            at = int(np.argmin(row))
    return pos


def _split_for_pricing(todo: np.ndarray, tour_pos: np.ndarray, threads: int) -> tuple[list, int]:
    """The outputs of a round for each pricer, and each pricer's partial-pricing limit. ``todo`` comes
    most promising first; its first :data:`PRICE_PER_ROUND` are priced along the tour, cut into one
    contiguous stretch per pricer; the rest follow in order, dealt out in turn."""
    head, tail = todo[:PRICE_PER_ROUND], todo[PRICE_PER_ROUND:]
    head = head[np.argsort(tour_pos[head], kind="stable")]
    blocks = np.array_split(head, threads)
    parts = [np.concatenate([blocks[t], tail[t::threads]]) for t in range(threads)]
    return parts, max(1, -(-head.size // threads))


def _share_pairs(pricers: list) -> None:
    """Give every pricer the pair constraints the others found (the pricing LPs stay relaxations of the
    same cone, and converge to the same rows)."""
    if len(pricers) < 2:
        return
    union = np.logical_or.reduce([p.have for p in pricers])
    for p in pricers:
        a, b = np.nonzero(union & ~p.have)
        if a.size:
            p.add_pairs(a, b)


def _pair_rows(pricers: list) -> int:
    return int(max(p.a.size for p in pricers))


