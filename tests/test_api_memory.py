"""In-memory data goes through memory only: no call of the data API on a DataFrame, a GeoDataFrame, a polars
DataFrame, an Arrow table or a Dask DataFrame writes a file to the temporary folder or the working folder, while it
runs or after it, and none writes a Parquet file or makes a temporary file at all."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from api_helpers import points_frame

import dprivacy as dp

REGION = "2.0,48.5,2.7,49.2"


def meter(n: int = 48) -> pd.DataFrame:
    return pd.DataFrame({"time": pd.date_range("2024-01-01", periods=n, freq="h"),
                         "kwh": [float(i % 5) if i != 7 else np.nan for i in range(n)]})


def sales(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"units": np.arange(n) % 11, "region": ["West", "East"] * (n // 2)})


class Watch:
    """The folders a call could write to, looked at while it runs (from its progress and status callbacks)."""

    def __init__(self, *folders: Path):
        self.folders = folders
        self.looks = 0
        self.seen: list = []

    def look(self, *args, **kwargs) -> None:
        self.looks += 1
        for f in self.folders:
            self.seen += [str(p.relative_to(f)) for p in f.rglob("*")]

    def status(self, text, timed):
        self.look()
        watch = self

        class Line:
            def update(self, r) -> None:
                watch.look()

            def tick(self) -> None:
                watch.look()

            def stop(self) -> None:
                watch.look()

        return Line()


def calls(out: Path, watch: Watch):
    """(what, call) for each in-memory call of the API, with the callbacks that look at the folders meanwhile."""
    df = points_frame(60)
    df.loc[df.index[5], "lat"] = np.nan
    yield "obfuscate pandas", lambda: dp.obfuscate(df, epsilon=1.0, skip_invalid=True, progress=watch.look)
    yield "obfuscate pandas, seeded and shuffled", lambda: dp.obfuscate(df, epsilon=1.0, seed=3, shuffle=True,
                                                                         skip_invalid=True, progress=watch.look)
    yield "obfuscate Arrow", lambda: dp.obfuscate(pa.Table.from_pandas(df.dropna(subset=["lat"])), epsilon=1.0,
                                                  progress=watch.look)
    yield "obfuscate on a grid", lambda: dp.obfuscate(df.dropna(subset=["lat"]), epsilon=1.0, progress=watch.look,
                                                      mechanism="planar-laplace-grid", cell="5km", region=REGION,
                                                      status=watch.status)
    pl = pytest.importorskip("polars")
    yield "obfuscate polars", lambda: dp.obfuscate(pl.from_pandas(df.reset_index()), epsilon=1.0, skip_invalid=True,
                                                   progress=watch.look)
    gpd = pytest.importorskip("geopandas")
    clean = df.dropna(subset=["lat"])
    gdf = gpd.GeoDataFrame(clean.drop(columns=["lat", "lon"]), geometry=gpd.points_from_xy(clean["lon"], clean["lat"]),
                           crs="EPSG:4326").to_crs("EPSG:3857")
    yield "obfuscate GeoPandas", lambda: dp.obfuscate(gdf, epsilon=1.0, progress=watch.look)
    released, result = dp.obfuscate(clean, epsilon=1.0, seed=4)
    yield "evaluate with a figure", lambda: dp.evaluate(clean, released, sidecar=result, cell="5km", region=REGION,
                                                        png=out / "eval.png", html=out / "eval.html",
                                                        progress=watch.look)
    budget = dp.Budget(out / "ledger.json", 10.0)
    yield "query with a budget", lambda: dp.query(sales(), "sum:units", epsilon=1.0, bounds=(0, 10), budget=budget,
                                                  name="sales", status=watch.status)
    yield "query percentile", lambda: dp.query(sales(), "percentile:units:50", epsilon=1.0, bounds=(0, 10),
                                               status=watch.status)
    yield "Budget.spent", lambda: budget.spent(name="sales")
    yield "release_series", lambda: dp.release_series(meter(), column="kwh", time="time", epsilon=0.5, per="day",
                                                      skip_invalid=True, progress=watch.look)
    dd = pytest.importorskip("dask.dataframe")
    points = clean.assign(rid=np.arange(len(clean)))
    yield "obfuscate Dask", lambda: dp.obfuscate(dd.from_pandas(points, npartitions=3), epsilon=1.0, seed=2, key="rid",
                                                 progress=watch.look)
    yield "query Dask", lambda: dp.query(dd.from_pandas(sales(), npartitions=3), "count", epsilon=1.0, budget=budget,
                                         name="sales", status=watch.status)


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """(temporary folder, working folder, output folder): the first two empty, and the ones a call would use."""
    tmp, work, out = tmp_path / "tmp", tmp_path / "work", tmp_path / "out"
    for f in (tmp, work, out):
        f.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.chdir(work)  # (DuckDB spills to ./.tmp, matplotlib or a library could write beside the caller)
    return tmp, work, out


def test_no_file_is_written_to_the_temporary_or_working_folder_during_or_after_a_call(folders):
    tmp, work, out = folders
    assert tempfile.gettempdir() == str(tmp)
    watch = Watch(tmp, work)
    for what, call in calls(out, watch):
        before = watch.looks
        call()
        assert watch.seen == [], f"{what}: {watch.seen}"
        assert sorted(p.name for p in tmp.iterdir()) == [] and sorted(p.name for p in work.iterdir()) == [], what
        if what not in ("Budget.spent",):
            assert watch.looks > before, f"{what}: the folders were not looked at during the call"
    assert (out / "eval.png").stat().st_size > 0  # (the figure asked for, written where it was asked)


def test_the_api_never_writes_parquet_nor_makes_a_temporary_file(folders, monkeypatch):
    import pyarrow.parquet as pq

    made: list = []

    def refuse(name):
        def call(*args, **kwargs):
            made.append(name)
            raise AssertionError(f"{name} called by an in-memory call")
        return call

    for name in ("write_table", "write_to_dataset", "ParquetWriter"):
        monkeypatch.setattr(pq, name, refuse(f"pyarrow.parquet.{name}"))
    monkeypatch.setattr(pd.DataFrame, "to_parquet", refuse("DataFrame.to_parquet"))
    for name in ("mkdtemp", "mkstemp", "NamedTemporaryFile", "TemporaryDirectory", "TemporaryFile",
                 "SpooledTemporaryFile"):
        monkeypatch.setattr(tempfile, name, refuse(f"tempfile.{name}"))
    tmp, work, out = folders
    for what, call in calls(out, Watch()):
        call()
    assert made == []


def test_a_frame_release_equals_the_file_release_byte_for_byte(tmp_path, monkeypatch):
    """The in-memory route reads the batches a Parquet file's reader gives: the same seeded release over several
    batches, whatever the chunks of the Arrow table."""
    import pyarrow.parquet as pq

    from dprivacy.data import io

    monkeypatch.setitem(io.read_batches.__kwdefaults__, "batch_rows", 1000)  # several batches, the last one short
    n = 3 * 1000 + 17
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"lat": 48.85 + rng.normal(0, 0.05, n), "lon": 2.35 + rng.normal(0, 0.05, n),
                       "v": np.arange(n)})
    df.to_parquet(tmp_path / "p.parquet", index=False)
    chunked = pa.concat_tables([pa.Table.from_pandas(df.iloc[i:i + 700], preserve_index=False)
                                for i in range(0, n, 700)])  # chunks that cross the batches
    assert chunked.column("lat").num_chunks > 1
    mem, _ = dp.obfuscate(chunked, epsilon=1.0, seed=9)
    frame, _ = dp.obfuscate(df, epsilon=1.0, seed=9)
    dp.obfuscate(tmp_path / "p.parquet", tmp_path / "o.parquet", epsilon=1.0, seed=9)
    file = pq.read_table(tmp_path / "o.parquet")
    for c in ("lat", "lon"):
        np.testing.assert_array_equal(mem.column(c).to_numpy(), file.column(c).to_numpy())
        np.testing.assert_array_equal(frame[c].to_numpy(), file.column(c).to_numpy())
