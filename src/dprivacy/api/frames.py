"""The kinds of data the API takes, and the way each goes to the data layer and comes back.

In-memory data goes to the data layer as its Arrow form, through memory only (:mod:`dprivacy.data.memory`): the
releases read it in batches and keep the released columns in memory, and queries run DuckDB on the registered
Arrow table. Nothing of it is written to disk, so an interrupted or killed call leaves no copy of the true data
behind. The frame is converted to Arrow once (for numeric columns without nulls, often without a copy); only the
columns the release changes come back, and every other column, the index and the dtypes are taken from the object
given, so a release holds one copy of the frame at most (the object returned) besides its Arrow form.

Kinds: a pandas DataFrame, a GeoPandas GeoDataFrame (point geometry, any CRS), a polars DataFrame, a pyarrow
Table, a Dask DataFrame (obfuscate and query), or a path (``str`` or ``os.PathLike``). Optional libraries are
recognised by the modules already imported, never imported here to find out.
"""

from __future__ import annotations

import contextlib
import os
import sys

#: Column added to the Arrow form when rows may be dropped or reordered: the row's position in the object given,
#: so that the rows released are matched to their other columns and index (never released itself).
ROW = "__dprivacy_row__"

#: How a kind is named in messages, where the command line names its file.
LABELS = {"pandas": "the DataFrame", "geopandas": "the GeoDataFrame", "polars": "the polars DataFrame",
          "arrow": "the Arrow Table", "dask": "the Dask DataFrame"}


class OptionError(ValueError):
    """An argument refused before any data is read (a missing or conflicting option). The command line prints it
    with its command's prefix (``dprivacy obfuscate: error: ...``), as argparse's own refusals."""


def kind_of(data) -> str:
    """'path', 'pandas', 'geopandas', 'polars', 'arrow' or 'dask'; TypeError for anything else."""
    if isinstance(data, (str, os.PathLike)):
        return "path"
    gpd = sys.modules.get("geopandas")
    if gpd is not None and isinstance(data, gpd.GeoDataFrame):
        return "geopandas"
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, pd.DataFrame):
        return "pandas"
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(data, pl.DataFrame):
        return "polars"
    if pl is not None and isinstance(data, pl.LazyFrame):
        raise TypeError("a polars LazyFrame is a plan, not data: call .collect() first (the release must read every row "
                        "once, and a plan can be run again)")
    pa = sys.modules.get("pyarrow")
    if pa is not None and isinstance(data, pa.Table):
        return "arrow"
    dd = sys.modules.get("dask.dataframe")
    if dd is not None and isinstance(data, dd.DataFrame):
        return "dask"
    raise TypeError(f"expected a pandas, polars, GeoPandas or Dask DataFrame, a pyarrow Table or a path, "
                    f"got {type(data).__module__}.{type(data).__name__}")


def label(kind: str) -> str:
    return LABELS.get(kind, "the data")


# -------------------------------------------------------------------------------------------------
# to Arrow
# -------------------------------------------------------------------------------------------------


def _unconvertible(what: str, exc: Exception) -> str:
    """The refusal of a frame that has no Arrow form: the column, never the cell. Arrow's own message quotes the value
    that did not convert (a person's value, free of ε), and which error comes first depends on particular rows."""
    import re

    m = re.search(r"[Cc]onversion failed for column (.+?) with type", str(exc))
    where = f"column {m.group(1)!r}" if m else "a column"
    return (f"{what} cannot be converted to Arrow: {where} holds values with no common Arrow type (numbers and text in "
            "an object column, or integers beyond 64 bits); give it one type (e.g. .astype(str) or pd.to_numeric(..., errors='coerce'))")


def _pandas_to_arrow(df, what: str):
    """The frame as an Arrow table, without pandas' schema metadata. A RangeIndex is left out (it is the row
    position); any other index becomes columns (its levels' names, or ``__index_level_N__``) that the data layer
    checks like the others: an index of addresses or coordinates is released as it is, so it is checked too."""
    import pyarrow as pa

    dup = df.columns[df.columns.duplicated()]
    if len(dup):
        raise ValueError(f"{what} has two columns called {dup[0]!r}: rename one")
    if not all(isinstance(c, str) for c in df.columns):
        bad = next(c for c in df.columns if not isinstance(c, str))
        raise ValueError(f"{what} has a column named {bad!r} ({type(bad).__name__}): column names must be strings")
    try:
        table = pa.Table.from_pandas(df, preserve_index=None)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError) as exc:
        raise ValueError(_unconvertible(what, exc)) from None
    return table.replace_schema_metadata(None)


def index_columns(df) -> list:
    """The names under which :func:`_pandas_to_arrow` writes a pandas index (empty for a RangeIndex)."""
    import pandas as pd

    if isinstance(df.index, pd.RangeIndex):
        return []
    return [n if n is not None else f"__index_level_{i}__" for i, n in enumerate(df.index.names)]


def to_arrow(data, kind: str):
    """An Arrow table of the data (pandas, polars or Arrow) with the schema metadata dropped; a table without a
    column is refused."""
    if kind == "arrow":
        table = data.replace_schema_metadata(None)
    elif kind == "polars":
        try:
            table = data.to_arrow().replace_schema_metadata(None)
        except Exception as exc:  # an Object column has no Arrow form
            raise ValueError(_unconvertible(label(kind), exc)) from None
    else:
        table = _pandas_to_arrow(data, label(kind))
    if table.num_columns == 0:
        raise ValueError(f"the {label(kind)} has no column: expected a table with the columns the call names")
    return table


def add_row_numbers(table):
    import pyarrow as pa

    if ROW in table.schema.names:
        raise ValueError(f"the data has a column called {ROW!r}, a name the API uses for itself: rename it")
    return table.append_column(ROW, pa.array(range(table.num_rows), pa.int64()))


@contextlib.contextmanager
def without_row_column():
    """Errors raised inside do not mention :data:`ROW` (a refusal that lists the columns lists the user's own)."""
    try:
        yield
    except Exception as exc:
        if exc.args and isinstance(exc.args[0], str):
            exc.args = (_drop_row(exc.args[0]), *exc.args[1:])
        if isinstance(getattr(exc, "detail", None), str):
            exc.detail = _drop_row(exc.detail)
        raise


def _drop_row(text: str) -> str:
    return text.replace(f", {ROW}", "").replace(f"{ROW}, ", "")


# -------------------------------------------------------------------------------------------------
# back to the kind given
# -------------------------------------------------------------------------------------------------


def rebuild(data, kind: str, positions, replaced: dict, *, reset_index: bool = False):
    """The object given with the rows at ``positions`` (None: all, in order) and the columns in ``replaced``
    (name → numpy array, one per row kept) replaced; other columns, their dtypes and the index are the
    object's own. ``reset_index``: a fresh 0..n−1 index (pandas), for rows in a random order (the original
    index would give each row's place away)."""
    import numpy as np

    if kind in ("pandas", "geopandas"):
        out = data if positions is None else data.take(np.asarray(positions))
        out = out.copy(deep=False) if out is data else out
        for c, v in replaced.items():
            out[c] = v
        if reset_index:
            out = out.reset_index(drop=True)
        return out
    if kind == "polars":
        import polars as pl

        out = data if positions is None else data[np.asarray(positions, dtype=np.int64)]
        return out.with_columns([pl.Series(c, v) for c, v in replaced.items()])
    if kind == "arrow":
        import pyarrow as pa

        out = data if positions is None else data.take(pa.array(np.asarray(positions, dtype=np.int64)))
        for c, v in replaced.items():
            i = out.schema.get_field_index(c)
            out = out.set_column(i, c, pa.array(v))
        return out
    raise TypeError(kind)
