r"""The optimal-mechanism LP at scale: constraint generation with a certified bracket.

The LP of :func:`dprivacy.mechanisms.optimal.optimal_mechanism` (ElSalamouny et al. 2014 §3.4, §5.1; Alvim et al. 2015 Def 22,
Prop 23; Chatzikokolakis et al. 2013 Def 7) has n·|W| variables and, for a Euclidean metric, about n²·|W| privacy
constraints. At the optimum almost all of them are slack. This module solves a *restricted* LP that
holds only some constraints, finds the constraints its solution violates among the space's constraint
pairs (enough by ElSalamouny et al. 2013 Prop 1), adds them, and re-solves from the previous basis (HiGHS dual
simplex, warm-started through ``highspy``), until no constraint is violated or the bracket below is
closed to the requested gap.

**The bracket.** Every round gives two numbers that enclose the true optimum OPT of the full LP
(gain form: maximise Σ c[y, w] H[y, w], c = π·g, or c = −π·l for a loss):

* a **certified value** LB ≤ OPT: the restricted solution is lifted onto *all* privacy constraints
  (:func:`~dprivacy.mechanisms.repair.certified_repair`), checked exactly
  (:func:`~dprivacy.measures.check_privacy`), and its expected gain computed by
  :mod:`dprivacy.measures`. Any private channel's value is ≤ OPT.
* a **Lagrangian bound** UB ≥ OPT: for any multipliers λ ≥ 0 on the privacy constraints
  A·vec(H) ≤ 0, and any H of the full LP,

  .. math:: \sum c\,H \le \sum c\,H - \lambda^\top A\,\mathrm{vec}(H)
            = \sum_y \sum_w (c - A^\top\lambda)[y, w]\, H[y, w]
            \le \sum_y \max_w (c - A^\top\lambda)[y, w],

  since each row of H is a probability vector. With λ the restricted LP's duals (constraints not in
  the restricted LP have λ = 0) this is a bound that holds whatever the solver's tolerances were; at
  the restricted LP's optimum it equals the restricted optimum (complementary slackness).

The relative gap (UB − LB)/|UB| is what is reported; ``gap`` stops the loop when it is reached and
``time_limit`` stops it with the best certified mechanism so far and its honest gap.

**Outputs.** For the binary gain (W = Y) only outputs of positive prior are kept: merging a zero-prior
output's column into any other column keeps privacy (the constraints are linear and homogeneous, so
the sum of two private columns is private) and never lowers the gain (the zero-prior column earns
nothing; the column it joins earns at least as much). So the restricted-output LP has the same optimum.
For other gains and losses every output is kept.

**Columns.** The engine can also start from some outputs only and price the others in
(:func:`excluded_column_terms`, exact through the same Lagrangian bound). Measured on Euclidean grids
with the world-cities prior (ε = 1), this did not pay: starting from the support of the tent LP
(26 of 61 outputs on 8×8) every output had entered by the end, and the run took 10.9 s against 8.9 s
with all outputs (10×10: 73 s against 55 s; distance loss on 8×8: 5.0 s against 4.4 s). So
:func:`~dprivacy.mechanisms.optimal.optimal_mechanism` starts with all of them.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..spaces import MetricSpace

#: Absolute violation e^{−εd(a,b)}·H[a,w] − H[b,w] above which a constraint is added. HiGHS is run
#: with feasibility tolerances of 1e-9; violations below this are left to the certified repair.
VIOLATION_ATOL = 1e-9

#: Constraints added per round at most (the most violated first); bounds the growth of the LP.
MAX_NEW_ROWS = 400_000

#: Memory per variable / per non-zero that HiGHS needs, from measurements of its simplex solver
#: (bytes; used only for the refusal estimate before building).
BYTES_PER_NONZERO = 60
BYTES_PER_VARIABLE = 120

#: Largest restricted LP (bytes, by the estimate above) this engine will build.
MAX_MODEL_BYTES = 6 * 2**30

#: The restricted channel is repaired and certified after every round (for the ``gap`` stopping rule)
#: only when that check, n²·|W| pair-column comparisons, is at most this; above it, only the final
#: channel is certified (by the caller).
CERTIFY_EVERY_ROUND_ELEMENTS = 300_000_000

#: An excluded output enters when its Lagrangian term exceeds the restricted row maximum by more than
#: this (relative to the bound).
PRICE_ATOL = 1e-10

#: Elements per block of the violation search.
_SEARCH_ELEMENTS = 8_000_000


@dataclass
class Round:
    """One round of constraint generation: restricted LP size, its objective, the bracket so far."""

    round: int
    rows: int
    objective: float
    bound: float
    certified: float
    gap: float
    violated: int
    seconds: float
    columns: int = 0  # outputs in the restricted LP
    entering: int = 0  # outputs priced in after this round


@contextmanager
def _quiet_banner():
    # highspy prints its banner on stdout when the first Highs object is made, which would corrupt
    # the command line's --json output; send it to the null device.
    import sys

    try:
        sys.stdout.flush()
        fd = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no usable stdout
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(fd, 1)
        os.close(fd)
        os.close(null)


def _new_highs(time_limit: float | None):
    import highspy

    with _quiet_banner():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.setOptionValue("dual_feasibility_tolerance", 1e-9)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(max(time_limit, 1e-3)))
    return h


def lagrangian_bound(c: np.ndarray, a, b, j, coef, lam) -> float:
    r"""Σ_y max_w (c − Aᵀλ)[y, w] for the privacy rows coef·H[a, j] − H[b, j] ≤ 0 with multipliers
    λ ≥ 0 (negative entries are set to 0, which keeps the bound valid). An upper bound on the gain of
    every channel satisfying those constraints (see the module docstring)."""
    lam = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
    n, m = c.shape
    at = np.bincount(a * m + j, weights=coef * lam, minlength=n * m)
    at -= np.bincount(b * m + j, weights=lam, minlength=n * m)
    r = c - at.reshape(n, m)
    return float(r.max(axis=1).sum())


def lagrangian_bound_matrix(c: np.ndarray, a_ub, lam) -> float:
    """:func:`lagrangian_bound` for privacy rows given as a sparse matrix ``a_ub`` (rows A·vec(H) ≤ 0,
    H row-major n × m), e.g. :func:`dprivacy.mechanisms.lp_model.privacy_constraints`."""
    lam = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
    return float((c - (a_ub.T @ lam).reshape(c.shape)).max(axis=1).sum())


def violated_constraints(h: np.ndarray, space: MetricSpace, *, epsilon: float, atol: float = VIOLATION_ATOL,
                         limit: int = MAX_NEW_ROWS):
    r"""Privacy constraints e^{−εd(a,b)}·H[a, w] ≤ H[b, w] violated by more than ``atol``, over the
    space's constraint pairs (both orientations) and the columns of ``h`` that are not zero. For each
    (b, w) only the most violated a is kept; at most ``limit`` rows, the most violated first.

    Returns (a, b, w, coef, worst): int arrays, the coefficients e^{−εd(a,b)}, and the largest violation.
    """
    n, m = h.shape
    pi, pj = space.constraint_pairs()
    d = space.distances[pi, pj]
    keep = np.isfinite(d)
    pi, pj, d = pi[keep], pj[keep], d[keep]
    a_all = np.concatenate([pi, pj])
    b_all = np.concatenate([pj, pi])
    f_all = np.exp(-epsilon * np.concatenate([d, d]))
    cols = np.flatnonzero(h.max(axis=0) > 0)
    best = np.zeros((n, m))
    arg = np.full((n, m), -1, dtype=np.intp)
    if cols.size and a_all.size:
        hc = h[:, cols]
        step = max(1, _SEARCH_ELEMENTS // max(cols.size, 1))
        for s in range(0, a_all.size, step):
            a, b, f = a_all[s:s + step], b_all[s:s + step], f_all[s:s + step]
            v = f[:, None] * hc[a] - hc[b]  # (pairs, used columns)
            # the most violated a for each (b, column): reduce by b with a lexsort-free trick
            k, col = np.nonzero(v > atol)
            if k.size == 0:
                continue
            val = v[k, col]
            key = b[k] * m + cols[col]
            # the most violated a for each (b, column): sort by (key, violation), keep each key's last
            order = np.lexsort((val, key))
            key, val, aa = key[order], val[order], a[k[order]]
            last = np.append(key[1:] != key[:-1], True)
            key, val, aa = key[last], val[last], aa[last]
            bb, cc = np.divmod(key, m)
            better = val > best[bb, cc]
            best[bb[better], cc[better]] = val[better]
            arg[bb[better], cc[better]] = aa[better]
    bb, cc = np.nonzero(arg >= 0)
    if bb.size == 0:
        return (np.empty(0, np.intp),) * 3 + (np.empty(0), 0.0)
    aa = arg[bb, cc]
    val = best[bb, cc]
    worst = float(val.max())
    if bb.size > limit:
        top = np.argsort(-val, kind="stable")[:limit]
        aa, bb, cc = aa[top], bb[top], cc[top]
    coef = np.exp(-epsilon * space.distances[aa, bb])
    return aa, bb, cc, coef, worst


def _initial_pairs(space: MetricSpace, outputs: np.ndarray, epsilon: float, kind: str = "both+nb"):
    """The constraints the restricted LP starts with, for each kept output w (column j): the pairs
    {w, b} for every b at finite distance, in both orientations (so the column's peak bounds every
    entry from below and above), and each point's pairs with its nearest neighbours (the smallest
    distance from it), both orientations. The constraints that bind elsewhere are found by the search."""
    n = space.n
    m = outputs.size
    j = np.repeat(np.arange(m, dtype=np.intp), n)
    a = np.repeat(outputs.astype(np.intp), n)
    b = np.tile(np.arange(n, dtype=np.intp), m)
    d = space.distances[a, b]
    keep = (a != b) & np.isfinite(d)
    a, b, j = a[keep], b[keep], j[keep]
    parts = [(a, b, j)]
    if kind.startswith("both"):
        parts.append((b, a, j))
    if kind.endswith("+nb"):
        pi, pj = space.constraint_pairs()
        dd = space.distances[pi, pj]
        ok = np.isfinite(dd) & (dd > 0)
        pi, pj, dd = pi[ok], pj[ok], dd[ok]
        if dd.size:
            near = dd <= dd.min() * (1 + 1e-9)
            pi, pj = pi[near], pj[near]
            k = pi.size
            jj = np.repeat(np.arange(m, dtype=np.intp), k)
            parts.append((np.tile(pi, m), np.tile(pj, m), jj))
            parts.append((np.tile(pj, m), np.tile(pi, m), jj))
    a = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    j = np.concatenate([p[2] for p in parts])
    # drop duplicates (a neighbour of w appears twice)
    key = _unique_ints((a * n + b) * m + j)
    ab, j = np.divmod(key, m)
    a, b = np.divmod(ab, n)
    return a, b, j, np.exp(-epsilon * space.distances[a, b])


def _unique_ints(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an integer array. ``np.unique`` of numpy ≥ 2.3 hashes, which is over
    100 times slower than a sort on millions of distinct keys (9.5 s against 0.07 s for 5·10⁶)."""
    x = np.sort(np.asarray(x).ravel())
    if x.size == 0:
        return x
    keep = np.empty(x.size, dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def estimate_bytes(n: int, m: int, rows: int) -> int:
    """Memory estimate for a restricted LP with n·m variables, n row-sum rows of m non-zeros and
    ``rows`` privacy rows of two non-zeros (HiGHS keeps the matrix column- and row-wise)."""
    return int(BYTES_PER_VARIABLE * n * m + BYTES_PER_NONZERO * (n * m + 2 * rows))


def _add_privacy_rows(hs, a, b, j, coef, n: int) -> None:
    """Rows coef·H[a, j] − H[b, j] ≤ 0, with H[y, j] the variable j·n + y (slot-major)."""
    k = a.size
    if k == 0:
        return
    idx = np.empty(2 * k, dtype=np.int32)
    idx[0::2] = j * n + a
    idx[1::2] = j * n + b
    val = np.empty(2 * k)
    val[0::2] = coef
    val[1::2] = -1.0
    starts = np.arange(0, 2 * k, 2, dtype=np.int32)
    hs.addRows(k, np.full(k, -np.inf), np.zeros(k), 2 * k, starts, idx, val)


def row_maxima(c: np.ndarray, a, b, j, coef, lam) -> np.ndarray:
    """M_y = max_j (c − Aᵀλ)[y, j] for the privacy rows (a, b, j, coef) with multipliers λ (negative
    entries set to 0): the terms of :func:`lagrangian_bound`, which is Σ_y M_y."""
    lam = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
    n, m = c.shape
    at = np.bincount(a * m + j, weights=coef * lam, minlength=n * m)
    at -= np.bincount(b * m + j, weights=lam, minlength=n * m)
    return (c - at.reshape(n, m)).max(axis=1)


def excluded_column_terms(c_x: np.ndarray, peaks: np.ndarray, m_rows: np.ndarray, distances, *, epsilon: float,
                          block: int = 256) -> np.ndarray:
    r"""Lagrangian terms of columns that are not in the restricted LP.

    For an excluded column w with peak z (``peaks``), take multipliers only on its constraints
    e^{−εd(z,y)} H[z, w] ≤ H[y, w], λ_y = max(0, M_y − c[y, w]) for y ≠ z (M the row maxima of the
    restricted LP's terms, :func:`row_maxima`). Its terms (c − Aᵀλ)[·, w] are then

    .. math:: \max(c[y, w], M_y)\ (y \ne z), \qquad c[z, w] - \sum_{y \ne z} e^{-\varepsilon d(z, y)} \lambda_y,

    and Σ_y max(M_y, max over excluded w of these terms) is a Lagrangian bound over *all* columns
    (any λ ≥ 0 gives one). A column whose terms exceed M somewhere is one that could raise the
    restricted optimum: the pricing. For the binary gain (c[y, w] = π_w [y = w], z = w) the only term
    that can exceed M is at the peak, π_w − Σ_y e^{−εd(w,y)} M_y⁺: the tent e^{−εd(·, w)} priced with
    the row duals (ElSalamouny et al. 2014's tight-constraints columns).

    Returns the n × q matrix of terms, one column per excluded column.
    """
    n, q = c_x.shape
    lam = np.maximum(m_rows[:, None] - c_x, 0.0)
    lam[peaks, np.arange(q)] = 0.0
    terms = np.maximum(c_x, m_rows[:, None])
    for s in range(0, q, block):
        e = np.arange(s, min(q, s + block))
        phi = np.exp(-epsilon * distances[peaks[e]])  # (block, n)
        phi[~np.isfinite(phi)] = 0.0
        terms[peaks[e], e] = c_x[peaks[e], e] - np.einsum("ky,yk->k", phi, lam[:, e])
    return terms


@dataclass
class EngineOutcome:
    """What :func:`constraint_generation` found; wrapped into an OptimalResult by the caller."""

    status: str  # "optimal" (no violated constraint, no entering column), "gap", "time-limit", "memory", "failed"
    message: str
    raw: np.ndarray | None  # the last restricted solution (n × m, zero outside the active columns), before repair;
    # when stopped early (time, memory), the round's solution whose repair certified best
    objective: float  # the last restricted LP objective
    bound: float  # the best Lagrangian bound over the rounds (≥ OPT)
    rounds: list
    rows: int  # privacy rows in the last restricted LP
    seconds: float
    n_pairs: int = 0  # distinct unordered pairs {a, b} among those rows
    active: int = 0  # columns in the last restricted LP
    binding: tuple | None = None  # (a, b, peak of the column) of the rows with a non-zero dual at the end


def constraint_generation(space: MetricSpace, c: np.ndarray, peaks: np.ndarray, *, epsilon: float,
                          certify=None, gap: float = 1e-7, time_limit: float | None = None,
                          progress=None, start: np.ndarray | None = None, initial: str = "both+nb",
                          first: str = "ipm", max_new_columns: int | None = None,
                          started: float | None = None) -> EngineOutcome:
    r"""Maximise Σ c[y, w]·H[y, w] over ε·d-private channels H : Y → W by generating both the
    privacy constraints and the columns (outputs) of the LP (module docstring).

    ``c`` is n × m (gain form). ``peaks[w]`` is the point of the space where column w is expected to
    peak (for outputs that are points of the space, the point itself): the column's starting
    constraints, and its pricing (:func:`excluded_column_terms`). ``start`` are the columns of the
    first restricted LP (default: all); columns outside it enter when their pricing says they could
    raise the optimum. ``certify(h) -> float``, if given, returns the certified value of the repaired
    channel (a lower bound on the optimum, −inf if the repair fails the exact check); without it the
    certified value is not known during the run (NaN in the rounds) and only the absence of violated
    constraints and entering columns stops the loop. ``progress(round: Round)`` is called after each
    round. ``time_limit`` counts from ``started`` (a ``time.perf_counter()`` reading; default: now), so
    a caller that spent time before calling passes its own start and its user's limit, and the message
    names that limit.
    """
    import highspy

    t0 = time.perf_counter() if started is None else float(started)
    n, m = c.shape
    peaks = np.asarray(peaks, dtype=np.intp)
    active = np.arange(m, dtype=np.intp) if start is None else np.unique(np.asarray(start, dtype=np.intp))
    if active.size == 0:
        active = np.array([int(c.sum(axis=0).argmax())], dtype=np.intp)
    in_lp = np.zeros(m, dtype=bool)
    in_lp[active] = True
    cap = max_new_columns if max_new_columns is not None else max(16, active.size // 4)

    def out_of_time(when: str):
        if time_limit is not None and time.perf_counter() - t0 >= time_limit:
            return EngineOutcome("time-limit", f"time limit of {time_limit:g} s reached {when}, before any round",
                                 None, float("nan"), float("inf"), [], 0, time.perf_counter() - t0)
        return None

    stop = out_of_time("before the restricted LP was built")
    if stop is not None:
        return stop
    a, b, j, coef = _initial_pairs(space, peaks[active], epsilon, initial)
    stop = out_of_time(f"while building the restricted LP ({a.size:,} starting constraints)")
    if stop is not None:
        return stop
    need = estimate_bytes(n, active.size, a.size)
    if need > MAX_MODEL_BYTES:
        return EngineOutcome("failed", f"the restricted LP would need about {need / 2**30:.1f} GiB "
                             f"({n}x{active.size} variables, {a.size:,} starting constraints), over the "
                             f"{MAX_MODEL_BYTES / 2**30:.0f} GiB limit", None, float("nan"), float("inf"), [], 0,
                             time.perf_counter() - t0)
    hs = _new_highs(None if time_limit is None else time_limit - (time.perf_counter() - t0))
    hs.changeObjectiveSense(highspy.ObjSense.kMaximize)
    hs.addRows(n, np.ones(n), np.ones(n), 0, np.zeros(n, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
    _add_columns(hs, c[:, active], n)
    _add_privacy_rows(hs, a, b, j, coef, n)
    hs.setOptionValue("solver", first)
    if first == "ipm":
        hs.setOptionValue("run_crossover", "on")
    rounds: list[Round] = []
    best_bound = float("inf")
    best_certified, best_raw = float("-inf"), None
    raw = None
    objective = float("nan")
    status, message = "failed", "not solved"
    for k in range(1, 10_000):
        if time_limit is not None:
            left = time_limit - (time.perf_counter() - t0)
            if left <= 0:
                status, message = "time-limit", f"time limit of {time_limit:g} s reached after {k - 1} rounds"
                break
            hs.setOptionValue("time_limit", float(hs.getRunTime() + left))
        hs.run()
        if os.environ.get("DPRIVACY_LP_DEBUG"):
            info = hs.getInfo()
            print(f"[lp] round {k}: {active.size} columns, {a.size} rows, simplex {info.simplex_iteration_count} "
                  f"ipm {info.ipm_iteration_count} t {time.perf_counter() - t0:.2f}", file=sys.stderr)
        ms = hs.getModelStatus()
        if ms != highspy.HighsModelStatus.kOptimal:
            text = hs.modelStatusToString(ms)
            if ms == highspy.HighsModelStatus.kTimeLimit:
                status, message = "time-limit", f"time limit of {time_limit:g} s reached during round {k} ({k - 1} rounds finished)"
            else:
                status, message = "failed", f"HiGHS: {text} in round {k}"
            break
        hs.setOptionValue("solver", "simplex")
        sol = hs.getSolution()
        xs = np.asarray(sol.col_value, dtype=np.float64).reshape(active.size, n).T  # n × |active|
        raw = np.zeros((n, m))
        raw[:, active] = xs
        objective = float(hs.getInfo().objective_function_value)
        duals = np.asarray(sol.row_dual, dtype=np.float64)[n:]
        c_act = c[:, active]
        excluded = np.flatnonzero(~in_lp)
        best_round, entering, fit = float("inf"), np.empty(0, dtype=np.intp), float("inf")
        for lam in (duals, -duals):  # the sign convention of HiGHS's duals; either gives a valid bound
            mr = row_maxima(c_act, a, b, j, coef, lam)
            if excluded.size:
                terms = excluded_column_terms(c[:, excluded], peaks[excluded], mr, space.distances, epsilon=epsilon)
                bnd = float(np.maximum(mr, terms.max(axis=1)).sum())
            else:
                terms, bnd = None, float(mr.sum())
            best_round = min(best_round, bnd)
            # the columns to price in come from the sign that is the restricted LP's dual (its bound
            # on the active columns equals the objective), not from the smaller bound: the other sign's
            # trivial bound can come out one ulp smaller with no column to enter, which would stop the
            # run as "optimal" below the optimum (0.2393 against 0.2597 in a hypothesis example)
            if abs(float(mr.sum()) - objective) < fit:
                fit = abs(float(mr.sum()) - objective)
                if terms is not None:
                    excess = (terms - mr[:, None]).max(axis=0)
                    order = np.argsort(-excess, kind="stable")
                    keep = order[excess[order] > PRICE_ATOL * max(1.0, abs(bnd))][:cap]
                    entering = excluded[keep]
                else:
                    entering = np.empty(0, dtype=np.intp)
        best_bound = min(best_bound, best_round)
        h = np.clip(xs, 0.0, None)
        h /= h.sum(axis=1, keepdims=True)
        na, nb, nj, ncoef, worst = violated_constraints(h, space, epsilon=epsilon)
        if na.size:
            # Price outputs only once the active columns meet all their constraints: the duals of a
            # restricted LP that still violates many constraints let in columns the optimum does not use.
            entering = np.empty(0, dtype=np.intp)
        full_h = np.zeros((n, m))
        full_h[:, active] = h
        certified = certify(full_h) if certify is not None else float("nan")
        if certified > best_certified:
            best_certified, best_raw = certified, raw
        g = _relative_gap(best_bound, certified)
        rounds.append(Round(k, a.size, objective, best_bound, certified, g, int(na.size), time.perf_counter() - t0,
                            int(active.size), int(entering.size)))
        if progress is not None:
            progress(rounds[-1])
        if na.size == 0 and entering.size == 0:
            status, message = "optimal", (f"no privacy constraint violated by more than {VIOLATION_ATOL:g} and no "
                                          f"output left to enter after {k} rounds ({active.size} of {m} outputs used)")
            break
        if g <= gap:
            status, message = "gap", f"relative gap {g:.3g} ≤ {gap:g} after {k} rounds"
            break
        start_e = _initial_pairs(space, peaks[entering], epsilon, initial) if entering.size else None
        grow = na.size + (0 if start_e is None else start_e[0].size)
        need = estimate_bytes(n, active.size + entering.size, a.size + grow)
        if need > MAX_MODEL_BYTES:
            status, message = "memory", (f"stopped after {k} rounds: the next restricted LP would need about "
                                         f"{need / 2**30:.1f} GiB, over the {MAX_MODEL_BYTES / 2**30:.0f} GiB limit")
            break
        if entering.size:
            # new columns take the slots after the current ones; their starting rows refer to those slots
            ea, eb, ej, ecoef = start_e
            ej = ej + active.size
            _add_columns(hs, c[:, entering], n)
            active = np.concatenate([active, entering])
            in_lp[entering] = True
        else:
            ea = eb = ej = np.empty(0, dtype=np.intp)
            ecoef = np.empty(0)
        na, nb, nj, ncoef = (np.concatenate([na, ea]), np.concatenate([nb, eb]), np.concatenate([nj, ej]),
                             np.concatenate([ncoef, ecoef]))
        _add_privacy_rows(hs, na, nb, nj, ncoef, n)
        a, b, j, coef = (np.concatenate([a, na]), np.concatenate([b, nb]), np.concatenate([j, nj]),
                         np.concatenate([coef, ncoef]))
    if status not in ("optimal", "gap") and best_raw is not None:
        raw = best_raw  # stopped early: the round whose repaired channel certified best
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    n_pairs = int(_unique_ints(lo.astype(np.int64) * n + hi).size)
    binding = None
    if raw is not None and status in ("optimal", "gap"):
        d = np.asarray(hs.getSolution().row_dual, dtype=np.float64)[n:]
        if d.size == a.size:
            on = np.abs(d) > 1e-12
            binding = (a[on], b[on], peaks[active[j[on]]])
    return EngineOutcome(status, message, raw, objective, best_bound, rounds, int(a.size), time.perf_counter() - t0,
                         n_pairs, int(active.size), binding)


def _add_columns(hs, c_cols: np.ndarray, n: int) -> None:
    """Add the n variables H[·, w] of each column of ``c_cols`` (slot-major: variable s·n + y), each in
    its row-sum row y."""
    k = c_cols.shape[1]
    if k == 0:
        return
    num = n * k
    rows = np.tile(np.arange(n, dtype=np.int32), k)
    hs.addCols(num, c_cols.T.ravel(), np.zeros(num), np.full(num, np.inf), num,
               np.arange(num, dtype=np.int32), rows, np.ones(num))


def _relative_gap(bound: float, value: float) -> float:
    if not (np.isfinite(bound) and np.isfinite(value)):
        return float("inf")
    scale = max(abs(bound), abs(value))
    return 0.0 if scale == 0 else float(max(bound - value, 0.0) / scale)
