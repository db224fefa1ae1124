"""The data files' shared vocabulary: formats by file name, batch sizes, the schema-metadata keys and members a
release carries, and how a refusal about a file says that it quotes none of the file's values.

The readers and writers of :mod:`.io` and :mod:`.geojson` and the column checks of :mod:`.columns` share these;
:mod:`.io` re-exports them.
"""

from __future__ import annotations

from pathlib import Path


FORMATS = {".csv": "csv", ".gz": "csv", ".parquet": "parquet", ".pq": "parquet", ".geojson": "geojson", ".json": "geojson"}

#: Rows per batch when streaming.
BATCH_ROWS = 1 << 18
#: Features per batch when reading GeoJSON (each is a Python dict until converted: smaller batches).
GEOJSON_BATCH_ROWS = 1 << 16
#: Bytes per block of the CSV reader (pyarrow's ``block_size``). A column not read as text gets its type from the
#: file's first block; the columns whose meaning must not depend on where a row sits (coordinates, record keys, user
#: ids, readings) are read as text and parsed per batch. Read at each open (tests lower it to reach the second block).
CSV_BLOCK_BYTES = 1 << 24


def file_format(path) -> str:
    """'csv', 'parquet' or 'geojson' from the file name (``.csv``, ``.csv.gz``, ``.parquet``/``.pq``,
    ``.geojson``), case-insensitive; 'arrow' for in-memory data (:mod:`.memory`)."""
    from .memory import in_memory

    if in_memory(path):
        return "arrow"
    name = Path(path).name.lower()
    if name.endswith(".csv.gz") or name.endswith(".csv"):
        return "csv"
    for ext, fmt in FORMATS.items():
        if name.endswith(ext) and ext != ".gz":
            return fmt
    raise ValueError(f"cannot tell the format of {str(path)!r}: expected .csv, .csv.gz, .parquet or .geojson")


#: How a refusal about a data file says that it does not quote the file's values.
NOT_QUOTED = "(the line is not quoted: its values are a person's)"


#: Top-level member of the GeoJSON files written here (a foreign member, RFC 7946 §6.1): the Arrow schema
#: of the columns (base64 of its IPC serialisation) and which columns are the coordinates and the Feature
#: id, so that a round trip keeps every column's name, order and type (dates, timestamps, int8, ...).
GEOJSON_SCHEMA_MEMBER = "dprivacy:schema"


#: The schema metadata key (Parquet) and member (GeoJSON) of a notice the released file carries.
NOTICE_KEY = b"dprivacy:notice"
#: Schema metadata key naming the column that holds the Features' ``id``.
GEOJSON_ID_KEY = b"geojson:id"
#: ... and the two columns that hold a GeoJSON input's geometry, "LON,LAT" (:func:`.columns.geometry_columns`)
GEOJSON_COORDS_KEY = b"geojson:coordinates"
