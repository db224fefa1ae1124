r"""Private answers to count, sum, average and percentile queries on real tables (Chatzikokolakis et al. 2013 §5).

The table is read and aggregated by DuckDB (filtering with ``where``, grouping with ``group_by``,
clamping to the declared ``bounds`` and counting what was clamped) — no Python loop over rows. DuckDB
may read the table file only: external access is switched off and the configuration locked before any
user text reaches it, and ``where`` must parse as one true/false expression on the row (no subquery,
comment or ``;``). Each answer then goes through the **truncated geometric mechanism** on its public
answer grid: a two-sided geometric noise K with P(K = k) = (1−α)/(1+α)·α^{|k|}, α = e^{−ε_a/Δ}, added to
the integer answer and clamped to the answer range (clamping is post-processing and gives exactly the
truncated geometric channel of Chatzikokolakis et al. 2013 Fig 2 (iv)).

Neighbouring tables. Two tables of the same size N differ in one row (N is public). Under ``standard``
(d_h) any of the row's columns may change, so a row can enter or leave the ``where`` selection and move
between two ``group_by`` groups. Under the metrics on values (``normalized-d1``, ``d1``, ``dinf``) the
distance is on the values of the query's column; every other column — in particular those used by
``where`` and ``group_by`` — is treated as public (not protected), and the query's column may not be
used by them. With ``group_by`` the group keys are public: declared (``keys``; required under ``standard``, where
the column is protected and the distinct values in the table are not public), or under a metric on values the
distinct values of the (public) column in the whole table. Every key gets an answer, whether or not a selected row
has it.

Δ is the sensitivity of the integer answer the noise is added to, R = HI − LO, M = max(|LO|, |HI|):

================  ======================  ======================  ==============  =====================
query             ``standard`` d_h        ``normalized-d1`` d̃1    ``d1``          ``dinf``
================  ======================  ======================  ==============  =====================
count             Δ = 1 (Thm 8 ★)         —                       —               —
kcount:C1,…,Ck    Δ = 1 per count, ε/k each (sequential composition; Thm 9: no universal optimum)
sum:COL           Δ = R; max(R, M) with   Δ = R (Thm 11 ★)        Δ = 1 (Thm 12 ★) —
                  where/group-by
avg:COL           Δ = R on the sum        Δ = R on the sum ★      Δ = 1 on sum ★  Δ = 1 on the mean
                                                                                  rounded to the grid
                                                                                  (Thm 13 ★)
percentile:COL:P  permute-and-flip on    Δ = R (Thm 11 ★)        Δ = 1 (Thm 12 ★) Δ = 1 (Thm 13 ★)
                  ranks (Δ = R with
                  truncated-geometric)
================  ======================  ======================  ==============  =====================

A sum or an average under ``standard`` gets by default the **staircase** noise of Geng and Viswanath 2016 instead
(:mod:`dprivacy.data.table_staircase`), cut at the ends of the same answer range: ε-DP asks that a shift of the
answer by up to Δ change each release's probability by at most e^ε, which the geometric grants while also protecting
a shift by d at ε·d/Δ; the staircase spends the whole e^ε on every shift and has the smallest E|error| of a
noise-adding ε-DP mechanism (0.96× the geometric's at ε = 1, 0.85× at ε = 2), sampled exactly in integers too.

A percentile under ``standard`` is answered by default by permute-and-flip on ranks (McKenna and Sheldon 2020,
on the rank score of Smith 2011; :mod:`dprivacy.data.table_percentile`), sampled exactly on the --unit lattice:
under d_h its Δ is the whole range R, so the truncated geometric (still available by name) spreads its noise over
the range, while the ranks' score has sensitivity 1 and the error follows the data near the percentile. The
exponential mechanism on the same score (McSherry and Talwar 2007) is available by name; permute-and-flip's
expected score is never worse than it and up to twice better.

★: the truncated geometric mechanism is universally optimal there (Chatzikokolakis et al. 2013 §5: the query is uniformly
Δ-sensitive, Thm 10). For avg = sum/N under d̃1 and d1 (N public, no null values) this is Thm 11/12 for
the sum; under d∞ only the mean *rounded to the value grid* is uniformly 1-sensitive (Thm 13; the exact
mean is not, see ``queries.average``), so that is what is released. Under d_h only counts have a
universally optimal mechanism (Thm 9); the others are private with the stated Δ but carry no optimality
claim.

Several answers. With ``group_by`` under ``standard`` a changed row can move between two groups and
change two answers, so each group's answer gets ε/2 (the release is ε-DP, the ledger charges ε). Under
``dinf`` all rows can change at once, so every one of the G groups' answers can change: each gets ε/G.
Under ``d1`` and ``normalized-d1`` the distance adds up over rows and the groups are disjoint, so each
group's answer gets ε (parallel composition).

Answer ranges are public: count 0..N; sum N·LO..N·HI for the whole table, and min(0, N·LO)..max(0,
N·HI) with ``where``/``group_by``/``skip_invalid`` (a selection has 0..N rows); percentile and the rounded
mean LO..HI (a percentile of an empty selection is LO by convention, released with noise like the
others). Values are clamped to [LO, HI]; they must be whole numbers, or multiples of a declared ``unit``
(the values' resolution, in which the answers' grid and the value metrics' distance are counted), to
which they are rounded. The number clamped is reported for the data owner (not private). The accuracy stated for each answer is exact and holds for every true
answer in the range: the largest expected |error| over the range, E|TG(a) − a| = α/((1−α)(1+α))·
(2 − α^{hi−a} − α^{a−lo}), and the smallest t with P(|error| > t) ≤ 1 − confidence for every a, the
(α, δ)-usefulness of Chatzikokolakis et al. 2013 §5.
"""

from __future__ import annotations

import math
import os

# The query's vocabulary, accuracy and SQL live in their own modules; their names stay importable from here.
from .table_accuracy import (  # noqa: F401
    _answer_prior, bayes_remap_abs, geometric_accuracy, remap_accuracy, truncated_geometric_accuracy,
    truncated_geometric_error, truncated_geometric_rows)
from .table_models import (  # noqa: F401
    MAX_KEYS, MECHANISMS, OPTIMAL_MAX_ANSWERS, PRIVACY_MODELS, QUERY_KINDS, RANK_MECHANISMS, VALUE_METRICS, GroupAnswer,
    Query,
    AnswerPlan, QueryResult, ScanFailed, _json_key, _keys_public, _on_grid, _plan_split, _sensitivity, answer_plan,
    check_table_file, parse_query, read_keys_file, sensitivity, standard_statement)
from .table_sql import (  # noqa: F401
    CSV_DELIMITERS, _as_double, _as_type, _check_table_shape, _connect, _csv_dialect, _declare_keys, _duckdb_error,
    _first_bad_row, _is_numeric, _literal, _quote, _relation, _unreadable, bind_where)
from .memory import display_name, in_memory
from .table_tight import _tight_sum  # noqa: F401

#: --mechanism tight-constraints on a sum's answer path is built matrix-free over all its answers: measured
#: (Δ = 15, ε = 3) about 220 bytes and 4.5 µs per answer (10⁶ answers: 5.1 s, 274 MB peak), so a sum of
#: 8 million rows over 0..50 (400 million answers) grew past the machine's 23 GB before this limit. It is
#: refused above this many answers (about 1 GiB and 25 s).
TIGHT_MAX_ANSWERS = 5_000_000


def run_query(table, query: Query, *, epsilon: float, bounds=None, where: str | None = None,
              group_by: str | None = None, privacy: str = "standard", rng=None, confidence: float = 0.95,
              mechanism: str = "auto", skip_invalid: bool = False, prior=None, unit: float | None = None,
              keys=None, owner: bool = False) -> QueryResult:
    """Answer ``query`` on ``table`` with ε-private noise per group (see the module docstring).

    ``mechanism``: ``auto``/``truncated-geometric`` (the answer clamped to its public range: the truncated
    geometric, universally optimal where the module table says so), ``geometric`` (the same noise, not
    clamped), ``tight-constraints`` (only where the answers' constraint graph is a path — a count, or a
    sum/avg/percentile under a metric on values, Chatzikokolakis et al. 2013 Thm 6 — on which it *is* the truncated geometric,
    ElSalamouny et al. 2014 §6.1; refused elsewhere), ``optimal`` (the truncated geometric followed by the Bayes remap for
    ``prior``; the only mechanism that uses ``prior``), ``permute-and-flip`` or ``exponential`` (a percentile under
    ``standard`` only: a selection on ranks, :mod:`dprivacy.data.table_percentile`; ``auto`` uses permute-and-flip
    there, since the percentile's Δ under d_h is the whole range HI − LO). ``skip_invalid``: empty or non-numeric values are
    left out of the aggregate as null values (Chatzikokolakis et al. 2013 §5 extends the value metric with a null at the
    maximal distance), with Δ raised where a null changes the sum by more than the theorem's Δ; their
    number in the whole table is reported for the data owner only. ``unit``: the resolution U of the values — they are
    rounded to multiples of U, the bounds must be multiples of U, and the value metrics' distance 1 is U
    (as in :func:`~dprivacy.data.series.release_series`). Without it the values must be whole numbers:
    values with a fraction are refused (rounding them silently made a sum of discounts 922 where it is
    1561.09), not rounded. ``keys``: the group keys of ``group_by``, declared public (a sequence of values,
    read as the column's type): each gets an answer, in the order given, whether or not a row has it, and rows
    with another key are in no group. Under ``standard`` they are required with ``group_by``: the column is
    protected there, and the distinct values found in the table are not public (one row with a value of its own
    adds a key). Under the metrics on values the column is public and the keys default to its distinct values.
    ``owner``: a refusal for invalid or fractional values also gives their number and the first such row (exact, not
    private: for the data owner); otherwise it names the column and the kind of value only.
    """
    import duckdb

    from .._validate import check_epsilon

    eps = check_epsilon(epsilon)
    if where is not None:
        from .condition import parse

        parse(where)  # a condition outside the language is refused before the table is opened
    if mechanism not in MECHANISMS:
        raise ValueError(f"--mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if privacy not in PRIVACY_MODELS:
        raise ValueError(f"--privacy must be one of {', '.join(PRIVACY_MODELS)}, got {privacy!r}")
    if prior is not None and mechanism not in ("optimal", "tight-constraints"):
        raise ValueError(f"--prior is used only by --mechanism optimal and tight-constraints; --mechanism {mechanism} ignores it "
                         "(drop --prior)")
    if not in_memory(table):
        table = _table_file(table)
    if query.kind not in ("count", "kcount") and bounds is None:
        raise ValueError(f"{query.name} needs --bounds LO,HI: the declared range of {query.column!r} (values are clamped to it)")
    if unit is not None and (isinstance(unit, bool) or not isinstance(unit, (int, float)) or not math.isfinite(unit)
                             or not unit > 0):
        raise ValueError(f"--unit must be a positive number (the resolution of the values), got {unit!r}")
    if unit is not None and query.kind in ("count", "kcount"):
        raise ValueError(f"--unit is the resolution of a column's values: it applies to sum, avg and percentile, not "
                         f"{query.kind}")
    if bounds is not None and query.kind in ("count", "kcount"):
        raise ValueError(f"--bounds is the declared range of a column's values: it applies to sum, avg and percentile, not "
                         f"{query.kind}")
    if skip_invalid and query.kind == "count":
        raise ValueError("--skip-invalid leaves out invalid values of the column a query aggregates: count has none (drop "
                         "--skip-invalid, or select rows with --where)")
    u = 1.0 if unit is None else float(unit)
    value_bounds = bounds
    if bounds is not None:
        lo, hi = bounds
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise ValueError(f"--bounds must be two numbers LO <= HI, got {lo:g},{hi:g}")
        glo, ghi = round(lo / u), round(hi / u)
        if abs(glo * u - lo) > 1e-9 * max(abs(lo), u) or abs(ghi * u - hi) > 1e-9 * max(abs(hi), u):
            raise ValueError(f"--bounds must be two integers LO <= HI, got {lo:g},{hi:g}" if unit is None else
                             f"--bounds must be multiples of --unit {u:g}, got {lo:g},{hi:g}")
        if max(abs(glo), abs(ghi)) >= 2**52:
            raise ValueError(f"--bounds {lo:g},{hi:g} span too many multiples of the unit {u:g} (at most 2^52)")
        bounds = (int(glo), int(ghi))  # from here on in units of u: the answers' integer grid
    if query.kind == "avg" and (group_by is not None or where or skip_invalid):
        raise ValueError("avg divides by the number of rows, which is public only for the whole table: with --group-by, "
                         "--where or --skip-invalid ask for sum and count instead (their ratio is a private average)")
    if query.kind == "kcount" and mechanism == "tight-constraints":
        raise ValueError("tight-constraints for a k-count lives on its answer graph: build it with `dprivacy design "
                         "kcount:U,K --mechanism tight-constraints`; here the counts get truncated geometric noise")
    if mechanism == "staircase" and not (query.kind in ("sum", "avg") and privacy == "standard"):
        raise ValueError(f"--mechanism staircase is for sum and avg under --privacy standard; for {query.name} under "
                         f"{privacy} use --mechanism auto")
    if mechanism in RANK_MECHANISMS and not (query.kind == "percentile" and privacy == "standard"):
        raise ValueError(f"--mechanism {mechanism} selects on ranks, for a percentile under --privacy standard; "
                         f"for {query.name} under {privacy} use --mechanism auto")
    if query.kind == "percentile" and privacy == "standard" and mechanism == "tight-constraints":
        raise ValueError("--mechanism tight-constraints is not available for a percentile under --privacy standard: a changed "
                         "row can move it across many answers, so its answer graph is not a path, nor the sum's graph "
                         "(ElSalamouny et al. 2014 §7.1), and depends on the table; use --mechanism auto (permute-and-flip on "
                         "ranks), or a metric on values (--privacy d1|normalized-d1|dinf), where the answers form a path")
    if prior is not None and mechanism == "tight-constraints" and not (query.kind in ("sum", "avg") and privacy == "standard"):
        raise ValueError("--prior with --mechanism tight-constraints is for sum and avg under --privacy standard (the region of "
                         "priors where it is optimal, ElSalamouny et al. 2014 Thm 4); elsewhere the mechanism is the truncated geometric, "
                         "optimal for every prior (drop --prior)")
    selected = bool(where) or group_by is not None
    con = _connect(table)
    try:
        _check_table_shape(con, table)
        try:
            cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {_relation(table)}").fetchall()]
        except duckdb.Error as exc:
            what = (f" as one CSV table (delimiter {_csv_dialect(table)[0]!r} from its header line, quotes \", every line with "
                    "the header's number of fields, UTF-8: a line of another shape?)" if _relation(table).startswith("read_csv") else "")
            raise _unreadable(table, exc, owner, what) from None
        for c in [query.column, group_by, *query.columns]:
            if c is not None and c not in cols:
                raise ValueError(f"unknown column {c!r}: the table's columns are {', '.join(cols)}")
        # A CSV's column types from public data only (_relation): under standard every column is protected and read
        # as text; under a metric on values the protected column is text and the others (public) are inferred.
        rel = _relation(table, text=None if privacy == "standard" else tuple(c for c in (query.column, *query.columns) if c))
        try:
            types = {r[0]: str(r[1]).upper() for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()}
        except duckdb.Error as exc:
            raise _unreadable(table, exc, owner) from None
        if group_by is not None and group_by in (query.column, *query.columns):
            # the keys are released exactly (treated as public): grouping by the column the query aggregates would
            # publish its distinct values (a caller could get every sale amount, the maximum included)
            raise ValueError(f"--group-by {group_by!r}: the group keys are released exactly (treated as public), so a query "
                             f"cannot group by the column it aggregates ({query.name}); group by a public column")
        if keys is not None and group_by is None:
            raise ValueError("--keys declares the group keys of --group-by: give --group-by COLUMN too")
        if group_by is not None and keys is None and privacy == "standard":
            raise ValueError(f"--group-by {group_by!r} under --privacy standard needs its group keys declared with --keys (e.g. "
                             f"--keys A,B,C or --keys @FILE, one key per line): every column of a row is protected there, so "
                             f"the distinct values of {group_by!r} in the table are not public (one row with a value of its own "
                             f"adds a key to the release)")
        if query.column is not None and any(t in types[query.column] for t in ("BLOB", "MAP", "STRUCT", "[]", "UNION")):
            raise ValueError(f"column {query.column!r} is a {types[query.column]}, not numeric: {query.name} needs numbers")
        where_sql = None
        if where is not None:
            compiled = bind_where(con, where, rel, types)
            where_sql, where = compiled.sql, where.strip()
        public_cols = sorted(set(compiled.columns if where is not None else ()) | ({group_by} if group_by is not None else set()))
        if privacy in VALUE_METRICS and query.column is not None and query.column.lower() in {c.lower() for c in public_cols}:
            raise ValueError(f"under --privacy {privacy} the columns of --where/--group-by are treated as public, but "
                             f"{query.column!r} is the protected column: filter or group by other columns, or use --privacy standard")
        # The condition is made total: a row on which it cannot be evaluated is not selected, instead of failing the
        # query with a message that could quote the row.
        sel = f"coalesce(try({where_sql}), false)" if where_sql else "TRUE"
        gexpr = _quote(group_by) if group_by is not None else None
        if keys is not None:
            _declare_keys(con, keys, group_by, types[group_by])
            # compared in the declared type: the same key whatever the reader made of the column's text
            gexpr = f"TRY_CAST({gexpr} AS {types[group_by]})"
        # One scan for the table size, the invalid values and the number of group keys. The values are checked
        # on the whole table, whatever --where selects: checked on the selection, the refusal (free, nothing
        # charged) told whoever chose the condition whether a row matched it, how many did and (quoted) a value.
        checks = ["count(*)"]
        if query.kind in ("sum", "avg", "percentile"):
            col = _quote(query.column)
            val = _as_double(col, types[query.column])
            bad = f"{col} IS NULL OR {val} IS NULL OR isnan({val})"
            checks.append(f"count(*) FILTER (WHERE {col} IS NOT NULL AND ({val} IS NULL OR isnan({val})))")
            checks.append(f"count(*) FILTER (WHERE {col} IS NULL)")
            # on the values as they are, not clamped to --bounds: clamped, the refusal counted the fractional values
            # strictly inside bounds the asker chose, for free (--bounds 41,42 told how many values lie in (41, 42))
            fraction = f"NOT ({bad}) AND {val} <> round({val})"
            checks.append(f"count(*) FILTER (WHERE {fraction})" if unit is None else "0")
        elif query.kind == "kcount":
            # a flag: true/false, or 0/1 in a numeric column (a 2 was counted as true); the rest is invalid
            flag_ok = {c: f"({_as_type(_quote(c), types[c], 'BOOLEAN')} IS NOT NULL"
                          + (f" AND {_quote(c)} IN (0, 1))" if _is_numeric(types[c]) else ")") for c in query.columns}
            bad = " OR ".join(f"NOT coalesce({flag_ok[c]}, false)" for c in query.columns)
            checks.append(f"count(*) FILTER (WHERE {bad})")
            checks += ["0", "0"]
        else:
            checks += ["0", "0", "0"]
        checks.append("1" if not gexpr else str(len(keys)) if keys is not None else
                      f"count(DISTINCT {gexpr}) + max(CASE WHEN {gexpr} IS NULL THEN 1 ELSE 0 END)")
        # Every column of every row is decoded in this first scan (hashed), whatever the query names: DuckDB reads only
        # the columns a query uses, so a cell that cannot be decoded (invalid UTF-8 or JSON, a timestamp out of range, a
        # CSV line in another encoding) made a query fail exactly when its condition named that column — a yes/no about
        # one row. Here it fails for every query on the table alike, refused as unreadable (a fact about the table).
        checks += [f"bit_xor(hash({_quote(c)}))" for c in types]

        def scan(sql: str, first: bool = False, numpy: bool = False):
            try:
                return con.execute(sql).fetchnumpy() if numpy else con.execute(sql).fetchall()
            except duckdb.InterruptException:
                raise KeyboardInterrupt from None
            except duckdb.Error as exc:
                if first:  # no --where in it: a failure here is the table's, the same for every query
                    raise _unreadable(table, exc, owner, ": a value in it cannot be decoded, or memory ran out") from None
                raise ScanFailed("the query failed while computing its answers (memory ran out, or a value could not be "
                                 "read)" + (f": {str(exc).splitlines()[0]}" if owner else ""),
                                 protected_column=query.column if privacy in VALUE_METRICS else None,
                                 public_columns=public_cols) from None

        got = scan(f"SELECT {', '.join(checks)} FROM {rel}", first=True)[0]
        total = int(got[0])
        wrong, empty, fractions = int(got[1]), int(got[2]), int(got[3])
        n_groups = int(got[4] or 0)
        invalid = wrong + empty
        # A refusal says which column and which kind of value, checked on the whole column whatever --where and --bounds
        # select, so that it is the same for every query on the column; the number and the first row are exact counts
        # of the data, for the owner only (an analyst read the number of discounted orders from one).
        if invalid and not skip_invalid:
            raise ValueError(invalid_values_message(query, wrong, empty, owner,
                                                    _first_bad_row(con, rel, bad) if owner else ""))
        if fractions:
            raise ValueError(fractional_values_message(query, fractions, owner,
                                                       _first_bad_row(con, rel, fraction) if owner else ""))
        plan = answer_plan(query, privacy, bounds, u, mechanism=mechanism, epsilon=eps, total=total, selected=selected,
                           skip_invalid=skip_invalid, group_by=group_by, n_groups=n_groups)
        # The answers: one aggregate pass, the selection as a FILTER, one row per group key of the whole table.
        if query.kind == "count":
            aggs = [f"count(*) FILTER (WHERE {sel})"]
            clamped = "0"
        elif query.kind == "kcount":
            # a value that is not a flag counts as null, not as true
            aggs = [f"count(*) FILTER (WHERE {sel} AND coalesce({flag_ok[c]} AND {_as_type(_quote(c), types[c], 'BOOLEAN')}, "
                    "false))" for c in query.columns]
            clamped = "0"
        else:
            lo, hi = bounds
            ok = f"{val} IS NOT NULL AND NOT isnan({val})"
            x = f"CAST(round(least(greatest({val} / {u!r}, {lo}), {hi})) AS BIGINT)"
            aggs = ["NULL" if plan.ranks else  # (the values of a selection on ranks are collected below)
                    f"quantile_disc({x}, {query.p / 100.0}) FILTER (WHERE {sel} AND {ok})" if query.kind == "percentile" else
                    f"coalesce(sum({x}) FILTER (WHERE {sel} AND {ok}), 0)"]
            clamped = f"count(*) FILTER (WHERE {sel} AND {ok} AND ({val} < {float(value_bounds[0])!r} OR {val} > {float(value_bounds[1])!r}))"
        if keys is not None:
            # one answer per declared key, in the order given (0, or the percentile's convention, where no row has it)
            names = [f"v{i}" for i in range(len(aggs))]
            empty = "a.{}" if query.kind == "percentile" else "coalesce(a.{}, 0)"
            sql = (f"WITH a AS (SELECT {gexpr} AS g, {', '.join(f'{e} AS {n}' for e, n in zip(aggs, names))}, {clamped} AS "
                   f"clamped FROM {rel} WHERE {gexpr} IN (SELECT g FROM dp_keys) GROUP BY 1) "
                   f"SELECT d.g, {', '.join(empty.format(n) for n in names)}, coalesce(a.clamped, 0) FROM dp_keys d "
                   f"LEFT JOIN a ON a.g = d.g ORDER BY d.i")
        elif gexpr:
            sql = f"SELECT {gexpr} AS g, {', '.join(aggs)}, {clamped} AS clamped FROM {rel} GROUP BY 1 ORDER BY 1 NULLS LAST"
        else:
            sql = f"SELECT NULL AS g, {', '.join(aggs)}, {clamped} AS clamped FROM {rel}"
        rows = scan(sql)
        # One released answer per group key (1 without --group-by): anything else is refused, never released.
        got_keys = [r[0] for r in rows]
        expected = n_groups if gexpr else 1
        if len(rows) != expected or len(set(map(repr, got_keys))) != len(got_keys):
            raise ValueError(f"refused: the query produced {len(rows)} answers where {expected} (one per group) were expected")
        if gexpr and not rows:
            raise ValueError("the table has no rows: there is no group to answer")
        # A percentile of an empty selection is LO by convention, and is released with noise like any other:
        # refusing it (as before) told anyone, for free and exactly, whether some row matched a --where. The
        # convention keeps Δ: under d_h the percentile already moves over LO..HI, and under a value metric
        # the selection is public, so the convention is a constant.
        rows = [(r[0], *(bounds[0] if v is None else v for v in r[1:-1]), r[-1]) if query.kind == "percentile" else r
                for r in rows]
        histograms = None
        if plan.ranks:  # a selection on ranks: each group's distinct clamped values with their counts
            from .table_percentile import collect_histograms

            histograms = collect_histograms(lambda sql: scan(sql, numpy=True), len(rows), rel=rel, sel=sel, x=x, ok=ok,
                                            group_expr=gexpr if keys is not None else None)
    finally:
        con.close()  # (DuckDB's memory and its spill folder go now, also when the query is refused)
    return release_answers(rows, plan, table=table, query=query, privacy=privacy, mechanism=mechanism,
                           value_bounds=value_bounds, unit=unit, where=where, group_by=group_by, keys=keys,
                           n_groups=n_groups, invalid=invalid, skip_invalid=skip_invalid, public_cols=public_cols,
                           prior=prior, rng=rng, confidence=confidence, histograms=histograms)


def release_answers(rows, plan: AnswerPlan, *, table: str, query: Query, privacy: str, mechanism: str, value_bounds,
                    unit, where, group_by, keys, n_groups: int, invalid: int, skip_invalid: bool, public_cols,
                    prior, rng, confidence: float = 0.95, histograms=None) -> QueryResult:
    """The released answers: ``rows`` are the exact answers, one per group key (key, value(s)..., number clamped), as
    the table's scan computed them (DuckDB, or Dask in :mod:`dprivacy.api`); noise from ``rng`` is added once.
    ``histograms``: for a selection on ranks (``plan.ranks``), each group's (sorted distinct clamped
    values, their counts) in lattice units, in the order of ``rows``."""
    from ..sampling import random_source
    from ..sampling.discrete import discrete_laplace, geometric_parameters

    eps, delta, theorem, optimal_thm, sum_graph = plan.epsilon, plan.delta, plan.theorem, plan.optimal_thm, plan.sum_graph
    factor, composition, eps_answer, lo_a, hi_a = plan.factor, plan.composition, plan.eps_answer, plan.lo_a, plan.hi_a
    step, total, u = plan.step, plan.total, plan.u
    k = len(query.columns)
    src = random_source(rng)
    if plan.ranks:
        from .table_percentile import rank_percentile

        if histograms is None or len(histograms) != len(rows):
            raise ValueError("a selection on ranks needs each group's values (histograms)")
        return rank_percentile(
            table, query, rows, histograms, src, mechanism=plan.ranks, eps=eps, eps_answer=eps_answer, factor=factor,
            bounds=(plan.lo_a, plan.hi_a), value_bounds=value_bounds, step=step, total=total, where=where,
            group_by=group_by, composition=composition, confidence=confidence, n_groups=n_groups,
            invalid=invalid if skip_invalid else 0, unit=unit)
    if sum_graph:
        res = _tight_sum(table, query, rows, src, eps=eps, eps_answer=eps_answer, factor=factor, delta=delta,
                         lo_a=lo_a, hi_a=hi_a, step=step, total=total, bounds=value_bounds, where=where, group_by=group_by,
                         theorem=theorem, composition=composition, confidence=confidence, prior=prior,
                         public_cols=public_cols, n_groups=n_groups, invalid=invalid if skip_invalid else 0,
                         max_answers=TIGHT_MAX_ANSWERS)
        res.unit = unit
        return res
    # Exact integer sampling (CKS 2020) at s/t ≤ ε_a/Δ: no floating-point step decides a released value.
    stair = plan.staircase
    if stair is not None:  # a sum or average under d_h: staircase noise (table_staircase), exact in integers too
        from ..sampling.discrete import staircase
        from .table_staircase import staircase_accuracy

        params, alpha = None, 0.0
        noise = staircase(len(rows), stair.delta, stair.r, stair.s, stair.t, src.generator).reshape(len(rows), 1)
    else:
        params = geometric_parameters(eps_answer, delta)
        alpha = params.alpha
        width = k if query.kind == "kcount" else 1
        noise = discrete_laplace(len(rows) * width, params.s, params.t, src.generator).reshape(len(rows), width)
    clamp = mechanism != "geometric"
    if stair is not None:
        mean, t = staircase_accuracy(stair, lo_a, hi_a, confidence=confidence)
        accuracy = ("exact for the staircase noise cut at the ends of the public range, and valid for every true answer in it: "
                    "'expected |error|' is the largest E|error| over the range (reached in its middle), 'within ±' the "
                    f"smallest t with P(|error| > t) ≤ {1 - confidence:g} for every true answer")
    elif clamp:
        mean, t = truncated_geometric_accuracy(alpha, lo_a, hi_a, confidence=confidence)
        accuracy = ("exact for the truncated geometric on the public range, and valid for every true answer in it: "
                    "'expected |error|' is the largest E|error| over the range (reached in its middle; smaller near the "
                    "ends), 'within ±' the smallest t with P(|error| > t) ≤ " f"{1 - confidence:g} for every true answer")
    else:
        mean, t = geometric_accuracy(alpha, confidence=confidence)
        accuracy = "exact for the (unclamped) two-sided geometric noise: E|K| = 2α/(1−α²), P(|K| > t) = 2α^{t+1}/(1+α)"
    remap = prior_err = None
    if mechanism == "optimal":
        if query.kind in ("kcount", "avg"):
            raise ValueError(f"--mechanism optimal is for count, sum and percentile answers, not {query.kind}")
        size = hi_a - lo_a + 1
        if size > OPTIMAL_MAX_ANSWERS:
            raise ValueError(f"--mechanism optimal: the answers range over {size:,} values, over the {OPTIMAL_MAX_ANSWERS:,} "
                             "on which the remap is computed; use the truncated geometric (auto)")
        pi, prior_note = _answer_prior(prior, size, lo_a, hi_a)
        chan = truncated_geometric_rows(alpha, lo_a, hi_a)
        remap, prior_err = bayes_remap_abs(chan, pi)
        mean, t, _ = remap_accuracy(chan, remap, confidence=confidence)
        remap = remap + lo_a
        accuracy = ("'E|error| under the prior' averages the remapped answer's |error| over the prior's answers: it is only "
                    "as true as the prior (a true answer the prior deems unlikely can be far off every time); 'expected "
                    "|error|' and 'within ±' are the worst case over every true answer in the range, computed exactly "
                    "from the channel: the figures to quote" + (f"; {prior_note}" if prior_note else ""))
    answers = []
    for row, kk in zip(rows, noise):
        grp, vals, n_clamped = row[0], row[1:-1], row[-1]
        ints = [int(v) for v in vals]
        if query.kind == "avg" and privacy == "dinf":
            ints = [(2 * s + total) // (2 * total) for s in ints]  # the mean rounded to the grid (nearest, ties up)
        out = [v + int(e) for v, e in zip(ints, kk)]
        if clamp:
            out = [min(max(o, lo_a), hi_a) for o in out]
        if remap is not None:
            out = [int(remap[o - lo_a]) for o in out]
        noisy = [_on_grid(o, step) for o in out] if query.kind == "kcount" else _on_grid(out[0], step)
        answers.append(GroupAnswer(grp, noisy, int(n_clamped), mean * step, t * step, confidence,
                                   None if prior_err is None else prior_err * step))
    used = {"auto": "truncated-geometric", "truncated-geometric": "truncated-geometric", "geometric": "geometric",
            "tight-constraints": "tight-constraints", "optimal": "truncated-geometric + Bayes remap"}.get(mechanism)
    if stair is not None:
        from .table_staircase import staircase_note

        used = "staircase"
        theorem += "; " + staircase_note(stair, eps_answer, delta)
    if query.kind == "percentile" and (where or group_by is not None or skip_invalid):
        theorem += "; a selection with no valid value has the percentile LO by convention (released with noise too)"
    if mechanism == "optimal":
        if optimal_thm:
            claim = ("the truncated geometric is universally optimal here (the theorem above), so followed by this remap it "
                     "minimises the prior's expected |error| over all mechanisms with the same privacy for this answer")
        else:
            claim = ("no universally optimal mechanism exists here (the theorem above), so this is the best remap of the "
                     "truncated geometric for the prior, not the optimal mechanism: the linear program on the answer space "
                     "(`dprivacy design ... --mechanism optimal`) can do better")
        theorem += ("; --mechanism optimal: the truncated geometric followed by the remap that minimises the expected |error| "
                    f"under the given prior (a weighted median of the posterior); {claim}")
    if mechanism == "tight-constraints":
        theorem += ("; the answers' constraint graph is a path here (a count, or a query uniformly Δ-sensitive on values, "
                    "Chatzikokolakis et al. 2013 Thm 6), and on a path the tight-constraints mechanism is the truncated geometric (ElSalamouny et al. 2014 "
                    "§6.1: z = (1−α)/(1+α) inside and 1/(1+α) at the ends), drawn here as such")
    elif mechanism == "geometric":
        theorem += "; --mechanism geometric: the same noise without clamping, so answers may fall outside the range"
    if privacy == "standard":
        neighbours, guarantee, _ = standard_statement(eps, total, group_by, n_groups)  # (composition: below)
    else:
        metric = {"normalized-d1": "d̃1 = Σ_rows |x − x'|/(HI − LO)", "d1": "d1 = Σ_rows |x − x'|",
                  "dinf": "d∞ = max_rows |x − x'|"}[privacy]
        col_name = query.column
        neighbours = (f"ε·{privacy}-privacy on the values of {col_name!r} ({metric}, nulls at distance HI − LO); the table "
                      f"size N = {total} and every other column are public")
        per = "" if unit is None or privacy == "normalized-d1" else f" (in units of {u:g})"
        guarantee = (f"ε = {eps:g} ({privacy}): two tables whose {col_name!r} values are at distance d{per} get every "
                     f"release with probabilities within a factor e^(ε·d)")
        if unit is not None:
            # the mechanism sees the values rounded to the unit: rounding moves two values at distance 0.02 units to
            # 1 unit apart, and e^1 is measured between such tables (3,000 draws): say so
            extra = {"d1": "d + k", "normalized-d1": f"d + k·{u:g}/(HI − LO)", "dinf": "d + 1"}[privacy]
            guarantee += (f", d measured on the values rounded to multiples of --unit {u:g} (what the mechanism sees); "
                          f"between the values as given, rounding adds up to one unit per changed row: the factor is "
                          f"at most e^(ε·({extra}))" + (" for k changed rows" if "k" in extra else ""))
    public = [f"N = {total} rows"]
    if privacy in VALUE_METRICS and public_cols:
        public.append(f"the columns used by --where/--group-by ({', '.join(public_cols)}) are treated as public: they are "
                      "NOT protected")
    if group_by is not None:
        public.append(_keys_public(group_by, n_groups, keys is not None))
    if composition:
        guarantee += "; " + composition
    delivered = (stair.delivered_epsilon if stair is not None else params.delivered_epsilon) * factor
    sampler = (f"exact discrete Laplace in integer arithmetic (Canonne, Kamath, Steinke 2020, Alg. 2) with "
               f"P(K = k) ∝ exp(−|k|·{params.s}/{params.t}), ε_a/Δ rounded down to a multiple of 2^-40"
               if stair is None else
               f"exact discrete staircase in integer arithmetic: |K| = G·Δ + J with G geometric of ratio exp(−{stair.s}/"
               f"{stair.t}) (Canonne, Kamath, Steinke 2020, Alg. 2 without its sign), J uniform on 0..Δ−1 kept if below "
               f"r = {stair.r} and otherwise with probability exp(−{stair.s}/{stair.t}) (exact bounded integers and "
               "Bernoulli(exp(−γ)), Alg. 1), a fair sign; ε_a rounded down to a multiple of 2^-40")
    res = QueryResult(display_name(table), query.name, privacy, used, eps, delta, value_bounds, where, group_by,
                      answers, src.to_dict(),
                      guarantee=guarantee, theorem=theorem, epsilon_spent=eps, delivered_epsilon=delivered,
                      sampler=sampler,
                      neighbours=neighbours, public="; ".join(public), epsilon_per_answer=eps_answer,
                      composition=composition, answer_range=(lo_a, hi_a), answer_step=step, noise_alpha=alpha,
                      accuracy=accuracy, universally_optimal=bool(optimal_thm and mechanism != "geometric"))
    res.rows_skipped_not_private = invalid if skip_invalid else 0
    res.unit = unit
    if stair is not None:
        res.staircase = {"delta": stair.delta, "r": stair.r, "b": stair.b, "expected_abs_error_unclamped": stair.expected_abs * step}
    if privacy in VALUE_METRICS:
        res.protected_column, res.public_columns = query.column, list(public_cols)
    return res


def _table_file(table) -> str:
    """The absolute path of a table file DuckDB is to read, refused when it is not one readable table file."""
    if os.path.isdir(table):  # (DuckDB's message named a disabled file system operation)
        raise ValueError(f"{table} is a folder: query reads one CSV or Parquet file (combine a folder of parts, e.g. the "
                         "Dask engine's output, into one file first)")
    check_table_file(table)
    if os.path.getsize(table) == 0:
        raise ValueError(f"{table} is empty (0 bytes): not a table (a CSV needs at least a header line)")
    table = os.path.abspath(table)
    if any(ch in table for ch in "*?[]{}"):
        # DuckDB reads such a name as a file pattern (it said "sniff_csv does not operate on more than one file yet",
        # or named another file)
        raise ValueError(f"{table}: a file name with *, ?, [ ], {{ }} is read by DuckDB as a pattern of file names: rename "
                         "or link the file without them")
    return table


def invalid_values_message(query, wrong: int, empty: int, owner: bool, first: str = "") -> str:
    """The refusal of a table whose column holds non-numeric or empty values (of a kcount's columns, non-boolean
    ones), checked on the whole table whatever --where selects: the counts and the first row only for the owner."""
    what = f"column {query.column!r}" if query.column else "columns " + ", ".join(map(repr, query.columns))
    expect = "numbers" if query.column else "true/false or 0/1 values"
    if query.column:
        parts = ([f"{wrong if owner else ''} non-numeric".strip()] if wrong else []) + \
            ([f"{empty if owner else ''} empty".strip()] if empty else [])
        found = f"{what} has {' and '.join(parts)} value(s) in the table (checked whatever --where selects)"
    else:
        found = (f"{what}: {wrong if owner else 'some'} row(s) of the table have a missing or non-boolean value "
                 "(checked whatever --where selects)")
    return (f"{found} (expected {expect}){first}; --skip-invalid leaves them out as null values and counts them"
            + ("" if owner else " (--owner: how many, and the first row)"))


def fractional_values_message(query, fractions: int, owner: bool, first: str = "") -> str:
    """The refusal of a column with values that are not whole numbers of the unit (the count and the first row only
    for the owner)."""
    return (f"column {query.column!r} has {str(fractions) + ' ' if owner else ''}value(s) in the table (checked "
            f"whatever --where and --bounds select) that are not whole numbers{first}: "
            "the answers are computed on a grid of whole units; give --unit, the values' resolution "
            "(e.g. --unit 0.01, or --unit 1 to round them to whole numbers)")
