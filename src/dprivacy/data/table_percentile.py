"""A percentile under standard ε-DP by a selection on ranks — permute-and-flip (McKenna and Sheldon 2020, the
default) or the exponential mechanism (McSherry and Talwar 2007; Smith 2011) — for
:func:`dprivacy.data.tables.run_query`: the selection's clamped values collected by DuckDB as (value, count) pairs
per group, one exact draw per group by :mod:`dprivacy.mechanisms.rank_quantile`.

Why not the truncated geometric here: under d_h one changed row can move a percentile from LO to HI, so its Δ is
HI − LO and the geometric noise at ε/(HI − LO) spreads over the whole range. A selection on ranks scores each
value by how far the ranks of its rows are from the target rank, a score of sensitivity 1 whatever the range, so
its error is set by how the data spread near the percentile. Why permute-and-flip by default: on any score its
expected score is at least the exponential mechanism's, and up to twice better (McKenna and Sheldon 2020); on
seattle-weather's median at ε = 1 its mean |error| is about half the exponential mechanism's.

**Memory.** DuckDB returns the distinct clamped values of each group with their counts, ordered: at most
min(N, G·M) rows (N the table's rows, G the groups, M = HI − LO + 1 lattice points; all public), three 8-byte
columns each. The query is refused before the scan when that public bound exceeds
:data:`~dprivacy.data.table_models.MAX_COLLECTED`, so the
refusal depends on public figures only, never on how many distinct values the data have; a failure during the scan
itself (DuckDB out of memory) is a :class:`~dprivacy.data.table_models.ScanFailed`, which a budget ledger charges
like an answer.
"""

from __future__ import annotations

import math

from .memory import display_name
from .table_models import GroupAnswer, QueryResult, _on_grid, standard_statement

def collect_histograms(fetch, groups: int, *, rel: str, sel: str, x: str, ok: str, group_expr) -> list:
    """Each group's (sorted distinct clamped values, their counts), in the order of the groups: one ordered DuckDB
    aggregation. ``fetch(sql)`` runs it and returns numpy columns (failures become ScanFailed); ``x`` is the SQL of the
    clamped value in lattice units, ``ok`` that of a valid value, ``sel`` the selection; ``group_expr``: the SQL of the
    group key when the groups are the declared keys (the temporary table ``dp_keys``), None for one group."""
    import numpy as np

    if group_expr is not None:
        sql = (f"SELECT d.i AS i, a.x AS x, a.c AS c FROM dp_keys d JOIN (SELECT {group_expr} AS g, {x} AS x, count(*) AS c "
               f"FROM {rel} WHERE {sel} AND {ok} GROUP BY 1, 2) a ON a.g = d.g ORDER BY d.i, a.x")
    else:
        sql = f"SELECT 1 AS i, {x} AS x, count(*) AS c FROM {rel} WHERE {sel} AND {ok} GROUP BY 2 ORDER BY 2"
    got = fetch(sql)
    gi = np.asarray(got["i"], dtype=np.int64)
    xs = np.asarray(got["x"], dtype=np.int64)
    cs = np.asarray(got["c"], dtype=np.int64)
    # the rows of group k (1-based: dp_keys.i, or 1) are one run of the ordered result
    index = np.arange(1, groups + 1)
    starts, ends = np.searchsorted(gi, index, side="left"), np.searchsorted(gi, index, side="right")
    return [(xs[a:b], cs[a:b]) for a, b in zip(starts, ends)]


def rank_percentile(table, query, rows, histograms, src, *, mechanism, eps, eps_answer, factor, bounds, value_bounds,
                    step, total, where, group_by, composition, confidence, n_groups, invalid, unit) -> QueryResult:
    """One exact draw per group by ``mechanism`` ("permute-and-flip" or "exponential"): ``rows`` give the groups in
    order and their clamped counts, ``histograms`` each group's sorted distinct values (lattice units, within
    ``bounds``) and their counts."""
    from ..mechanisms.rank_quantile import RankWeights, quantile_fraction, sample_permute_and_flip, sample_quantile

    pf = mechanism == "permute-and-flip"
    draw = sample_permute_and_flip if pf else sample_quantile
    lo, hi = bounds
    q = quantile_fraction(query.p)
    if 4 * q.denominator * max(int(total), 1) >= 2**62:
        raise ValueError(f"percentile {query.p:g} has too many decimals for a table of {total:,} rows (the ranks' scores "
                         "are 64-bit integers): round it")
    weights = RankWeights.build(eps_answer, q)
    points = hi - lo + 1
    beta = 1.0 - confidence
    # rounded up to the tenth it is printed with; beyond N the statement holds with probability 1 (every position is
    # within N of the target)
    k_ranks = min(math.ceil(weights.rank_within(points, beta) * 10) / 10, float(total))
    answers = []
    for row, (xs, cs) in zip(rows, histograms):
        y = draw(xs, cs, lo, hi, weights, src.generator)
        answers.append(GroupAnswer(row[0], _on_grid(y, step), int(row[-1]), float("nan"), float("nan"), confidence,
                                   within_ranks=k_ranks))
    per = f" at ε/{factor} = {eps_answer:g} per group" if factor != 1 else ""
    grid = f"{_on_grid(lo, step):g}, {_on_grid(lo + 1, step):g}, …, {_on_grid(hi, step):g}" if hi > lo + 1 else \
        ", ".join(f"{_on_grid(k, step):g}" for k in range(lo, hi + 1))
    score = (f"each value y of the grid {grid} is scored by s(y), the distance from the target rank q·n (q = {float(q):g}) "
             "to the positions of y's rows, the i-th smallest at i − ½ (Hazen's plotting positions), or of y between "
             "them when no row holds it (Smith 2011's rank distance; 0 for a value whose rows cover the target)")
    if pf:
        how = (f"permute-and-flip on ranks (McKenna and Sheldon 2020){per}: {score}; the values are visited in a random "
               f"order and the first whose coin, of probability exp(−ε_a·(s(y) − s_min)/2) (ε_a = {eps_answer:g}; s_min the "
               "best score, at most ½), comes up heads is "
               "released — never worse than the exponential mechanism in expected score")
    else:
        how = (f"the exponential mechanism on ranks (McSherry and Talwar 2007; Smith 2011){per}: {score}; y is released "
               f"with probability ∝ exp(−ε_a·s(y)/2) (ε_a = {eps_answer:g})")
    theorem = (how + ". One changed row moves every s(y) by at most 1, so each answer is ε_a-DP. Chosen over the truncated "
               f"geometric because under d_h a percentile's Δ is HI − LO = {hi - lo:,} units, which the geometric's noise "
               "would spread over (no mechanism is universally optimal under d_h: Chatzikokolakis et al. 2013, Thm 9)")
    if where or group_by is not None or invalid:
        theorem += "; a selection with no valid value gets a uniform draw over LO..HI (every point has the same score)"
    accuracy = (f"no closed form: the error in values depends on how the data spread near the percentile. In ranks, "
                f"with probability ≥ {confidence:g} the released value's positions are within {k_ranks:.1f} of the "
                f"target q·n: the best value scores at most ½, and the M = {points:,} values of the grid scored k more "
                f"than it have probability at most M·exp(−ε_a·k/2) = β = {beta:g} under either mechanism: "
                f"min(½ + 2·ln(M/β)/ε_a, N = {total:,}) (McSherry and Talwar's utility argument); 'expected |error|' "
                "and 'within ±' in values are therefore not stated (NaN)")
    neighbours, guarantee, public = standard_statement(eps, total, group_by, n_groups, composition)
    least = ("the least of its m uniforms is 1 − R^(1/m)" if pf else "the least of its m exponentials is −ln(R)/m")
    sampler = (f"exact: the release is the point with the least key {'U/W' if pf else 'E/W'} over independent "
               f"{'uniforms U' if pf else 'standard exponentials E'} with the real weights W = exp(−ε_a·(s − s_min)/2) "
               f"({'permute-and-flip' if pf else 'the exponential mechanism'} as a race: nothing rounded, floored or "
               f"truncated), found interval by interval between values ({least}, reached at a uniform point of "
               "the interval) with R's bits drawn from the random source until float64 bounds, or failing them decimal "
               "ones with every rounding counted, separate the least key from the rest")
    res = QueryResult(display_name(table), query.name, "standard", mechanism, eps, 1.0, value_bounds, where,
                      group_by, answers, src.to_dict(), guarantee=guarantee, theorem=theorem, epsilon_spent=eps,
                      delivered_epsilon=eps, sampler=sampler, neighbours=neighbours, public="; ".join(public),
                      epsilon_per_answer=eps_answer, composition=composition, answer_range=(lo, hi), answer_step=step,
                      noise_alpha=0.0, accuracy=accuracy, universally_optimal=False)
    res.rows_skipped_not_private = invalid
    res.unit = unit
    return res
