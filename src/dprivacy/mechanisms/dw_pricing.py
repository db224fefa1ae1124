r"""The pricing LP of the Dantzig–Wolfe decomposition (:mod:`.decomposition`): max ⟨v, r⟩ over rays r of the
privacy cone K in [0, 1]^n, one HiGHS instance per pricing thread, shared by all outputs (K is the same for
every output). Its pair constraints r(a) ≤ e^{εd(a,b)} r(b) are added lazily, as priced rays violate them;
a ray that meets them up to the solver's tolerance is repaired into K (:mod:`.privacy_cone`), and the LP's
duals give each output's certificate for the Lagrangian bound.
"""

from __future__ import annotations

import time

import numpy as np

from .lp_engine import _new_highs
from .privacy_cone import largest_minorant, smallest_majorant

#: A priced ray violating a pair constraint r(a) ≤ e^{εd(a,b)} r(b) by more than this gets the pair added.
PAIR_ATOL = 1e-9

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

#: Pair constraints whose factor e^{εd} exceeds this are not given to HiGHS (whose simplex loses its
#: footing on wider coefficient ranges, e.g. "unbounded" with a box; its hard limit is 1e15). Measured
#: again with the scaled rows on the 19×15 grid at ε = 4 per cell: 1e10 left the bound at gap 2.4e-5
#: and 1e12 at the tent bound, where 1e8 reaches 1.1e-6; the relaxation it makes costs about
#: n·max|c − u|/MAX_FACTOR in the bound.
MAX_FACTOR = 1e8

#: Rounds of lazy pair generation for one pricing problem at most.
MAX_PAIR_ROUNDS = 100


def _pricing_iteration_cap(n: int) -> int:
    """Simplex iterations of one warm-started pricing run on n points, after which the LP is solved
    again from scratch. Measured on grid:20x20 (ε = 1, world-cities prior, 600 s): warm pricing runs
    take a median 35 and a 99.9th percentile of 939 iterations, and about 850 (≈ 2n) from scratch; but
    about one in 300 warm runs stalled for 40,000–60,000 iterations (6–10 s each, 0.05 s from scratch)."""
    return 2 * n + 1000


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
        as 0 tie at F·0 = 0; taking the first of them, a far pair past MAX_FACTOR, would give the LP
        nothing, and a ray the LP values at 5e-4 would be repaired to 0 in 98% of the pricing problems."""
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
        were added. Dividing by √F (:data:`ROW_SCALE_POWER`) keeps the certificates tight: unscaled, a
        dual −3e-10 of a row with F = 6e7, inside the solver's tolerance but set to 0 for the Lagrangian
        bound, raises that bound by 0.019 in a pricing problem whose optimum is 6.5e-4."""
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
                # the warm-started simplex can lose its footing on tiny costs (it can report "unbounded"
                # with every variable boxed) or stall (the iteration cap); solve once more from scratch,
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
