r"""Releasing a series of readings (smart meters, glucose monitors) under a metric on values (Chatzikokolakis et al. 2013 §6.1).

A series of n readings is a tuple x ∈ V^n. Chatzikokolakis et al. 2013 §6.1 argues that standard DP (Hamming distance on
tuples, protecting each reading whatever its value) needs noise of the order of the whole value range,
and that the threat — recognising an appliance's or a programme's signature from accurate readings —
is met by protecting the *accuracy* of the values: a metric on values.

* ``metric="d1"``: d₁(x, x') = Σ_i |x_i − x'_i| / U (U the unit). Each reading, rounded to a multiple of
  U, gets independent two-sided geometric noise K_i·U with P(K = k) ∝ e^{−ε|k|} (the discrete Laplace,
  drawn exactly in integer arithmetic: :mod:`dprivacy.sampling.discrete`). Per reading this is
  ε·d-private on the rounded values (Chatzikokolakis et al. 2013 Fig 2 (iv)); independent noise composes over readings,
  so the release is ε·d₁-private: any release is at most e^{ε·d₁(x, x')} times likelier under x than
  under x'.
* ``metric="dinf"``: d∞(x, x') = max_i |x_i − x'_i| / U, the metric §6.1 argues for when the adversary
  already knows every reading approximately and all of them must be protected at once. Since
  d₁ ≤ n·d∞, noise at ε/n per reading is ε·d∞-private for the whole series of n readings; that is what
  is released, and the report states the per-reading ε it implies (the price of protecting every
  reading at once is noise that grows with n).

Readings are rounded to multiples of U before the noise: the guarantee is about the readings at
resolution U (the unit says which differences are protected at level ε). Aggregates per period
(``per="hour"|"day"``) are sums and means of the *released* readings — post-processing, no extra ε —
with their accuracy from the noise law (variance m·Var(K)·U² for m readings).
"""

from __future__ import annotations

import contextlib
import math
import os
import time as _time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

_METRICS = ("d1", "dinf")
#: Readings are clamped to ±MAX_STEPS units before the noise (integers exact in float64).
MAX_STEPS = 2.0**52 - 1


def _refused(message: str, detail: str):
    """A refusal that names the column and the kind of value, never a reading or its row (``detail``, for the owner)."""
    from .._system import RefusedWithDetail

    return RefusedWithDetail(message, detail)
_PERIODS = {"hour": "h", "day": "D"}


@dataclass
class SeriesReport:
    input: str
    output: str
    column: str
    time_column: str | None
    metric: str
    unit: float
    epsilon: float
    epsilon_per_reading: float
    delivered_epsilon: float
    readings: int
    skipped_invalid: int
    noise: str
    expected_abs_error: float
    within: float
    confidence: float
    guarantee: str
    random_source: dict = field(default_factory=dict)
    per: str | None = None
    time_read_as: str | None = None  # how the time column was read (ISO text, converted to UTC, seconds since 1970, ...)
    aggregates: list = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        from ..results import jsonable

        return jsonable(dict(vars(self)))


def _values(batch, column: str, first_row: int, skip_invalid: bool):
    """(values as float64, invalid mask) for one batch. A non-numeric cell is an error naming its row and
    value, or (with ``skip_invalid``) an invalid row like a missing one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = batch.column(column)
    if pa.types.is_null(col.type):
        return np.full(batch.num_rows, np.nan), np.ones(batch.num_rows, dtype=bool)
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        # a CSV's reading column is read as text (the reader's type guess from the first block would make a
        # refusal depend on where one reading sits): numbers are cast as a whole, row by row only if one is not
        try:
            x = np.asarray(pc.fill_null(pc.cast(pc.utf8_trim_whitespace(col), pa.float64()), float("nan"))
                           .to_numpy(zero_copy_only=False), dtype=np.float64)
            return x, ~np.isfinite(x)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_decimal(col.type)):
        out = np.full(batch.num_rows, np.nan)
        for k, v in enumerate(col.to_pylist()):
            if v is None:
                continue
            try:
                out[k] = float(v)
            except (TypeError, ValueError):
                if not skip_invalid:
                    raise _refused(f"column {column!r} has values that are not numbers; use --skip-invalid to drop such "
                                   "rows (they are counted in the report)",
                                   f"row {first_row + k + 1} of the file (1 = first data row): {column} = {v!r}") from None
        return out, ~np.isfinite(out)
    x = np.asarray(pc.fill_null(pc.cast(col, pa.float64()), float("nan")).to_numpy(zero_copy_only=False),
                   dtype=np.float64)
    return x, ~np.isfinite(x)


#: Column names that usually hold a reading's time (named in the refusal of per= without a time column).
_TIME_NAMES = ("time", "timestamp", "datetime", "date", "ts", "date_time", "time_stamp")


def release_series(input_path, output_path, *, column: str, epsilon: float, metric: str = "d1", unit: float | None = None,
                   time_column: str | None = None, per: str | None = None, rng=None, force: bool = False,
                   skip_invalid: bool = False, confidence: float = 0.95, progress=None,
                   sidecar: bool = False, time_format: str | None = None) -> SeriesReport:
    """Release the readings of ``column`` with the noise of Chatzikokolakis et al. 2013 §6.1 (module docstring).

    ``sidecar``: also write the report beside the output (``OUTPUT.dprivacy.json``) in the same step as the rename, a
    signal and other runs committing into the folder waiting meanwhile (:func:`dprivacy.data.commit.release_commit`), as
    the command line does.

    The output file has the time column (when given) and the released column, nothing else (other
    columns may be correlated with the readings). It is written atomically; the report is returned
    (and written beside it as ``OUTPUT.dprivacy.json`` by the command line).

    ``unit``: the readings' resolution; they are rounded to multiples of it and distance 1 is one unit.
    Without it the readings must be whole numbers (unit 1): a reading with a fraction is refused, naming
    its row, rather than rounded silently (22.59 was released as 23 with an accuracy that ignored it).

    ``time_column`` holds dates/times, or text in ISO 8601 (with ``T`` or a space; with a UTC offset or ``Z`` the times
    are converted to UTC), ``2010/03/24 09:51[:00]`` or ``2010/03/24``, or numbers, read as seconds since 1970-01-01 UTC
    when every one is a time from 1980 to 2099. ``time_format`` (a strptime format, e.g. ``'%d/%m/%Y %H:%M'``) reads text
    in another form, as the ambiguous ``01/02/2010`` must be. Text and numbers are written to the output as timestamps;
    the report's ``time_read_as`` says how the column was read. A time that does not read refuses the column, naming it
    but not the value (the value and its row are the refusal's ``detail``, for the data owner).
    """
    import pyarrow as pa

    from .._validate import check_epsilon
    from ..sampling import random_source
    from ..sampling.source import NOT_FOR_RELEASE
    from ..sampling.discrete import discrete_laplace, geometric_parameters
    from .commit import release_commit
    from .io import AtomicWriter, check_sidecar, commit_sidecar, read_batches, removed_unless_completed
    from .memory import display_name, in_memory
    from .tables import _on_grid, geometric_accuracy

    t0 = _time.perf_counter()
    eps = check_epsilon(epsilon)
    if metric not in _METRICS:
        raise ValueError(f"metric must be 'd1' or 'dinf', got {metric!r}")
    whole = unit is None
    if whole:
        unit = 1.0
    if isinstance(unit, bool) or not (isinstance(unit, (int, float)) and math.isfinite(unit) and unit > 0):
        raise ValueError(f"unit must be a positive number (the resolution of the readings), got {unit!r}")
    unit = float(unit)
    if per is not None and per not in _PERIODS:
        raise ValueError(f"per must be 'hour' or 'day', got {per!r}")
    if time_format is not None and time_column is None:
        raise ValueError("--time-format reads the time column: give it with --time COL")
    if not (in_memory(input_path) or in_memory(output_path)) and Path(output_path).resolve() == Path(input_path).resolve():
        raise ValueError("the output must not be the input file")
    check_sidecar(input_path, output_path, force=force)
    # with --time-format a CSV's time column is read as the text it is (the CSV reader's own guesses left aside)
    as_text = (time_column,) if time_format is not None and time_column is not None else ()
    as_text = (*as_text, column)  # (the readings: parsed per batch, whatever the first block of the file holds)

    schema, _ = read_batches(input_path, text_columns=as_text)
    names = list(schema.names)
    for what, c in (("reading", column), ("time", time_column)):
        if c is not None and c not in names:
            raise ValueError(f"no {what} column {c!r} in {input_path}: its columns are {', '.join(names)}")

    if per is not None and time_column is None:
        like = [c for c in names if c != column and c.strip().lower() in _TIME_NAMES]
        raise ValueError("aggregates per period need the time column (--time COL)"
                         + (f": {input_path} has a column {like[0]!r}" if like else ""))
    if time_column is not None and time_column == column:
        raise ValueError(f"the time column and the reading column are both {column!r}: the time column is copied to "
                         "the output without noise")

    # Pass 1: count the valid readings (d∞ needs n before the first draw), find invalid rows, and check
    # that the time column holds times.
    before = _snapshot(input_path)
    n_valid, n_invalid, row = 0, 0, 0
    reader = _TimeReader(time_column, time_format) if time_column is not None else None
    time_type = schema.field(time_column).type if time_column is not None else None
    for batch in read_batches(input_path, text_columns=as_text)[1]:
        if time_column is not None:
            times = reader.read(batch.column(time_column), row)
            time_type = times.type
            if per == "hour" and pa.types.is_date(times.type):
                # (checked in pass 2 it came after noise was drawn)
                raise ValueError(f"the time column (type {times.type}) holds dates without times: periods per hour need "
                                 "times (use --per day)")
        x, bad = _values(batch, column, row, skip_invalid)
        if bad.any() and not skip_invalid:
            k = int(np.flatnonzero(bad)[0])
            raise _refused(f"column {column!r} has missing or infinite values; use --skip-invalid to drop such rows (they are "
                           "counted in the report)", f"row {row + k + 1} of the file (1 = first data row): {column} = {x[k]}")
        if whole:
            frac = np.flatnonzero(~bad & (x != np.rint(x)))
            if frac.size:
                k = int(frac[0])
                raise _refused(f"column {column!r} has values that are not whole numbers: give --unit, the readings' "
                               "resolution (e.g. --unit 0.01; --unit 1 rounds them to whole numbers), which is also the "
                               "distance 1 of the guarantee",
                               f"row {row + k + 1} of the file (1 = first data row): {column} = {float(x[k])!r}")
        n_valid += int((~bad).sum())
        n_invalid += int(bad.sum())
        row += batch.num_rows
    if n_valid == 0:
        raise ValueError(f"no valid readings in column {column!r} of {input_path}")

    eps_reading = eps if metric == "d1" else eps / n_valid
    params = geometric_parameters(eps_reading, 1.0)
    delivered = params.delivered_epsilon * (1 if metric == "d1" else n_valid)
    mean_err, t = geometric_accuracy(params.alpha, confidence=confidence)
    src = random_source(rng)
    var_k = 2 * params.alpha / (1 - params.alpha) ** 2  # Var of the two-sided geometric with ratio α

    out_fields = ([pa.field(time_column, time_type)] if time_column else []) + [pa.field(column, pa.float64())]
    out_schema = pa.schema(out_fields)
    sums: dict = {}
    done = 0
    held = contextlib.ExitStack()
    try:
        with AtomicWriter(output_path, out_schema, force=force, notice=None if src.release else NOT_FOR_RELEASE) as w:
            row = 0
            for batch in read_batches(input_path, text_columns=as_text)[1]:
                x, bad = _values(batch, column, row, skip_invalid)
                keep = ~bad
                with np.errstate(over="ignore"):  # a reading of 1e300 at --unit 1e-300 is inf steps: clamped below
                    steps = np.rint(x[keep] / unit)
                # clamped to ±MAX_STEPS units (exact integers in float64), never refused: a refusal here, with the unit
                # the asker chooses, told the largest reading by bisection; clamping moves no two readings apart
                np.clip(steps, -MAX_STEPS, MAX_STEPS, out=steps)
                # k·unit as the float nearest the exact product (0.01 · 1815 is 18.150000000000002; 1815 / 100 is 18.15)
                noisy = _on_grid(steps + discrete_laplace(steps.size, params.s, params.t, src.generator), unit)
                cols = []
                if time_column:
                    tcol = reader.read(batch.column(time_column), row).filter(pa.array(keep))
                    cols.append(tcol)
                cols.append(pa.array(noisy, pa.float64()))
                w.write(pa.RecordBatch.from_arrays(cols, schema=out_schema))
                if per is not None:
                    _accumulate(sums, tcol, noisy, per, row)
                done += int(keep.sum())
                row += batch.num_rows
                if progress is not None:
                    progress(done)
            # the file must be the one pass 1 counted: a meter log appended to between the passes released 5,000,000
            # readings at the ε/n of 4,000,000 (d∞ ε 1.25 stated as 1) and skipped the whole-number check
            if done != n_valid or _snapshot(input_path) != before:
                raise ValueError(f"{input_path} changed while it was read ({n_valid:,} valid readings counted, {done:,} read the "
                                 "second time): release a file that is not being written to (copy it first); nothing written")
            if sidecar:  # from the move to OUTPUT to the sidecar, one step (commit.release_commit)
                held.enter_context(release_commit(output_path))

        aggregates = []
        for key in sorted(sums):
            m, s = sums[key]
            sd = math.sqrt(m * var_k) * unit
            aggregates.append({"period": str(key), "readings": m, "sum": s, "mean": s / m,
                               "sum_noise_sd": sd, "mean_noise_sd": sd / m})
        guarantee = (
            f"ε·d₁-private with ε = {delivered:.6g} per unit {unit:g}: changing the readings by a total of t units "
            f"changes the probability of any release by at most a factor e^(ε·t)"
            if metric == "d1" else
            f"ε·d∞-private with ε = {delivered:.6g} per unit {unit:g} over the whole series of {n_valid} readings: changing "
            f"every reading by at most t units changes the probability of any release by at most a factor e^(ε·t) "
            f"(noise at ε/n = {eps_reading:.3g} per reading)")
        report = SeriesReport(
            input=display_name(input_path), output=display_name(output_path), column=column, time_column=time_column, metric=metric,
            unit=unit, epsilon=eps, epsilon_per_reading=eps_reading, delivered_epsilon=delivered, readings=n_valid,
            skipped_invalid=n_invalid,
            noise=(f"two-sided geometric K·U, P(K = k) ∝ exp(−|k|·{params.s}/{params.t}), drawn exactly in integers "
                   "(Canonne, Kamath, Steinke 2020); readings rounded to multiples of U first"),
            expected_abs_error=mean_err * unit, within=t * unit, confidence=confidence, guarantee=guarantee,
            random_source=src.to_dict(), per=per, aggregates=aggregates,
            time_read_as=reader.described if reader is not None else None, seconds=_time.perf_counter() - t0,
        )
        if sidecar:
            with removed_unless_completed(output_path):
                commit_sidecar(output_path, report.to_dict())
    finally:
        held.close()
    return report


# The time forms read without --time-format, in order; a column's form is the first that reads every time of its first
# rows, and the later rows must read the same way. (how, argument, what the report says)
_TEXT_FORMS = (
    ("cast", ("s", None), "ISO 8601 text"),
    ("cast", ("ns", None), "ISO 8601 text"),
    ("cast", ("s", "UTC"), "ISO 8601 text with UTC offsets, converted to UTC"),
    ("cast", ("ns", "UTC"), "ISO 8601 text with UTC offsets, converted to UTC"),
    ("strptime", "%Y/%m/%d %H:%M:%S", "text of the form %Y/%m/%d %H:%M:%S"),
    ("strptime", "%Y/%m/%d %H:%M", "text of the form %Y/%m/%d %H:%M"),
    ("strptime", "%Y/%m/%d", "text of the form %Y/%m/%d"),
)
#: A numeric time column is read as seconds since 1970-01-01 UTC only when every value lies in [1980, 2100): a reading
#: (kWh, mg/dL, W) named as the time by mistake is refused, not released without noise as 1970-01-01 00:04:18.
EPOCH_RANGE = (315_532_800, 4_102_444_800)
_EPOCH = "seconds since 1970-01-01 UTC (a numeric column)"
_FORMS_HELP = ("ISO 8601 (2010-03-24 09:51:00, 2010-03-24T09:51:00+01:00), 2010/03/24 09:51, seconds since 1970 (a "
               "numeric column), or the form given with --time-format (a strptime format such as '%d/%m/%Y %H:%M')")


class _TimeReader:
    """Reads a time column batch by batch, the same way in every batch: ``read(col, first_row)`` gives the times (date,
    time or timestamp; text and numbers become timestamps) or raises a refusal that names the column and the forms it
    takes, never a value (the value and its row are the ``detail``, shown to the data owner only).

    The time column is copied to the output without noise, so it must be a time and nothing else: a number (a second
    reading, or the reading itself) or free text would be released exactly. A time that does not parse refuses the
    whole column (no ``--skip-invalid`` for times: dropping a reading because of its time would be a choice made from
    the data with no ε to pay for it, and the column is public anyway, being released as it is)."""

    def __init__(self, name: str, time_format: str | None = None):
        if time_format is not None and (not isinstance(time_format, str) or "%" not in time_format):
            raise ValueError(f"--time-format must be a strptime format such as '%d/%m/%Y %H:%M', got {time_format!r}")
        self.name = name
        self.time_format = time_format
        self.form = None  # (how, argument, description) once the first rows are read
        self.described = None

    def _refuse(self, tcol, reason: str, first_row: int, parsed=None):
        import pyarrow.compute as pc

        detail = ""
        if parsed is not None:
            import numpy as np

            bad = np.flatnonzero(np.asarray(pc.and_(pc.is_valid(tcol), pc.is_null(parsed))))
            if bad.size:
                k = int(bad[0])
                detail = f"row {first_row + k + 1} of the file (1 = first data row): {self.name} = {tcol[k].as_py()!r}"
        return _refused(f"the time column {self.name!r} (type {tcol.type}) is not a date/time: {reason}", detail)

    @staticmethod
    def _apply(tcol, form):
        """The column read with ``form``, nulls where a value does not read (or None if the form cannot read it)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        how, arg, _ = form
        if how == "cast":
            try:
                return pc.cast(tcol, pa.timestamp(arg[0], tz=arg[1]))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
        try:
            return pc.strptime(tcol, format=arg, unit="s", error_is_null=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise ValueError(f"--time-format {arg!r} is not a strptime format arrow can read "
                             "(e.g. '%d/%m/%Y %H:%M')") from None

    def read(self, tcol, first_row: int = 0):
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_timestamp(tcol.type) or pa.types.is_date(tcol.type) or pa.types.is_time(tcol.type):
            if self.time_format is not None:
                raise ValueError(f"--time-format reads text, and the time column {self.name!r} already holds "
                                 f"dates/times (type {tcol.type}): leave it out")
            tz = getattr(tcol.type, "tz", None)
            self.described = self.described or (
                "dates/times" if not tz else "dates/times in UTC (UTC offsets such as +01:00 converted to UTC)"
                if tz in ("UTC", "+00:00", "Z") else f"dates/times in time zone {tz} (periods follow that clock)")
            return tcol
        if pa.types.is_integer(tcol.type) or pa.types.is_floating(tcol.type):
            return self._epoch(tcol)
        if not (pa.types.is_string(tcol.type) or pa.types.is_large_string(tcol.type)):
            raise self._refuse(tcol, "it is copied to the output without noise, so it must hold times: " + _FORMS_HELP,
                               first_row)
        text = pc.utf8_trim_whitespace(tcol)
        if self.form is None:
            forms = ((("strptime", self.time_format, f"text of the form {self.time_format} (--time-format)"
                       + (", converted to UTC" if "%z" in self.time_format else "")),)
                     if self.time_format is not None else _TEXT_FORMS)
            for form in forms:
                out = self._apply(text, form)
                if out is not None and out.null_count == text.null_count:
                    self.form, self.described = form, form[2]
                    return out
            if self.time_format is not None:
                raise self._refuse(tcol, f"some values do not read with --time-format {self.time_format!r}", first_row,
                                   self._apply(text, forms[0]))
            ambiguous = pc.any(pc.match_substring_regex(text, r"^\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b")).as_py()
            if ambiguous:
                raise self._refuse(tcol, "its dates are written day and month first (like 01/02/2010), which reads "
                                   "as 1 February or as January 2: say which with --time-format '%d/%m/%Y %H:%M' or "
                                   "'%m/%d/%Y %H:%M'", first_row)
            raise self._refuse(tcol, "it is copied to the output without noise, so it must hold times: " + _FORMS_HELP,
                               first_row, self._apply(text, _TEXT_FORMS[0]))
        out = self._apply(text, self.form)
        if out is None or out.null_count != text.null_count:
            raise self._refuse(tcol, f"its first values read as {self.form[2]} and later ones do not", first_row, out)
        return out

    def _epoch(self, tcol):
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.time_format is not None:
            raise ValueError(f"--time-format reads text, and the time column {self.name!r} is numeric (type {tcol.type}): "
                             "leave it out to read the numbers as seconds since 1970-01-01 UTC")
        lo, hi = EPOCH_RANGE
        seconds = pc.cast(tcol, pa.float64())
        inside = pc.and_(pc.greater_equal(seconds, lo), pc.less(seconds, hi))
        if not pc.all(pc.fill_null(inside, True)).as_py():  # (NaN is outside)
            raise self._refuse(tcol, "a number is read as seconds since 1970-01-01 UTC only when every value is a time "
                               "from 1980 to 2099; it is copied to the output without noise, so it must hold times",
                               0)
        self.described = _EPOCH
        if pa.types.is_integer(tcol.type):
            return pc.cast(pc.cast(tcol, pa.int64()), pa.timestamp("s", tz="UTC"))
        # fractions of a second kept to the microsecond (vectorized: numbers → int64 µs → timestamps)
        us = pc.cast(pc.round(pc.multiply(seconds, 1e6)), pa.int64())
        return pc.cast(us, pa.timestamp("us", tz="UTC"))


def _as_times(tcol, name: str, time_format: str | None = None):
    """The time column as dates/times, or a ValueError (see :class:`_TimeReader`; one batch read on its own)."""
    return _TimeReader(name, time_format).read(tcol)


def _snapshot(path) -> tuple:
    """(size, modification time in ns, inode) of a file: what tells that it changed between two reads. An in-memory
    table (:class:`~.memory.ArrowInput`) is immutable: its number of rows."""
    from .memory import ArrowInput

    if isinstance(path, ArrowInput):
        return (path.table.num_rows,)
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ino


def _accumulate(sums: dict, tcol, noisy: np.ndarray, per: str, first_row: int) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_time(tcol.type):
        raise ValueError(f"the time column (type {tcol.type}) holds times of day without dates: periods per {per} need "
                         "dates")
    if pa.types.is_timestamp(tcol.type) and tcol.type.tz:
        # periods of the readings' own clock: a Berlin day, not the UTC day (which cut it at 23:00 or 22:00)
        tcol = pc.local_timestamp(tcol)
    if tcol.null_count:
        k = int(np.flatnonzero(np.asarray(pc.is_null(tcol)))[0])
        raise _refused("the time column has missing times (aggregates per period need every reading's time)",
                       f"row {first_row + k + 1} of the file (1 = first data row)")
    t = tcol.to_numpy(zero_copy_only=False).astype(f"datetime64[{_PERIODS[per]}]")
    keys, inv = np.unique(t, return_inverse=True)
    s = np.bincount(inv, weights=noisy, minlength=keys.size)
    c = np.bincount(inv, minlength=keys.size)
    for k, key in enumerate(keys):
        m0, s0 = sums.get(key, (0, 0.0))
        sums[key] = (m0 + int(c[k]), s0 + float(s[k]))
