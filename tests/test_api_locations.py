"""dp.obfuscate and dp.evaluate on pandas DataFrames, Arrow tables and paths: the same release as the command line
for the same seed, the other columns, the index and the dtypes kept, and the command line's refusals with its
sentences."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from api_helpers import PLACEHOLDER, api_message, cli_message, points_frame, released_points, run_cli

import dprivacy as dp


def _cli_release(tmp_path, df, *extra, fmt="parquet"):
    src = tmp_path / f"pts.{fmt}"
    if fmt == "parquet":
        df.to_parquet(src)
    else:
        df.to_csv(src)
    out = tmp_path / "out.parquet"
    code, _, err = run_cli("obfuscate", src.name, "-o", out.name, *extra, cwd=tmp_path)
    assert code == 0, err
    return pq.read_table(out).to_pandas(), json.loads((tmp_path / "out.parquet.dprivacy.json").read_text())


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_pandas_release_is_the_command_lines_and_keeps_the_rest(tmp_path, fmt):
    df = points_frame()
    cli, side = _cli_release(tmp_path, df, "--epsilon", "2", "--seed", "11", fmt=fmt)
    before = df.copy(deep=True)
    released, res = dp.obfuscate(df, epsilon=2.0, seed=11)
    np.testing.assert_array_equal(released["lat"].to_numpy(), cli["lat"].to_numpy())
    np.testing.assert_array_equal(released["lon"].to_numpy(), cli["lon"].to_numpy())
    assert (released["lat"] != df["lat"]).all()  # every point moved
    pd.testing.assert_frame_equal(released.drop(columns=["lat", "lon"]), df.drop(columns=["lat", "lon"]))
    assert list(released.columns) == list(df.columns) and released.index.equals(df.index)
    assert released.dtypes.equals(df.dtypes)
    pd.testing.assert_frame_equal(df, before)  # the input is untouched
    assert res.guarantee == side["guarantee"] and res.random_source == side["random_source"]
    assert not res.release_grade and "NOT for release" in res.random_source["warning"]
    assert res.counts == {"rows_read": len(df), "rows_written": len(df), "rows_rejected": 0, "rows_suppressed": 0}
    assert res.to_dict()["epsilon_per_metre"] == side["epsilon_per_metre"] == 2e-3


def test_arrow_release_is_the_command_lines_and_keeps_the_table(tmp_path):
    df = points_frame(25, seed=3).reset_index()
    table = pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata({b"owner": b"me"})
    cli, _ = _cli_release(tmp_path, df, "--epsilon", "0.5", "--seed", "4")
    released, res = dp.obfuscate(table, epsilon=0.5, seed=4)
    assert isinstance(released, pa.Table)
    np.testing.assert_array_equal(released.column("lat").to_numpy(), cli["lat"].to_numpy())
    assert released.schema.metadata == {b"owner": b"me"}
    for c in table.column_names:
        if c not in ("lat", "lon"):
            assert released.column(c).equals(table.column(c))
    assert released.schema.field("lat").type == pa.float64()


def test_path_release_writes_what_the_command_line_writes(tmp_path):
    df = points_frame(10)
    df.to_parquet(tmp_path / "pts.parquet")
    out, res = dp.obfuscate(tmp_path / "pts.parquet", tmp_path / "api.parquet", epsilon=1.0, seed=5)
    assert out == tmp_path / "api.parquet"
    cli, side = _cli_release(tmp_path, df, "--epsilon", "1", "--seed", "5")
    la, lo = released_points(out)
    np.testing.assert_array_equal(la, cli["lat"].to_numpy())
    written = json.loads((tmp_path / "api.parquet.dprivacy.json").read_text())
    assert res.to_dict() == written
    assert {k: v for k, v in written.items() if k not in ("output", "seconds")} == \
        {k: v for k, v in side.items() if k not in ("output", "seconds")}


def test_skip_invalid_keeps_the_index_of_the_rows_released(tmp_path):
    df = points_frame(30)
    df.loc[df.index[[2, 9]], "lat"] = np.nan
    df.loc[df.index[5], "lon"] = 200.0
    cli, _ = _cli_release(tmp_path, df, "--epsilon", "1", "--seed", "2", "--skip-invalid")
    released, res = dp.obfuscate(df, epsilon=1.0, seed=2, skip_invalid=True)
    kept = np.setdiff1d(np.arange(30), [2, 5, 9])
    assert released.index.equals(df.index[kept])
    np.testing.assert_array_equal(released["lat"].to_numpy(), cli["lat"].to_numpy())
    pd.testing.assert_frame_equal(released[["visits", "note"]], df.iloc[kept][["visits", "note"]])
    assert res.counts["rows_rejected"] == 3 and res.counts["rows_written"] == 27


def test_shuffle_keeps_rows_together_and_forgets_the_index(tmp_path):
    df = points_frame(30)
    cli, _ = _cli_release(tmp_path, df, "--epsilon", "1", "--seed", "8", "--shuffle")
    released, res = dp.obfuscate(df, epsilon=1.0, seed=8, shuffle=True)
    assert released.index.equals(pd.RangeIndex(30))  # the original labels would give the order away
    np.testing.assert_array_equal(released["note"].to_numpy(), cli["note"].to_numpy())
    np.testing.assert_array_equal(released["lat"].to_numpy(), cli["lat"].to_numpy())
    assert sorted(released["note"]) == sorted(df["note"]) and list(released["note"]) != list(df["note"])
    assert res.sidecar["shuffled"] is True


def test_user_budget_suppresses_the_same_rows_as_the_command_line(tmp_path):
    df = points_frame(20).assign(user=[f"u{i % 3}" for i in range(20)])
    cli, _ = _cli_release(tmp_path, df, "--epsilon", "1", "--seed", "1", "--user", "user", "--budget", "3")
    released, res = dp.obfuscate(df, epsilon=1.0, seed=1, user="user", budget=3.0)
    assert released.index.equals(df.index[:9]) and res.counts["rows_suppressed"] == 11  # the first 3 rows of each user
    np.testing.assert_array_equal(released["lat"].to_numpy(), cli["lat"].to_numpy())


def test_semicircles_come_back_in_the_input_dtype():
    df = pd.DataFrame({"lat": np.array([582_000_000, 583_000_000], dtype=np.int32),
                       "lon": np.array([28_000_000, 29_000_000], dtype=np.int32)})
    released, _ = dp.obfuscate(df, epsilon=1.0, seed=3, coords="semicircles")
    assert released.dtypes.equals(df.dtypes) and (released["lat"] != df["lat"]).any()


def test_release_grade_by_default_and_no_two_releases_alike():
    df = points_frame(5)
    a, ra = dp.obfuscate(df, epsilon=1.0)
    b, _ = dp.obfuscate(df, epsilon=1.0)
    assert ra.release_grade and not (a["lat"].to_numpy() == b["lat"].to_numpy()).all()


#: (API keyword arguments, command-line options) that the command line refuses.
REFUSALS = [
    ({}, []),
    ({"epsilon": 1.0, "accuracy": "500m@95%"}, ["--epsilon", "1", "--accuracy", "500m@95%"]),
    ({"accuracy": "2km@95%", "mechanism": "planar-laplace-grid", "cell": "1km", "region": "2,48,3,49"},
     ["--accuracy", "2km@95%", "--mechanism", "planar-laplace-grid", "--cell", "1km", "--region", "2,48,3,49"]),
    ({"epsilon": 1.0, "cell": "1km"}, ["--epsilon", "1", "--cell", "1km"]),
    ({"epsilon": 1.0, "mechanism": "tight-constraints"}, ["--epsilon", "1", "--mechanism", "tight-constraints"]),
    ({"epsilon": 1.0, "time_limit": 5.0}, ["--epsilon", "1", "--time-limit", "5"]),
    ({"epsilon": 1.0, "key": "note"}, ["--epsilon", "1", "--key", "note"]),
    ({"epsilon": 1.0, "user": "note"}, ["--epsilon", "1", "--user", "note"]),
    ({"epsilon": 1.0, "lat": "nope"}, ["--epsilon", "1", "--lat", "nope"]),
    ({"epsilon": 1e9}, ["--epsilon", "1e9"]),
    ({"epsilon": 1.0, "keep": ["nope"]}, ["--epsilon", "1", "--keep", "nope"]),
    ({"accuracy": "5 parsecs"}, ["--accuracy", "5 parsecs"]),
]


@pytest.mark.parametrize("kwargs, options", REFUSALS, ids=[" ".join(o) or "none" for _, o in REFUSALS])
@pytest.mark.parametrize("kind", ["pandas", "arrow"])
def test_refusals_are_the_command_lines(tmp_path, kwargs, options, kind):
    df = points_frame(8)
    df.to_parquet(tmp_path / "pts.parquet")
    code, _, err = run_cli("obfuscate", "pts.parquet", "-o", "out.parquet", *options, cwd=tmp_path)
    assert code == 2 and not (tmp_path / "out.parquet").exists()
    data = df if kind == "pandas" else pa.Table.from_pandas(df)
    with pytest.raises(ValueError) as exc:
        dp.obfuscate(data, **kwargs)
    label = "the DataFrame" if kind == "pandas" else "the Arrow Table"
    assert api_message(exc.value, label) == cli_message(err, "pts.parquet")


@pytest.mark.parametrize("make", [
    lambda df: df.rename(columns={"note": "home_address"}),
    lambda df: df.assign(lat2=df["lat"]),
    lambda df: df.assign(lat=lambda d: d["lat"].where(d.index != "p003")),
])
def test_data_refusals_name_the_frame_as_the_command_line_names_the_file(tmp_path, make):
    df = make(points_frame(12))
    df.to_parquet(tmp_path / "pts.parquet")
    code, _, err = run_cli("obfuscate", "pts.parquet", "-o", "out.parquet", "--epsilon", "1", cwd=tmp_path)
    assert code == 2
    with pytest.raises(ValueError) as exc:
        dp.obfuscate(df, epsilon=1.0)
    assert api_message(exc.value, "the DataFrame") == cli_message(err, "pts.parquet")
    assert PLACEHOLDER in cli_message(err, "pts.parquet") or "coordinate" in str(exc.value)


def test_coordinates_in_the_index_are_refused():
    df = points_frame(5).set_index(["lat", "lon"])
    with pytest.raises(ValueError, match="index"):
        dp.obfuscate(df, epsilon=1.0)


def test_output_is_for_paths_and_required_for_them(tmp_path):
    with pytest.raises(ValueError, match="output="):
        dp.obfuscate(points_frame(3), tmp_path / "o.parquet", epsilon=1.0)
    points_frame(3).to_parquet(tmp_path / "p.parquet")
    with pytest.raises(ValueError, match="output=PATH"):
        dp.obfuscate(tmp_path / "p.parquet", epsilon=1.0)
    with pytest.raises(TypeError, match="expected a pandas"):
        dp.obfuscate([[48.0, 2.0]], epsilon=1.0)


def test_evaluate_a_frame_release_as_the_command_line_evaluates_the_files(tmp_path):
    df = points_frame(40)
    released, res = dp.obfuscate(df, epsilon=1.0, seed=9)
    ev = dp.evaluate(df, released, sidecar=res)
    df.to_parquet(tmp_path / "pts.parquet")
    dp.obfuscate(tmp_path / "pts.parquet", tmp_path / "out.parquet", epsilon=1.0, seed=9)
    code, out, err = run_cli("evaluate", "pts.parquet", "out.parquet", "--json", cwd=tmp_path)
    assert code == 0, err
    cli = json.loads(out)
    assert ev.report["displacement_m"] == cli["displacement_m"]
    assert ev.report["predicted_displacement_m"] == cli["predicted_displacement_m"]
    assert ev.counts == {"rows": 40, "rows_skipped": 0}
    # the displacement is the geodesic distance between the true and released points
    from pyproj import Geod

    _, _, d = Geod(ellps="WGS84").inv(df["lon"], df["lat"], released["lon"], released["lat"])
    assert ev.report["displacement_m"]["mean"] == pytest.approx(float(np.mean(d)), rel=1e-9)


def test_evaluate_refuses_as_the_command_line(tmp_path):
    df = points_frame(5)
    with pytest.raises(ValueError) as exc:
        dp.evaluate(df, df, mechanisms="planar-laplace")
    code, _, err = run_cli("evaluate", "a.parquet", "b.parquet", "--mechanisms", "planar-laplace", cwd=tmp_path)
    assert code == 2 and str(exc.value) == cli_message(err)
