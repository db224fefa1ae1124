"""Reading and writing tables of points: CSV (also .csv.gz), Parquet and GeoJSON, chosen by extension.

Tables are read and written in record batches (pyarrow), so a file larger than memory streams through;
every column other than the coordinates keeps its type and the rows keep their order. Writes are
atomic: the output goes to a temporary file beside OUTPUT and is moved to OUTPUT only when complete, so
an error or an interrupt leaves nothing at OUTPUT; without ``force`` the move fails if OUTPUT exists by then
(:mod:`.commit`). Inputs must be regular files (or a Parquet folder of parts), checked before they are opened
(:func:`dprivacy._system.check_input_file`). In-memory data takes the place of a file on both sides
(:mod:`.memory`): an :class:`~.memory.ArrowInput` is read in batches like a Parquet file, and a
:class:`~.memory.MemoryRelease` keeps the release in memory, with no file and no sidecar.

This module holds the readers' front door (:func:`read_batches`) with CSV and Parquet, the atomic writer, and the
sidecar (the report written beside a release). The GeoJSON format is :mod:`.geojson`; which columns hold the points
and which others would give them away, :mod:`.columns` (by name and type) and :mod:`.copies` (by value); the names
they share, :mod:`.formats`. Their names are importable from here too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Iterator

from .._system import check_input_file, memory_failure, signals_held, stop_signals  # noqa: F401 (io.signals_held, io.stop_signals)
from .columns import (  # noqa: F401 (re-exported)
    GEOMETRY_NAMES, LAT_NAMES, LOCATION_ENDS, LOCATION_PARTS, LOCATION_PREFIXES, LOCATION_WORD_STEMS, LOCATION_WORDS,
    LON_NAMES, _located_fields, _looks_located, _words, check_no_other_locations, find_coordinate_columns,
    geometry_columns, geoparquet_geometry_columns, without_input_metadata)
from . import formats
from .commit import commit_new, fresh_temp_name
from .copies import (  # noqa: F401 (re-exported)
    _DEGREES_HEMISPHERE, _DMS, _DMS_HINT, _MERCATOR_R, _NUMBER, COPY_ATOL_DEG, COPY_SAMPLE_ROWS, COPY_SHARE,
    NEAR_ZERO_ATOL_DEG, _dms_values, _number_leaves, copy_encodings, location_copies)
from .formats import (  # noqa: F401 (re-exported)
    BATCH_ROWS, FORMATS, GEOJSON_BATCH_ROWS, GEOJSON_COORDS_KEY, GEOJSON_ID_KEY, GEOJSON_SCHEMA_MEMBER, NOT_QUOTED,
    NOTICE_KEY, file_format)
from .geojson import (  # noqa: F401 (re-exported)
    _CHUNK_CHARS, _SEPARATOR, _decode_json_columns, _feature_rows, _geojson_features, _geojson_features_of,
    _GeoJSONWriter, _json_number, _JsonStream, _rows_table, geojson_batches, read_geojson)


def read_batches(path, *, batch_rows: int = BATCH_ROWS, text_columns=()) -> tuple[object, Iterator]:
    """(schema, iterator of pyarrow.RecordBatch) for a CSV, Parquet or GeoJSON file of points, or an
    :class:`~.memory.ArrowInput` (batches of the same size as a Parquet file's). Two columns of one name are
    refused (written out, one of them would be lost: name,name,lat,lon with A,B gives A, A).
    ``text_columns``: columns of a CSV read as their text, without type inference."""
    from .._system import import_pandas_for_pyarrow
    from .memory import ArrowInput

    import_pandas_for_pyarrow()  # (before pyarrow's to_numpy imports it where a Ctrl-C is lost)
    if isinstance(path, ArrowInput):
        schema, batches = path.schema, path.batches(batch_rows)
    else:
        schema, batches = _read_batches(path, batch_rows=batch_rows, text_columns=text_columns)
    seen: set = set()
    for name in schema.names:
        if name in seen:
            raise ValueError(f"{path} has two columns called {name!r}: rename one")
        seen.add(name)
    return schema, batches


def _read_batches(path, *, batch_rows: int, text_columns=()) -> tuple[object, Iterator]:
    import pyarrow as pa

    path = Path(path)
    expected = "a CSV, Parquet or GeoJSON file"
    check_input_file(path, "input file", folder=True, expected=expected)  # (a FIFO or /dev/zero: before it is opened)
    fmt = file_format(path)
    if fmt != "parquet" and path.is_dir():  # (a folder is read as Parquet parts only)
        check_input_file(path, "input file", expected=expected)
    if fmt == "csv":
        from pyarrow import csv

        try:
            reader = csv.open_csv(path, read_options=csv.ReadOptions(block_size=formats.CSV_BLOCK_BYTES),
                                  convert_options=csv.ConvertOptions(column_types={c: pa.string() for c in text_columns}))
        except pa.ArrowInvalid as exc:
            raise ValueError(f"cannot read {path} as CSV: {_csv_problem(exc)}") from None
        except MemoryError:  # (pyarrow's ArrowMemoryError is an ArrowException too: not a damaged file)
            raise
        except (OSError, pa.ArrowException) as exc:  # a truncated gzip, a .gz that is not one
            if memory_failure(exc):  # (no thread for the reader: memory, not the file)
                raise MemoryError(memory_failure(exc)) from None
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"cannot read {path}: {msg} (a damaged, truncated or mislabelled file?)") from None
        return reader.schema, _csv_batches(reader, path)
    if fmt == "parquet" and path.is_dir():
        # a folder of parts (the Dask engine's output, part-NNNNN.parquet): read in the order of the names
        import pyarrow.parquet as pq

        parts = sorted(path.rglob("*.parquet"))
        if not parts:
            raise ValueError(f"{path} is a folder with no .parquet file")
        for p in parts:
            check_input_file(p, f"the Parquet part of {path}", expected="a Parquet file")
        def schema_of(p):
            try:
                return pq.read_schema(p)
            except pa.ArrowInvalid as exc:
                raise ValueError(f"cannot read the Parquet part {p} of {path}: {str(exc).splitlines()[0]}") from None

        schema = schema_of(parts[0])

        def batches():
            # one part open at a time (a folder of thousands of parts would exhaust the file handles)
            for p in parts:
                if not schema_of(p).equals(schema):
                    raise ValueError(f"the Parquet parts of {path} differ in their columns ({p.name} against {parts[0].name})")
                with pq.ParquetFile(p, pre_buffer=False) as f:
                    yield from f.iter_batches(batch_size=batch_rows)

        return schema, batches()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            # pre_buffer keeps what it has read for the life of the reader: memory grew by ~20 bytes a row
            # (428 MiB for 10⁷ rows against 222 MiB for 3·10⁶); without it the stream stays flat.
            f = pq.ParquetFile(path, pre_buffer=False)
        except pa.ArrowInvalid as exc:
            raise ValueError(f"cannot read {path} as Parquet: {str(exc).splitlines()[0]}") from None
        return f.schema_arrow, f.iter_batches(batch_size=batch_rows)
    return geojson_batches(path, batch_rows=min(batch_rows, GEOJSON_BATCH_ROWS))


def _csv_problem(exc) -> str:
    """What is wrong with a CSV, without pyarrow's message, which quotes the offending line (a person's values)."""
    msg = str(exc).lower()
    if "conversion error" in msg or "invalid value" in msg:
        what = "a value does not convert to its column's type"
    elif "expected" in msg and "columns" in msg:
        what = "a line has another number of fields than the header"
    elif "quote" in msg:
        what = "a quoted field is not closed"
    else:
        what = "a line does not parse"
    return f"{what} {NOT_QUOTED}"


def _csv_batches(reader, path):
    import pyarrow as pa

    try:
        for b in reader:
            yield b
    except pa.ArrowInvalid as exc:
        block = f"{formats.CSV_BLOCK_BYTES / 2**20:g} MiB"  # (formats: read at each open)
        hint = (f"; the column's type was taken from the file's first block ({block}), where every value was a number, "
                "so this one cannot be skipped as a row: correct it" if "conversion error" in str(exc).lower() else "")
        raise ValueError(f"cannot read {path} as CSV: {_csv_problem(exc)}{hint}") from None
    except MemoryError:  # (pyarrow's ArrowMemoryError: memory ran out, the file is fine)
        raise
    except (OSError, pa.ArrowException) as exc:  # a truncated gzip, a .gz that is not one: name the file
        if memory_failure(exc):
            raise MemoryError(memory_failure(exc)) from None
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"cannot read {path}: {msg} (a damaged, truncated or mislabelled file?)") from None


#: Rows per Parquet row group of a written file (every group but the last).
PARQUET_GROUP_ROWS = 1 << 17
#: A column chunk's dictionary grows to at most this many bytes before the writer falls back to plain encoding for
#: the rest of the chunk. Parquet's default (1 MiB) is a whole row group of distinct 8-byte values, so a column of
#: distinct values (ids, measurements) was hashed value by value for nothing: the write took 0.109 s of CPU per 10⁶
#: rows of id, lat, lon, value against 0.032 s at 64 KiB, and the file was 14% larger. A kept column of up to
#: thousands of distinct values (categories, user names) still gets its dictionary.
PARQUET_DICTIONARY_BYTES = 1 << 16


class AtomicWriter:
    """Write record batches to OUTPUT through a temporary file moved to OUTPUT on success.

    Use as a context manager: on an exception (or KeyboardInterrupt) the temporary file is removed and
    OUTPUT is left as it was (absent, or the old file when ``force`` was given). Without ``force`` the move
    fails with FileExistsError when OUTPUT exists by then (another run finished first), leaving it as it is
    (:func:`~.commit.commit_new`).

    OUTPUT may be a :class:`~.memory.MemoryRelease`: the batches are then kept in memory (its columns), nothing is
    written anywhere, and an exception drops what was kept.
    """

    def __new__(cls, path, *args, **kwargs):
        # the release loops open their output as AtomicWriter(OUTPUT, ...) whatever OUTPUT is: a MemoryRelease gets
        # the writer that keeps the batches in memory
        from .memory import MemoryRelease

        if isinstance(path, MemoryRelease):
            return _MemoryWriter(path, *args)
        return super().__new__(cls)

    def __init__(self, path, schema, *, force: bool = False, geojson_coords: tuple[str, str] | None = None,
                 plain_columns: tuple = (), notice: str | None = None):
        self.path = Path(path)
        if self.path.is_dir():  # os.replace would fail at the end and leave the finished temporary file
            raise ValueError(f"output {self.path} is a folder: give a file name")
        if self.path.exists() and not force:
            raise FileExistsError(f"output {self.path} exists; use --force to replace it")
        if not self.path.parent.exists():
            raise FileNotFoundError(f"output folder {self.path.parent} does not exist")
        self.force = force
        self.fmt = file_format(self.path)
        if self.fmt == "geojson" and geojson_coords is None:  # before the temporary file: nothing left behind
            raise ValueError(f"cannot write {self.path} as GeoJSON: these rows have no point (coordinate columns) to be "
                             "its geometry; write .csv or .parquet")
        self.schema = without_input_metadata(schema)
        #: a sentence the file itself carries (Parquet schema metadata ``dprivacy:notice``, a GeoJSON member of that
        #: name): a seeded run's "NOT for release", so that the file says it even without its sidecar (a CSV cannot)
        self.notice = notice
        if notice and self.fmt == "parquet":
            self.schema = self.schema.with_metadata({**(self.schema.metadata or {}), NOTICE_KEY: notice.encode()})
        self.geojson_coords = geojson_coords
        # Parquet: columns written without dictionary encoding (released coordinates: nearly every value
        # distinct, so the dictionary attempt only costs time — a third of the write)
        self.plain_columns = tuple(plain_columns)
        self._writer = None
        self.rows = 0
        self._pending: list = []
        self._pending_rows = 0

    def __enter__(self):
        # the name first, then the file: an interrupt at any point of the opening removes what was made (__exit__ is
        # not called when __enter__ fails)
        self.tmp = fresh_temp_name(self.path)
        try:
            os.close(os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            self._open()
        except BaseException:
            with contextlib.suppress(Exception):
                if self._writer is not None:
                    self._writer.close()
            with contextlib.suppress(FileNotFoundError):
                self.tmp.unlink()
            raise
        return self

    def _open(self) -> None:
        if self.fmt == "csv":
            import pyarrow as pa
            from pyarrow import csv

            sink = pa.CompressedOutputStream(str(self.tmp), "gzip") if self.path.name.lower().endswith(".gz") else str(self.tmp)
            self._sink = sink
            self._writer = csv.CSVWriter(sink, self.schema)
        elif self.fmt == "parquet":
            import pyarrow.parquet as pq

            dictionary = [n for n in self.schema.names if n not in self.plain_columns] if self.plain_columns else True
            self._writer = pq.ParquetWriter(str(self.tmp), self.schema, use_dictionary=dictionary,
                                            dictionary_pagesize_limit=PARQUET_DICTIONARY_BYTES)
        else:
            self._writer = _GeoJSONWriter(self.tmp, self.schema, self.geojson_coords, self.notice)

    def write(self, batch) -> None:
        self.rows += batch.num_rows
        if self.fmt == "parquet":
            # row groups of a fixed number of rows: the batches' sizes follow the input's bytes (the length of
            # the true coordinates' text in a CSV) and the rows rejected, which row groups of the batches' sizes
            # would publish in the file's footer
            self._pending.append(batch)
            self._pending_rows += batch.num_rows
            if self._pending_rows >= PARQUET_GROUP_ROWS:
                self._write_groups(final=False)
        else:
            self._writer.write(batch)

    def _write_groups(self, *, final: bool) -> None:
        import pyarrow as pa

        if not self._pending:
            return
        t = pa.Table.from_batches(self._pending, schema=self._pending[0].schema)
        k = t.num_rows if final else t.num_rows // PARQUET_GROUP_ROWS * PARQUET_GROUP_ROWS
        if k:
            self._writer.write_table(t.slice(0, k), row_group_size=PARQUET_GROUP_ROWS)
        rest = t.slice(k)
        self._pending, self._pending_rows = (rest.to_batches() if rest.num_rows else []), rest.num_rows

    def __exit__(self, exc_type, exc, tb):
        # OUTPUT is replaced only when everything was written and closed: the last row group, written here, or a
        # close that fails (a full disk, an interrupt) leaves the old OUTPUT and removes the temporary file (a SIGTERM
        # during the last group must not commit an empty or cut release)
        done = False
        try:
            try:
                if self.fmt == "parquet" and exc_type is None:
                    self._write_groups(final=True)
            finally:
                if self.fmt == "csv":
                    self._writer.close()
                    if not isinstance(self._sink, str):
                        self._sink.close()
                else:
                    self._writer.close()
            done = exc_type is None
        finally:
            if done:
                try:
                    _chmod_like_new_file(self.tmp)
                    commit_new(self.tmp, self.path, force=self.force)  # (FileExistsError: another run's release)
                except BaseException:
                    with contextlib.suppress(FileNotFoundError):
                        self.tmp.unlink()
                    raise
            else:
                with contextlib.suppress(FileNotFoundError):
                    self.tmp.unlink()
        return False


class _MemoryWriter:
    """:class:`AtomicWriter`'s counterpart for a :class:`~.memory.MemoryRelease`: the batches kept in memory."""

    def __init__(self, release, schema):
        self.release = release
        self.schema = schema
        self.rows = 0

    def __enter__(self):
        self.release.start(self.schema)
        return self

    def write(self, batch) -> None:
        self.release.add(batch)
        self.rows += batch.num_rows

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.release.discard()
        return False


def write_json_atomic(path, obj) -> None:
    """Write a JSON document atomically (strict JSON, see :func:`dprivacy.results.dumps`)."""
    from ..results import dumps

    write_bytes_atomic(path, (dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def write_bytes_atomic(path, data: bytes, *, force: bool = True) -> None:
    """Write ``data`` to exactly ``path`` through a temporary file beside it, moved to ``path``: an error or
    Ctrl-C leaves nothing new (the old file, if any, stays). ``force=False``: FileExistsError, and ``path`` left as
    it is, when a file is there by the time the data is written (:func:`~.commit.commit_new`)."""
    path = Path(path)
    if not path.parent.exists():
        raise FileNotFoundError(f"output folder {path.parent} does not exist")
    tmp = fresh_temp_name(path)  # (the name before the file: a Ctrl-C right after mkstemp left an empty .partial)
    try:
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(data)
        _chmod_like_new_file(tmp)
        commit_new(tmp, path, force=force)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def sidecar_path(output_path) -> Path:
    """Where the report of a release written to ``output_path`` goes: ``OUTPUT.dprivacy.json``."""
    return Path(str(output_path) + ".dprivacy.json")


def check_sidecar(input_path, output_path, *, force: bool = False) -> None:
    """Refuse, before anything is written, a release whose sidecar would replace the input (``obfuscate
    q.csv.dprivacy.json -o q.csv`` overwrote its input with the report) or, without ``force``, an
    existing file. A release kept in memory has no sidecar."""
    from .memory import in_memory

    if in_memory(output_path):
        return
    side = sidecar_path(output_path)
    if side.is_dir():
        raise ValueError(f"the sidecar {side} (the report written beside OUTPUT) is a folder: name OUTPUT differently")
    if not side.exists():
        return
    try:
        same = os.path.samefile(side, input_path)
    except OSError:
        same = False
    if same:
        raise ValueError(f"the sidecar {side} (the report written beside OUTPUT) would replace the input file: name "
                         "OUTPUT differently")
    if not force:
        raise FileExistsError(f"the sidecar {side} exists (use --force to replace it with OUTPUT)")


#: Called with the release's path once its sidecar is written (the release is then complete). Empty in the library;
#: the command line adds one that lets the command finish from there on, so that a Ctrl-C while the report is
#: printed does not say "interrupted" (exit 130) beside a complete release.
ON_COMPLETE: list = []


def remove_release(output_path) -> None:
    """Remove a release (a file, or the Dask engine's folder of parts) whose sidecar could not be written, and any
    sidecar at its place (an older release's, under --force: it must not be read as this one's)."""
    p = Path(output_path)
    if p.is_dir():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
        sidecar_path(output_path).unlink()


@contextlib.contextmanager
def removed_unless_completed(output_path):
    """The code between a release's rename to ``output_path`` and its sidecar: an error or an interrupt there removes
    the release, so that none is left without its report (a release kept in memory is simply not returned)."""
    from .memory import in_memory

    if in_memory(output_path):
        yield
        return
    try:
        yield
    except BaseException:
        remove_release(output_path)
        raise


#: Fields of a report that stay with the caller and are not in the sidecar, which travels with the release: the run
#: time depends on the owner's machine and its load (and on the size and content of the data).
SIDECAR_OMITS = ("seconds",)


def sidecar_report(report: dict) -> dict:
    """``report`` as the sidecar carries it: without :data:`SIDECAR_OMITS`, and the input and output named by their
    file names only (a full path names the owner's folders, often their user name, and the working directory)."""
    out = {k: v for k, v in report.items() if k not in SIDECAR_OMITS}
    for k in ("input", "output"):
        if isinstance(out.get(k), str):
            out[k] = Path(out[k]).name
    return out


def commit_sidecar(output_path, report: dict) -> None:
    """Write the sidecar of a release already at ``output_path`` (:func:`sidecar_report` of ``report``); when that
    fails, remove the release too, so that an error leaves no release without its report. Then the release is
    complete: :data:`ON_COMPLETE`. A release kept in memory has no sidecar: its caller returns the report."""
    from .memory import in_memory

    if in_memory(output_path):
        return
    with removed_unless_completed(output_path):
        write_json_atomic(sidecar_path(output_path), sidecar_report(report))
    for hook in list(ON_COMPLETE):
        hook(output_path)


def _chmod_like_new_file(path) -> None:
    """mkstemp creates files readable by their owner only; give the result the mode a plain open() would."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)
