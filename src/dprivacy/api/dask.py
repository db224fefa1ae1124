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
    from .locations import _like, points_table

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
        got = {c: _like(v, pdf, "pandas", c) for c, v in got.items()}
    positions = out.column(ROW).to_numpy() if rows else None
    return rebuild(pdf, "pandas", positions, got), {"rows_read": n, "rows_written": out.num_rows,
                                                    "rows_rejected": rejected, "first_rejected": msg, "keys": keys,
                                                    "counts": counts}


def obfuscate_dask_frame(ddf, *, shuffle: bool, **common):
    """:func:`dprivacy.obfuscate` of a Dask DataFrame: (the released Dask DataFrame, persisted; DataResult)."""
    import operator

    import dask
    import dask.dataframe as dd
    import numpy as np

    from ..data.locations import add_counts, prepare_obfuscation, record_sampling, rejection_note
    from .frames import add_row_numbers, scratch, write_parquet
    from .locations import _result, points_table

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
    with scratch(name) as s:
        # the checks of the columns and their types, made once on the frame's meta (a row of each dtype, made up)
        table, lat_c, lon_c, _ = points_table(ddf._meta_nonempty, "pandas", common.pop("lat"), common.pop("lon"))
        if rows:
            table = add_row_numbers(table)
        write_parquet(table, s.path("input.parquet"))
        ob, report, src, _, _ = prepare_obfuscation(s.path("input.parquet"), s.path("released.parquet"),
                                                    lat=lat_c, lon=lon_c, **common)
    ob.noise_parts = 1  # one thread per partition: the scheduler already takes the cores
    ob.input_name = name
    report.input = report.output = name
    if src.release:
        report.random_source = dict(report.random_source, per_task="each partition keys its own ChaCha20 from the "
                                                                   "worker's OS")
    tasks = [dask.delayed(_release_partition, pure=False)(part, ob, i, src.release, lat_c, lon_c, rows)
             for i, part in enumerate(ddf.to_delayed())]
    done = dask.persist(*tasks)
    stats = dask.compute(*[dask.delayed(operator.getitem)(t, 1) for t in done])
    counts: dict = {}
    for r in stats:
        add_counts(counts, r["counts"])
        report.rows_read += r["rows_read"]
        report.rows_written += r["rows_written"]
        report.rows_rejected += r["rows_rejected"]
        report.first_rejected = report.first_rejected or r["first_rejected"]
    if report.rows_read == 0:
        raise ValueError(f"{name} has no rows to obfuscate")
    if report.rows_written == 0:
        raise ValueError(f"none of the {report.rows_read:,} rows of {name} could be released ({report.rows_rejected} "
                         f"rejected, the first: {report.first_rejected})")
    if ob.key is not None:
        keys = np.sort(np.concatenate([r["keys"] for r in stats if r["keys"] is not None]))
        if (keys[1:] == keys[:-1]).any():
            raise ValueError(f"key column {ob.key!r} has repeated values; keyed noise needs unique keys")
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
    return released, _result(report)
