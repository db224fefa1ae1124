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
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path


def _parquet_pieces(path: Path) -> list[tuple[str, int]]:
    """(file, row group) for every row group of a Parquet file or of the .parquet files of a folder."""
    import pyarrow.parquet as pq

    files = sorted(str(p) for p in path.rglob("*.parquet")) if path.is_dir() else [str(path)]
    if not files:
        raise ValueError(f"no .parquet files in {path}")
    return [(f, g) for f in files for g in range(pq.ParquetFile(f).num_row_groups)]


def _run_piece(ob, piece: tuple[str, int], index: int, folder: str, release: bool) -> dict:
    """One task: obfuscate row group ``piece`` and write it as part ``index``; return its counts."""
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
    out = ob.apply(batch, la, lo, ob.generator(batch, random_source(None) if release else None))
    schema = ob.out_schema
    if not release:  # a seeded part says so itself (a part read without the sidecar looked like a release)
        from ..sampling.source import NOT_FOR_RELEASE
        from .io import NOTICE_KEY

        schema = schema.with_metadata({**(schema.metadata or {}), NOTICE_KEY: NOT_FOR_RELEASE.encode()})
    pq.write_table(pa.Table.from_batches([out], schema=ob.out_schema).replace_schema_metadata(schema.metadata),
                   os.path.join(folder, f"part-{index:05d}.parquet"))
    from .locations import sorted_by

    return {"rows_read": n, "rows_written": out.num_rows, "rows_rejected": rejected, "first_rejected": msg, "keys": keys,
            "seconds": time.perf_counter() - t0, "started": t0, "sorted": sorted_by(la, lo) if index == 0 else None}


def obfuscate_dask(input_path, output_path, *, scheduler: str | None = None, workers: int = 2, force: bool = False,
                   progress=None, **kwargs):
    """:func:`dprivacy.data.locations.obfuscate_file` on Dask: ``scheduler`` is the address of an
    existing cluster (``tcp://host:8786``); without it a LocalCluster of ``workers`` processes is
    started and closed. OUTPUT is a folder of Parquet parts (name it ``*.parquet``). ``kwargs`` as for
    ``obfuscate_file`` (no ``user``/``budget``: a user's reports are counted in file order, which
    parallel tasks do not have)."""
    import numpy as np

    from .io import check_sidecar, commit_sidecar, file_format
    from .locations import prepare_obfuscation

    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("--engine dask needs the optional extra: pip install 'dprivacy[dask]'") from None
    t0 = time.perf_counter()
    inp, out = Path(input_path), Path(output_path)
    if scheduler is None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        # a LocalCluster of 0 workers waited for ever, silently (review)
        raise ValueError(f"--workers must be a whole number ≥ 1 (the LocalCluster's worker processes), got {workers!r}")
    if kwargs.get("user") is not None or kwargs.get("budget") is not None:
        raise ValueError("--user/--budget need the local engine: a user's reports are counted in file order")
    if kwargs.get("rng") is not None and kwargs.get("key") is None:
        raise ValueError("--seed with --engine dask needs --key COL (unique record keys): otherwise the output would depend "
                         "on how the file is split")
    if not inp.exists():
        raise FileNotFoundError(f"input not found: {inp}")
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
    report.input = str(inp)
    if src.release:
        report.random_source = dict(report.random_source, per_task="each task keys its own ChaCha20 from the worker's OS")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        cluster = client = None
        interrupted = False
        saved_levels = _quiet_loggers() if scheduler is None else {}
        known = _clusters()
        try:
            if scheduler is None:
                # Ctrl-C in a terminal (or `timeout -s INT`) reaches the whole process group: each worker
                # process would print its own traceback, and Dask's loggers the teardown. The workers
                # inherit a standard error sent to the null device (their failures come back to us as the
                # tasks' exceptions), and Dask's loggers here say nothing below CRITICAL during the run.
                with _stderr_to_null():
                    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                           silence_logs=logging.CRITICAL)
                    client = Client(cluster)
            else:
                client = Client(scheduler)
            tasks = [dask.delayed(_run_piece)(ob, p, i, str(tmp), src.release) for i, p in enumerate(pieces)]
            futures = client.compute(tasks)
            from distributed import as_completed

            done = 0
            for _ in as_completed(futures):
                done += 1
                if progress is not None:
                    progress(done, len(futures))
            results = client.gather(futures)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            _shutdown(client, cluster, quiet=interrupted, started=_clusters() - known)
            if not interrupted:  # after Ctrl-C the process is ending: Dask's loggers stay silent to the end
                _restore_loggers(saved_levels)
        for r in results:
            report.rows_read += r["rows_read"]
            report.rows_written += r["rows_written"]
            report.rows_rejected += r["rows_rejected"]
            report.first_rejected = report.first_rejected or r["first_rejected"]
        if report.rows_read == 0:
            raise ValueError(f"{inp} has no rows to obfuscate")
        if report.rows_written == 0:
            raise ValueError(f"none of the {report.rows_read:,} rows of {inp} could be released ({report.rows_rejected} "
                             f"rejected, the first: {report.first_rejected})")
        if ob.key is not None:
            keys = np.sort(np.concatenate([r["keys"] for r in results if r["keys"] is not None]))
            if (keys[1:] == keys[:-1]).any():
                raise ValueError(f"key column {ob.key!r} has repeated values; keyed noise needs unique keys")
        os.chmod(tmp, 0o777 & ~_umask())
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
            os.replace(out, old / "x")
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)
        raise
    report.seconds = time.perf_counter() - t0
    from .locations import rejection_note, sorted_note_text

    rejection_note(report)
    found = next((r["sorted"] for r in results if r.get("sorted")), None)
    if found is not None:  # (read on the first part: the order of the parts is the input's)
        report.notes.append(sorted_note_text(*found))
    report.notes.append(f"Dask engine: {len(pieces)} row groups, " + (f"scheduler {scheduler}" if scheduler else f"LocalCluster of {workers} workers"))
    if not src.release:
        report.notes.append("reproducible run (seeded): NOT for release")
    commit_sidecar(out, report.to_dict())
    return report


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
