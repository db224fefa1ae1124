"""dp.obfuscate and dp.query on Dask DataFrames: noise per partition as the Dask engine draws it, the same keyed
release as the local engine and the command line, a release computed once; a query's aggregates computed by Dask
and released by the query layer with the same answer, guarantee and refusals as on pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from api_helpers import api_message, cli_message, points_frame, released_points, run_cli

import dprivacy as dp
from dprivacy.data.budget import BudgetExceeded

dd = pytest.importorskip("dask.dataframe")


@pytest.fixture
def points():
    df = points_frame(60)
    df["rid"] = np.arange(60) * 13 + 5  # unique record keys
    return df


def test_keyed_release_equals_the_local_engine_and_the_command_line(tmp_path, points):
    ddf = dd.from_pandas(points, npartitions=4)
    released, res = dp.obfuscate(ddf, epsilon=1.0, seed=21, key="rid")
    got = released.compute()
    local, _ = dp.obfuscate(points, epsilon=1.0, seed=21, key="rid")
    np.testing.assert_array_equal(got["lat"].to_numpy(), local["lat"].to_numpy())
    np.testing.assert_array_equal(got["lon"].to_numpy(), local["lon"].to_numpy())
    points.to_parquet(tmp_path / "pts.parquet")
    code, _, err = run_cli("obfuscate", "pts.parquet", "-o", "out.parquet", "--epsilon", "1", "--seed", "21", "--key",
                           "rid", cwd=tmp_path)
    assert code == 0, err
    la, _ = released_points(tmp_path / "out.parquet")
    np.testing.assert_array_equal(got["lat"].to_numpy(), la)
    pd.testing.assert_frame_equal(got.drop(columns=["lat", "lon"]), ddf.compute().drop(columns=["lat", "lon"]))
    assert got.index.equals(points.index) and res.counts["rows_written"] == 60


def test_a_release_is_drawn_once(points):
    released, res = dp.obfuscate(dd.from_pandas(points, npartitions=3), epsilon=1.0)
    a, b = released.compute(), released.compute()
    np.testing.assert_array_equal(a["lat"].to_numpy(), b["lat"].to_numpy())  # persisted: no second draw
    assert res.release_grade and "per_task" in res.random_source
    assert (a["lat"].to_numpy() != points["lat"].to_numpy()).all()


def test_skip_invalid_on_partitions(points):
    points.loc[points.index[[3, 40]], "lat"] = np.nan
    released, res = dp.obfuscate(dd.from_pandas(points, npartitions=3), epsilon=1.0, seed=2, key="rid",
                                 skip_invalid=True)
    got = released.compute()
    assert got.index.equals(points.index.delete([3, 40])) and res.counts["rows_rejected"] == 2
    local, _ = dp.obfuscate(points, epsilon=1.0, seed=2, key="rid", skip_invalid=True)
    np.testing.assert_array_equal(got["lat"].to_numpy(), local["lat"].to_numpy())


@pytest.mark.parametrize("kwargs, options", [
    ({"epsilon": 1.0, "seed": 3}, ["--epsilon", "1", "--seed", "3", "--engine", "dask"]),
    ({"epsilon": 1.0, "user": "note", "budget": 2.0},
     ["--epsilon", "1", "--user", "note", "--budget", "2", "--engine", "dask"]),
    ({"epsilon": 1.0, "cell": "1km"}, ["--epsilon", "1", "--cell", "1km", "--engine", "dask"]),
])
def test_refusals_are_the_dask_engines(tmp_path, points, kwargs, options):
    points.to_parquet(tmp_path / "pts.parquet")
    code, _, err = run_cli("obfuscate", "pts.parquet", "-o", "out.parquet", *options, cwd=tmp_path)
    assert code == 2
    with pytest.raises(ValueError) as exc:
        dp.obfuscate(dd.from_pandas(points, npartitions=2), **kwargs)
    assert api_message(exc.value, "the Dask DataFrame") == cli_message(err, "pts.parquet")


def table(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({"region": rng.choice(["West", "East", "North"], n), "units": rng.integers(0, 20, n),
                         "price": rng.integers(1, 100, n), "promo": rng.integers(0, 2, n).astype(bool)})


QUERIES = [
    ("count", {"where": "region = 'West' AND units > 3"}),
    ("sum:units", {"bounds": (2, 15)}),
    ("avg:price", {"bounds": (0, 100), "privacy": "dinf"}),
    ("percentile:price:50", {"bounds": (0, 100)}),
    ("percentile:price:25", {"bounds": (10, 60), "group_by": "region", "keys": ["East", "North", "Nowhere"]}),
    ("sum:price", {"bounds": (0, 100), "group_by": "region", "privacy": "d1", "where": "units < 10"}),
    ("kcount:promo,late", {}),
]


@pytest.mark.parametrize("spec, kwargs", QUERIES, ids=[q[0] for q in QUERIES])
def test_query_answers_equal_the_pandas_ones(spec, kwargs):
    df = table().assign(late=lambda d: d["units"] > 12)
    expected = dp.query(df, spec, epsilon=2.0, seed=8, **kwargs).to_dict()
    answer = dp.query(dd.from_pandas(df, npartitions=5), spec, epsilon=2.0, seed=8, **kwargs)
    got = answer.to_dict()
    assert got.pop("table") == "the Dask DataFrame" and expected.pop("table") == "the DataFrame"
    assert got == expected  # answers, guarantee, theorem, accuracy: one release path


def test_query_exact_aggregates_through_the_noise():
    """With ε large the noise is 0 with probability about 1, so the release shows the exact aggregate Dask computed."""
    df = table()
    ddf = dd.from_pandas(df, npartitions=4)
    assert dp.query(ddf, "count", epsilon=60.0, where="units >= 10").value == int((df["units"] >= 10).sum())
    s = dp.query(ddf, "sum:units", epsilon=400.0, bounds=(0, 19), group_by="region", keys="West,East").value
    assert s == {k: int(df.loc[df["region"] == k, "units"].sum()) for k in ("West", "East")}


@pytest.mark.parametrize("spec, kwargs", [
    ("sum:units", {}),
    ("count", {"group_by": "region"}),
    ("sum:nope", {"bounds": (0, 1)}),
    ("sum:units", {"bounds": (0, 5), "group_by": "units", "privacy": "d1"}),
])
def test_query_refusals_are_the_pandas_ones(spec, kwargs):
    df = table(20)
    with pytest.raises(ValueError) as want:
        dp.query(df, spec, epsilon=1.0, **kwargs)
    with pytest.raises(ValueError) as got:
        dp.query(dd.from_pandas(df, npartitions=2), spec, epsilon=1.0, **kwargs)
    assert api_message(got.value, "the Dask DataFrame") == api_message(want.value, "the DataFrame")


def test_invalid_values_are_refused_on_the_whole_frame():
    df = table(30).astype({"units": "float64", "price": "float64"})
    df.loc[25, "units"] = np.nan
    df.loc[3, "price"] = 2.5
    for spec, bounds in (("sum:units", (0, 20)), ("sum:price", (0, 100))):
        with pytest.raises(ValueError) as want:
            dp.query(df, spec, epsilon=1.0, bounds=bounds)
        with pytest.raises(ValueError) as got:
            dp.query(dd.from_pandas(df, npartitions=3), spec, epsilon=1.0, bounds=bounds)
        assert str(got.value) == str(want.value)
    ok = dp.query(dd.from_pandas(df, npartitions=3), "sum:units", epsilon=1.0, bounds=(0, 20), skip_invalid=True,
                  owner=True)
    assert ok.to_dict()["rows_skipped_not_private"] == 1


def test_a_query_is_charged_under_its_name_like_the_pandas_frame(tmp_path):
    df = table(40)
    budget = dp.Budget(tmp_path / "ledger.json", 1.0)
    with pytest.raises(ValueError, match="^budget= with the Dask DataFrame needs name="):
        dp.query(dd.from_pandas(df, npartitions=2), "count", epsilon=0.5, budget=budget)
    dp.query(df, "count", epsilon=0.6, budget=budget, name="sales")
    with pytest.raises(BudgetExceeded, match="only 0.4 of the budget 1 remains"):
        dp.query(dd.from_pandas(df, npartitions=2), "count", epsilon=0.5, budget=budget, name="sales")
    answer = dp.query(dd.from_pandas(df, npartitions=2), "count", epsilon=0.4, budget=budget, name="sales")
    assert answer.budget["budget_remaining"] == pytest.approx(0.0, abs=1e-12)
    assert answer.report.table == "the Dask DataFrame 'sales'" and budget.spent(name="sales") == pytest.approx(1.0)
