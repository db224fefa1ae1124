r"""Private answers to count, sum, average and percentile queries on real tables (seed 002 §5).

The table is read and aggregated by DuckDB (filtering with ``where``, grouping with ``group_by``,
clamping to the declared ``bounds`` and counting what was clamped) — no Python loop over rows. Each
group's true answer then goes through the **truncated geometric mechanism** on its answer grid: a
two-sided geometric noise K with P(K = k) = (1−α)/(1+α)·α^{|k|}, α = e^{−ε/Δ}, added to the integer
answer and clamped to the answer range (clamping is post-processing and gives exactly the truncated
geometric channel of seed 002 Fig 2 (iv)). It is universally optimal for counting queries (Ghosh et al.;
seed 002 Thm 8) and, under the metrics of seed 002 §5, for sum, average and percentile (Thm 10–13).

Privacy models (``privacy``), the neighbourhood of two tables of the same size N (one row changed),
with R = HI − LO; Δ is the sensitivity of the integer answer the noise is added to (the sum for avg):

================  =================  ======================  ==============  =====================
query             ``standard`` d_h   ``normalized-d1`` d̃1    ``d1``          ``dinf``
================  =================  ======================  ==============  =====================
count             Δ = 1 (Thm 8 ★)    —                       —               —
kcount:C1,…,Ck    Δ = 1 per count, ε/k each (sequential composition; Thm 9: no universal optimum)
sum:COL           Δ = R              Δ = R (Thm 11 ★)        Δ = 1 (Thm 12 ★) —
avg:COL           Δ = R              Δ = R (Thm 11 ★)        Δ = 1 (Thm 12 ★) Δ = N (Thm 13 ★)
percentile:COL:P  Δ = R              Δ = R (Thm 11 ★)        Δ = 1 (Thm 12 ★) Δ = 1 (Thm 13 ★)
================  =================  ======================  ==============  =====================

★: the truncated geometric mechanism is universally optimal there (seed 002 §5: the query is uniformly
Δ-sensitive, Thm 10). Under d_h only counts have a universally optimal mechanism (Thm 9); the others
are private with the stated Δ but carry no optimality claim.

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

QUERY_KINDS = ("count", "kcount", "sum", "avg", "percentile")
PRIVACY_MODELS = ("standard", "normalized-d1", "d1", "dinf")
MECHANISMS = ("auto", "truncated-geometric", "geometric", "tight-constraints", "optimal")

#: Largest answer range on which ``--mechanism optimal`` computes its remap and exact accuracy.
OPTIMAL_MAX_ANSWERS = 3000


@dataclass(frozen=True)
class Query:
    kind: str
    column: str | None = None
    p: float | None = None
    columns: tuple = ()

    @property
    def name(self) -> str:
        if self.kind == "count":
            return "count"
        if self.kind == "kcount":
            return "kcount:" + ",".join(self.columns)
        if self.kind == "percentile":
            return f"percentile:{self.column}:{self.p:g}"
        return f"{self.kind}:{self.column}"


def parse_query(spec: str) -> Query:
    """``count``, ``sum:COL``, ``avg:COL``, ``percentile:COL:P`` (P in (0, 100); median = 50)."""
    s = (spec or "").strip()
    if s == "count":
        return Query("count")
    m = re.fullmatch(r"kcount:(.+)", s)
    if m:
        cols = tuple(c.strip() for c in m.group(1).split(","))
        if len(cols) < 2 or any(not c for c in cols) or len(set(cols)) != len(cols):
            raise ValueError(f"bad --query {spec!r}: kcount needs two or more distinct columns, e.g. kcount:A,B")
        return Query("kcount", columns=cols)
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
    raise ValueError(f"bad --query {spec!r}: expected count, kcount:COL1,COL2,..., sum:COL, avg:COL or percentile:COL:P")


def sensitivity(q: Query, privacy: str, bounds, total: int | None = None) -> float:
    """Δ of the integer answer the noise is added to (the sum for avg), per the module table; ``total``
    (N, the public table size) is needed for avg under d∞."""
    return _sensitivity(q, privacy, bounds, total)[0]


def _sensitivity(q: Query, privacy: str, bounds, total) -> tuple[float, str]:
    """(Δ, the theorem behind it) per the module table."""
    if privacy not in PRIVACY_MODELS:
        raise ValueError(f"--privacy must be one of {', '.join(PRIVACY_MODELS)}, got {privacy!r}")
    if q.kind in ("count", "kcount"):
        if privacy != "standard":
            raise ValueError(f"a {q.kind} is not a query on values: use --privacy standard")
        if q.kind == "count":
            return 1.0, "seed 002 Thm 8 (Ghosh et al.): the truncated geometric is universally optimal for a count"
        return 1.0, (f"each of the {len(q.columns)} counts at ε/{len(q.columns)} (one row changes every count by at most 1: "
                     "sequential composition); the k-count's answer graph is not a path, so no universally optimal "
                     "mechanism exists (seed 002 Thm 9); the tight-constraints mechanism of seed 000 §3.2 on that graph is "
                     "optimal for regular priors (`dprivacy design kcount:U,K`)")
    lo, hi = bounds
    r = float(hi - lo) if hi > lo else 1.0
    name = {"sum": "sum", "avg": "average", "percentile": "percentile"}[q.kind]
    if privacy == "standard":
        return r, (f"Δ = HI − LO under d_h; private, but the {name}'s answer graph is not a path, so no universally "
                   "optimal mechanism exists under d_h (seed 002 Thm 9)")
    if privacy == "normalized-d1":
        return r, (f"seed 002 Thm 11: the {name} is uniformly (HI − LO)-sensitive wrt the normalized Manhattan metric, so "
                   "the truncated geometric at ε/(HI − LO) is universally optimal for ε·d̃1 (the same noise as d_h, with "
                   "more protection for small changes)")
    if privacy == "d1":
        return 1.0, f"seed 002 Thm 12: the {name} is uniformly 1-sensitive wrt d1: the truncated geometric is universally optimal"
    if q.kind == "sum":
        raise ValueError("--privacy dinf is not available for sum (seed 002 Thm 13 covers avg and percentile): use d1")
    if q.kind == "avg":
        if total is None:
            raise ValueError("avg under dinf needs the table size")
        return float(total), ("seed 002 Thm 13: the average is uniformly 1-sensitive wrt d∞ (Δ = N on the sum): the "
                              "truncated geometric on the average's grid is universally optimal")
    return 1.0, "seed 002 Thm 13: the percentile is uniformly 1-sensitive wrt d∞: the truncated geometric is universally optimal"


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
    noisy: float | list
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
    rows_skipped_not_private: int = 0

    def to_dict(self) -> dict:
        from ..results import jsonable

        d = dict(vars(self))
        d["answers"] = [vars(a) for a in self.answers]
        return jsonable(d)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _first_bad_row(con, rel: str, sel: str, bad: str, columns) -> str:
    """', the first at row K (value V)' for the error message: K counts data rows from 1 in file
    order (DuckDB keeps insertion order); empty when it cannot be found."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    try:
        got = con.execute(f"SELECT __row, {', '.join(_quote(c) for c in columns)} FROM "
                          f"(SELECT row_number() OVER () AS __row, * FROM {rel}) WHERE {sel} AND ({bad}) "
                          "ORDER BY __row LIMIT 1").fetchone()
    except Exception:  # the count above already says what is wrong
        return ""
    if not got:
        return ""
    show = lambda v: "empty" if v is None else repr(v)  # noqa: E731
    vals = show(got[1]) if len(columns) == 1 else ", ".join(f"{c} = {show(v)}" for c, v in zip(columns, got[1:]))
    return f", the first at row {int(got[0])} ({vals})"


def _as_type(col: str, sql_type: str, target: str) -> str:
    """SQL for the column's value as ``target``, NULL where it does not convert. Text goes through
    ``trim`` first: DuckDB 2.0 pushes a bare ``TRY_CAST(col AS T)`` into the CSV reader, which then
    raises on the first value that does not convert instead of returning NULL."""
    if any(t in sql_type for t in ("VARCHAR", "TEXT", "STRING", "BLOB")):
        return f"TRY_CAST(trim({col}) AS {target})"
    return f"TRY_CAST({col} AS {target})"


def _is_numeric(sql_type: str) -> bool:
    """A DuckDB numeric type (whose values other than 0 and 1 are not true/false flags)."""
    return any(t in sql_type for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC"))


def _as_double(col: str, sql_type: str) -> str:
    return _as_type(col, sql_type, "DOUBLE")


def _relation(path: str, *, all_varchar: bool = False) -> str:
    low = path.lower()
    lit = "'" + path.replace("'", "''") + "'"
    if low.endswith(".parquet") or low.endswith(".pq"):
        return f"read_parquet({lit})"
    if low.endswith(".csv") or low.endswith(".csv.gz") or low.endswith(".tsv"):
        # all_varchar: the sniffer's column types came from a sample and a later row did not fit them;
        # every value is then read as text and the queries' TRY_CASTs decide what is a number.
        return f"read_csv_auto({lit}, header=true{', all_varchar=true' if all_varchar else ''})"
    raise ValueError(f"cannot tell the format of {path!r}: expected .csv, .csv.gz or .parquet")


def truncated_geometric_rows(alpha: float, lo: int, hi: int) -> np.ndarray:
    """P(o | a) of the truncated geometric on the answers lo..hi (rows a, columns o): the two-sided
    geometric with ratio α clamped to [lo, hi] (seed 002 Fig 2 (iv))."""
    a = np.arange(lo, hi + 1)
    k = np.abs(a[None, :] - a[:, None]).astype(float)
    p = (1 - alpha) / (1 + alpha) * alpha ** k
    p[:, 0] = alpha ** (a - lo) / (1 + alpha)
    p[:, -1] = alpha ** (hi - a) / (1 + alpha)
    if hi == lo:
        p[:, :] = 1.0
    return p


def bayes_remap_abs(rows: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, float]:
    """For each output o the answer minimising the expected |error| under the posterior ∝ π(a) P(o|a)
    (a weighted median), and the expected |error| of the remapped mechanism under π."""
    joint = prior[:, None] * rows  # [a, o]
    cum = np.cumsum(joint, axis=0)
    half = 0.5 * cum[-1]
    remap = np.argmax(cum >= half[None, :], axis=0)  # first a where the posterior mass reaches 1/2
    n = rows.shape[0]
    err = np.abs(remap[None, :] - np.arange(n)[:, None])
    return remap, float((joint * err).sum())


def run_query(table: str, query: Query, *, epsilon: float, bounds=None, where: str | None = None,
              group_by: str | None = None, privacy: str = "standard", rng=None, confidence: float = 0.95,
              mechanism: str = "auto", skip_invalid: bool = False, prior=None) -> QueryResult:
    """Answer ``query`` on ``table`` with ε-private noise per group (see the module docstring).

    ``mechanism``: ``auto``/``truncated-geometric`` (the answer clamped to its public range: the truncated
    geometric, universally optimal where the module table says so), ``geometric`` (the same noise, not
    clamped) or ``tight-constraints`` (on the path of answers it *is* the truncated geometric, seed 000
    §6.1: the same draw, cited as such). ``skip_invalid``: empty or non-numeric values are left out of the
    aggregate as null values (seed 002 §5 extends the value metric with a null at the maximal distance),
    with Δ raised where a null changes the sum by more than HI − LO; their number is reported for the data
    owner only.
    """
    import os

    import duckdb

    from .._validate import check_epsilon
    from ..sampling import random_source
    from ..sampling.discrete import discrete_laplace, geometric_parameters

    eps = check_epsilon(epsilon)
    if mechanism not in MECHANISMS:
        raise ValueError(f"--mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if not os.path.exists(table):
        raise FileNotFoundError(f"table not found: {table}")
    if query.kind not in ("count", "kcount") and bounds is None:
        raise ValueError(f"{query.name} needs --bounds LO,HI: the declared range of {query.column!r} (values are clamped to it)")
    if bounds is not None:
        lo, hi = bounds
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo != int(lo) or hi != int(hi) or lo > hi:
            raise ValueError(f"--bounds must be two integers LO <= HI, got {lo:g},{hi:g}")
        bounds = (int(lo), int(hi))
    if query.kind == "avg" and (group_by is not None or where or skip_invalid):
        raise ValueError("avg divides by the number of rows, which is public only for the whole table: with --group-by, "
                         "--where or --skip-invalid ask for sum and count instead (their ratio is a private average)")
    if query.kind == "kcount" and mechanism == "tight-constraints":
        raise ValueError("tight-constraints for a k-count lives on its answer graph: build it with `dprivacy design "
                         "kcount:U,K --mechanism tight-constraints`; here the counts get truncated geometric noise")
    con = duckdb.connect()
    rel = _relation(table)
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
        cols = [r[0] for r in described]
        types = {r[0]: str(r[1]).upper() for r in described}
    except duckdb.Error as exc:
        raise ValueError(f"cannot read {table}: {str(exc).splitlines()[0]}") from None
    for c in [query.column, group_by, *query.columns]:
        if c is not None and c not in cols:
            raise ValueError(f"unknown column {c!r}: the table's columns are {', '.join(cols)}")
    filt = ""
    if where:
        try:
            con.execute(f"SELECT count(*) FROM {rel} WHERE {where} LIMIT 0").fetchall()
        except duckdb.Error as exc:
            raise ValueError(f"bad --where {where!r}: {str(exc).splitlines()[0]}") from None
        filt = f"WHERE {where}"
    sel = f"({where})" if where else "TRUE"
    # One scan for the table size and the invalid values (N is public: one row changed keeps it).
    checks = ["count(*)"]
    if query.kind in ("sum", "avg", "percentile"):
        col = _quote(query.column)
        val = _as_double(col, types[query.column])
        bad = f"{col} IS NULL OR {val} IS NULL OR isnan({val})"
        checks.append(f"count(*) FILTER (WHERE {sel} AND {col} IS NOT NULL AND ({val} IS NULL OR isnan({val})))")
        checks.append(f"count(*) FILTER (WHERE {sel} AND {col} IS NULL)")
    elif query.kind == "kcount":
        bad = " OR ".join(f"({_quote(c)} IS NULL OR {_as_type(_quote(c), types[c], 'BOOLEAN')} IS NULL"
                          + (f" OR {_quote(c)} NOT IN (0, 1))" if _is_numeric(types[c]) else ")") for c in query.columns)
        checks.append(f"count(*) FILTER (WHERE {sel} AND ({bad}))")
        checks.append("0")
    try:
        try:
            got = con.execute(f"SELECT {', '.join(checks)} FROM {rel}").fetchone()
        except duckdb.ConversionException:
            rel = _relation(table, all_varchar=True)
            got = con.execute(f"SELECT {', '.join(checks)} FROM {rel}").fetchone()
    except duckdb.Error as exc:
        raise ValueError(f"cannot read the table: {str(exc).splitlines()[0]}") from None
    total = int(got[0])
    wrong, empty = (int(got[1]), int(got[2])) if len(got) > 1 else (0, 0)
    invalid = wrong + empty
    if invalid and not skip_invalid:
        what = f"column {query.column!r}" if query.column else "columns " + ", ".join(map(repr, query.columns))
        expect = "numbers" if query.column else "true/false or 0/1 values"
        first = _first_bad_row(con, rel, sel, bad, query.column or query.columns)
        if query.column:
            parts = ([f"{wrong} non-numeric"] if wrong else []) + ([f"{empty} empty"] if empty else [])
            found = f"{what} has {' and '.join(parts)} value(s) among the selected rows"
        else:
            found = f"{what}: {wrong} selected row(s) have a missing or non-boolean value"
        raise ValueError(f"{found} (expected {expect}){first}; --skip-invalid leaves them out as null values and counts them")
    delta, theorem = _sensitivity(query, privacy, bounds, total)
    if skip_invalid and query.kind == "sum":
        lo, hi = bounds
        reach = float(max(abs(lo), abs(hi)))  # what one value turning null changes the sum by
        if privacy == "d1":
            delta = max(delta, reach / max(hi - lo, 1))
        else:
            delta = max(delta, reach)
    g = _quote(group_by) if group_by else "NULL"
    k = len(query.columns)
    if query.kind == "count":
        sql = f"SELECT {g} AS g, count(*) AS v, 0 AS clamped FROM {rel} {filt} GROUP BY ALL ORDER BY 1"
    elif query.kind == "kcount":
        counts = ", ".join(f"count(*) FILTER (WHERE {_as_type(_quote(c), types[c], 'BOOLEAN')}) AS v{i}"
                           for i, c in enumerate(query.columns))
        sql = f"SELECT {g} AS g, {counts}, 0 AS clamped FROM {rel} {filt} GROUP BY ALL ORDER BY 1"
    else:
        lo, hi = bounds
        ok = f"{val} IS NOT NULL AND NOT isnan({val})"
        x = f"round(least(greatest({val}, {lo}), {hi}))"
        agg = f"quantile_disc({x}, {query.p / 100.0}) FILTER (WHERE {ok})" if query.kind == "percentile" else \
            f"coalesce(sum({x}) FILTER (WHERE {ok}), 0)"
        clamped = f"count(*) FILTER (WHERE {ok} AND ({val} < {lo} OR {val} > {hi}))"
        sql = f"SELECT {g} AS g, {agg} AS v, {clamped} AS clamped FROM {rel} {filt} GROUP BY ALL ORDER BY 1"
    try:
        try:
            rows = con.execute(sql).fetchall()
        except duckdb.ConversionException:
            rows = con.execute(sql.replace(rel, _relation(table, all_varchar=True))).fetchall()
    except duckdb.Error as exc:
        raise ValueError(f"the query failed: {str(exc).splitlines()[0]}") from None
    if not rows:
        raise ValueError("no rows match: there is no group to answer (a private answer on an empty selection "
                         "would still spend ε; widen --where)")
    if any(r[1] is None for r in rows):
        raise ValueError(f"no rows match (or no valid value in a group) for {query.name}: a percentile of an empty selection is undefined "
                         "(widen --where)")
    src = random_source(rng)
    # Exact integer sampling (CKS 2020) at s/t ≤ ε/Δ: no floating-point step decides a released value.
    eps_each = eps / k if query.kind == "kcount" else eps
    params = geometric_parameters(eps_each, delta)
    mean, t = geometric_accuracy(params.alpha, confidence=confidence)
    width = k if query.kind == "kcount" else 1
    noise = discrete_laplace(len(rows) * width, params.s, params.t, src.generator).reshape(len(rows), width)
    clamp = mechanism != "geometric"
    remap = None
    if mechanism == "optimal":
        if query.kind in ("kcount", "avg"):
            raise ValueError(f"--mechanism optimal is for count, sum and percentile answers, not {query.kind}")
        lo_r, hi_r = (0, total) if query.kind == "count" else (
            (bounds[0] * total, bounds[1] * total) if query.kind == "sum" else bounds)
        size = hi_r - lo_r + 1
        if size > OPTIMAL_MAX_ANSWERS:
            raise ValueError(f"--mechanism optimal: the answers range over {size:,} values, over the {OPTIMAL_MAX_ANSWERS:,} "
                             "on which the remap is computed; use the truncated geometric (auto)")
        pi = _answer_prior(prior, size, lo_r, hi_r)
        remap, opt_err = bayes_remap_abs(truncated_geometric_rows(params.alpha, lo_r, hi_r), pi)
        remap = remap + lo_r
    answers = []
    for row, kk in zip(rows, noise):
        grp, vals, clamped = row[0], row[1:-1], row[-1]
        if query.kind in ("count", "kcount"):
            lo_a, hi_a = 0, total
        elif query.kind in ("sum", "avg"):
            # the clamp range must be public: N·LO..N·HI with N the table size, not the group's size
            lo_a, hi_a = bounds[0] * total, bounds[1] * total
        else:
            lo_a, hi_a = bounds
        out = [int(v) + int(e) for v, e in zip(vals, kk)]
        if clamp:
            out = [min(max(o, lo_a), hi_a) for o in out]
        if remap is not None:
            out = [int(remap[o - lo_a]) for o in out]
        scale = 1.0 / total if query.kind == "avg" else 1.0
        noisy = [o * scale for o in out] if query.kind == "kcount" else out[0] * scale
        e_abs = opt_err if remap is not None else mean
        answers.append(GroupAnswer(grp, noisy, int(clamped), e_abs * scale, t * scale, confidence))
    used = {"auto": "truncated-geometric", "truncated-geometric": "truncated-geometric", "geometric": "geometric",
            "tight-constraints": "tight-constraints", "optimal": "truncated-geometric + Bayes remap"}[mechanism]
    if mechanism == "optimal":
        theorem += ("; --mechanism optimal: the truncated geometric followed by the remap that minimises the expected "
                    "|error| for the given prior (a weighted median of the posterior): the truncated geometric is "
                    "universally optimal (seed 002 Thm 8, 10), so this is the optimal ε-private mechanism for that prior and "
                    "loss; its expected |error| is computed exactly under the prior (the 'within ±' figure is the "
                    "un-remapped noise's)")
    if mechanism == "tight-constraints":
        theorem += ("; on the path of answers the tight-constraints mechanism is the truncated geometric (seed 000 §6.1: "
                    "z = (1−α)/(1+α) inside and 1/(1+α) at the ends), drawn here as such")
    elif mechanism == "geometric":
        theorem += "; --mechanism geometric: the same noise without clamping, so answers may fall outside the range"
    spent = eps
    res = QueryResult(table, query.name, privacy, used, eps, delta, bounds, where, group_by,
                      answers, src.to_dict(),
                      guarantee=(f"ε = {eps:g} ({privacy}): changing one row changes the probability of every released "
                                 f"answer by at most a factor e^{eps:g}; groups are disjoint, so a grouped query spends ε once "
                                 "(parallel composition)"),
                      theorem=theorem, epsilon_spent=spent,
                      delivered_epsilon=params.delivered_epsilon * (k if query.kind == "kcount" else 1),
                      sampler=(f"exact discrete Laplace in integer arithmetic (Canonne, Kamath, Steinke 2020, Alg. 2) with "
                               f"P(K = k) ∝ exp(−|k|·{params.s}/{params.t}), ε/Δ rounded down to a multiple of 2^-40"))
    res.rows_skipped_not_private = invalid if skip_invalid else 0
    return res


def _answer_prior(prior, size: int, lo: int, hi: int) -> np.ndarray:
    """The prior on the answers lo..hi: ``"uniform"``, an array, or a .npy/.csv/.txt file of ``size`` weights."""
    if prior is None:
        raise ValueError("--mechanism optimal needs --prior: 'uniform' or a file of weights on the answers "
                         f"{lo}..{hi} ({size} values)")
    if isinstance(prior, str) and prior == "uniform":
        return np.full(size, 1.0 / size)
    if isinstance(prior, str):
        from ..spaces import load_array

        arr = np.asarray(load_array(prior, "prior", ndmin=1), dtype=np.float64).ravel()
        name = f"prior from {prior}"
    else:
        arr, name = np.asarray(prior, dtype=np.float64).ravel(), "prior"
    if arr.size != size:
        raise ValueError(f"{name} has {arr.size} weights, expected {size} (one per answer {lo}..{hi})")
    if not np.isfinite(arr).all() or (arr < 0).any() or not arr.sum() > 0:
        raise ValueError(f"{name} must have non-negative finite weights that do not all vanish")
    return arr / arr.sum()
