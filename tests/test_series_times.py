"""`series` reads the time forms of real meter files (issue #31): ISO 8601 with a space or ``T``, with a UTC
offset (converted to UTC, and the report says so), ``2010/01/01 00:00`` (the form of many meter exports), seconds
since 1970 (a numeric column), and any form given with ``--time-format``, which the ambiguous ``01/02/2010``
needs. A value that does not read refuses the column in one line that names the column but never the value
(nothing is written). The expected times are computed here with the standard library's ``datetime``, not with
the library's arrow parsing."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from dprivacy.data.series import EPOCH_RANGE, release_series

SRC = os.path.join(os.path.dirname(__file__), "..", "src")
UTC = dt.timezone.utc


def _csv(path, header: str, rows: list[str]):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def _times(path, column="t"):
    """The output's time column as naive UTC datetimes (microseconds)."""
    col = (pq.read_table(path) if str(path).endswith(".parquet") else pacsv.read_csv(path)).column(column)
    out = []
    for v in col.to_pylist():
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            v = v.astimezone(UTC).replace(tzinfo=None)
        out.append(v)
    return out


def _meter(path, stamps: list[dt.datetime], fmt: str, kwh: np.ndarray):
    """A file shaped like the London smart-meter exports (one household, half-hourly energy)."""
    return _csv(path, "LCLid,stdorToU,DateTime,KWH/hh (per half hour)",
                [f"MAC000002,Std,{s.strftime(fmt)},{k:.3f}" for s, k in zip(stamps, kwh)])


def test_a_real_looking_meter_file_with_slashed_times_is_released_with_daily_sums(tmp_path):
    start = dt.datetime(2012, 10, 12, 0, 30)
    stamps = [start + dt.timedelta(minutes=30 * k) for k in range(3 * 48)]
    kwh = np.random.default_rng(5).gamma(2.0, 0.12, size=len(stamps)).round(3)
    src = _meter(tmp_path / "MAC000002.csv", stamps, "%Y/%m/%d %H:%M", kwh)
    out = tmp_path / "released.parquet"
    rep = release_series(src, out, column="KWH/hh (per half hour)", time_column="DateTime", epsilon=1.0, unit=0.001,
                         per="day", rng=11)
    assert rep.readings == len(stamps) and "%Y/%m/%d %H:%M" in rep.time_read_as
    assert _times(out, "DateTime") == stamps  # read as the wall-clock times they are, written as timestamps
    released = pq.read_table(out).column("KWH/hh (per half hour)").to_numpy()
    days = np.array([s.date().isoformat() for s in stamps])
    assert [a["period"] for a in rep.aggregates] == sorted(set(days))
    for agg in rep.aggregates:
        sel = days == agg["period"]
        assert agg["readings"] == sel.sum() and agg["sum"] == pytest.approx(released[sel].sum(), rel=1e-12)


@pytest.mark.parametrize("fmt", ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y/%m/%d %H:%M:%S",
                                 "%Y/%m/%d", "%Y-%m-%d %H:%M:%S.0000000"])
def test_common_forms_read_as_the_times_they_write(tmp_path, fmt):
    stamps = [dt.datetime(2011, 12, 31, 23, 0) + dt.timedelta(minutes=97 * k) for k in range(40)]
    if "%H" not in fmt:
        stamps = sorted({s.replace(hour=0, minute=0) for s in stamps})
    src = _csv(tmp_path / "m.csv", "t,v", [f"{s.strftime(fmt)},{k % 7}" for k, s in enumerate(stamps)])
    rep = release_series(src, tmp_path / "o.parquet", column="v", time_column="t", epsilon=1.0, rng=0)
    assert rep.readings == len(stamps) and rep.time_read_as
    assert _times(tmp_path / "o.parquet") == stamps


def test_utc_offsets_are_converted_to_utc_and_the_report_says_so(tmp_path):
    # written with the offsets of the readings' own clock (a winter and a summer time in Berlin, and New York)
    text = ["2020-03-28T23:30:00+01:00", "2020-03-29T03:30:00+02:00", "2020-07-01T20:00:00-04:00", "2020-07-02T01:15:00Z"]
    # (string columns: the CSV reader's own timestamp inference is bypassed by parquet text)
    pq.write_table(pa.table({"t": text, "v": [1, 2, 3, 4]}), tmp_path / "z.parquet")
    rep = release_series(tmp_path / "z.parquet", tmp_path / "o.parquet", column="v", time_column="t", epsilon=1.0,
                         per="day", rng=0)
    assert "converted to UTC" in rep.time_read_as
    expected = [dt.datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None) for s in text]
    assert _times(tmp_path / "o.parquet") == expected
    assert pq.read_table(tmp_path / "o.parquet").schema.field("t").type.tz == "UTC"
    # periods are UTC days: 23:30 in Berlin on the 28th is 22:30 UTC on the 28th; 20:00 in New York is the 2nd in UTC
    assert [(a["period"], a["readings"]) for a in rep.aggregates] == [
        ("2020-03-28", 1), ("2020-03-29", 1), ("2020-07-02", 2)]
    # a CSV, whose reader already reads such text as UTC timestamps, is reported as UTC too
    _csv(tmp_path / "z.csv", "t,v", [f"{s},{k}" for k, s in enumerate(text)])
    rep = release_series(tmp_path / "z.csv", tmp_path / "o.csv", column="v", time_column="t", epsilon=1.0, rng=0)
    assert "UTC" in rep.time_read_as


def test_epoch_seconds_in_a_numeric_column_are_read_as_utc_times_and_said_so(tmp_path):
    seconds = np.arange(1_300_000_000, 1_300_000_000 + 1800 * 30, 1800)
    src = _csv(tmp_path / "e.csv", "unix,w", [f"{s},{k % 9}" for k, s in enumerate(seconds)])
    rep = release_series(src, tmp_path / "o.parquet", column="w", time_column="unix", epsilon=1.0, per="hour", rng=0)
    assert "seconds since 1970" in rep.time_read_as and "numeric" in rep.time_read_as
    assert _times(tmp_path / "o.parquet", "unix") == [dt.datetime.fromtimestamp(int(s), UTC).replace(tzinfo=None)
                                                      for s in seconds]
    assert len(rep.aggregates) == 15  # 30 half hours
    # fractions of a second are kept
    src = _csv(tmp_path / "f.csv", "unix,w", ["1300000000.25,1", "1300000001.5,2"])
    release_series(src, tmp_path / "f.parquet", column="w", time_column="unix", epsilon=1.0, rng=0)
    assert _times(tmp_path / "f.parquet", "unix") == [dt.datetime(2011, 3, 13, 7, 6, 40, 250000),
                                                      dt.datetime(2011, 3, 13, 7, 6, 41, 500000)]


@pytest.mark.parametrize("value", [EPOCH_RANGE[0] - 1, EPOCH_RANGE[1], 258, 22.5])
def test_a_number_that_is_no_time_from_1980_to_2099_is_refused_not_released(tmp_path, value):
    """A reading named as the time would be copied without noise: numbers outside the range are refused."""
    src = _csv(tmp_path / "n.csv", "t,v", [f"{EPOCH_RANGE[0] + 10},1", f"{value},2"])
    with pytest.raises(ValueError, match="time column 't' .* seconds since 1970") as e:
        release_series(src, tmp_path / "o.csv", column="v", time_column="t", epsilon=1.0)
    assert str(value) not in str(e.value)
    assert not list(tmp_path.glob("o.csv*")) and not list(tmp_path.glob(".o.csv*"))


def test_day_month_order_is_refused_until_time_format_says_which(tmp_path):
    src = _csv(tmp_path / "a.csv", "t,v", ["01/02/2010 10:00,1", "03/04/2010 11:30,2"])
    with pytest.raises(ValueError, match="time column 't'.*--time-format") as e:
        release_series(src, tmp_path / "o.csv", column="v", time_column="t", epsilon=1.0)
    assert "03/04" not in str(e.value) and not (tmp_path / "o.csv").exists()
    for fmt, expected in (("%d/%m/%Y %H:%M", [dt.datetime(2010, 2, 1, 10), dt.datetime(2010, 4, 3, 11, 30)]),
                          ("%m/%d/%Y %H:%M", [dt.datetime(2010, 1, 2, 10), dt.datetime(2010, 3, 4, 11, 30)])):
        out = tmp_path / f"o{fmt[1]}.parquet"
        rep = release_series(src, out, column="v", time_column="t", epsilon=1.0, rng=0, time_format=fmt)
        assert fmt in rep.time_read_as and _times(out) == expected


def test_time_format_with_an_offset_converts_to_utc(tmp_path):
    src = _csv(tmp_path / "a.csv", "t,v", ["24.03.2010 09:51 +0100,1"])
    rep = release_series(src, tmp_path / "o.parquet", column="v", time_column="t", epsilon=1.0, rng=0,
                         time_format="%d.%m.%Y %H:%M %z")
    assert "converted to UTC" in rep.time_read_as and _times(tmp_path / "o.parquet") == [dt.datetime(2010, 3, 24, 8, 51)]


@pytest.mark.parametrize("bad", ["2010-13-45 10:00:00", "yesterday", "2010-03-24T09:51:00+01:00"])
def test_a_time_that_does_not_read_in_a_later_batch_refuses_the_column_without_its_value(tmp_path, monkeypatch, bad):
    """The form is chosen on the first rows; a later row in another form (or no time) refuses the whole column,
    naming the column and never the value; nothing is written. (The column is released as it is, so it is public
    by contract: the refusal tells nothing the release would not have shown.)"""
    from dprivacy.data import io as dio

    real = dio.read_batches
    monkeypatch.setattr(dio, "read_batches", lambda path, **kw: real(path, **{**kw, "batch_rows": 4}))
    rows = [f"2010-03-{d:02d} 10:00:00,{d}" for d in range(1, 11)]
    rows[7] = f"{bad},8"
    pq.write_table(pacsv.read_csv(_csv(tmp_path / "b.csv", "t,v", rows),
                                  convert_options=pacsv.ConvertOptions(column_types={"t": pa.string()})),
                   tmp_path / "b.parquet", row_group_size=4)
    with pytest.raises(ValueError, match="time column 't' .type string. is not a date/time") as e:
        release_series(tmp_path / "b.parquet", tmp_path / "o.csv", column="v", time_column="t", epsilon=1.0)
    assert bad not in str(e.value) and not re.search(r"\brow \d", str(e.value))
    assert getattr(e.value, "detail", "") == "" or "row 8" in e.value.detail  # the row is for the owner only
    assert not list(tmp_path.glob("o.csv*")) and not list(tmp_path.glob(".o.csv*"))


def test_time_format_is_refused_where_it_cannot_apply(tmp_path):
    pq.write_table(pa.table({"t": [1_300_000_000], "v": [1]}), tmp_path / "n.parquet")
    with pytest.raises(ValueError, match="--time-format reads text, and the time column 't' is numeric"):
        release_series(tmp_path / "n.parquet", tmp_path / "o.csv", column="v", time_column="t", epsilon=1.0,
                       time_format="%Y")
    src = _csv(tmp_path / "a.csv", "t,v", ["1300000000,1"])  # (a CSV's column is read as text with --time-format)
    with pytest.raises(ValueError, match="some values do not read with --time-format '%Y'"):
        release_series(src, tmp_path / "o.csv", column="v", time_column="t", epsilon=1.0, time_format="%Y")
    with pytest.raises(ValueError, match="--time-format reads the time column"):
        release_series(src, tmp_path / "o.csv", column="v", epsilon=1.0, time_format="%Y")
    with pytest.raises(ValueError, match="strptime format"):
        release_series(src, tmp_path / "o.csv", column="v", time_column="t", epsilon=1.0, time_format="dd/mm/yyyy")
    assert not list(tmp_path.glob("o.csv*"))


def test_cli_reads_time_format_and_refuses_in_one_line(tmp_path):
    src = _csv(tmp_path / "a.csv", "t,kwh", ["01/02/2010 10:00,1", "13/02/2010 10:30,2"])
    env = {**os.environ, "PYTHONPATH": SRC}
    base = [sys.executable, "-m", "dprivacy", "series", str(src), "--column", "kwh", "--time", "t", "--epsilon", "1"]
    r = subprocess.run(base + ["-o", str(tmp_path / "x.csv")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "13/02" not in r.stderr and "'t'" in r.stderr
    assert [line for line in r.stderr.splitlines() if "error" in line] and not (tmp_path / "x.csv").exists()
    r = subprocess.run(base + ["-o", str(tmp_path / "y.parquet"), "--time-format", "%d/%m/%Y %H:%M", "--seed", "1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert _times(tmp_path / "y.parquet") == [dt.datetime(2010, 2, 1, 10), dt.datetime(2010, 2, 13, 10, 30)]


def test_time_format_reads_a_csv_column_the_csv_reader_would_have_guessed(tmp_path):
    """ISO-looking text that the CSV reader turns into timestamps by itself is read with the user's format instead."""
    src = _csv(tmp_path / "a.csv", "t,v", ["2010-02-01 10:00:00,1", "2010-03-01 11:30:00,2"])
    rep = release_series(src, tmp_path / "o.parquet", column="v", time_column="t", epsilon=1.0, rng=0,
                         time_format="%Y-%d-%m %H:%M:%S")  # (a day-before-month ISO look-alike)
    assert "--time-format" in rep.time_read_as
    assert _times(tmp_path / "o.parquet") == [dt.datetime(2010, 1, 2, 10), dt.datetime(2010, 1, 3, 11, 30)]


def test_cli_summary_says_how_the_times_were_read(tmp_path):
    pq.write_table(pa.table({"t": ["2020-03-28T23:30:00+01:00", "2020-03-29T03:30:00+02:00"], "v": [1, 2]}),
                   tmp_path / "z.parquet")
    env = {**os.environ, "PYTHONPATH": SRC}
    r = subprocess.run([sys.executable, "-m", "dprivacy", "series", str(tmp_path / "z.parquet"), "-o", str(tmp_path / "o.csv"),
                        "--column", "v", "--time", "t", "--epsilon", "1"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "converted to UTC" in " ".join(r.stdout.split())
