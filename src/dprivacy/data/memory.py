"""Tables in memory for the data layer: an Arrow table read as a file is read, and a release kept in memory.

The readers and writers of the data layer take these in place of paths (:mod:`dprivacy.api` hands them a
DataFrame's Arrow form), so that in-memory data is never written to disk, not even to a temporary file: an
interrupt or a kill during a call then leaves no copy of anyone's true data behind.

* :class:`ArrowInput` is read in batches of the size a Parquet file's reader gives (:func:`.io.read_batches`) and by
  DuckDB as a registered Arrow table (:mod:`.table_sql`), with the column types DuckDB reads from the Parquet file
  of the same table; messages name it by its ``name`` (``the DataFrame``) where they name a file by its path.
* :class:`MemoryRelease` takes the place of an output file (:class:`.io.AtomicWriter`): of each batch written it
  keeps the columns asked for, and it has no sidecar (the caller gets the report).
"""

from __future__ import annotations

from pathlib import Path


class ArrowInput:
    """An Arrow table given to the data layer in place of an input file, named ``name`` in messages.

    ``sidecar``: for a release given to ``evaluate``, the report of the release (the dict a sidecar file holds), or
    None when there is none."""

    def __init__(self, table, name: str, *, sidecar: dict | None = None):
        self.table = table
        self.name = name
        self.sidecar = sidecar

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<ArrowInput {self.name}: {self.table.num_rows} rows>"

    @property
    def schema(self):
        return self.table.schema

    def batches(self, batch_rows: int):
        """The rows in record batches of ``batch_rows`` (the last one shorter), as a Parquet file's reader gives
        them: a batch is a view of the table where its rows are in one chunk, else a copy of those rows only."""
        import pyarrow as pa

        n = self.table.num_rows
        for start in range(0, n, batch_rows):
            part = self.table.slice(start, batch_rows)
            chunks = part.to_batches()
            if len(chunks) == 1:
                yield chunks[0]
            else:
                yield pa.Table.from_batches(chunks, schema=part.schema).combine_chunks().to_batches()[0]

    def for_duckdb(self):
        """The table as DuckDB is to read it: duration columns as their int64 counts, as a Parquet file stores them
        (DuckDB reads an Arrow duration as an INTERVAL, and queries must see the column types the file route sees);
        the other columns are the table's own (a view, no copy)."""
        import pyarrow as pa

        table = self.table
        for i, f in enumerate(table.schema):
            if pa.types.is_duration(f.type):
                col = table.column(i)
                viewed = pa.chunked_array([c.view(pa.int64()) for c in col.chunks], type=pa.int64())
                table = table.set_column(i, pa.field(f.name, pa.int64(), f.nullable), viewed)
        return table


class MemoryRelease:
    """The output of a release kept in memory: of each batch written, the ``columns`` named (the others are the
    input's own, which the caller already holds). Named ``name`` in messages and reports."""

    def __init__(self, name: str, columns):
        self.name = name
        self.wanted = list(columns)
        self._parts: dict = {c: [] for c in self.wanted}
        self._types: dict = {}
        self.rows = 0

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<MemoryRelease {self.name}: {self.rows} rows>"

    def start(self, schema) -> None:
        """Begin a release of ``schema`` (forgetting what an earlier attempt wrote)."""
        missing = [c for c in self.wanted if c not in schema.names]
        if missing:
            raise ValueError(f"the release of {self.name} has no column {missing[0]!r}")
        self._types = {c: schema.field(c).type for c in self.wanted}
        self._parts = {c: [] for c in self.wanted}
        self.rows = 0

    def discard(self) -> None:
        """Drop what was written: a release is kept only when it completes."""
        self._parts = {c: [] for c in self.wanted}
        self.rows = 0

    def add(self, batch) -> None:
        for c in self.wanted:
            self._parts[c].append(batch.column(c))
        self.rows += batch.num_rows

    def columns(self) -> dict:
        """The columns kept, each as one numpy array."""
        import pyarrow as pa

        return {c: pa.chunked_array(parts, type=self._types[c]).to_numpy() for c, parts in self._parts.items()}


def in_memory(x) -> bool:
    """True for an :class:`ArrowInput` or a :class:`MemoryRelease` (not a file)."""
    return isinstance(x, (ArrowInput, MemoryRelease))


def display_name(x) -> str:
    """How a report names an input or output: a file by its name, in-memory data by its own name."""
    return x.name if in_memory(x) else Path(x).name
