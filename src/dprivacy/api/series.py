"""``dp.release_series``: release a series of readings (a meter, a sensor) under d1 or d∞ on their values."""

from __future__ import annotations

from .frames import OptionError, kind_of, label


def release_series(data, output=None, *, column: str, epsilon: float, time: str | None = None, metric: str = "d1",
                   unit: float | None = None, per: str | None = None, seed: int | None = None, force: bool = False,
                   skip_invalid: bool = False, progress=None, time_format: str | None = None):
    """Release the readings of ``column`` with two-sided geometric noise, private under a metric on values.

    Under ``d1`` two series whose readings differ by a total of t units are released with probabilities within a
    factor e^(ε·t); under ``d∞`` every reading may change by t at once (each reading gets ε/n).

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table or path
        One reading per row. A path is a CSV or Parquet file, released to ``output`` as ``dprivacy series`` does.
    output : str or os.PathLike, optional
        The released file of a path (with its sidecar); refused for in-memory data (returned).
    column : str
        The readings' column.
    epsilon : float
        ε per ``unit`` of reading difference.
    time : str, optional
        The time column, released without noise (needed for ``per``): dates/times, ISO 8601 text (with a UTC offset
        the times are converted to UTC), ``2010/03/24 09:51`` or seconds since 1970 (a numeric column whose values
        are times from 1980 to 2099). A file's release writes text and numbers as timestamps; the report's
        ``time_read_as`` says how the column was read.
    metric : {"d1", "dinf"}
        ``d1``: the total change over the readings; ``dinf``: every reading at once.
    unit : float, optional
        The readings' resolution: they are rounded to its multiples and distance 1 is one unit (default: the
        readings must be whole numbers).
    per : {"hour", "day"}, optional
        Also report sums and means of the released readings per period (in the result's sidecar).
    seed : int, optional
        Reproducible research mode, NOT for release; default: cryptographic randomness.
    force : bool
        Replace ``output`` if it exists.
    skip_invalid : bool
        Drop the rows whose reading is missing or not a number, and count them.
    progress : callable, optional
        ``progress(readings_done)`` after each batch.
    time_format : str, optional
        A ``strptime`` format for the time column's text, for forms that are ambiguous or not ISO (``01/02/2010``
        needs ``'%d/%m/%Y'`` or ``'%m/%d/%Y'``). A time that does not read refuses the column, naming it, not the
        value.

    Returns
    -------
    released : same kind as ``data``, or the output path
        The time column (when given) and the released readings (float64), nothing else: other columns may be
        correlated with the readings. A pandas index is kept (the rows dropped by ``skip_invalid`` left out).
    result : DataResult
        The guarantee, the random source, the counts and the sidecar.

    Raises
    ------
    ValueError
        Every refusal of ``dprivacy series``, with the same sentence.

    Examples
    --------
    >>> import pandas as pd, dprivacy as dp
    >>> meter = pd.DataFrame({"time": pd.date_range("2024-01-01", periods=4, freq="h"), "kwh": [3, 4, 4, 5]})
    >>> released, result = dp.release_series(meter, column="kwh", time="time", epsilon=0.5)
    >>> list(released.columns)
    ['time', 'kwh']
    """
    from ..data.series import release_series as release_file

    kind = kind_of(data)
    options = dict(column=column, epsilon=epsilon, time_column=time, metric=metric, unit=unit, per=per, rng=seed,
                   skip_invalid=skip_invalid, progress=progress, time_format=time_format)
    if kind == "path":
        if output is None:
            raise OptionError("a file's release is written to a file: give output=PATH (in-memory data is returned)")
        rep = release_file(data, output, force=force, sidecar=True, **options)
        return output, _result(rep)
    if kind not in ("pandas", "polars", "arrow"):
        raise OptionError(f"release_series takes a pandas or polars DataFrame, a pyarrow Table or a path, not {label(kind)}")
    if output is not None:
        raise OptionError(f"output= is for a file's release; the release of {label(kind)} is returned")
    from ..data.memory import ArrowInput, MemoryRelease
    from .frames import rebuild, to_arrow

    name = label(kind)
    table = to_arrow(data, kind)
    # read from the Arrow form, released into memory: nothing is written to disk
    out = MemoryRelease(name, [column])
    rep = release_file(ArrowInput(table, name), out, **options)
    positions = _valid_rows(table, column) if skip_invalid else None
    del table
    got = out.columns()[column]
    if positions is not None and len(positions) != len(got):  # (the data layer's own test of a reading, so equal)
        raise RuntimeError(f"the release has {len(got)} readings for {len(positions)} valid rows")
    rep.input = rep.output = name
    keep = [c for c in (time, column) if c is not None]
    released = rebuild(_columns(data, kind, keep), kind, positions, {column: got})
    return released, _result(rep)


def _valid_rows(table, column: str):
    """Positions of the rows whose reading the data layer releases with ``skip_invalid`` (its own test of a value)."""
    import numpy as np

    from ..data.series import _values

    parts, row = [], 0
    for batch in table.select([column]).to_batches():
        _, bad = _values(batch, column, row, True)
        parts.append(row + np.flatnonzero(~bad))
        row += batch.num_rows
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _columns(data, kind: str, names: list):
    if kind == "arrow":
        return data.select(names)
    if kind == "polars":
        return data.select(names)
    return data[names]


def _result(rep):
    from ..data.io import sidecar_report
    from .results import DataResult

    counts = {"readings": rep.readings, "skipped_invalid": rep.skipped_invalid}
    return DataResult("series", rep.guarantee, dict(rep.random_source), counts, sidecar_report(rep.to_dict()), rep)
