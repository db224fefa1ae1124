r"""Obfuscation on a Dask cluster, one task per Parquet row group (the optional extra ``dprivacy[dask]``).

Each task reads its row group with pyarrow, runs the same :class:`~dprivacy.data.locations.Obfuscator`
as the local engine and writes ``part-NNNNN.parquet`` into a temporary folder beside OUTPUT; the folder
is renamed to OUTPUT when every task has succeeded, so a failure leaves nothing at OUTPUT. Types pass
through pyarrow untouched (no pandas round trip). Workers must see the input and output paths (one
machine, or a shared file system).

Randomness: in release mode every task draws from its own cryptographic source (keyed from the
worker's OS). With ``--seed S --key COL`` each record's noise is a function of S and its key only
(:mod:`dprivacy.sampling.keyed`), so the output equals the local engine's record for record whatever
the partitioning; a seed without a key is refused here, because the output would then depend on how
the file is split.

Row order (``shuffle``): each released row gets a 128-bit sort key — from the task's cryptographic
source, or in research mode from (seed, record key) only — and goes to the part whose range of keys
holds it (the parts split the key range evenly, one per SHUFFLE_PART_ROWS rows); a second task per part sorts
its rows by key. The release, read part by part, is the rows sorted by iid uniform keys: a uniform
random permutation of them, whatever the input order (ties have probability below n²/2^129).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path


def _parquet_pieces(path: Path) -> list[tuple[str, int]]:
    """(file, row group) for every row group of a Parquet file or of the .parquet files of a folder."""
    import pyarrow.parquet as pq

    from .._system import check_input_file

    files = sorted(str(p) for p in path.rglob("*.parquet")) if path.is_dir() else [str(path)]
    if not files:
        raise ValueError(f"no .parquet files in {path}")
    for f in files:  # (a FIFO named part.parquet would be waited on for ever)
        check_input_file(f, f"the Parquet part of {path}")
    return [(f, g) for f in files for g in range(pq.ParquetFile(f).num_row_groups)]


def _run_piece(ob, piece: tuple[str, int], index: int, folder: str, release: bool, buckets: int = 0,
               seed: int | None = None) -> dict:
    """One task: obfuscate row group ``piece`` and write it as part ``index``; return its counts. With ``buckets``
    (> 0, a shuffled release) the rows go instead to ``folder/stage/pIIIII-bBBBBB-ATTEMPT.parquet`` by their sort keys
    (:func:`_order_keys`), with the keys beside them (``.npy``), for :func:`_merge_bucket`; ``staged`` in the result
    maps each bucket to its file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..sampling import random_source

    t0 = time.perf_counter()
    f, g = piece
    table = pq.ParquetFile(f).read_row_group(g)
    if table.schema != ob.schema:
        table = table.cast(ob.schema)
    batch = table.combine_chunks().to_batches()
    batch = batch[0] if batch else pa.RecordBatch.from_pylist([], schema=ob.schema)
    n = batch.num_rows
    where = f"{Path(f).name} row group {g}: "
    batch, la, lo, rejected, msg = ob.validate(batch, 0, where=where)
    keys = None
    if ob.key is not None:
        from ..sampling.keyed import record_keys

        keys = record_keys(batch.column(ob.key))
    counts: dict = {}  # this task's own counts (the mechanism object may be shared by tasks on one worker)
    # every step in this task's thread: the workers' threads already take the cores (as ob.noise_parts = 1)
    out = ob.plan(batch, la, lo, ob.generator(batch, random_source(None) if release else None), counts)(parallel=False)
    table = pa.Table.from_batches([out], schema=ob.out_schema).replace_schema_metadata(_part_metadata(ob, release))
    staged: dict = {}
    if buckets:
        import uuid

        import numpy as np

        k0, k1 = _order_keys(out.num_rows, keys, seed, release)
        where_to = _bucket_of(k0, buckets)
        order = np.argsort(where_to, kind="stable")
        cuts = np.searchsorted(where_to[order], np.arange(buckets + 1))
        # a name of this attempt's own: a task Dask runs again (a worker lost) never mixes with a lost attempt's files,
        # and the merges read only the files the attempts that returned list
        attempt = uuid.uuid4().hex
        for b in np.flatnonzero(np.diff(cuts)):
            sel = order[cuts[b]:cuts[b + 1]]
            base = os.path.join(folder, "stage", f"p{index:05d}-b{int(b):05d}-{attempt}")  # stage/ made by the client:
            _write_part(ob, table.take(pa.array(sel)), base + ".parquet")                # a removed folder is not remade
            np.save(base + ".npy", np.stack([k0[sel], k1[sel]]))
            staged[int(b)] = base
    else:
        _write_part(ob, table, os.path.join(folder, f"part-{index:05d}.parquet"))
    from .locations import sorted_by

    return {"rows_read": n, "rows_written": out.num_rows, "rows_rejected": rejected, "first_rejected": msg, "keys": keys,
            "seconds": time.perf_counter() - t0, "started": t0, "staged": staged, "counts": counts,
            "sorted": sorted_by(la, lo) if index == 0 and not buckets else None}


def _write_part(ob, table, path: str) -> None:
    """A Parquet part, encoded as the local engine writes (:class:`~.io.AtomicWriter`): the released coordinates
    without a dictionary (nearly every value distinct), the other columns' dictionaries stopped at
    :data:`~.io.PARQUET_DICTIONARY_BYTES`."""
    import pyarrow.parquet as pq

    from .io import PARQUET_DICTIONARY_BYTES

    plain = {ob.lat_c, ob.lon_c}
    pq.write_table(table, path, use_dictionary=[n for n in table.schema.names if n not in plain],
                   dictionary_pagesize_limit=PARQUET_DICTIONARY_BYTES)


#: A shuffled release has one part per this many rows (at least one part): the first tasks write a file per part
#: they have rows for, so with as many parts as row groups their number would grow as its square (200 row groups
#: of 1,000 rows: 79,320 files, 144.5 s against 5.5 s unshuffled).
SHUFFLE_PART_ROWS = 1_000_000


def _shuffle_parts(pieces) -> int:
    """The number of parts of a shuffled release, from the row groups' sizes in the Parquet metadata."""
    import pyarrow.parquet as pq

    rows = sum(pq.ParquetFile(f).metadata.row_group(g).num_rows for f, g in pieces)
    return max(1, -(-rows // SHUFFLE_PART_ROWS))


def _part_metadata(ob, release: bool):
    """The parts' schema metadata: a seeded part says so itself (a part read without the sidecar looked like a
    release)."""
    meta = ob.out_schema.metadata
    if not release:
        from ..sampling.source import NOT_FOR_RELEASE
        from .io import NOTICE_KEY

        meta = {**(meta or {}), NOTICE_KEY: NOT_FOR_RELEASE.encode()}
    return meta


def _order_keys(rows: int, keys, seed: int | None, release: bool):
    """Two uint64 words per released row: iid uniform from a fresh cryptographic source (release), or from
    (seed, record key) only in research mode (:func:`dprivacy.sampling.keyed.record_order_keys`), so that the order
    depends neither on the partitioning nor on the engine."""
    import numpy as np

    if release:
        from ..sampling import random_source

        g = random_source(None).generator
        k = g.integers(0, np.iinfo(np.uint64).max, size=(2, rows), dtype=np.uint64, endpoint=True)
        return k[0], k[1]
    from ..sampling.keyed import record_order_keys

    return record_order_keys(seed, keys)


def _bucket_of(k0, buckets: int):
    """The part of each key: ⌊k0·B / 2^64⌋, monotone in the key, so that parts read in order are the rows sorted by
    key (computed on the top 32 bits: B < 2^32)."""
    import numpy as np

    return ((k0 >> np.uint64(32)) * np.uint64(buckets)) >> np.uint64(32)


def _merge_bucket(folder: str, b: int, bases: list, schema) -> int:
    """Second task of a shuffled release: the rows of part ``b`` staged by the first tasks (``bases``: their files
    without the suffix), sorted by their keys (lexicographic on the two words), written as ``part-b`` (empty parts
    too, so that a release always has one part per bucket); returns its row count. It removes nothing, so Dask may
    run it again."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(folder, f"part-{b:05d}.parquet")
    if not bases:
        pq.write_table(schema.empty_table(), path)
        return 0
    table = pa.concat_tables([pq.read_table(f + ".parquet") for f in bases])
    keys = np.concatenate([np.load(f + ".npy") for f in bases], axis=1)
    order = np.lexsort((keys[1], keys[0]))
    pq.write_table(table.take(pa.array(order)).replace_schema_metadata(schema.metadata), path)
    return table.num_rows


def _remove_tree(path: Path, *, tries: int = 50) -> None:
    """Remove a folder that tasks of a remote cluster may still be writing into (a cancelled task runs to its end):
    retried for up to about 5 s, never raising (the caller is handling another error or an interrupt)."""
    for _ in range(tries):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.1)


def obfuscate_dask(input_path, output_path, *, scheduler: str | None = None, workers: int = 2, force: bool = False,
                   progress=None, shuffle: bool = False, **kwargs):
    """:func:`dprivacy.data.locations.obfuscate_file` on Dask: ``scheduler`` is the address of an
    existing cluster (``tcp://host:8786``); without it a LocalCluster of ``workers`` processes is
    started and closed. OUTPUT is a folder of Parquet parts (name it ``*.parquet``). ``kwargs`` as for
    ``obfuscate_file`` (no ``user``/``budget``: a user's reports are counted in file order, which
    parallel tasks do not have). ``shuffle``: the rows released in a uniform random order over all parts
    (module docstring), in two stages of tasks; ``progress(done, total)`` counts the tasks of both."""
    from .commit import commit_new, fresh_temp_name, release_commit
    from .io import check_input_file, check_sidecar, commit_sidecar, file_format, removed_unless_completed
    from .locations import prepare_obfuscation

    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("--engine dask needs the optional extra: pip install 'dprivacy[dask]'") from None
    t0 = time.perf_counter()
    inp, out = Path(input_path), Path(output_path)
    if scheduler is None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        # a LocalCluster of 0 workers would wait for ever, silently
        raise ValueError(f"--workers must be a whole number ≥ 1 (the LocalCluster's worker processes), got {workers!r}")
    if kwargs.get("user") is not None or kwargs.get("budget") is not None:
        raise ValueError("--user/--budget need the local engine: a user's reports are counted in file order")
    if kwargs.get("rng") is not None and kwargs.get("key") is None:
        raise ValueError("--seed with --engine dask needs --key COL (unique record keys): otherwise the output would depend "
                         "on how the file is split")
    check_input_file(inp, "input", folder=True)  # (a FIFO or a device: refused before it is opened)
    if inp.is_file() and file_format(inp) != "parquet":
        raise ValueError(f"--engine dask reads Parquet (a file or a folder of .parquet files), got {inp}")
    if file_format(out) != "parquet":
        raise ValueError(f"--engine dask writes a folder of Parquet parts: name OUTPUT *.parquet, got {out}")
    if out.exists() and not force:
        raise FileExistsError(f"output {out} exists; use --force to replace it")
    check_sidecar(inp, out, force=force)
    if not out.parent.exists():
        raise FileNotFoundError(f"output folder {out.parent} does not exist")
    pieces = _parquet_pieces(inp)
    first = pieces[0][0]
    ob, report, src, _, _ = prepare_obfuscation(first, out, **kwargs)
    ob.noise_parts = 1  # one thread per task: the workers already take the cores
    report.input = inp.name
    if src.release:
        report.random_source = dict(report.random_source, per_task="each task keys its own release source from the worker's OS")
    held = contextlib.ExitStack()
    old = None
    tmp = fresh_temp_name(out)  # (the name before the folder: an interrupt at any point removes what was made)
    try:
        tmp.mkdir()
        cluster = client = None
        futures: list = []
        interrupted = False
        saved_levels = _quiet_loggers() if scheduler is None else {}
        known = _clusters()
        try:
            if scheduler is None:
                # Ctrl-C in a terminal (or `timeout -s INT`) reaches the whole process group: each worker
                # process would print its own traceback, and Dask's loggers the teardown. The workers
                # inherit a standard error sent to the null device (their failures come back to us as the
                # tasks' exceptions), and Dask's loggers here say nothing below CRITICAL during the run.
                with _stderr_to_null(), dask.config.set(_worker_environ()):
                    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                           silence_logs=logging.CRITICAL)
                    client = Client(cluster)
            else:
                client = Client(scheduler)
            buckets = _shuffle_parts(pieces) if shuffle else 0
            if buckets:
                (tmp / "stage").mkdir()
            seed = None if src.release else ob.seed
            tasks = [dask.delayed(_run_piece)(ob, p, i, str(tmp), src.release, buckets, seed) for i, p in enumerate(pieces)]
            futures = client.compute(tasks)
            from distributed import as_completed

            total = len(futures) + buckets
            done = 0
            for _ in as_completed(futures):
                done += 1
                if progress is not None:
                    progress(done, total)
            results = client.gather(futures)
            futures = []  # released: a first task is not run again once its files are listed
            if buckets:
                schema = ob.out_schema.with_metadata(_part_metadata(ob, src.release))
                futures = client.compute([dask.delayed(_merge_bucket)(str(tmp), b, [r["staged"][b] for r in results
                                                                                     if b in r["staged"]], schema)
                                          for b in range(buckets)])
                for _ in as_completed(futures):
                    done += 1
                    if progress is not None:
                        progress(done, total)
                merged = sum(client.gather(futures))
                if merged != sum(r["rows_written"] for r in results):  # (every staged row is in one part)
                    raise RuntimeError(f"the shuffle wrote {merged:,} rows of {sum(r['rows_written'] for r in results):,}")
                _remove_tree(tmp / "stage")
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            if client is not None and scheduler is not None:  # a remote cluster's tasks would go on writing into tmp
                with contextlib.suppress(Exception):
                    client.cancel(futures)
            _shutdown(client, cluster, quiet=interrupted, started=_clusters() - known)
            if not interrupted:  # after Ctrl-C the process is ending: Dask's loggers stay silent to the end
                _restore_loggers(saved_levels)
        counts = merge_part_results(report, ob, results, inp)
        # from the move to the sidecar other runs into this folder wait and so does a signal, so a release is never
        # paired with another run's sidecar; the old release goes after the sidecar
        held.enter_context(release_commit(out))
        os.chmod(tmp, 0o777 & ~_umask())
        if force and out.exists():
            old = fresh_temp_name(out, ".old")
            old.mkdir()
            os.replace(out, old / "x")
            os.replace(tmp, out)
        else:  # (a folder renamed onto an empty folder replaces it: commit_new fails if anything is at OUTPUT)
            commit_new(tmp, out, force=force)
    except BaseException:
        _remove_tree(tmp)
        if old is not None:
            if not out.exists() and (old / "x").exists():  # the old release back where it was
                os.replace(old / "x", out)
            shutil.rmtree(old, ignore_errors=True)
        held.close()
        raise
    try:
        with removed_unless_completed(out):
            report.seconds = time.perf_counter() - t0
            from .locations import record_sampling, rejection_note, sorted_note_text

            rejection_note(report)
            record_sampling(report, ob.release, counts)
            if shuffle:
                report.shuffled = True
                report.notes.append("rows released in a random order (--shuffle: sorted by 128-bit keys " +
                                    ("from each task's cryptographic source" if src.release else "from the seed and the record key")
                                    + "; the parts are ranges of the keys)")
            found = next((r["sorted"] for r in results if r.get("sorted")), None)
            if found is not None:  # (read on the first part: the order of the parts is the input's)
                report.owner_notes.append(sorted_note_text(*found))
            # (the scheduler's address names the owner's machines: not in the sidecar, which travels with the release)
            report.notes.append(f"Dask engine: {len(pieces)} row groups, " + ("an existing cluster (--scheduler)" if scheduler
                                                                              else f"LocalCluster of {workers} workers"))
            if not src.release:
                report.notes.append("reproducible run (seeded): NOT for release")
            commit_sidecar(out, report.to_dict())
    finally:
        if old is not None:  # the previous release (replaced under --force)
            shutil.rmtree(old, ignore_errors=True)
        held.close()  # a signal that waited is delivered here, once the release is complete (or removed)
    return report


def _worker_environ() -> dict:
    """Dask configuration for the LocalCluster's workers: glibc keeps batch-sized arrays in the heap, as in the command
    line's own process (:func:`dprivacy._system.keep_batch_arrays_in_the_heap`). Dask sets MALLOC_TRIM_THRESHOLD_ to
    64 KiB for its workers (freed memory back to the system at once), which also fixes glibc's mmap threshold at
    128 KiB: every array of a task was mapped afresh, 210,000 page faults and 0.4 s of system time per task of
    500,000 points against 300 and 0.02 s with these values (measured), the task's CPU 0.54 s against 0.13 s."""
    import dask

    from .._system import HEAP_MMAP_THRESHOLD, HEAP_TRIM_THRESHOLD

    key = "distributed.nanny.pre-spawn-environ"
    env = dict(dask.config.get(key, default={}) or {})
    env.update(MALLOC_MMAP_THRESHOLD_=HEAP_MMAP_THRESHOLD, MALLOC_TRIM_THRESHOLD_=HEAP_TRIM_THRESHOLD)
    return {key: env}


_LOGGERS = ("distributed", "tornado", "asyncio", "bokeh")


def _quiet_loggers() -> dict:
    saved = {}
    for name in _LOGGERS:
        lg = logging.getLogger(name)
        saved[name] = lg.level
        lg.setLevel(logging.CRITICAL)
    return saved


def _restore_loggers(saved: dict) -> None:
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def _stderr_to_null():
    """File descriptor 2 on the null device while the body runs (processes started meanwhile keep it)."""
    try:
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        os.close(null)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _clusters() -> set:
    """The LocalClusters alive in this process (Dask's registry, closed by its exit hook)."""
    try:
        from distributed.deploy.spec import SpecCluster

        return set(SpecCluster._instances)
    except Exception:  # noqa: BLE001
        return set()


def _shutdown(client, cluster, *, quiet: bool, started=()) -> None:
    """Close the client and the LocalCluster; after an interrupt quickly and silently (a second Ctrl-C
    meanwhile is ignored), and unregistered, so that Dask's exit hook has nothing left to report."""
    if not quiet:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        return
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if threading.current_thread() is threading.main_thread() else None
    try:
        with _stderr_to_null():
            with contextlib.suppress(BaseException):
                if client is not None:
                    client.close(timeout=2)
            # the cluster, or one interrupted while it started (then it is only in Dask's registry)
            for c in {cluster, *started} - {None}:
                with contextlib.suppress(BaseException):
                    c.close(timeout=5)
                with contextlib.suppress(BaseException):
                    from distributed.deploy.spec import SpecCluster

                    SpecCluster._instances.discard(c)
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def merge_part_results(report, ob, results, name) -> dict:
    """Add the parts' counts to ``report`` (rows read, written, rejected, the first rejected) and return the sampler's
    counts; refuse an input with no rows or no releasable row, and keyed noise whose keys repeat across parts."""
    import numpy as np

    from .locations import add_counts

    counts: dict = {}
    for r in results:
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
        keys = np.sort(np.concatenate([r["keys"] for r in results if r["keys"] is not None]))
        if (keys[1:] == keys[:-1]).any():
            raise ValueError(f"key column {ob.key!r} has repeated values; keyed noise needs unique keys")
    return counts
