"""Dask DataFrames in the data API: locations released per partition, as the Dask engine releases row groups.

Each partition is released by the same :class:`~dprivacy.data.locations.Obfuscator` as the local engine, on the
Dask DataFrame's own scheduler (threads, processes or a cluster), with the randomness of the Dask engine
(:mod:`dprivacy.data.dask_engine`): in release mode each partition draws from its own cryptographic source; with a
seed, each record's noise is a function of the seed and its ``key`` only, so that the output equals the local
engine's whatever the partitioning (a seed without a key is refused, as the output would depend on it).

The release is computed once and returned persisted: a lazy release would draw new noise each time it is
computed, and two releases of the same points spend ε twice.
"""

from __future__ import annotations

from .frames import ROW, OptionError, label


def _release_partition(pdf, ob, index: int, release: bool, lat_c: str, lon_c: str, rows: bool):
    """One partition released: (pandas frame, its counts)."""
    import pyarrow as pa

    from ..sampling import random_source
    from .frames import add_row_numbers, rebuild
    from .points import like_input, points_table

    table = points_table(pdf, "pandas", lat_c, lon_c)[0]
    if rows:
        table = add_row_numbers(table)
    if table.schema != ob.schema:
        try:
            table = table.cast(ob.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
            raise ValueError(f"{ob.input_name}: partition {index} has columns of other types than the frame's meta "
                             f"({table.schema.types} against {ob.schema.types})") from None
    batches = table.combine_chunks().to_batches()
    batch = batches[0] if batches else pa.RecordBatch.from_pylist([], schema=ob.schema)
    n = batch.num_rows
    batch, la, lo, rejected, msg = ob.validate(batch, 0, where=f"partition {index}: ")
    keys = None
    if ob.key is not None:
        from ..sampling.keyed import record_keys

        keys = record_keys(batch.column(ob.key))
    counts: dict = {}
    out = ob.apply(batch, la, lo, ob.generator(batch, random_source(None) if release else None), counts)
    got = {c: out.column(c).to_numpy(zero_copy_only=False) for c in (lat_c, lon_c)}
    if ob.coords == "semicircles":
        got = {c: like_input(v, pdf, "pandas", c) for c, v in got.items()}
    positions = out.column(ROW).to_numpy() if rows else None
    return rebuild(pdf, "pandas", positions, got), {"rows_read": n, "rows_written": out.num_rows,
                                                    "rows_rejected": rejected, "first_rejected": msg, "keys": keys,
                                                    "counts": counts}


def obfuscate_dask_frame(ddf, *, shuffle: bool, **common):
    """:func:`dprivacy.obfuscate` of a Dask DataFrame: (the released Dask DataFrame, persisted; DataResult)."""
    import operator

    import dask
    import dask.dataframe as dd

    from ..data.dask_engine import merge_part_results
    from ..data.locations import prepare_obfuscation, record_sampling, rejection_note
    from ..data.memory import ArrowInput, MemoryRelease
    from .frames import add_row_numbers, without_row_column
    from .points import location_result, points_table

    name = label("dask")
    if common["user"] is not None or common["budget"] is not None:
        raise OptionError("--user/--budget need the local engine: a user's reports are counted in file order")
    if common["rng"] is not None and common["key"] is None:
        raise OptionError("--seed with --engine dask needs --key COL (unique record keys): otherwise the output would "
                          "depend on how the file is split")
    if shuffle:
        raise OptionError("shuffle=True on a Dask DataFrame: release it unshuffled and shuffle the result on the "
                          "cluster by random keys, or release its Parquet files with engine='dask' and shuffle=True")
    rows = common["skip_invalid"]
    with without_row_column():
        # the checks of the columns and their types, made once on the frame's meta (a row of each dtype, made up)
        table, lat_c, lon_c, _ = points_table(ddf._meta_nonempty, "pandas", common.pop("lat"), common.pop("lon"))
        if rows:
            table = add_row_numbers(table)
        ob, report, src, _, _ = prepare_obfuscation(ArrowInput(table, name), MemoryRelease(name, []),
                                                    lat=lat_c, lon=lon_c, **common)
    ob.noise_parts = 1  # one thread per partition: the scheduler already takes the cores
    ob.input_name = name
    report.input = report.output = name
    if src.release:
        report.random_source = dict(report.random_source, per_task="each partition keys its own release source "
                                                                   "from the worker's OS")
    tasks = [dask.delayed(_release_partition, pure=False)(part, ob, i, src.release, lat_c, lon_c, rows)
             for i, part in enumerate(ddf.to_delayed())]
    done = dask.persist(*tasks)
    stats = dask.compute(*[dask.delayed(operator.getitem)(t, 1) for t in done])
    counts = merge_part_results(report, ob, stats, name)
    rejection_note(report)
    record_sampling(report, ob.release, counts)
    report.notes.append(f"Dask DataFrame: {len(tasks)} partitions, each released in one task")
    if not src.release:
        report.notes.append("reproducible run (seeded): NOT for release")
    meta = ddf._meta.copy()
    if ob.coords != "semicircles":
        meta = meta.astype({lat_c: "float64", lon_c: "float64"})
    frames = [dask.delayed(operator.getitem)(t, 0) for t in done]
    released = dd.from_delayed(frames, meta=meta, divisions=ddf.divisions if ddf.known_divisions else None,
                               verify_meta=False)
    return released, location_result(report)


# -------------------------------------------------------------------------------------------------
# query: the aggregates on Dask, the noise once
# -------------------------------------------------------------------------------------------------


def _partition_aggregates(pdf, spec: dict) -> dict:
    """The exact partial aggregates of one partition, computed by DuckDB on it: the row count, the invalid and
    fractional values of the query's column, and per group key the selected count, sum or value histogram and the
    number of values clamped (the same SQL expressions as :func:`dprivacy.data.tables.run_query`'s scan)."""
    from ..data.memory import ArrowInput
    from ..data.table_sql import _connect, _relation
    from ..data.tables import _declare_keys
    from .frames import to_arrow

    # the partition as run_query reads an in-memory table (the same column types as the meta's, no file)
    part = ArrowInput(to_arrow(pdf, "pandas"), "a partition")
    con = _connect(part)
    if spec["keys"] is not None:
        _declare_keys(con, spec["keys"], spec["group_by"], spec["key_type"])
    rel, sel, g = _relation(part), spec["sel"], spec["gexpr"] or "NULL"
    checks = con.execute(f"SELECT {', '.join(spec['checks'])} FROM {rel}").fetchone()
    where_keys = f" AND {g} IN (SELECT g FROM dp_keys)" if spec["keys"] is not None else ""
    groups = [r[0] for r in con.execute(f"SELECT DISTINCT {g} FROM {rel}").fetchall()] if spec["distinct"] else []
    if spec["kind"] == "percentile":
        # a histogram of the clamped values per group: a percentile is not a sum of partial percentiles
        hist = con.execute(f"SELECT {g}, {spec['x']}, count(*) FROM {rel} WHERE {sel} AND {spec['ok']}{where_keys} "
                           "GROUP BY 1, 2").fetchall()
        aggs = con.execute(f"SELECT {g}, {spec['clamped']} FROM {rel} WHERE TRUE{where_keys} GROUP BY 1").fetchall()
        return {"checks": checks, "groups": groups, "hist": hist, "aggs": aggs}
    aggs = con.execute(f"SELECT {g}, {', '.join(spec['aggs'])}, {spec['clamped']} FROM {rel} WHERE TRUE{where_keys} "
                       "GROUP BY 1").fetchall()
    return {"checks": checks, "groups": groups, "aggs": aggs}


def _merge(parts: list, spec: dict):
    """(table size, invalid values, fractions, the answer rows in run_query's order, and for a percentile each
    row's histogram: its sorted distinct clamped values and their counts, for a selection on ranks)."""
    import numpy as np

    import math

    total = sum(int(p["checks"][0]) for p in parts)
    wrong, empty, fractions = (sum(int(p["checks"][i] or 0) for p in parts) for i in (1, 2, 3))
    if spec["keys"] is not None:
        order = [("key", i) for i in range(len(spec["keys"]))]
    else:
        found = {k for p in parts for k in p["groups"]} if spec["distinct"] else {None}
        order = sorted((k for k in found if k is not None), key=lambda k: (k != k, k)) + ([None] if None in found else [])
    width = spec["width"]
    sums: dict = {}
    clamped: dict = {}
    hist: dict = {}
    for p in parts:
        for row in p["aggs"]:
            key = row[0]
            vals = row[1:-1] if spec["kind"] != "percentile" else ()
            acc = sums.setdefault(_k(key), [0] * width)
            for i, v in enumerate(vals):
                acc[i] += int(v or 0)
            clamped[_k(key)] = clamped.get(_k(key), 0) + int(row[-1] or 0)
        for key, x, n in p.get("hist", ()):
            h = hist.setdefault(_k(key), {})
            h[x] = h.get(x, 0) + int(n)
    rows, histograms = [], []
    for key in (spec["keys_typed"] if spec["keys"] is not None else order):
        vals: list = sums.get(_k(key), [0] * width)
        if spec["kind"] == "percentile":
            h = hist.get(_k(key), {})
            xs = sorted(h)
            histograms.append((np.array(xs, dtype=np.int64), np.array([h[x] for x in xs], dtype=np.int64)))
            n = sum(h.values())
            if n == 0:
                vals = [None]
            else:  # DuckDB's quantile_disc: the value of rank ceil(q·n) − 1 (from 0) among the sorted values
                rank, seen = max(0, math.ceil(spec["q"] * n) - 1), 0
                for x in sorted(h):
                    seen += h[x]
                    if seen > rank:
                        vals = [x]
                        break
        rows.append((key, *vals, clamped.get(_k(key), 0)))
    return total, wrong, empty, fractions, rows, histograms


def _k(key):
    """A group key as a dict key (NaN equal to itself)."""
    return ("nan",) if isinstance(key, float) and key != key else key


def query_dask_frame(ddf, q, *, epsilon, bounds, where, group_by, privacy, rng, mechanism, skip_invalid, prior, unit,
                     keys, owner, status):
    """:func:`dprivacy.query` of a Dask DataFrame: every refusal of the arguments and the schema is
    :func:`~dprivacy.data.tables.run_query`'s own (run on the frame's meta, a made-up row of each dtype, whose answer
    is discarded); the partial aggregates are computed per partition on the frame's scheduler, merged, and released
    by :func:`~dprivacy.data.tables.release_answers`, with the noise drawn once."""
    import dask

    from ..data.condition import compile_condition
    from ..data.memory import ArrowInput
    from ..data.table_sql import _connect, _relation
    from ..data.tables import _as_double, _as_type, _is_numeric, _quote, answer_plan, release_answers, run_query
    from .frames import to_arrow

    name = label("dask")
    options = dict(epsilon=epsilon, bounds=bounds, where=where, group_by=group_by, privacy=privacy, mechanism=mechanism,
                   skip_invalid=skip_invalid, prior=prior, unit=unit, keys=keys, owner=owner)
    probe = ArrowInput(to_arrow(ddf._meta_nonempty, "pandas"), name)
    run_query(probe, q, rng=0, **options)  # the refusals of the arguments and the schema, on made-up rows
    con = _connect(probe)
    types = {r[0]: str(r[1]).upper() for r in con.execute(f"DESCRIBE SELECT * FROM {_relation(probe)}").fetchall()}
    con.close()
    u = 1.0 if unit is None else float(unit)
    value_bounds = bounds
    if bounds is not None:
        bounds = (int(round(bounds[0] / u)), int(round(bounds[1] / u)))
    compiled = compile_condition(where, types) if where is not None else None
    sel = f"coalesce(try({compiled.sql}), false)" if compiled is not None else "TRUE"
    gexpr = _quote(group_by) if group_by is not None else None
    if keys is not None:
        gexpr = f"TRY_CAST({gexpr} AS {types[group_by]})"
    spec = {"kind": q.kind, "keys": keys, "group_by": group_by, "key_type": types.get(group_by), "sel": sel,
            "gexpr": gexpr, "distinct": gexpr is not None and keys is None, "width": max(1, len(q.columns)),
            "q": (q.p or 0) / 100.0, "checks": ["count(*)"], "aggs": [], "clamped": "0"}
    if q.kind in ("sum", "avg", "percentile"):
        col = _quote(q.column)
        val = _as_double(col, types[q.column])
        bad = f"{col} IS NULL OR {val} IS NULL OR isnan({val})"
        spec["checks"] += [f"count(*) FILTER (WHERE {col} IS NOT NULL AND ({val} IS NULL OR isnan({val})))",
                           f"count(*) FILTER (WHERE {col} IS NULL)",
                           f"count(*) FILTER (WHERE NOT ({bad}) AND {val} <> round({val}))" if unit is None else "0"]
        ok = f"{val} IS NOT NULL AND NOT isnan({val})"
        x = f"CAST(round(least(greatest({val} / {u!r}, {bounds[0]}), {bounds[1]})) AS BIGINT)"
        spec.update(ok=ok, x=x, aggs=[f"coalesce(sum({x}) FILTER (WHERE {sel} AND {ok}), 0)"],
                    clamped=f"count(*) FILTER (WHERE {sel} AND {ok} AND ({val} < {float(value_bounds[0])!r} OR "
                            f"{val} > {float(value_bounds[1])!r}))")
    elif q.kind == "kcount":
        flag = {c: f"({_as_type(_quote(c), types[c], 'BOOLEAN')} IS NOT NULL"
                   + (f" AND {_quote(c)} IN (0, 1))" if _is_numeric(types[c]) else ")") for c in q.columns}
        spec["checks"] += [f"count(*) FILTER (WHERE {' OR '.join(f'NOT coalesce({flag[c]}, false)' for c in q.columns)})",
                           "0", "0"]
        spec["aggs"] = [f"count(*) FILTER (WHERE {sel} AND coalesce({flag[c]} AND "
                        f"{_as_type(_quote(c), types[c], 'BOOLEAN')}, false))" for c in q.columns]
    else:
        spec["checks"] += ["0", "0", "0"]
        spec["aggs"] = [f"count(*) FILTER (WHERE {sel})"]
    if keys is not None:  # the declared keys in the column's type, as DuckDB reads them (run_query's dp_keys)
        import duckdb

        con = duckdb.connect()
        from ..data.tables import _declare_keys

        _declare_keys(con, keys, group_by, types[group_by])
        spec["keys_typed"] = [r[0] for r in con.execute("SELECT g FROM dp_keys ORDER BY i").fetchall()]
        con.close()
    st = (status or (lambda text, timed: _Quiet()))(f"query {q.name} on {name}", True)
    try:
        parts = dask.compute(*[dask.delayed(_partition_aggregates)(p, spec) for p in ddf.to_delayed()])
    finally:
        st.stop()
    total, wrong, empty, fractions, rows, histograms = _merge(list(parts), spec)
    _check_values(q, wrong, empty, fractions, skip_invalid, owner)
    n_groups = len(rows) if gexpr is not None else 1
    if gexpr is not None and not rows:
        raise ValueError("the table has no rows: there is no group to answer")
    if q.kind == "percentile":
        rows = [(r[0], *(bounds[0] if v is None else v for v in r[1:-1]), r[-1]) for r in rows]
    public_cols = sorted(set(compiled.columns if compiled is not None else ()) | ({group_by} if group_by else set()))
    plan = answer_plan(q, privacy, bounds, u, mechanism=mechanism, epsilon=epsilon, total=total,
                       selected=bool(where) or group_by is not None, skip_invalid=skip_invalid, group_by=group_by,
                       n_groups=n_groups)
    res = release_answers(rows, plan, histograms=histograms if plan.ranks else None, table=name, query=q,
                          privacy=privacy, mechanism=mechanism,
                          value_bounds=value_bounds, unit=unit, where=where.strip() if where else where,
                          group_by=group_by, keys=keys, n_groups=n_groups, invalid=wrong + empty,
                          skip_invalid=skip_invalid, public_cols=public_cols, prior=prior, rng=rng)
    res.table = name
    return res


def _check_values(q, wrong: int, empty: int, fractions: int, skip_invalid: bool, owner: bool) -> None:
    """run_query's refusals of invalid and fractional values, on the whole table (the first row is not named: a Dask
    DataFrame has no file order to name it by)."""
    from ..data.tables import fractional_values_message, invalid_values_message

    if (wrong or empty) and not skip_invalid:
        raise ValueError(invalid_values_message(q, wrong, empty, owner))
    if fractions:
        raise ValueError(fractional_values_message(q, fractions, owner))


class _Quiet:
    def stop(self) -> None:
        pass
