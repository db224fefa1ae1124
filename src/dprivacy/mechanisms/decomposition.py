r"""The optimal-mechanism LP by Dantzig–Wolfe decomposition over the privacy cone.

Every column h_w = H[·, w] of an ε·d-private channel lies in one and the same polyhedral cone

.. math:: K = \{h \in \mathbb{R}^n_{\ge 0} : h(a) \le e^{\varepsilon d(a, b)}\, h(b)\ \text{for all } a, b\},

the LP's privacy constraints for one output (seed 000 §3.4 and §5.1, seed 001 Def 22 / Prop 23, seed 002
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
(seed 000's tight-constraints columns with the row sums relaxed to ≤ 1), where L equals the tent bound.

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
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..spaces import MetricSpace
from .lp_engine import MAX_MODEL_BYTES, EngineOutcome, Round, _new_highs, _relative_gap

#: A priced ray violating a pair constraint r(a) ≤ e^{εd(a,b)} r(b) by more than this gets the pair added.
PAIR_ATOL = 1e-9

#: Ray entries below this (rays are scaled to a largest entry of 1) are left out of the master's
#: matrix: HiGHS drops matrix values below 1e-9 anyway, and keeping them slows the simplex. The
#: channel is assembled from the full rays; the row sums it misses (at most this per ray used) are
#: absorbed by the caller's certified repair.
MASTER_DROP = 1e-9

#: A ray enters the master when its reduced cost at the master's duals exceeds this (relative to the
#: master's objective scale) and :data:`MASTER_DUAL_TOL`.
ENTER_RTOL = 1e-12

#: The master's primal and dual feasibility tolerances. A ray whose reduced cost is below the dual
#: tolerance is not taken by the master's simplex: measured on grid:20x20, 120 such rays entered in each
#: of the last 30 rounds of a 600 s run and moved neither the objective nor the bound.
MASTER_DUAL_TOL = 1e-9

#: Columns of the master are purged (the most negative reduced costs among those at zero) when there
#: are more than this many per point, down to ``KEEP_PER_POINT`` per point; purged columns go to the
#: pool below.
PURGE_PER_POINT = 3
KEEP_PER_POINT = 2

#: Purged columns are kept in a pool of up to this many per point (the oldest leave first); after each
#: master solve, pool columns with a positive reduced cost re-enter and the master is solved again. An
#: output's optimal column lies inside a face of the cone and takes many rays to write, and a ray
#: purged too early is priced again at the cost of a whole round: measured (world-cities prior, ε = 1,
#: 2 threads), keeping 12 columns per point in the master instead of 3 cut the rounds from 71 to 45
#: on grid:10x10, 173+ to 84 on 14×14 and 238 to 92 on 20×20 Manhattan, but made the master up to
#: three quarters of the time (dense columns); the pool keeps the rounds and a small master.
POOL_PER_POINT = 10

#: The pool holds at most about this many entries (10 per point on 50×50 would be 62 million).
POOL_MAX_ENTRIES = 20_000_000

#: Pool-and-resolve passes per round at most.
POOL_PASSES = 10


#: HiGHS options of the master's primal simplex. Its columns are dense rays with entries from 1e-9 to 1,
#: and HiGHS's default scaling makes the simplex take more and slower iterations on them: measured on a
#: master captured at its 100th solve on grid:20x20:manhattan (400 rows, ~1,560 columns, ~611,000 nonzeros),
#: warm-started from its basis, 854 iterations in 1.98 s with scaling, 281 in 0.47 s without; row-wise
#: pricing of the pivot row brings that to 0.38 s (results in benchmarks/RESULTS.md).
MASTER_SIMPLEX_OPTIONS = {"simplex_scale_strategy": 0, "simplex_price_strategy": 1}

#: HiGHS options of the pricing LPs' dual simplex: Devex pricing instead of the default dual steepest
#: edge, whose weights each warm-started run sets up again over thousands of pair rows. Measured on a
#: pricing LP captured on grid:14x14 (196 columns, 4,841 rows, warm basis, new costs): 7.8 ms and 45
#: iterations by default, 4.5 ms and 44 with Devex; in whole runs (2 threads) 14×14 42.6 s against
#: 48.4 s, 20×20 Manhattan 66.2 s against 69.8 s.
PRICING_SIMPLEX_OPTIONS = {"simplex_dual_edge_weight_strategy": 1}

#: Option sets for a pricing LP the warm-started dual simplex could not finish, each tried in a new
#: HiGHS instance until one solves it. Measured on 34 such problems (19×15 grid of 200 km cells, ε = 4
#: per cell; their factors e^{εd} span eight orders of magnitude): the dual simplex from scratch solved
#: none, without scaling 2, with tolerances 1e-9 29, interior point 0 (4 at 1e-9), the primal simplex
#: all 34 (in 43 ms each on average).
AFRESH_LADDER = ({}, {"simplex_strategy": 4},
                 {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9},
                 {"solver": "ipm"})

#: The pricing LPs' pair rows r(a) − F·r(b) ≤ 0 are divided by F to this power. Measured on three
#: pricing problems of that 19×15 grid whose certificates were loose: unscaled rows left the Lagrangian
#: bound 7e-4 to 0.22 above the LP's optimum (the clipped negative duals, times F), dividing by √F
#: 3e-9 or less, by F 6e-12 or less; the simplex took 261–414 iterations scaled against 408–768
#: unscaled. With √F the solver's primal tolerance moves a far entry by at most 1e-11 (by F, 7.5e-9).
ROW_SCALE_POWER = 0.5

#: Option changes for a master the warm-started simplex could not finish, each tried from scratch in
#: turn. A master on sum:30,3 (91 rows, 405 rays, entries down to 2e-9; a Dirichlet prior) failed at
#: once ("Solve error") by the primal and the dual simplex and by interior point, at tolerances 1e-9
#: with or without presolve; with tolerances 1e-8 the primal simplex solved it in 301 iterations.
MASTER_LADDER = ({}, {"primal_feasibility_tolerance": 10 * MASTER_DUAL_TOL,
                      "dual_feasibility_tolerance": 10 * MASTER_DUAL_TOL}, {"solver": "ipm"})

#: Pair constraints whose factor e^{εd} exceeds this are not given to HiGHS (whose simplex loses its
#: footing on wider coefficient ranges, e.g. "unbounded" with a box; its hard limit is 1e15). Measured
#: again with the scaled rows on the 19×15 grid at ε = 4 per cell: 1e10 left the bound at gap 2.4e-5
#: and 1e12 at the tent bound, where 1e8 reaches 1.1e-6; the relaxation it makes costs about
#: n·max|c − u|/MAX_FACTOR in the bound.
MAX_FACTOR = 1e8

#: ... but when the decomposition stalls above its gap target (no improving ray, the bound held up by the
#: relaxation), the pricing LPs are given the pairs up to this factor and the rounds go on: found by
#: hypothesis, 5 points at ε = 6.75 (factors up to 4e10) stalled at a relative gap of 1.8e-4 with the
#: optimal objective; with the far pairs the bound met it in the next round. Only after a stall, since
#: from the start such pairs cost more than they give (above).
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

#: Rounds of lazy pair generation for one pricing problem at most.
MAX_PAIR_ROUNDS = 100

#: The relative gap under which "no improving ray" is reported as optimal (the solvers' tolerances).
STALL_GAP = 1e-6

#: The same as an absolute gap, in the engine's units (the largest |gain| is 1): the solvers' tolerances
#: are absolute, so an optimum far smaller than the gains (a distance loss on a prior whose mass is on
#: two points, 8e-4 of the largest loss) can end 1e-9 apart, a relative gap of 1.3e-6 (found by
#: hypothesis in test_optimal_mechanism_by_decomposition_is_certified_and_brackets_the_optimum).
STALL_ABS = 1e-8

#: Rounds without progress of the objective or the bound after which the engine stops ("stalled").
STALL_ROUNDS = 25
#: The same once the gap is below STALL_GAP (measured on grid:14x14: the last 20 rounds of a 129 s run
#: moved nothing).
STALL_ROUNDS_CLOSE = 5

def _pricing_iteration_cap(n: int) -> int:
    """Simplex iterations of one warm-started pricing run on n points, after which the LP is solved
    again from scratch. Measured on grid:20x20 (ε = 1, world-cities prior, 600 s): warm pricing runs
    take a median 35 and a 99.9th percentile of 939 iterations, and about 850 (≈ 2n) from scratch; but
    about one in 300 warm runs stalled for 40,000–60,000 iterations (6–10 s each, 0.05 s from scratch)."""
    return 2 * n + 1000


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


def _pool_capacity(n: int) -> int:
    """Columns the pool holds on n points."""
    return max(0, min(POOL_PER_POINT * n, POOL_MAX_ENTRIES // max(n, 1)))


def _cone_factors(space: MetricSpace, epsilon: float) -> np.ndarray:
    """E[a, b] = e^{εd(a, b)} (∞ where d is ∞: no constraint)."""
    with np.errstate(over="ignore"):
        return np.exp(epsilon * space.distances)


def largest_minorant(r: np.ndarray, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The largest vector of K below ``r`` ≥ 0: r̃(a) = min_b e^{εd(a,b)} r(b), and the minimising b.

    r̃ ∈ K by the triangle inequality (e^{εd(a,b)} ≤ e^{εd(a,c)} e^{εd(c,b)}), r̃ ≤ r (b = a), and
    r̃ = r iff r ∈ K; a point a with r̃(a) < r(a) violates its pair (a, argmin) by r(a) − r̃(a).
    """
    with np.errstate(invalid="ignore"):
        t = factors * r[None, :]
    t[np.isnan(t)] = np.inf  # 0·∞: no constraint between the two points
    arg = t.argmin(axis=1)
    return t[np.arange(r.size), arg], arg


def smallest_majorant(r: np.ndarray, factors: np.ndarray) -> np.ndarray:
    r"""The smallest vector of K above ``r`` ≥ 0: r̂(a) = max_b e^{−εd(a,b)} r(b).

    r̂ ∈ K by the triangle inequality, r̂ ≥ r (b = a), and r̂ = r iff r ∈ K. It repairs a pricing
    optimum whose violations are only at the solver's absolute tolerance: an entry that should be
    e^{−38} (a far point of a 20×20 Manhattan grid) comes back as 0 within the primal tolerance, and
    the largest minorant below such an r is 0 everywhere (every point is within a finite factor of the
    zero), while the majorant moves no entry by more than that tolerance.
    """
    return (r[None, :] / factors).max(axis=1)  # factors ≥ 1 (∞ at infinite distance: r/∞ = 0)


def _markov_precision(x: np.ndarray, epsilon: float):
    """The inverse of T[i, j] = e^{−ε|x_i − x_j|} for sorted distinct points x on a line: tridiagonal.

    T is the covariance of a stationary Ornstein–Uhlenbeck process sampled at x, a Markov chain, so its
    precision matrix couples neighbours only: with a_i = e^{−ε(x_{i+1} − x_i)} and s_i = 1/(1 − a_i²),
    P[i, i] = s_{i−1} + s_i − 1 inside, s_1 and s_{n−1} at the two ends,
    P[i, i+1] = −a_i s_i.
    """
    import scipy.sparse as sp

    n = x.size
    if n == 1:
        return sp.csr_matrix(np.ones((1, 1)))
    a = np.exp(-epsilon * np.diff(x))
    s = 1.0 / (1.0 - a * a)
    diag = np.zeros(n)
    diag[:-1] += s
    diag[1:] += s
    diag[1:-1] -= 1.0
    off = -a * s
    return sp.diags([off, diag, off], [-1, 0, 1], format="csr")


def lattice_step(space: MetricSpace) -> float | None:
    """λ when every distance of the space is a multiple of λ along a path of steps λ (Manhattan grids
    and evenly spaced lines), else None. There the pricing LP's vertices are r = e^{−ελk} with integer
    k ≥ 0 (a tight tree of unit steps from the points at 1), which :func:`snap_to_lattice` restores
    exactly from the solver's approximate vertex."""
    from ..spaces import GridSpace

    if isinstance(space, GridSpace):
        return float(space.step) if space.metric == "manhattan" else None
    line = _line_order(space)
    if line is None:
        return None
    gaps = np.diff(line[1])
    return float(gaps[0]) if np.allclose(gaps, gaps[0], rtol=1e-12, atol=0) else None


def _line_order(space: MetricSpace):
    """(order, sorted positions) of a space of at least two points with distinct finite 1-D
    coordinates, else None."""
    c = space.coordinates
    if c is None or c.ndim != 2 or c.shape[1] != 1 or space.n < 2:
        return None
    order = np.argsort(c[:, 0], kind="stable")
    xs = c[order, 0]
    return (order, xs) if np.all(np.isfinite(xs)) and np.all(np.diff(xs) > 0) else None


def snap_to_lattice(r: np.ndarray, epsilon: float, step: float) -> np.ndarray:
    """r ∈ K ∩ [0, 1]^n rounded to the nearest lattice ray e^{−ε·step·k}, k = round(−ln r / (ε·step)).

    The result is in K again: on a path metric with steps λ, r ∈ K means |ℓ_a − ℓ_b| ≤ λ for the
    neighbours' ℓ = −ln r / ε, and rounding ℓ/λ to integers keeps neighbours at most one step apart and
    ℓ ≥ 0 (so r ≤ 1). Zero entries stay zero."""
    pos = r > 0
    with np.errstate(divide="ignore"):
        k = np.round(-np.log(np.where(pos, r, 1.0)) / (epsilon * step))
    return np.where(pos, np.exp(-epsilon * step * k), 0.0)


def tent_inverse(space: MetricSpace, epsilon: float, tents: np.ndarray):
    r"""The inverse of the tent matrix T = e^{−εd} (seed 000's privacy-constraints matrix Φ, Def 3)
    when it is sparse, else None.

    On a line T is the covariance of a sampled Ornstein–Uhlenbeck process and its inverse is tridiagonal
    (:func:`_markov_precision`); on a Manhattan grid T is the Kronecker product of the two lines' tent
    matrices and its inverse the product of theirs (9 entries per row). The master's rows
    Σ_k α_k r_k = 1 can then be written M·Σ_k α_k r_k = M·1 with M = T^{-1}: the same LP, but a tent
    (on 50×50 Manhattan about 800 entries above 1e-9) becomes a unit vector, and a product-shaped ray a
    few entries. Rays of other shapes stay partly dense (measured on 20×20 Manhattan: about 250 of 400
    entries), so the gain is largest while the master is mostly tents. Returned only when ‖M·T − I‖ is
    at rounding level (it is checked here against ``tents``).

    References
    ----------
    seed 000 (000_455db39b8f235120.txt) Def 3 (Φ, φ_yy' = e^{−d(y, y')}).
    """
    import scipy.sparse as sp

    from ..spaces import GridSpace

    m = None
    if isinstance(space, GridSpace) and space.metric == "manhattan" and space.n > 1:
        step = space.step
        rows = _markov_precision(np.arange(space.height) * step, epsilon)
        cols = _markov_precision(np.arange(space.width) * step, epsilon)
        m = sp.kron(rows, cols, format="csr")  # cell (col, row) is index row·width + col
    elif (line := _line_order(space)) is not None:
        order, xs = line
        p = _markov_precision(xs, epsilon).tocoo()
        m = sp.csr_matrix((p.data, (order[p.row], order[p.col])), shape=(space.n, space.n))
    if m is None:
        return None
    with np.errstate(all="ignore"):
        err = np.abs(m @ tents - np.eye(space.n)).max()
    # the spaces' distances must be the ones the structure assumes (e.g. a line's |x_i − x_j|)
    return m if np.isfinite(err) and err <= 1e-9 else None


class _Pricing:
    """The shared pricing LP: max ⟨v, r⟩ over r ∈ [0, 1]^n and the pair constraints added so far."""

    def __init__(self, n: int, factors: np.ndarray, time_limit):
        import highspy

        self.n = n
        self.factors = factors
        self.time_limit = time_limit
        #: pairs with a larger factor e^{εd} are not given to HiGHS (:data:`MAX_FACTOR`; raised after a stall)
        self.max_factor = MAX_FACTOR
        self.h = self._new_instance()
        self.h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self.h.addCols(n, np.zeros(n), np.zeros(n), np.ones(n), 0, np.zeros(n, np.int32),
                       np.zeros(0, np.int32), np.zeros(0))
        self.have = np.zeros((n, n), dtype=bool)
        self.a = np.empty(0, dtype=np.intp)
        self.b = np.empty(0, dtype=np.intp)
        self.coef = np.empty(0)
        self.div = np.empty(0)  # each row's divisor
        self._all = np.arange(n, dtype=np.int32)
        #: every essential pair is a row: no pair is generated lazily
        self.complete = False

    def _options(self) -> dict:
        return {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10, "solver": "simplex",
                "simplex_strategy": 1, "simplex_iteration_limit": _pricing_iteration_cap(self.n),
                **PRICING_SIMPLEX_OPTIONS}

    def _new_instance(self):
        h = _new_highs(self.time_limit)
        for key, value in self._options().items():
            h.setOptionValue(key, value)
        return h

    def _solve_afresh(self, left: float | None):
        """Solve the current model in a new HiGHS instance, which replaces this one, trying the
        :data:`AFRESH_LADDER` in turn. After a failed warm-started run, ``clearSolver`` and a run from
        scratch in the same instance could fail again where a new instance with the same model and
        options solved it (measured on a 19×15 grid of 200 km cells at ε = 4 per cell: 364 of the
        pricing problems of 30 s ended "Unknown", "Unbounded" or "Solve error" in the engine's
        instances; a fresh instance solved all but 8 of them). Any of the ladder's answers is safe to
        use: the ray is repaired into K and the certificate is valid for any duals."""
        import highspy

        done = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit)
        model = self.h.getModel()
        h = None
        start = time.perf_counter()
        for options in AFRESH_LADDER:
            h = self._new_instance()
            h.setOptionValue("simplex_iteration_limit", 2**31 - 1)
            for key, value in options.items():
                h.setOptionValue(key, value)
            if left is not None:
                h.setOptionValue("time_limit", float(max(left - (time.perf_counter() - start), 1e-3)))
            h.passModel(model)
            h.run()
            if h.getModelStatus() in done:
                break
        # the engine's options again for the warm starts to come (the solution stays readable)
        for key, value in self._options().items():
            h.setOptionValue(key, value)
        self.h = h
        return h.getModelStatus()

    def _violated_pairs(self, r: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For the points ``rows`` whose r(a) exceeds the largest minorant, the pair (a, b) the LP can
        be given (factor F ≤ :data:`MAX_FACTOR`) that r violates most, the smaller F among ties; only
        points with such a pair violated by more than :data:`PAIR_ATOL` are returned. The most violated
        pair overall can be one the LP cannot hold: on a 19×15 grid at ε = 4 per cell, entries returned
        as 0 tie at F·0 = 0, the first of them was a far pair past MAX_FACTOR, the LP was given nothing,
        and a ray the LP valued at 5e-4 was repaired to 0 in 98% of the pricing problems."""
        f = self.factors[rows]
        with np.errstate(invalid="ignore"):
            t = np.where(f <= self.max_factor, f * r[None, :], np.inf)
        t[np.isnan(t)] = np.inf
        t[np.arange(rows.size), rows] = np.inf  # not the point itself
        low = t.min(axis=1)
        partner = np.where(t <= low[:, None], f, np.inf).argmin(axis=1)
        keep = r[rows] - low > PAIR_ATOL
        return rows[keep], partner[keep]

    def add_pairs(self, a: np.ndarray, b: np.ndarray) -> int:
        """Rows (r(a) − F·r(b))/√F ≤ 0, F = e^{εd(a,b)}, for the pairs not yet present; returns how many
        were added. Dividing by √F (:data:`ROW_SCALE_POWER`) keeps the certificates tight: a dual
        −3e-10 of a row with F = 6e7, inside the solver's tolerance but set to 0 for the Lagrangian
        bound, raised that bound by 0.019 in a pricing problem whose optimum was 6.5e-4."""
        # HiGHS refuses matrix values above 1e15; a pair whose factor is that large stays out of the
        # pricing LP (a relaxation: its bounds stay valid) and is enforced on the ray by the repair
        keep = ~self.have[a, b] & (a != b) & (self.factors[a, b] <= self.max_factor)
        a, b = a[keep], b[keep]
        if a.size:
            # a pair given twice in one call is added once
            key = np.unique(a.astype(np.int64) * self.n + b)
            a, b = np.divmod(key, self.n)
        k = a.size
        if k == 0:
            return 0
        self.have[a, b] = True
        f = self.factors[a, b]
        idx = np.empty(2 * k, dtype=np.int32)
        idx[0::2] = a
        idx[1::2] = b
        val = np.empty(2 * k)
        div = f ** ROW_SCALE_POWER
        val[0::2] = 1.0 / div
        val[1::2] = -f / div
        import highspy

        st = self.h.addRows(k, np.full(k, -np.inf), np.zeros(k), 2 * k, np.arange(0, 2 * k, 2, dtype=np.int32), idx, val)
        if st == highspy.HighsStatus.kError:
            raise RuntimeError(f"HiGHS refused {k} pair constraints of the pricing LP")
        self.a = np.concatenate([self.a, a])
        self.b = np.concatenate([self.b, b])
        self.coef = np.concatenate([self.coef, f])
        self.div = np.concatenate([self.div, div])
        return k

    def solve(self, v: np.ndarray, deadline: float | None):
        """Price objective ``v``: returns (status, ray in K, Aᵀμ for the duals μ ≥ 0, pairs added)."""
        import highspy

        self.h.changeColsCost(self.n, self._all, v)
        added = 0
        for _ in range(MAX_PAIR_ROUNDS):
            if deadline is not None:
                left = deadline - time.perf_counter()
                if left <= 0:
                    return "time-limit", None, None, added
                self.h.setOptionValue("time_limit", float(self.h.getRunTime() + left))
            self.h.run()
            ms = self.h.getModelStatus()
            if ms not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
                # the warm-started simplex can lose its footing on tiny costs (seen: "unbounded" with
                # every variable boxed) or stall (the iteration cap); solve once more from scratch,
                # uncapped, in a new instance
                ms = self._solve_afresh(None if deadline is None else deadline - time.perf_counter())
            solved_rows = self.a.size  # the duals below belong to these rows
            if ms == highspy.HighsModelStatus.kTimeLimit:
                return "time-limit", None, None, added
            if ms != highspy.HighsModelStatus.kOptimal:
                return f"HiGHS: {self.h.modelStatusToString(ms)} in a pricing problem", None, None, added
            sol = self.h.getSolution()
            duals = np.asarray(sol.row_dual, dtype=np.float64)  # read now: adding rows invalidates them
            r = np.clip(np.asarray(sol.col_value, dtype=np.float64), 0.0, 1.0)
            low, _ = largest_minorant(r, self.factors)
            bad = np.flatnonzero(r - low > PAIR_ATOL)
            if bad.size == 0:
                break
            up = smallest_majorant(r, self.factors)
            if float((up - r).max()) <= PAIR_ATOL:
                # in K up to the solver's absolute tolerance: violations only at tiny entries
                # (largest_minorant would pull the whole ray to 0 through an entry returned as 0)
                low = up
                break
            rows, partner = self._violated_pairs(r, bad)
            if rows.size and not self.complete and self.add_pairs(rows, partner) > 0:
                added += rows.size
                continue
            # violations the LP cannot be given (pairs past MAX_FACTOR) or that persist: both repairs
            # are in K, and the minorant is 0 wherever r was 0 at a point within a finite factor (far
            # entries that should be e^{−εd} ≈ 1e-40 come back as 0), while the majorant raises such
            # entries by at most r(a)/e^{εd(a,b)}: keep the better one
            if float(v @ up) > float(v @ low):
                low = up
            break
        # either sign convention gives a valid certificate (negative multipliers set to 0); the caller
        # keeps whichever bounds better
        ats = []
        for lam in (duals, -duals):
            lam = np.maximum(lam, 0.0) / self.div[:solved_rows]  # the multipliers of r(a) − F·r(b) ≤ 0
            a, b, f = self.a[:solved_rows], self.b[:solved_rows], self.coef[:solved_rows]
            at = np.bincount(a, weights=lam, minlength=self.n) - np.bincount(b, weights=f * lam, minlength=self.n)
            ats.append(at)
        return "optimal", low, ats, added


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
    seed 000 (000_455db39b8f235120.txt) §3.4, §5.1: the optimal-mechanism LP; seed 001
    (001_c2128648fe62df4d.txt) Def 22, Prop 23; seed 002 (002_3df4dd999d47c651.txt) Def 7.
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
        # constraint follows from them along a tight chain (seed 004 Prop 1), so nothing is generated
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


def _enter_tol(objective: float) -> float:
    """The reduced cost above which a ray enters the master (:data:`ENTER_RTOL`, :data:`MASTER_DUAL_TOL`)."""
    return max(ENTER_RTOL * abs(objective), MASTER_DUAL_TOL)


def _run_master(master):
    """Solve the master; when the warm-started simplex ends in neither an optimum nor the time limit
    (the iteration cap; seen on grid:20x20: status "Unknown" after a stall), solve it again from
    scratch, then with the tolerances 10 times looser, then by interior point (:data:`MASTER_LADDER`).
    Returns the model status."""
    import highspy

    done = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit)
    master.run()
    ms = master.getModelStatus()
    for options in MASTER_LADDER:
        if ms in done:
            break
        saved = {}
        for key, value in options.items():
            old = master.getOptionValue(key)
            saved[key] = old[1] if isinstance(old, tuple) else old  # highspy may return (status, value)
            master.setOptionValue(key, value)
        master.clearSolver()
        master.run()
        ms = master.getModelStatus()
        for key, value in saved.items():
            master.setOptionValue(key, value)
    return ms


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


def _channel(weights, ray_out, ray_vec, n: int, m: int) -> np.ndarray:
    """H[·, w] = Σ_{k: w_k = w} α_k r_k, from the full rays and the master's column values α."""
    x = np.clip(weights, 0.0, None)
    h = np.zeros((n, m))
    for xk, w, r in zip(x, ray_out, ray_vec):
        if xk > 0:
            h[:, w] += xk * r
    return h


def _purge(master, ray_out: list, ray_vec: list, keep: int, primal) -> tuple[list, list]:
    """Delete master columns at zero with the most negative reduced costs in the master's solution
    ``primal`` (values, reduced costs), down to ``keep`` columns; returns the deleted (outputs, rays)."""
    x, rc = primal
    idle = np.flatnonzero((x <= 0) & (rc < 0))
    excess = len(ray_vec) - keep
    if excess <= 0 or idle.size == 0:
        return [], []
    drop = np.sort(idle[np.argsort(rc[idle], kind="stable")[:excess]])
    gone = ([ray_out[i] for i in drop], [ray_vec[i] for i in drop])
    master.deleteCols(drop.size, drop.astype(np.int32))
    alive = np.ones(len(ray_vec), dtype=bool)
    alive[drop] = False
    ray_out[:] = [w for w, a in zip(ray_out, alive) if a]
    ray_vec[:] = [r for r, a in zip(ray_vec, alive) if a]
    return gone


class _Pool:
    """Columns purged from the master, kept (up to ``capacity``, the oldest leave first) so that they
    can re-enter without being priced again."""

    def __init__(self, capacity: int, c: np.ndarray):
        self.c = c
        self.rays = np.empty((capacity, c.shape[0]))
        self.out = np.zeros(capacity, dtype=np.intp)
        self.cost = np.zeros(capacity)  # ⟨c_w, r⟩
        self.born = np.full(capacity, -1, dtype=np.int64)  # -1: free slot
        self.clock = 0
        self.top = 0  # slots at and above this were never used: ``take`` reads the view below it

    def add(self, outs: list, vecs: list) -> None:
        k = min(len(vecs), self.born.size)
        if k == 0:
            return
        free = np.flatnonzero(self.born < 0)
        if free.size < k:  # evict the oldest
            used = np.flatnonzero(self.born >= 0)
            free = np.concatenate([free, used[np.argsort(self.born[used], kind="stable")[:k - free.size]]])
        slots = free[:k]
        self.rays[slots] = np.asarray(vecs[-k:])
        self.out[slots] = outs[-k:]
        ct = self.c.T
        for i in range(0, k, 256):  # in blocks: the gathered gain columns stay small on thousands of points
            b = slots[i:i + 256]
            self.cost[b] = np.einsum("ij,ij->i", self.rays[b], ct[self.out[b]])
        self.born[slots] = self.clock + np.arange(k)
        self.clock += k
        self.top = max(self.top, int(slots.max()) + 1)

    def take(self, u: np.ndarray, tol: float, limit: int) -> tuple[list, list]:
        """Remove and return (outputs, rays) of up to ``limit`` pool columns whose reduced cost
        ⟨c_w − u, r⟩ exceeds ``tol``, the largest first."""
        top = self.top
        # free slots below ``top`` hold old rays: their reduced costs are computed and ignored
        rc = self.cost[:top] - self.rays[:top] @ u
        good = np.flatnonzero((rc > tol) & (self.born[:top] >= 0))
        if good.size == 0:
            return [], []
        slots = good[np.argsort(-rc[good], kind="stable")[:limit]]
        self.born[slots] = -1
        return [int(w) for w in self.out[slots]], [self.rays[i].copy() for i in slots]
