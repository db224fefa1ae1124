r"""The master LP of the Dantzig–Wolfe decomposition (:mod:`.decomposition`): n row-sum rows Σ_k α_k r_k = 1
over the priced rays r_k of the privacy cone, one column each. Here: when a ray enters (its reduced cost), the
solve of a master the warm-started simplex could not finish (a ladder of looser options), the channel its
column values make, and the purge of idle columns into a pool from which they can re-enter without being
priced again.
"""

from __future__ import annotations

import numpy as np

#: A ray enters the master when its reduced cost at the master's duals exceeds this (relative to the
#: master's objective scale) and :data:`MASTER_DUAL_TOL`.
ENTER_RTOL = 1e-12

#: The master's primal and dual feasibility tolerances. A ray whose reduced cost is below the dual
#: tolerance is not taken by the master's simplex: measured on grid:20x20, 120 such rays entered in each
#: of the last 30 rounds of a 600 s run and moved neither the objective nor the bound.
MASTER_DUAL_TOL = 1e-9

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

#: Option changes for a master the warm-started simplex could not finish, each tried from scratch in
#: turn. A master on sum:30,3 (91 rows, 405 rays, entries down to 2e-9; a Dirichlet prior) failed at
#: once ("Solve error") by the primal and the dual simplex and by interior point, at tolerances 1e-9
#: with or without presolve; with tolerances 1e-8 the primal simplex solved it in 301 iterations.
MASTER_LADDER = ({}, {"primal_feasibility_tolerance": 10 * MASTER_DUAL_TOL,
                      "dual_feasibility_tolerance": 10 * MASTER_DUAL_TOL}, {"solver": "ipm"})


def _pool_capacity(n: int) -> int:
    """Columns the pool holds on n points."""
    return max(0, min(POOL_PER_POINT * n, POOL_MAX_ENTRIES // max(n, 1)))


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
