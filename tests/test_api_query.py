"""dp.query and dp.release_series on pandas DataFrames, Arrow tables and paths: the command line's answers for the
same seed, its refusals with its sentences, and what the result carries."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from api_helpers import api_message, cli_message, run_cli

import dprivacy as dp


def sales(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"region": rng.choice(["West", "East", "North"], n), "units": rng.integers(0, 20, n),
                         "price": rng.integers(1, 100, n), "promo": rng.integers(0, 2, n).astype(bool)})


QUERIES = [
    ("count", {}, []),
    ("sum:units", {"bounds": (0, 20)}, ["--bounds", "0,20"]),
    ("avg:price", {"bounds": "0,100"}, ["--bounds", "0,100"]),
    ("percentile:price:50", {"bounds": (0, 100), "where": "units >= 5"}, ["--bounds", "0,100", "--where", "units >= 5"]),
    ("sum:units", {"bounds": (0, 20), "group_by": "region", "keys": ["East", "West", "South"]},
     ["--bounds", "0,20", "--group-by", "region", "--keys", "East,West,South"]),
    ("sum:units", {"bounds": (0, 20), "group_by": "region", "privacy": "d1"},
     ["--bounds", "0,20", "--group-by", "region", "--privacy", "d1"]),
    ("kcount:promo,promo2", {}, []),
]


@pytest.mark.parametrize("spec, kwargs, options", QUERIES, ids=[q[0] + " " + " ".join(q[2]) for q in QUERIES])
@pytest.mark.parametrize("kind", ["pandas", "arrow", "path"])
def test_answers_are_the_command_lines(tmp_path, spec, kwargs, options, kind):
    df = sales().assign(promo2=lambda d: ~d["promo"])
    df.to_parquet(tmp_path / "t.parquet", index=False)
    code, out, err = run_cli("query", "t.parquet", "--query", spec, "--epsilon", "1", "--seed", "3", "--json", *options,
                             cwd=tmp_path)
    assert code == 0, err
    cli = json.loads(out)
    data = {"pandas": df, "arrow": pa.Table.from_pandas(df, preserve_index=False), "path": tmp_path / "t.parquet"}[kind]
    ans = dp.query(data, spec, epsilon=1.0, seed=3, **kwargs)
    got = ans.to_dict()
    assert [a["noisy"] for a in got["answers"]] == [a["noisy"] for a in cli["answers"]]
    assert [a["group"] for a in got["answers"]] == [a["group"] for a in cli["answers"]]
    assert got["guarantee"] == cli["guarantee"] and got["theorem"] == cli["theorem"]
    assert ans.guarantee == cli["guarantee"] and not ans.release_grade
    if kind == "path":
        assert got == {**cli, "seconds": got.get("seconds")} if "seconds" in cli else got == cli
    else:
        assert got["table"] == ("the DataFrame" if kind == "pandas" else "the Arrow Table")


def test_value_and_frame_of_the_answers():
    df = sales()
    ans = dp.query(df, "count", epsilon=2.0, seed=1)
    assert ans.value == ans.answers[0].noisy and 0 <= ans.value <= len(df)
    grouped = dp.query(df, "count", epsilon=2.0, seed=1, group_by="region", keys="East,West")
    assert list(grouped.value) == ["East", "West"]
    frame = grouped.to_frame()
    assert list(frame["group"]) == ["East", "West"] and (frame["expected_abs_error"] > 0).all()
    # the repr says what was answered, the answer, ε and the mechanism (and a seed's warning)
    assert repr(ans) == (f"<QueryAnswer count = {ans.value!r} (ε = 2, truncated-geometric, expected |error| "
                         f"{ans.answers[0].expected_abs_error:.4g}, seeded: NOT for release)>")
    assert repr(grouped) == "<QueryAnswer count: 2 answers (ε = 2, truncated-geometric, seeded: NOT for release)>"
    assert "seeded" not in repr(dp.query(df, "count", epsilon=2.0))


def test_owner_figures_only_on_request():
    df = sales().assign(units=lambda d: d["units"] * 3)  # values above the bounds are clamped
    plain = dp.query(df, "sum:units", epsilon=1.0, bounds=(0, 20), seed=2)
    owner = dp.query(df, "sum:units", epsilon=1.0, bounds=(0, 20), seed=2, owner=True)
    assert "clamped_not_private" not in plain.to_dict()["answers"][0]
    assert owner.to_dict()["answers"][0]["clamped_not_private"] == int((df["units"] > 20).sum())
    # nor in the answer objects (a new user read the exact count from .answers without owner=True)
    assert plain.answers[0].clamped_not_private is None and plain.report.rows_skipped_not_private is None
    assert owner.answers[0].clamped_not_private == int((df["units"] > 20).sum())


def test_a_percentile_frame_states_its_accuracy_in_ranks():
    df = sales()
    frame = dp.query(df, "percentile:units:50", epsilon=1.0, bounds=(0, 20), seed=1).to_frame()
    assert list(frame.columns) == ["group", "noisy", "within_ranks", "confidence"] and (frame["within_ranks"] > 0).all()


def test_refusals_before_anything_is_charged(tmp_path):
    """A missing file, or data without a column, is refused with one line, and the ledger is not written."""
    ledger = tmp_path / "ledger.json"
    with pytest.raises(FileNotFoundError, match="table not found: .*nofile.csv"):
        dp.query(str(tmp_path / "nofile.csv"), "count", epsilon=1.0, budget=dp.Budget(str(ledger), 5.0))
    assert not ledger.exists()
    with pytest.raises(ValueError, match="has no column"):
        dp.query(pd.DataFrame(), "count", epsilon=1.0)


#: (API keyword arguments, command-line options) refused by ``dprivacy query``.
REFUSALS = [
    ({"query": "sum:units", "bounds": "1"}, ["--query", "sum:units", "--bounds", "1"]),
    ({"query": "sum:units", "bounds": "a,b"}, ["--query", "sum:units", "--bounds", "a,b"]),
    ({"query": "sum:units"}, ["--query", "sum:units"]),
    ({"query": "count", "budget": dp.Budget(None, 1.0)}, ["--query", "count", "--budget", "1"]),
    ({"query": "count", "budget": dp.Budget("l.json")}, ["--query", "count", "--budget-file", "l.json"]),
    ({"query": "count", "group_by": "region", "keys": "A,,B"}, ["--query", "count", "--group-by", "region", "--keys", "A,,B"]),
    ({"query": "count", "keys": "@"}, ["--query", "count", "--keys", "@"]),
    ({"query": "count", "seed": 1, "budget": dp.Budget("l.json", 1.0)},
     ["--query", "count", "--seed", "1", "--budget-file", "l.json", "--budget", "1"]),
    ({"query": "count", "change_budget": True}, ["--query", "count", "--change-budget"]),
    ({"query": "count", "group_by": "region"}, ["--query", "count", "--group-by", "region"]),
    ({"query": "sum:nope", "bounds": (0, 1)}, ["--query", "sum:nope", "--bounds", "0,1"]),
    ({"query": "median:units"}, ["--query", "median:units"]),
    ({"query": "sum:units", "bounds": (0, 20), "group_by": "units", "privacy": "d1"},
     ["--query", "sum:units", "--bounds", "0,20", "--group-by", "units", "--privacy", "d1"]),
    ({"query": "count", "where": "region = 'West'; DROP TABLE t"},
     ["--query", "count", "--where", "region = 'West'; DROP TABLE t"]),
]


@pytest.mark.parametrize("kwargs, options", REFUSALS, ids=[" ".join(o) for _, o in REFUSALS])
def test_refusals_are_the_command_lines(tmp_path, kwargs, options):
    df = sales(10)
    df.to_parquet(tmp_path / "t.parquet", index=False)
    code, _, err = run_cli("query", "t.parquet", "--epsilon", "1", *options, cwd=tmp_path)
    assert code == 2
    kwargs = dict(kwargs)
    with pytest.raises(ValueError) as exc:
        dp.query(df, kwargs.pop("query"), epsilon=1.0, **kwargs)
    assert api_message(exc.value, "the DataFrame") == cli_message(err, tmp_path / "t.parquet", "t.parquet")
    assert not (tmp_path / "l.json").exists()


def test_series_is_the_command_lines_release(tmp_path):
    times = pd.date_range("2024-03-01", periods=48, freq="h")
    df = pd.DataFrame({"time": times, "kwh": np.arange(48) % 7, "meter": "A"}, index=pd.RangeIndex(100, 148))
    df.loc[df.index[[4, 30]], "kwh"] = np.nan
    df.to_parquet(tmp_path / "m.parquet", index=False)
    code, _, err = run_cli("series", "m.parquet", "-o", "out.parquet", "--column", "kwh", "--time", "time", "--epsilon",
                           "0.5", "--seed", "6", "--skip-invalid", "--per", "day", cwd=tmp_path)
    assert code == 0, err
    cli = pq.read_table(tmp_path / "out.parquet").to_pandas()
    side = json.loads((tmp_path / "out.parquet.dprivacy.json").read_text())
    released, res = dp.release_series(df, column="kwh", time="time", epsilon=0.5, seed=6, skip_invalid=True, per="day")
    assert list(released.columns) == ["time", "kwh"]  # the other columns are not released
    assert released.index.equals(df.index.delete([4, 30]))
    np.testing.assert_array_equal(released["kwh"].to_numpy(), cli["kwh"].to_numpy())
    np.testing.assert_array_equal(released["time"].to_numpy(), cli["time"].to_numpy())
    assert res.counts == {"readings": 46, "skipped_invalid": 2}
    assert res.sidecar["aggregates"] == side["aggregates"] and res.guarantee == side["guarantee"]


@pytest.mark.parametrize("kwargs, options", [
    ({"column": "kwh", "epsilon": 1.0}, ["--column", "kwh", "--epsilon", "1"]),
    ({"column": "nope", "epsilon": 1.0}, ["--column", "nope", "--epsilon", "1"]),
    ({"column": "kwh", "epsilon": 1.0, "per": "day"}, ["--column", "kwh", "--epsilon", "1", "--per", "day"]),
    ({"column": "kwh", "epsilon": -1.0}, ["--column", "kwh", "--epsilon", "-1"]),
])
def test_series_refusals_are_the_command_lines(tmp_path, kwargs, options):
    df = pd.DataFrame({"kwh": [1.0, np.nan, 2.5]})
    df.to_parquet(tmp_path / "m.parquet", index=False)
    code, _, err = run_cli("series", "m.parquet", "-o", "o.parquet", *options, cwd=tmp_path)
    assert code == 2
    with pytest.raises(ValueError) as exc:
        dp.release_series(df, **kwargs)
    assert api_message(exc.value, "the DataFrame") == cli_message(err, "m.parquet")


@pytest.mark.parametrize("cell", ["secret-ssn-123", 2**70])
def test_a_frame_without_an_arrow_form_is_refused_without_quoting_a_value(cell):
    """Arrow's own message quoted the cell that did not convert ('Could not convert 'secret-ssn-123' ...'): a person's
    value in a refusal, free of ε. The refusal names the column at most."""
    df = pd.DataFrame({"age": [1, 2, cell], "g": list("abc")})
    with pytest.raises(ValueError) as exc:
        dp.query(df, "percentile:age:50", epsilon=1, bounds=(0, 100))
    assert str(cell) not in str(exc.value) and "cannot be converted to Arrow" in str(exc.value)
