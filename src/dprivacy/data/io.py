"""Reading and writing tables of points: CSV (also .csv.gz), Parquet and GeoJSON, chosen by extension.

Tables are read and written in record batches (pyarrow), so a file larger than memory streams through;
every column other than the coordinates keeps its type and the rows keep their order. Writes are
atomic: the output goes to a temporary file beside OUTPUT and is renamed over it only when complete, so
an error or an interrupt leaves nothing at OUTPUT.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

#: Usual names of coordinate columns, in order of preference.
LAT_NAMES = ("lat", "latitude", "Latitude", "LAT", "Lat", "position_lat", "y_lat")
LON_NAMES = ("lon", "lng", "long", "longitude", "Longitude", "LON", "Lon", "Lng", "position_long")

FORMATS = {".csv": "csv", ".gz": "csv", ".parquet": "parquet", ".pq": "parquet", ".geojson": "geojson", ".json": "geojson"}

#: Rows per batch when streaming.
BATCH_ROWS = 1 << 18


def file_format(path) -> str:
    """'csv', 'parquet' or 'geojson' from the file name (``.csv``, ``.csv.gz``, ``.parquet``/``.pq``,
    ``.geojson``), case-insensitive."""
    name = Path(path).name.lower()
    if name.endswith(".csv.gz") or name.endswith(".csv"):
        return "csv"
    for ext, fmt in FORMATS.items():
        if name.endswith(ext) and ext != ".gz":
            return fmt
    raise ValueError(f"cannot tell the format of {str(path)!r}: expected .csv, .csv.gz, .parquet or .geojson")


def find_coordinate_columns(names: list[str], lat: str | None = None, lon: str | None = None) -> tuple[str, str]:
    """The latitude and longitude column names: the given ones (checked), or found by the usual names."""
    def pick(given, usual, what, flag):
        if given is not None:
            if given not in names:
                raise ValueError(f"no {what} column {given!r} in the file: its columns are {', '.join(names)}")
            return given
        found = [c for c in names if c in usual or c.lower() in {u.lower() for u in usual}]
        if not found:
            raise ValueError(f"no {what} column found (looked for {', '.join(usual[:5])}, ...); name it with {flag} "
                             f"(the columns are {', '.join(names)})")
        if len(found) > 1:
            raise ValueError(f"several possible {what} columns ({', '.join(found)}): choose one with {flag}")
        return found[0]

    return pick(lat, LAT_NAMES, "latitude", "--lat"), pick(lon, LON_NAMES, "longitude", "--lon")


def read_batches(path, *, batch_rows: int = BATCH_ROWS) -> tuple[object, Iterator]:
    """(schema, iterator of pyarrow.RecordBatch) for a CSV, Parquet or GeoJSON file of points."""
    import pyarrow as pa

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"input file not found: {path}")
    fmt = file_format(path)
    if fmt == "csv":
        from pyarrow import csv

        try:
            reader = csv.open_csv(path, read_options=csv.ReadOptions(block_size=1 << 24))
        except pa.ArrowInvalid as exc:
            raise ValueError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None
        return reader.schema, _csv_batches(reader, path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            # pre_buffer keeps what it has read for the life of the reader: memory grew by ~20 bytes a row
            # (428 MiB for 10⁷ rows against 222 MiB for 3·10⁶); without it the stream stays flat.
            f = pq.ParquetFile(path, pre_buffer=False)
        except pa.ArrowInvalid as exc:
            raise ValueError(f"cannot read {path} as Parquet: {str(exc).splitlines()[0]}") from None
        return f.schema_arrow, f.iter_batches(batch_size=batch_rows)
    table = read_geojson(path)
    return table.schema, iter(table.to_batches(max_chunksize=batch_rows))


def _csv_batches(reader, path):
    import pyarrow as pa

    try:
        for b in reader:
            yield b
    except pa.ArrowInvalid as exc:
        raise ValueError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None


def read_geojson(path):
    """A GeoJSON FeatureCollection of Points as a pyarrow Table: the properties' columns, then
    ``longitude`` and ``latitude`` from the geometry (GeoJSON order is [lon, lat])."""
    import json

    import pyarrow as pa

    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {path} as GeoJSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("type") != "FeatureCollection" or not isinstance(doc.get("features"), list):
        raise ValueError(f"{path} is not a GeoJSON FeatureCollection")
    props, lons, lats = [], [], []
    for k, f in enumerate(doc["features"]):
        g = (f or {}).get("geometry") or {}
        if g.get("type") != "Point" or not isinstance(g.get("coordinates"), list) or len(g["coordinates"]) < 2:
            raise ValueError(f"{path}: feature {k} is not a Point (only Point features can be obfuscated)")
        lons.append(g["coordinates"][0])
        lats.append(g["coordinates"][1])
        props.append(f.get("properties") or {})
    table = pa.Table.from_pylist(props) if props and any(props) else pa.table({})
    if table.num_rows == 0 and lons:
        table = pa.table({"_row": list(range(len(lons)))}).drop(["_row"])
    return table.append_column("longitude", pa.array(lons, pa.float64())).append_column("latitude", pa.array(lats, pa.float64()))


class AtomicWriter:
    """Write record batches to OUTPUT through a temporary file renamed over it on success.

    Use as a context manager: on an exception (or KeyboardInterrupt) the temporary file is removed and
    OUTPUT is left as it was (absent, or the old file when ``force`` was given).
    """

    def __init__(self, path, schema, *, force: bool = False, geojson_coords: tuple[str, str] | None = None,
                 plain_columns: tuple = ()):
        self.path = Path(path)
        if self.path.exists() and not force:
            raise FileExistsError(f"output {self.path} exists; use --force to replace it")
        if not self.path.parent.exists():
            raise FileNotFoundError(f"output folder {self.path.parent} does not exist")
        self.fmt = file_format(self.path)
        self.schema = schema
        self.geojson_coords = geojson_coords
        # Parquet: columns written without dictionary encoding (released coordinates: nearly every value
        # distinct, so the dictionary attempt only costs time — a third of the write)
        self.plain_columns = tuple(plain_columns)
        self._writer = None
        self._features: list = []
        self.rows = 0

    def __enter__(self):
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".partial", dir=self.path.parent)
        os.close(fd)
        self.tmp = Path(tmp)
        if self.fmt == "csv":
            import pyarrow as pa
            from pyarrow import csv

            sink = pa.CompressedOutputStream(str(self.tmp), "gzip") if self.path.name.lower().endswith(".gz") else str(self.tmp)
            self._sink = sink
            self._writer = csv.CSVWriter(sink, self.schema)
        elif self.fmt == "parquet":
            import pyarrow.parquet as pq

            dictionary = [n for n in self.schema.names if n not in self.plain_columns] if self.plain_columns else True
            self._writer = pq.ParquetWriter(str(self.tmp), self.schema, use_dictionary=dictionary)
        return self

    def write(self, batch) -> None:
        self.rows += batch.num_rows
        if self.fmt == "geojson":
            self._features.append(batch)
        else:
            self._writer.write_batch(batch) if self.fmt == "parquet" else self._writer.write(batch)

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.fmt == "csv":
                self._writer.close()
                if not isinstance(self._sink, str):
                    self._sink.close()
            elif self.fmt == "parquet":
                self._writer.close()
            elif exc_type is None:
                self._write_geojson()
        finally:
            if exc_type is None:
                _chmod_like_new_file(self.tmp)
                os.replace(self.tmp, self.path)
            else:
                with contextlib.suppress(FileNotFoundError):
                    self.tmp.unlink()
        return False

    def _write_geojson(self) -> None:
        import json

        import pyarrow as pa

        lat, lon = self.geojson_coords
        table = pa.Table.from_batches(self._features, schema=self.schema)
        rows = table.to_pylist()
        feats = []
        for r in rows:
            x, y = r.pop(lon), r.pop(lat)
            feats.append({"type": "Feature", "geometry": {"type": "Point", "coordinates": [x, y]}, "properties": r})
        with open(self.tmp, "w", encoding="utf-8") as f:
            json.dump({"type": "FeatureCollection", "features": feats}, f, default=str)


def write_json_atomic(path, obj) -> None:
    """Write a JSON document atomically (strict JSON, see :func:`dprivacy.results.dumps`)."""
    from ..results import dumps

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dumps(obj, indent=2, ensure_ascii=False) + "\n")
        _chmod_like_new_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _chmod_like_new_file(path) -> None:
    """mkstemp creates files readable by their owner only; give the result the mode a plain open() would."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)
