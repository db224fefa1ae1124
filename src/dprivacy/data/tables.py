r"""Private answers to count, sum, average and percentile queries on real tables (seed 002 §5).

The table is read and aggregated by DuckDB (filtering with ``where``, grouping with ``group_by``,
clamping to the declared ``bounds`` and counting what was clamped) — no Python loop over rows. Each
group's true answer then goes through the **truncated geometric mechanism** on its answer grid: a
two-sided geometric noise K with P(K = k) = (1−α)/(1+α)·α^{|k|}, α = e^{−ε/Δ}, added to the integer
answer and clamped to the answer range (clamping is post-processing and gives exactly the truncated
geometric channel of seed 002 Fig 2 (iv)). It is universally optimal for counting queries (Ghosh et al.;
seed 002 Thm 8) and, under the metrics of seed 002 §5, for sum, average and percentile (Thm 10–13).

Privacy models (``privacy``), the neighbourhood of two tables of the same size N (one row changed):

=================  =========================================  ==========================================
query              ``standard`` (ε-DP, one row changed)        ``d1`` / ``dinf`` (seed 002 §5 metrics)
=================  =========================================  ==========================================
count              Δ = 1                                       (not a value query)
sum:COL            Δ = HI − LO                                 d1: Δ = 1 per unit of |Σ changes| (Thm 10)
avg:COL            Δ = (HI − LO) on the sum, then ÷ N           d1: Δ = 1 on the sum, then ÷ N (Thm 11)
percentile:COL:P   Δ = HI − LO                                 dinf: Δ = 1 (Thm 12–13)
=================  =========================================  ==========================================

Values are clamped to [LO, HI] and rounded to integers (the value grid of Thm 10–13); the number of
clamped values is reported. N, the table size, is public under this neighbourhood (one row *changed*).
Accuracy is stated exactly for the untruncated noise, which bounds the truncated one: E|K| = 2α/(1−α²),
and P(|K| > t) = 2α^{t+1}/(1+α), the (α, δ)-usefulness of seed 002 §5.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

QUERY_KINDS = ("count", "sum", "avg", "percentile")
PRIVACY_MODELS = ("standard", "d1", "dinf")


@dataclass(frozen=True)
class Query:
    kind: str
    column: str | None = None
    p: float | None = None

    @property
    def name(self) -> str:
        if self.kind == "count":
            return "count"
        if self.kind == "percentile":
            return f"percentile:{self.column}:{self.p:g}"
        return f"{self.kind}:{self.column}"


def parse_query(spec: str) -> Query:
    """``count``, ``sum:COL``, ``avg:COL``, ``percentile:COL:P`` (P in (0, 100); median = 50)."""
    s = (spec or "").strip()
    if s == "count":
        return Query("count")
    m = re.fullmatch(r"(sum|avg):(.+)", s)
    if m:
        return Query(m.group(1), m.group(2))
    m = re.fullmatch(r"percentile:(.+):([^:]+)", s)
    if m:
        try:
            p = float(m.group(2))
        except ValueError:
            raise ValueError(f"bad percentile in {spec!r}: {m.group(2)!r} is not a number") from None
        if not 0 < p < 100:
            raise ValueError(f"percentile must lie strictly between 0 and 100, got {p:g}")
        return Query("percentile", m.group(1), p)
    raise ValueError(f"bad --query {spec!r}: expected count, sum:COL, avg:COL or percentile:COL:P")


def sensitivity(q: Query, privacy: str, bounds) -> float:
    """Δ of the integer answer the noise is added to (the sum for avg), per the module table."""
    if privacy not in PRIVACY_MODELS:
        raise ValueError(f"--privacy must be one of {', '.join(PRIVACY_MODELS)}, got {privacy!r}")
    if q.kind == "count":
        if privacy != "standard":
            raise ValueError("a count is not a query on values: use --privacy standard")
        return 1.0
    lo, hi = bounds
    if privacy == "standard":
        return float(hi - lo) if hi > lo else 1.0
    if privacy == "d1" and q.kind in ("sum", "avg"):
        return 1.0
    if privacy == "dinf" and q.kind == "percentile":
        return 1.0
    raise ValueError(f"--privacy {privacy} is not supported for {q.kind} (sum/avg: standard or d1; percentile: standard or dinf)")


def geometric_accuracy(alpha: float, *, confidence: float = 0.95) -> tuple[float, int]:
    """(E|K|, t) for the two-sided geometric K with ratio α: E|K| = 2α/(1−α²) and the smallest t with
    P(|K| > t) = 2α^{t+1}/(1+α) ≤ 1 − confidence."""
    if alpha <= 0:
        return 0.0, 0
    mean = 2 * alpha / (1 - alpha * alpha)
    delta = 1.0 - confidence
    t = max(0, math.ceil(math.log(delta * (1 + alpha) / 2) / math.log(alpha) - 1))
    return mean, int(t)


@dataclass
class GroupAnswer:
    """One group's released answer. ``clamped_not_private`` is the exact number of values outside the
    bounds: for the data owner, not for publication."""

    group: object
    noisy: float
    clamped_not_private: int
    expected_abs_error: float
    within: float
    confidence: float


@dataclass
class QueryResult:
    table: str
    query: str
    privacy: str
    mechanism: str
    epsilon: float
    sensitivity: float
    bounds: tuple | None
    where: str | None
    group_by: str | None
    answers: list = field(default_factory=list)
    random_source: dict = field(default_factory=dict)
    guarantee: str = ""
    theorem: str = ""
    epsilon_spent: float = 0.0
    delivered_epsilon: float = 0.0
    sampler: str = ""

    def to_dict(self) -> dict:
        from ..results import jsonable

        d = dict(vars(self))
        d["answers"] = [vars(a) for a in self.answers]
        return jsonable(d)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _relation(path: str) -> str:
    low = path.lower()
    lit = "'" + path.replace("'", "''") + "'"
    if low.endswith(".parquet") or low.endswith(".pq"):
        return f"read_parquet({lit})"
    if low.endswith(".csv") or low.endswith(".csv.gz") or low.endswith(".tsv"):
        return f"read_csv_auto({lit}, header=true)"
    raise ValueError(f"cannot tell the format of {path!r}: expected .csv, .csv.gz or .parquet")


def run_query(table: str, query: Query, *, epsilon: float, bounds=None, where: str | None = None,
              group_by: str | None = None, privacy: str = "standard", rng=None, confidence: float = 0.95) -> QueryResult:
    """Answer ``query`` on ``table`` with ε-private noise per group (see the module docstring)."""
    import os

    import duckdb

    from .._validate import check_epsilon
    from ..sampling import random_source
    from ..sampling.discrete import discrete_laplace, geometric_parameters

    eps = check_epsilon(epsilon)
    if not os.path.exists(table):
        raise FileNotFoundError(f"table not found: {table}")
    if query.kind != "count" and bounds is None:
        raise ValueError(f"{query.name} needs --bounds LO,HI: the declared range of {query.column!r} (values are clamped to it)")
    if bounds is not None:
        lo, hi = bounds
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo != int(lo) or hi != int(hi) or lo > hi:
            raise ValueError(f"--bounds must be two integers LO <= HI, got {lo:g},{hi:g}")
        bounds = (int(lo), int(hi))
    delta = sensitivity(query, privacy, bounds)
    if query.kind == "avg" and (group_by is not None or where):
        raise ValueError("avg divides by the number of rows, which is public only for the whole table: with --group-by "
                         "or --where ask for sum and count instead (their ratio is a private average)")
    con = duckdb.connect()
    rel = _relation(table)
    try:
        cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()]
    except duckdb.Error as exc:
        raise ValueError(f"cannot read {table}: {str(exc).splitlines()[0]}") from None
    for c in [query.column, group_by]:
        if c is not None and c not in cols:
            raise ValueError(f"unknown column {c!r}: the table's columns are {', '.join(cols)}")
    total = con.execute(f"SELECT count(*) FROM {rel}").fetchone()[0]
    filt = ""
    if where:
        try:
            con.execute(f"SELECT count(*) FROM {rel} WHERE {where}").fetchone()
        except duckdb.Error as exc:
            raise ValueError(f"bad --where {where!r}: {str(exc).splitlines()[0]}") from None
        filt = f"WHERE {where}"
    g = _quote(group_by) if group_by else "NULL"
    if query.kind == "count":
        sql = f"SELECT {g} AS g, count(*) AS n, count(*) AS v, 0 AS clamped FROM {rel} {filt} GROUP BY ALL ORDER BY 1"
    else:
        col = _quote(query.column)
        lo, hi = bounds
        try:
            nonnum = con.execute(f"SELECT count(*) FROM {rel} WHERE {col} IS NOT NULL AND TRY_CAST({col} AS DOUBLE) IS NULL").fetchone()[0]
            nulls = con.execute(f"SELECT count(*) FROM {rel} {filt} {'AND' if filt else 'WHERE'} {col} IS NULL").fetchone()[0]
        except duckdb.Error as exc:
            raise ValueError(f"cannot read column {query.column!r}: {str(exc).splitlines()[0]}") from None
        if nonnum:
            raise ValueError(f"column {query.column!r} has {nonnum} non-numeric value(s): expected numbers")
        if nulls:
            raise ValueError(f"column {query.column!r} has {nulls} empty value(s) among the selected rows")
        x = f"round(least(greatest(CAST({col} AS DOUBLE), {lo}), {hi}))"
        agg = f"quantile_disc({x}, {query.p / 100.0})" if query.kind == "percentile" else f"sum({x})"
        clamped = f"count(*) FILTER (WHERE CAST({col} AS DOUBLE) < {lo} OR CAST({col} AS DOUBLE) > {hi})"
        sql = f"SELECT {g} AS g, count(*) AS n, {agg} AS v, {clamped} AS clamped FROM {rel} {filt} GROUP BY ALL ORDER BY 1"
    try:
        rows = con.execute(sql).fetchall()
    except duckdb.Error as exc:
        raise ValueError(f"the query failed: {str(exc).splitlines()[0]}") from None
    if not rows:
        raise ValueError("no rows match: there is no group to answer (a private answer on an empty selection "
                         "would still spend ε; widen --where)")
    if any(v is None for _, _, v, _ in rows):
        raise ValueError(f"no rows match for {query.name}: a percentile of an empty selection is undefined (widen --where)")
    src = random_source(rng)
    # Exact integer sampling (CKS 2020) at s/t ≤ ε/Δ: no floating-point step decides a released value.
    params = geometric_parameters(eps, delta)
    mean, t = geometric_accuracy(params.alpha, confidence=confidence)
    noise = discrete_laplace(len(rows), params.s, params.t, src.generator)
    answers = []
    for (grp, n, v, clamped), k in zip(rows, noise):
        if query.kind == "count":
            lo_a, hi_a, scale = 0, total, 1.0
        elif query.kind in ("sum", "avg"):
            # the clamp range must be public: N·LO..N·HI with N the table size, not the group's size
            lo_a, hi_a = bounds[0] * total, bounds[1] * total
            scale = 1.0
        else:
            lo_a, hi_a, scale = bounds[0], bounds[1], 1.0
        noisy = int(min(max(int(v) + int(k), lo_a), hi_a))
        if query.kind == "avg":
            noisy_v, scale = noisy / total, 1.0 / total
        else:
            noisy_v = float(noisy)
        answers.append(GroupAnswer(grp, noisy_v, int(clamped), mean * scale, t * scale, confidence))
    theorem = {"count": "seed 002 Thm 8 (Ghosh et al.): the truncated geometric is universally optimal for counts",
               "sum": "seed 002 Thm 10: universally optimal for sums under d1 (standard DP: Δ = HI − LO)",
               "avg": "seed 002 Thm 11: universally optimal for the (grid-rounded) average",
               "percentile": "seed 002 Thm 12–13: universally optimal for percentiles under d∞"}[query.kind]
    res = QueryResult(table, query.name, privacy, "truncated-geometric", eps, delta, bounds, where, group_by,
                      answers, src.to_dict(),
                      guarantee=(f"ε = {eps:g} ({privacy}): changing one row changes the probability of every released "
                                 f"answer by at most a factor e^{eps:g}; groups are disjoint, so a grouped query spends ε once "
                                 "(parallel composition)"),
                      theorem=theorem, epsilon_spent=eps, delivered_epsilon=params.delivered_epsilon,
                      sampler=(f"exact discrete Laplace in integer arithmetic (Canonne, Kamath, Steinke 2020, Alg. 2) with "
                               f"P(K = k) ∝ exp(−|k|·{params.s}/{params.t}), ε/Δ rounded down to a multiple of 2^-40"))
    return res
