"""Releasing a series of readings under d1 / d∞ on values (Chatzikokolakis et al. 2013 §6.1): the noise law, the stated
accuracy, the per-period aggregates, real glucose readings, and bad input (nothing written). The privacy attacks
found on series are kept as tests in tests/attacks/test_attack_series.py (issue #30)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from scipy import stats

from dprivacy.data.series import release_series

SRC = os.path.join(os.path.dirname(__file__), "..", "src")


def _write(path, **cols):
    pacsv.write_csv(pa.table(cols), path)
    return path


def _law(ratio, support):
    a = math.exp(-ratio)
    p = (1 - a) / (1 + a) * a ** np.abs(support)
    return np.append(p, 1 - p.sum())


def test_d1_noise_is_the_discrete_laplace_with_power(tmp_path):
    n = 200_000
    src = _write(tmp_path / "in.csv", reading=np.full(n, 100.0))
    rep = release_series(src, tmp_path / "out.csv", column="reading", epsilon=0.6, metric="d1", rng=3)
    k = pacsv.read_csv(tmp_path / "out.csv").column("reading").to_numpy() - 100.0
    assert np.array_equal(k, np.rint(k))  # on the unit lattice whatever the input
    support = np.arange(-12, 13)
    obs = np.append(np.array([(k == s).sum() for s in support]), (np.abs(k) > 12).sum())
    assert stats.chisquare(obs, _law(0.6, support) * n).pvalue > 1e-6
    assert stats.chisquare(obs, _law(0.66, support) * n).pvalue < 1e-6  # ε 10% off is rejected
    # the stated expected |error| is the mean |noise|
    assert np.abs(k).mean() == pytest.approx(rep.expected_abs_error, rel=0.02)
    assert (np.abs(k) > rep.within).mean() <= 1 - rep.confidence + 0.003
    assert rep.epsilon_per_reading == 0.6 and rep.delivered_epsilon <= 0.6


def test_dinf_spends_epsilon_over_n_per_reading_and_units_scale(tmp_path):
    n = 50
    x = np.arange(n) * 2.5
    src = _write(tmp_path / "in.csv", reading=x)
    rep = release_series(src, tmp_path / "out.csv", column="reading", epsilon=2.0, metric="dinf", unit=0.5, rng=1)
    assert rep.epsilon_per_reading == pytest.approx(2.0 / n, rel=1e-15)
    assert rep.delivered_epsilon <= 2.0
    y = pacsv.read_csv(tmp_path / "out.csv").column("reading").to_numpy()
    assert np.array_equal(y / 0.5, np.rint(y / 0.5))
    a = math.exp(-2.0 / n)
    assert rep.expected_abs_error == pytest.approx(0.5 * 2 * a / (1 - a * a), rel=1e-9)


def test_per_day_aggregates_are_the_sums_of_the_released_readings(tmp_path):
    times = pa.array((np.datetime64("2024-01-01T00:00") + np.arange(0, 3 * 24 * 60, 30).astype("timedelta64[m]")).astype("datetime64[s]"))
    n = len(times)
    src = tmp_path / "in.csv"
    pacsv.write_csv(pa.table({"t": times, "kwh": np.linspace(0, 5, n), "other": np.arange(n)}), src)
    rep = release_series(src, tmp_path / "out.parquet", column="kwh", time_column="t", epsilon=1.0, unit=0.01,
                         per="day", rng=2)
    import pyarrow.parquet as pq

    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column_names == ["t", "kwh"]  # the other columns are not released
    y = out.column("kwh").to_numpy()
    days = out.column("t").to_numpy().astype("datetime64[D]")
    assert [a["period"] for a in rep.aggregates] == ["2024-01-01", "2024-01-02", "2024-01-03"]
    for agg in rep.aggregates:
        sel = days == np.datetime64(agg["period"])
        assert agg["readings"] == sel.sum() == 48
        assert agg["sum"] == pytest.approx(y[sel].sum(), rel=1e-12)
        a = math.exp(-1.0)  # ε = 1 per unit U = 0.01: ratio e^{-ε} per lattice step of U
        assert agg["sum_noise_sd"] == pytest.approx(0.01 * math.sqrt(48 * 2 * a / (1 - a) ** 2), rel=1e-6)


def test_real_glucose_readings(tmp_path):
    bs = pytest.importorskip("bokeh_sampledata")
    cgm = os.path.join(os.path.dirname(bs.__file__), "_data", "CGM.csv.gz")
    out = tmp_path / "released.csv.gz"
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", "series", cgm, "-o", str(out), "--column", "glucose",
                        "--time", "datetime", "--epsilon", "0.5", "--per", "day", "--seed", "7", "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["readings"] == 52_281 and rep["skipped_invalid"] == 0
    assert rep["random_source"]["release"] is False and "NOT for release" in rep["random_source"]["warning"]
    side = json.loads(open(str(out) + ".dprivacy.json").read())
    assert side["aggregates"] == rep["aggregates"]
    t = pacsv.read_csv(out)
    assert t.column_names == ["datetime", "glucose"] and t.num_rows == 52_281
    truth = pacsv.read_csv(cgm).column("glucose").to_numpy()
    err = t.column("glucose").to_numpy() - truth
    assert np.abs(err).mean() == pytest.approx(rep["expected_abs_error"], rel=0.05)


def test_bad_input_names_the_problem_and_writes_nothing(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("t,v\n2024-01-01 00:00:00,1\n2024-01-01 00:05:00,abc\n2024-01-01 00:10:00,\n")
    out = tmp_path / "out.csv"
    with pytest.raises(ValueError, match=r"column 'v' has values that are not numbers") as e:
        release_series(src, out, column="v", epsilon=1.0)
    assert "abc" not in str(e.value) and e.value.detail == "row 2 of the file (1 = first data row): v = 'abc'"
    assert not out.exists() and not list(tmp_path.glob(".out.csv*"))
    rep = release_series(src, out, column="v", epsilon=1.0, skip_invalid=True, rng=0)
    assert rep.readings == 1 and rep.skipped_invalid == 2
    with pytest.raises(FileExistsError, match="--force"):
        release_series(src, out, column="v", epsilon=1.0, skip_invalid=True)
    with pytest.raises(ValueError, match="no reading column 'w'.*t, v"):
        release_series(src, tmp_path / "o2.csv", column="w", epsilon=1.0)
    with pytest.raises(ValueError, match=r"--time COL\)$"):
        release_series(src, tmp_path / "o2.csv", column="v", epsilon=1.0, per="day")
    named = _write(tmp_path / "named.csv", Time=["2024-01-01 00:00:00"], v=[1])  # a column that looks like the time
    with pytest.raises(ValueError, match=r"--time COL\): .*named.csv has a column 'Time'"):
        release_series(named, tmp_path / "o2.csv", column="v", epsilon=1.0, per="day")
    with pytest.raises(ValueError, match="unit must be a positive number"):
        release_series(src, tmp_path / "o2.csv", column="v", epsilon=1.0, unit=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        release_series(src, tmp_path / "o2.csv", column="v", epsilon=-1.0)
    src2 = _write(tmp_path / "nan.csv", v=np.array([1.0, np.nan, 3.0]))
    with pytest.raises(ValueError, match=r"column 'v' has missing or infinite values"):
        release_series(src2, tmp_path / "o3.csv", column="v", epsilon=1.0)
    assert not (tmp_path / "o2.csv").exists() and not (tmp_path / "o3.csv").exists()
    env = dict(os.environ, PYTHONPATH=SRC)
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", "series", str(src), "-o", str(tmp_path / "o4.csv"),
                        "--column", "v", "--epsilon", "1"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not numbers" in p.stderr
    assert not (tmp_path / "o4.csv").exists()


def test_a_series_written_as_geojson_is_refused_before_anything_is_written(tmp_path):
    """A series has no point to be a GeoJSON geometry: the refusal came after a temporary file was made,
    and left it behind."""
    src = _write(tmp_path / "in.csv", v=np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="cannot write .*o.geojson as GeoJSON"):
        release_series(src, tmp_path / "o.geojson", column="v", epsilon=1.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_periods_of_zoned_times_follow_their_own_clock(tmp_path):
    """Times with a zone (Berlin) were grouped by the UTC hour and day: 2020-03-29 00:30 in Berlin fell
    in the UTC day 2020-03-28."""
    import datetime

    import pyarrow.parquet as pq

    berlin = [datetime.datetime(2020, 3, 28, 22, 30, tzinfo=datetime.timezone.utc),  # 23:30 in Berlin
              datetime.datetime(2020, 3, 28, 23, 30, tzinfo=datetime.timezone.utc)]  # 00:30 on the 29th
    src = tmp_path / "z.parquet"
    pq.write_table(pa.table({"t": pa.array(berlin, pa.timestamp("s", tz="Europe/Berlin")), "v": [1.0, 2.0]}), src)
    rep = release_series(src, tmp_path / "o.parquet", column="v", time_column="t", per="day", epsilon=1.0, rng=0)
    assert [a["period"] for a in rep.aggregates] == ["2020-03-28", "2020-03-29"]


def test_a_time_of_day_column_is_copied_and_refused_for_periods(tmp_path):
    """Times of day (time32) were refused as 'not a date/time' even without --per (review finding)."""
    import datetime

    import pyarrow.parquet as pq

    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"t": pa.array([datetime.time(9, 0), datetime.time(9, 5)], pa.time32("s")),
                             "v": [1.0, 2.0]}), src)
    rep = release_series(src, tmp_path / "o.parquet", column="v", time_column="t", epsilon=1.0, rng=0)
    assert rep.readings == 2
    assert pq.read_table(tmp_path / "o.parquet").column("t").to_pylist() == [datetime.time(9, 0), datetime.time(9, 5)]
    with pytest.raises(ValueError, match="times of day without dates"):
        release_series(src, tmp_path / "o2.parquet", column="v", time_column="t", per="day", epsilon=1.0, rng=0)


def test_readings_with_a_fraction_need_their_unit(tmp_path):
    """Without --unit, 22.59 was released as 23 (rounded to the default unit 1) beside an accuracy that ignored
    the rounding (reported 0.0135, measured 0.26 on CGM's isig). A fraction is now refused, naming its row;
    --unit declares the resolution (and --unit 1 asks for the rounding)."""
    src = _write(tmp_path / "in.csv", reading=[10.0, 22.59, 7.0])
    with pytest.raises(ValueError, match=r"column 'reading' has values that are not whole numbers: give --unit") as e:
        release_series(src, tmp_path / "o.csv", column="reading", epsilon=1.0, rng=1)
    assert "22.59" not in str(e.value) and "row 2" in e.value.detail and "22.59" in e.value.detail  # the owner's
    assert not (tmp_path / "o.csv").exists()
    rep = release_series(src, tmp_path / "o.csv", column="reading", epsilon=1e4, unit=0.01, rng=1)
    got = pacsv.read_csv(tmp_path / "o.csv").column("reading").to_numpy()
    assert rep.unit == 0.01 and np.allclose(got, [10.0, 22.59, 7.0])
    release_series(src, tmp_path / "p.csv", column="reading", epsilon=1e4, unit=1.0, rng=1)
    assert np.array_equal(pacsv.read_csv(tmp_path / "p.csv").column("reading").to_numpy(), [10.0, 23.0, 7.0])


def test_released_readings_are_on_the_unit_grid_and_huge_ones_are_clamped(tmp_path):
    """Found by a review: --unit 0.01 wrote 18.150000000000002 (k·0.01 in float64); a reading of 1e300 at
    --unit 1e-300 failed with numpy's 'overflow encountered in divide'."""
    src = tmp_path / "r.csv"
    src.write_text("v\n" + "\n".join(f"{18 + i / 100:.2f}" for i in range(500)) + "\n")
    release_series(src, tmp_path / "o.csv", column="v", epsilon=1.0, unit=0.01, rng=1)
    out = [line for line in (tmp_path / "o.csv").read_text().splitlines()[1:]]
    assert all(len(x.split(".")[-1]) <= 2 for x in out), [x for x in out if len(x.split(".")[-1]) > 2][:3]
    big = tmp_path / "b.csv"
    big.write_text("v\n1e300\n")
    # a reading beyond 2^52 units is clamped to it, never refused: with the unit the asker chooses, a refusal told
    # the largest reading by bisection
    with np.errstate(over="raise"):
        release_series(big, tmp_path / "bo.csv", column="v", epsilon=1.0, unit=1e-300, rng=1)
    got = pacsv.read_csv(tmp_path / "bo.csv").column("v").to_numpy()
    assert np.isfinite(got).all() and abs(got[0] / 1e-300 - 2.0**52) < 2.0**40


def test_hourly_periods_of_a_date_column_are_refused(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"day": pa.array([0, 1, 2], pa.date32()), "kwh": [1, 2, 3]}), tmp_path / "d.parquet")
    with pytest.raises(ValueError, match="dates without times: periods per hour need times"):
        release_series(tmp_path / "d.parquet", tmp_path / "o.csv", column="kwh", time_column="day", epsilon=1.0, per="hour")
    assert not (tmp_path / "o.csv").exists()
