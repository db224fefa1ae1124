"""dp.obfuscate on GeoPandas GeoDataFrames (EPSG:4326 and projected CRSs) and on polars DataFrames: the command
line's release for the same seed, the other columns, the index and the dtypes kept, its refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from api_helpers import api_message, cli_message, points_frame, released_points, run_cli

import dprivacy as dp


def _cli_points(tmp_path, frame, *options):
    frame.to_parquet(tmp_path / "pts.parquet")
    code, _, err = run_cli("obfuscate", "pts.parquet", "-o", "out.parquet", *options, cwd=tmp_path)
    assert code == 0, err
    return released_points(tmp_path / "out.parquet")


@pytest.mark.parametrize("crs", ["EPSG:4326", "EPSG:3857", "EPSG:32631"])  # WGS84, Web Mercator, UTM zone 31N
def test_geodataframe_release_is_the_command_lines_in_any_crs(tmp_path, crs):
    gpd = pytest.importorskip("geopandas")
    df = points_frame(30)
    gdf = gpd.GeoDataFrame(df.drop(columns=["lat", "lon"]), geometry=gpd.points_from_xy(df["lon"], df["lat"]),
                           crs="EPSG:4326").to_crs(crs)
    released, res = dp.obfuscate(gdf, epsilon=1.0, seed=17)
    assert isinstance(released, gpd.GeoDataFrame) and released.crs == gdf.crs
    # the command line on the same points in WGS84 degrees (as the API reads them) and the same other columns
    wgs = gdf.geometry.to_crs("EPSG:4326") if crs != "EPSG:4326" else gdf.geometry
    la, lo = _cli_points(tmp_path, pd.DataFrame(gdf.drop(columns="geometry")).assign(lat=wgs.y.to_numpy(),
                                                                                    lon=wgs.x.to_numpy()),
                         "--epsilon", "1", "--seed", "17")
    back = released.geometry.to_crs("EPSG:4326") if crs != "EPSG:4326" else released.geometry
    if crs == "EPSG:4326":  # exact: the released degrees are the geometry's coordinates
        np.testing.assert_array_equal(back.y.to_numpy(), la)
        np.testing.assert_array_equal(back.x.to_numpy(), lo)
    else:  # through the projection and back: within its floating-point round trip (nanometres)
        np.testing.assert_allclose(back.y.to_numpy(), la, rtol=0, atol=1e-9)
        np.testing.assert_allclose(back.x.to_numpy(), lo, rtol=0, atol=1e-9)
    pd.testing.assert_frame_equal(pd.DataFrame(released.drop(columns="geometry")),
                                  pd.DataFrame(gdf.drop(columns="geometry")))
    assert released.index.equals(gdf.index) and released.dtypes.equals(gdf.dtypes)
    # the noise is in metres on the ellipsoid whatever the CRS: displacements of the order of 2/ε = 2 km
    from pyproj import Geod

    _, _, d = Geod(ellps="WGS84").inv(df["lon"], df["lat"], back.x, back.y)
    assert 200 < np.mean(d) < 6000 and res.sidecar["lat_column"] == "lat"


@pytest.mark.parametrize("make, needle", [
    (lambda gpd, g: g.set_crs(None, allow_override=True), "no CRS"),
    (lambda gpd, g: g.set_geometry(g.to_crs("EPSG:3857").buffer(10.0).to_crs("EPSG:4326")), "Polygon"),
    (lambda gpd, g: g.assign(lat=1.0), "beside its geometry"),
    (lambda gpd, g: g.assign(home=g.geometry), "look like locations"),
])
def test_geodataframe_refusals(make, needle):
    gpd = pytest.importorskip("geopandas")
    df = points_frame(6)
    gdf = gpd.GeoDataFrame(df[["visits"]], geometry=gpd.points_from_xy(df["lon"], df["lat"]), crs="EPSG:4326")
    with pytest.raises(ValueError, match=needle):
        dp.obfuscate(make(gpd, gdf), epsilon=1.0)


def test_geodataframe_missing_points_are_invalid_rows():
    gpd = pytest.importorskip("geopandas")
    df = points_frame(8)
    geom = list(gpd.points_from_xy(df["lon"], df["lat"]))
    geom[2] = None
    gdf = gpd.GeoDataFrame(df[["note"]], geometry=geom, crs="EPSG:4326")
    with pytest.raises(ValueError, match="skip-invalid"):
        dp.obfuscate(gdf, epsilon=1.0)
    released, res = dp.obfuscate(gdf, epsilon=1.0, skip_invalid=True)
    assert released.index.equals(gdf.index.delete(2)) and res.counts["rows_rejected"] == 1


def test_polars_release_is_the_command_lines_and_keeps_the_frame(tmp_path):
    pl = pytest.importorskip("polars")
    df = points_frame(30).reset_index()
    frame = pl.from_pandas(df)
    la, lo = _cli_points(tmp_path, df, "--epsilon", "2", "--seed", "31")
    released, res = dp.obfuscate(frame, epsilon=2.0, seed=31)
    assert isinstance(released, pl.DataFrame) and released.columns == frame.columns
    np.testing.assert_array_equal(released["lat"].to_numpy(), la)
    np.testing.assert_array_equal(released["lon"].to_numpy(), lo)
    assert released.schema == frame.schema
    assert released.drop(["lat", "lon"]).equals(frame.drop(["lat", "lon"]))


def test_polars_skip_invalid_and_query(tmp_path):
    pl = pytest.importorskip("polars")
    df = points_frame(20).reset_index()
    df.loc[[4, 11], "lon"] = np.nan
    released, res = dp.obfuscate(pl.from_pandas(df), epsilon=1.0, seed=3, skip_invalid=True)
    assert released["pid"].to_list() == df["pid"].drop([4, 11]).tolist() and res.counts["rows_rejected"] == 2
    frame = pl.DataFrame({"units": [1, 5, 7, 2, 9], "g": ["a", "b", "a", "a", "b"]})
    a = dp.query(frame, "sum:units", epsilon=1.0, bounds=(0, 10), seed=4).to_dict()
    b = dp.query(frame.to_pandas(), "sum:units", epsilon=1.0, bounds=(0, 10), seed=4).to_dict()
    assert a["answers"] == b["answers"] and a["table"] == "the polars DataFrame"


@pytest.mark.parametrize("kwargs, options", [
    ({}, []),
    ({"epsilon": 1.0, "lat": "nope"}, ["--epsilon", "1", "--lat", "nope"]),
    ({"epsilon": 1.0, "key": "note"}, ["--epsilon", "1", "--key", "note"]),
])
def test_polars_refusals_are_the_command_lines(tmp_path, kwargs, options):
    pl = pytest.importorskip("polars")
    df = points_frame(6).reset_index()
    df.to_parquet(tmp_path / "pts.parquet")
    code, _, err = run_cli("obfuscate", "pts.parquet", "-o", "out.parquet", *options, cwd=tmp_path)
    assert code == 2
    with pytest.raises(ValueError) as exc:
        dp.obfuscate(pl.from_pandas(df), **kwargs)
    assert api_message(exc.value, "the polars DataFrame") == cli_message(err, "pts.parquet")
