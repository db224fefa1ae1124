"""Geodesic planar Laplace on real location files (issue 11; seed 002 §6.2)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

pyproj = pytest.importorskip("pyproj")
pa = pytest.importorskip("pyarrow")

from dprivacy.data.io import read_batches  # noqa: E402
from dprivacy.data.locations import (  # noqa: E402
    displace,
    epsilon_for_accuracy,
    obfuscate_file,
    parse_accuracy,
    planar_laplace_displacements,
)
from dprivacy.sampling import random_source  # noqa: E402

GEOD = pyproj.Geod(ellps="WGS84")


def _data(name: str) -> Path:
    bs = pytest.importorskip("bokeh_sampledata", reason="real data ships with bokeh-sampledata (the test extra)")
    return Path(os.path.dirname(bs.__file__)) / "_data" / name


def _gamma2_cdf(eps):
    return lambda r: stats.gamma.cdf(r, a=2.0, scale=1.0 / eps)


@pytest.mark.parametrize("lat, lon", [(0.0, 10.0), (45.0, 7.0), (70.0, 20.0), (-33.9, 179.99), (89.9, 0.0), (-89.95, -120.0)])
def test_geodesic_displacement_follows_the_planar_laplace_radial_law(lat, lon):
    """The geodesic distance (pyproj inverse) from the true point to the reported one follows
    Gamma(2, 1/ε) at every latitude, across the antimeridian and near the poles; a mis-scaled ε is
    rejected by the same KS test (power)."""
    eps = 1 / 500.0  # per metre: mean displacement 1 km
    n = 4000
    g = random_source(2024 + int(abs(lat))).generator
    r, az = planar_laplace_displacements(n, epsilon=eps, generator=g)
    la, lo = displace(np.full(n, lat), np.full(n, lon), r, az, precision=0)
    _, _, dist = GEOD.inv(np.full(n, lon), np.full(n, lat), lo, la)
    assert stats.kstest(dist, _gamma2_cdf(eps)).pvalue > 1e-4
    assert stats.kstest(dist, _gamma2_cdf(eps * 1.15)).pvalue < 1e-4
    # north–south and east–west spreads are equal in metres (no shrinking with latitude)
    if abs(lat) < 80:
        az_back = GEOD.inv(np.full(n, lon), np.full(n, lat), lo, la)[0]
        north = dist * np.cos(np.radians(az_back))
        east = dist * np.sin(np.radians(az_back))
        assert 0.9 < north.std() / east.std() < 1.1


def test_lattice_rounding_moves_points_by_at_most_a_centimetre():
    g = random_source(1).generator
    r, az = planar_laplace_displacements(1000, epsilon=1e-3, generator=g)
    a = displace(np.full(1000, 51.5), np.full(1000, -0.1), r, az, precision=0)
    b = displace(np.full(1000, 51.5), np.full(1000, -0.1), r, az)
    _, _, moved = GEOD.inv(a[1], a[0], b[1], b[0])
    assert moved.max() < 0.02
    assert np.all(np.abs(b[0] * 1e7 - np.round(b[0] * 1e7)) < 1e-6)  # on the 1e-7° lattice


def test_accuracy_inverts_the_radial_cdf():
    r, p = parse_accuracy("500m@95%")
    assert (r, p) == (500.0, 0.95)
    eps = epsilon_for_accuracy(r, p)
    assert _gamma2_cdf(eps)(500.0) == pytest.approx(0.95, rel=1e-12)
    assert parse_accuracy("2km@0.9") == (2000.0, 0.9)
    with pytest.raises(ValueError, match="accuracy"):
        parse_accuracy("500@95")


@pytest.mark.parametrize("ext", [".csv", ".csv.gz", ".parquet", ".geojson"])
def test_world_cities_round_trip_keeps_columns_order_and_types(tmp_path, ext):
    src = _data("world_cities.csv.gz")
    out = tmp_path / f"cities{ext}"
    rep = obfuscate_file(src, out, epsilon=1.0, unit="km", rng=5)
    assert rep.rows_read == rep.rows_written == 45065 and rep.rows_rejected == 0
    side = json.loads(Path(str(out) + ".dprivacy.json").read_text())
    assert side["random_source"]["mode"] == "reproducible" and "NOT for release" in side["random_source"]["warning"]
    _, orig = read_batches(src)
    _, new = read_batches(out)
    a = pa.Table.from_batches(list(orig))
    b = pa.Table.from_batches(list(new))
    if ext == ".geojson":  # the coordinates travel as the Point geometry; they are read back under these names
        b = b.rename_columns([{"latitude": "lat", "longitude": "lng"}.get(c, c) for c in b.column_names])
    b = b.select(a.column_names)
    assert b.num_rows == a.num_rows
    assert b.column("name").to_pylist() == a.column("name").to_pylist()  # order and other columns kept
    lat0, lat1 = a.column("lat").to_numpy(), b.column("lat").to_numpy()
    lng0, lng1 = a.column("lng").to_numpy(), b.column("lng").to_numpy()
    assert not np.any((lat0 == lat1) & (lng0 == lng1))  # no true coordinate pair is released
    _, _, d = GEOD.inv(lng0, lat0, lng1, lat1)
    assert stats.kstest(d, _gamma2_cdf(1e-3)).pvalue > 1e-4


def test_same_seed_same_output_and_release_mode_by_default(tmp_path):
    src = _data("obiszow_mtb_xcm.csv")
    a, b, c = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    obfuscate_file(src, a, epsilon=5, unit="km", rng=7, keep=["alt"])
    obfuscate_file(src, b, epsilon=5, unit="km", rng=7, keep=["alt"])
    rep = obfuscate_file(src, c, epsilon=5, unit="km", keep=["alt"])
    assert a.read_bytes() == b.read_bytes() and a.read_bytes() != c.read_bytes()
    assert rep.random_source["release"] is True


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    return subprocess.run([sys.executable, "-m", "dprivacy.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_cli_bad_input_is_one_line_and_leaves_nothing(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,lat,lon\na,10,20\nb,95,20\nc,,3\n")
    p = _cli("obfuscate", str(bad), "-o", "out.csv", "--epsilon", "1", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "row 2: latitude 95" in p.stderr and "Traceback" not in p.stderr
    assert not any(tmp_path.glob("out.csv*")) and not any(tmp_path.glob(".out.csv*"))
    p = _cli("obfuscate", str(bad), "-o", "out.csv", "--epsilon", "1", "--skip-invalid", "--json", cwd=tmp_path)
    rep = json.loads(p.stdout)
    assert p.returncode == 0 and rep["rows_rejected"] == 2 and rep["rows_written"] == 1
    p = _cli("obfuscate", str(bad), "-o", "out.csv", "--epsilon", "1", cwd=tmp_path)
    assert p.returncode == 2 and "exists" in p.stderr  # never overwritten without --force
    proj = tmp_path / "proj.csv"
    proj.write_text("x,latitude,longitude\n1,5500000,400000\n")
    p = _cli("obfuscate", str(proj), "-o", "o2.csv", "--epsilon", "1", cwd=tmp_path)
    assert p.returncode == 2 and "projected" in p.stderr
    amb = tmp_path / "amb.csv"
    amb.write_text("lat,latitude,lon\n1,2,3\n")
    p = _cli("obfuscate", str(amb), "-o", "o3.csv", "--epsilon", "1", cwd=tmp_path)
    assert p.returncode == 2 and "several possible latitude columns" in p.stderr
    for args in (["--epsilon", "0"], ["--epsilon", "-1"], ["--epsilon", "1", "--unit", "mi"], []):
        p = _cli("obfuscate", str(bad), "-o", "o4.csv", *args, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, (args, p.stderr)
    empty = tmp_path / "empty.csv"
    empty.write_text("lat,lon\n")
    p = _cli("obfuscate", str(empty), "-o", "o5.csv", "--epsilon", "1", cwd=tmp_path)
    assert p.returncode == 2 and "no rows" in p.stderr and not (tmp_path / "o5.csv").exists()


def test_evaluate_measures_the_displacement_the_accuracy_promised(tmp_path):
    from dprivacy.data.locations import evaluate_files

    src = _data("world_cities.csv.gz")
    out = tmp_path / "c.csv"
    obfuscate_file(src, out, epsilon=epsilon_for_accuracy(500.0, 0.95), unit="m", rng=4)
    rep = evaluate_files(src, out)
    assert rep["rows"] == 45065
    # the 95th percentile of 45,065 Gamma(2) draws is within 3% of the promised 500 m
    assert rep["displacement_m"]["p95"] == pytest.approx(500.0, rel=0.03)
    assert rep["predicted_displacement_m"]["p95"] == pytest.approx(500.0, rel=1e-9)
    with pytest.raises(ValueError, match="repeated values"):
        evaluate_files(src, out, key="name")  # city names repeat: no one-to-one join


def test_evaluate_by_key_joins_the_released_rows_and_counts_those_left_out(tmp_path):
    # a release that left rows out (skipped as invalid, or over a user's budget) is joined on its own
    # keys, in any order; the left-out rows are counted, and a key the original lacks is an error
    from dprivacy.data.locations import evaluate_files

    rng = np.random.default_rng(5)
    lat, lon = rng.uniform(40, 50, 10), rng.uniform(0, 10, 10)
    src = tmp_path / "a.csv"
    src.write_text("id,lat,lon\n" + "".join(f"{i},{la:.17g},{lo:.17g}\n" for i, (la, lo) in enumerate(zip(lat, lon))))
    keep = rng.permutation(np.arange(2, 10))
    out = tmp_path / "b.csv"
    out.write_text("id,lat,lon\n" + "".join(f"{i},{lat[i]:.17g},{lon[i] + 0.01:.17g}\n" for i in keep))
    rep = evaluate_files(src, out, key="id")
    assert rep["rows"] == 8 and rep["rows_not_released"] == 2
    # every released point moved 0.01° east at its own latitude: the join paired the right rows
    from pyproj import Geod

    _, _, d = Geod(ellps="WGS84").inv(lon[keep], lat[keep], lon[keep] + 0.01, lat[keep])
    assert rep["displacement_m"]["max"] == pytest.approx(d.max(), rel=1e-12)
    assert rep["displacement_m"]["mean"] == pytest.approx(d.mean(), rel=1e-12)
    stray = tmp_path / "c.csv"
    stray.write_text(out.read_text() + f"99,{lat[0]:.17g},{lon[0]:.17g}\n")
    with pytest.raises(ValueError, match=r"1 key\(s\) of .*c.csv are not in .*a.csv \(e.g. 99\)"):
        evaluate_files(src, stray, key="id")
    assert "rows_not_released" not in evaluate_files(src, src, key="id")


# -- the released mechanism: exact lattice noise, a fixed output lattice, the guarantee stated ---------------


def test_output_lattice_is_fixed_never_narrower_than_a_millimetre_and_wraps():
    from dprivacy.data.locations import MIN_CELL_WIDTH_M, WGS84_A, output_lattice

    rng = np.random.default_rng(0)
    lat = np.concatenate([rng.uniform(-90, 90, 20000), rng.uniform(84, 90, 20000), [90.0, -90.0, 89.99999]])
    lon = rng.uniform(-180, 180, lat.size)
    i, j = output_lattice(lat, lon, 1e-7)
    cap = np.abs(i) == 900_000_000
    assert np.all(np.abs(i[~cap] * 1e-7 - lat[~cap]) <= 0.5e-7 * (1 + 1e-6))  # rows: the nearest latitude step
    assert np.all(np.abs(lat[cap]) > 89.99)  # the pole: within about 560 m of it
    row_edge = np.minimum((np.abs(i) + 0.5) * 1e-7, 90.0)
    assert np.all(j[cap] == 0)
    # the longitude step of a row is a power of two times 1e-7° and its cells are ≥ 1 mm wide
    k = np.array([(int(abs(v)) & -int(abs(v))).bit_length() - 1 if v else 62 for v in j[~cap]])
    width = np.radians(1e-7) * WGS84_A * np.cos(np.radians(row_edge[~cap]))
    # each released index is a multiple of the row's step; the step is the smallest power of two with width ≥ 1 mm
    need = np.maximum(np.ceil(np.log2(MIN_CELL_WIDTH_M / width)), 0)
    assert np.all(k >= need)
    # the same function of the output only: ±180° is one cell, and a point and its rounding agree
    a = output_lattice(np.array([10.0, 10.0]), np.array([180.0, -180.0]), 1e-7)
    assert a[1][0] == a[1][1] == -1_800_000_000
    i2, j2 = output_lattice(i * 1e-7, j * 1e-7, 1e-7)
    assert np.array_equal(i2, i) and np.array_equal(j2, j)


@pytest.mark.parametrize("lat, lon", [(48.85, 2.35), (-33.9, 179.999), (86.0, 30.0)])
def test_every_released_point_is_reachable_from_a_neighbour(lat, lon):
    """Mironov's condition for the geodesic pipeline: for outputs drawn at x, the noise lattice point of
    the neighbour x' (100 m away) nearest to each output is exhibited and mapped through the same
    geodesic step and rounding: it lands in the same output cell, so the output has positive
    probability from x' too."""
    from dprivacy.data.locations import NOISE_LATTICE_M, planar_laplace_displacements

    eps = 1e-3
    n = 300
    r, az = planar_laplace_displacements(n, epsilon=eps, generator=random_source(3).generator)
    la, lo = displace(np.full(n, lat), np.full(n, lon), r, az)
    lo_n, la_n, _ = GEOD.fwd(lon, lat, 90.0, 100.0)  # the neighbour, 100 m east
    az_b, _, dist = GEOD.inv(np.full(n, lo_n), np.full(n, la_n), lo, la)
    east = np.rint(dist * np.sin(np.radians(az_b)) / NOISE_LATTICE_M) * NOISE_LATTICE_M
    north = np.rint(dist * np.cos(np.radians(az_b)) / NOISE_LATTICE_M) * NOISE_LATTICE_M
    la2, lo2 = displace(np.full(n, la_n), np.full(n, lo_n), np.hypot(east, north), np.degrees(np.arctan2(east, north)))
    assert np.array_equal(la2, la) and np.array_equal(lo2, lo)


@pytest.mark.parametrize("broken", [False, True])
def test_stochastic_privacy_loss_of_the_released_points(broken):
    """Outputs of the whole pipeline at two true points 200 m apart on a meridian (ε = 1/km, so ε·d = 0.2),
    binned into 250 m strips along the meridian (post-processing): the Clopper–Pearson lower bound on the
    privacy loss stays within ε·d + σ; noise drawn at twice the claimed ε is refuted by the same test
    (power)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from planar_controls import loss_lower_bound

    from dprivacy.data.locations import geodesic_guarantee, planar_laplace_displacements

    eps, d, n = 1e-3, 200.0, 200_000
    draw = 2 * eps if broken else eps
    x = (45.0, 7.0)
    lo_n, la_n, _ = GEOD.fwd(x[1], x[0], 0.0, d)
    feats = []
    for k, (la0, lo0) in enumerate(((x[0], x[1]), (la_n, lo_n))):
        r, az = planar_laplace_displacements(n, epsilon=draw, generator=random_source(10 + k).generator)
        la, lo = displace(np.full(n, la0), np.full(n, lo0), r, az)
        az_b, _, dist = GEOD.inv(np.full(n, x[1]), np.full(n, x[0]), lo, la)
        feats.append(np.clip(np.floor(dist * np.cos(np.radians(az_b)) / 250), -6, 6))
    bound = eps * d + geodesic_guarantee(eps)["sigma"]
    lower = loss_lower_bound(feats[0], feats[1])
    assert (lower > bound) if broken else (lower <= bound), (lower, bound)


def test_sidecar_states_the_guarantee_and_refuses_absurd_epsilon(tmp_path):
    src = _data("obiszow_mtb_xcm.csv")
    out = tmp_path / "o.csv"
    obfuscate_file(src, out, epsilon=2.0, unit="km", rng=1, accuracy=None, keep=["alt"])
    side = json.loads(Path(str(out) + ".dprivacy.json").read_text())
    g = side["guarantee_details"]
    assert g["noise"]["lattice_m"] == 2.0**-22 and g["every_output_reachable"]
    assert 0 < g["sigma"] < 2e-3 and g["curvature_per_m"] < 1e-14
    assert "not certified" in side["guarantee"] and "tangent plane" in side["guarantee"]
    for e in (1e300, 1e-300):
        with pytest.raises(ValueError, match="95%"):
            obfuscate_file(src, tmp_path / "x.csv", epsilon=e, unit="km", rng=1, keep=["alt"])
    assert not (tmp_path / "x.csv").exists()


def test_geojson_round_trip_keeps_ids_types_and_streams(tmp_path):
    """Parquet → GeoJSON → Parquet keeps every column's name, order and type (date, timestamp, int8,
    string with quotes), a GeoJSON Feature id survives obfuscation, and a large GeoJSON is read in
    batches (never as one document)."""
    import datetime

    import pyarrow.parquet as pq

    from dprivacy.data.io import geojson_batches

    n = 1000
    t = pa.table({"id": pa.array(np.arange(n) * 3, pa.int64()),
                  "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(k)) for k in range(n)], pa.date32()),
                  "ts": pa.array([datetime.datetime(2021, 5, 6, 7, 8, 9) + datetime.timedelta(seconds=int(k)) for k in range(n)],
                                 pa.timestamp("ms")),
                  "small": pa.array((np.arange(n) % 200 - 100).astype(np.int8), pa.int8()),
                  "name": [f'p"{k}"\\' if k % 7 else None for k in range(n)],
                  "lat": 48.8 + np.arange(n) * 1e-4, "lon": 2.3 + np.arange(n) * 1e-4})
    pq.write_table(t, tmp_path / "in.parquet")
    obfuscate_file(tmp_path / "in.parquet", tmp_path / "mid.geojson", epsilon=1.0, rng=2)
    obfuscate_file(tmp_path / "mid.geojson", tmp_path / "back.parquet", epsilon=1.0, rng=3)
    back = pq.read_table(tmp_path / "back.parquet")
    assert back.schema.names == t.schema.names
    assert [f.type for f in back.schema] == [f.type for f in t.schema]
    for c in ("id", "day", "ts", "small", "name"):
        assert back.column(c).to_pylist() == t.column(c).to_pylist()
    # Feature ids of a foreign GeoJSON are kept (as column id, written back as the Feature id)
    feats = [{"type": "Feature", "id": f"f{k}", "geometry": {"type": "Point", "coordinates": [2.3 + k * 1e-3, 48.8]},
              "properties": {"v": k}} for k in range(5)]
    (tmp_path / "ids.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    obfuscate_file(tmp_path / "ids.geojson", tmp_path / "ids_out.geojson", epsilon=1.0, rng=4)
    doc = json.loads((tmp_path / "ids_out.geojson").read_text())
    assert [f["id"] for f in doc["features"]] == [f"f{k}" for k in range(5)]
    assert [f["properties"] for f in doc["features"]] == [{"v": k} for k in range(5)]
    # streaming: 150,000 features come in batches of at most 65,536
    big = tmp_path / "big.parquet"
    pq.write_table(pa.table({"lat": np.full(150_000, 10.0), "lon": np.full(150_000, 20.0)}), big)
    obfuscate_file(big, tmp_path / "big.geojson", epsilon=1.0, rng=5)
    from dprivacy.data.io import read_batches

    _, batches = read_batches(tmp_path / "big.geojson")
    sizes = [b.num_rows for b in batches]
    assert sum(sizes) == 150_000 and max(sizes) <= 65_536 and len(sizes) >= 3


def test_ordered_writes_keep_the_order_and_raise_a_writers_error():
    import threading

    from dprivacy.data.locations import _OrderedWrites

    seen, main = [], threading.get_ident()

    def write(x):
        time.sleep(0.001 * (x % 3))
        seen.append((x, threading.get_ident() != main))

    with _OrderedWrites(write) as w:
        for k in range(20):
            w.put(k)
        w.flush()
    assert [x for x, _ in seen] == list(range(20)) and all(other for _, other in seen)

    def failing(x):
        if x == 3:
            raise OSError("disk full")
        seen.append(x)

    seen.clear()
    with pytest.raises(OSError, match="disk full"):
        with _OrderedWrites(failing) as w:
            for k in range(10):
                w.put(k)
    assert seen == [0, 1, 2]  # nothing after the failed write was written


def test_a_geojson_s_points_are_its_geometry_whatever_its_properties_are_called(tmp_path):
    """Properties called lat/lon: with --lat lat --lon lon the obfuscated properties became the geometry
    and the true geometry was written out as properties; and properties named like coordinates (often a
    copy of the point) would be released untouched, in a CSV under the names readers take for the point.
    The geometry is always the point: --lat/--lon naming anything else is refused, and so are
    properties named like coordinates."""
    def write(name, props):
        feats = [{"type": "Feature", "geometry": {"type": "Point", "coordinates": [20.0 + k, 10.0 + k]},
                  "properties": p} for k, p in enumerate(props)]
        (tmp_path / name).write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
        return tmp_path / name

    src = write("p.geojson", [{"lat": 50, "lon": 5}, {"lat": 51, "lon": 6}])
    with pytest.raises(ValueError, match="properties 'lat', 'lon' look like coordinates"):
        obfuscate_file(src, tmp_path / "o.csv", epsilon=1.0, lat="lat", lon="lon", rng=1)
    ok = write("q.geojson", [{"name": "a"}, {"name": "b"}])
    with pytest.raises(ValueError, match="--lat 'name': the points of a GeoJSON file are its features' geometry"):
        obfuscate_file(ok, tmp_path / "o.geojson", epsilon=1.0, lat="name", rng=1)
    assert not (tmp_path / "o.geojson").exists() and not (tmp_path / "o.csv").exists()
    rep = obfuscate_file(ok, tmp_path / "o.geojson", epsilon=1e4, rng=1)  # 0.2 m of noise
    assert (rep.lat_column, rep.lon_column) == ("latitude", "longitude")
    out = json.loads((tmp_path / "o.geojson").read_text())["features"]
    assert [o["properties"] for o in out] == [{"name": "a"}, {"name": "b"}]
    assert np.allclose([o["geometry"]["coordinates"] for o in out], [[20, 10], [21, 11]], atol=1e-4)


def test_the_sidecar_never_replaces_the_input_and_never_outlives_a_failed_release(tmp_path, monkeypatch):
    """`obfuscate q.csv.dprivacy.json -o q.csv` overwrote its input with the report; an existing sidecar
    was replaced without --force; a sidecar that could not be written left the release without it."""
    import dprivacy.data.io as io

    src = tmp_path / "q.csv.dprivacy.json"
    src.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [2.0, 48.0]}, "properties": {}}]}))
    (tmp_path / "pts.geojson").write_bytes(src.read_bytes())
    before = src.read_bytes()
    with pytest.raises(ValueError, match="would replace the input file"):
        obfuscate_file(src, tmp_path / "q.csv", epsilon=1.0, rng=1, force=True)
    assert src.read_bytes() == before and not (tmp_path / "q.csv").exists()
    (tmp_path / "r.csv.dprivacy.json").write_text("{}")
    with pytest.raises(FileExistsError, match="sidecar .*r.csv.dprivacy.json exists"):
        obfuscate_file(tmp_path / "pts.geojson", tmp_path / "r.csv", epsilon=1.0, rng=1)
    assert not (tmp_path / "r.csv").exists()

    def fail(path, obj):
        raise OSError("disk full")

    monkeypatch.setattr(io, "write_json_atomic", fail)
    with pytest.raises(OSError, match="disk full"):
        obfuscate_file(tmp_path / "pts.geojson", tmp_path / "s.csv", epsilon=1.0, rng=1)
    assert not (tmp_path / "s.csv").exists()


def test_a_value_that_is_not_a_number_is_a_rejected_row_named_as_read(tmp_path):
    """One 'abc' in a latitude column refused the whole file ('coordinate column lat is not numeric (type
    string)'), naming no row, and --skip-invalid did not skip it."""
    src = tmp_path / "bad.csv"
    src.write_text("name,lat,lon\nA,48.85,2.35\nB,abc,2.3\nC, 48.1 ,2.2\n")
    with pytest.raises(ValueError, match=r"row 2: missing or non-numeric coordinate .*as read: lat = 'abc'"):
        obfuscate_file(src, tmp_path / "o.csv", epsilon=1e4, rng=1)
    rep = obfuscate_file(src, tmp_path / "o.csv", epsilon=1e4, rng=1, skip_invalid=True)
    assert (rep.rows_written, rep.rows_rejected) == (2, 1)
    out = (tmp_path / "o.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in out[1:]] == ['"A"', '"C"'] and abs(float(out[2].split(",")[1]) - 48.1) < 1e-3


def test_a_release_with_no_row_is_refused(tmp_path):
    """Every row rejected (with --skip-invalid) gave exit 0 and a header-only output."""
    src = tmp_path / "far.csv"
    src.write_text("lat,lon\n95,2\n,3\n")
    with pytest.raises(ValueError, match=r"none of the 2 rows .* could be released \(2 rejected, the first: row 1"):
        obfuscate_file(src, tmp_path / "o.csv", epsilon=1.0, rng=1, skip_invalid=True)
    assert not (tmp_path / "o.csv").exists()


def test_two_columns_of_one_name_are_refused(tmp_path):
    """name,name,lat,lon with A,B was written to GeoJSON as name: A, name: A (B lost)."""
    src = tmp_path / "d.csv"
    src.write_text("name,name,lat,lon\nA,B,48.8,2.3\n")
    with pytest.raises(ValueError, match="two columns called 'name'"):
        obfuscate_file(src, tmp_path / "o.geojson", epsilon=1.0, rng=1)
    assert not (tmp_path / "o.geojson").exists()


def test_geojson_features_the_format_allows_are_read_or_refused_by_name(tmp_path):
    """A null geometry or an empty Point is a missing location (skipped and counted with --skip-invalid);
    ids mixing strings and numbers are read as strings; a property mixing numbers and text, and a
    3-D point (whose altitude would be dropped or released as it is), are refused naming the file."""
    def write(name, feats):
        (tmp_path / name).write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
        return tmp_path / name

    def pt(c, props=None, i=None):
        return {"type": "Feature", **({"id": i} if i is not None else {}),
                "geometry": None if c is None else {"type": "Point", "coordinates": c}, "properties": props or {}}

    rep = obfuscate_file(write("n.geojson", [pt([20, 10]), pt(None), pt([])]), tmp_path / "n_out.geojson", epsilon=1.0,
                         rng=1, skip_invalid=True)
    assert (rep.rows_written, rep.rows_rejected) == (1, 2)
    obfuscate_file(write("i.geojson", [pt([20, 10], i="a"), pt([21, 11], i=3)]), tmp_path / "i_out.geojson", epsilon=1.0,
                   rng=1)
    assert [f["id"] for f in json.loads((tmp_path / "i_out.geojson").read_text())["features"]] == ["a", "3"]
    with pytest.raises(ValueError, match=r"m.geojson: property 'x' has values that do not make one column"):
        obfuscate_file(write("m.geojson", [pt([20, 10], {"x": 1}), pt([21, 11], {"x": "s"})]), tmp_path / "m_out.csv",
                       epsilon=1.0, rng=1)
    with pytest.raises(ValueError, match=r"z.geojson: feature 1 has 3 coordinates"):
        obfuscate_file(write("z.geojson", [pt([20, 10, 150])]), tmp_path / "z_out.csv", epsilon=1.0, rng=1)


def test_a_folder_of_parquet_parts_is_read_in_the_order_of_its_names(tmp_path):
    """evaluate could not read the Dask engine's output (a folder of part-NNNNN.parquet files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprivacy.data.locations import evaluate_files

    lat, lon = np.linspace(40, 41, 10), np.linspace(2, 3, 10)
    pq.write_table(pa.table({"lat": lat, "lon": lon}), tmp_path / "orig.parquet")
    (tmp_path / "rel.parquet").mkdir()
    for k, sl in ((1, slice(6, 10)), (0, slice(0, 6))):  # written out of order: read by name
        pq.write_table(pa.table({"lat": lat[sl], "lon": lon[sl]}), tmp_path / "rel.parquet" / f"part-{k:05d}.parquet")
    res = evaluate_files(tmp_path / "orig.parquet", tmp_path / "rel.parquet")
    assert res["rows"] == 10 and res["displacement_m"]["max"] == 0.0


def test_review_findings_on_geojson_and_parquet_outputs(tmp_path):
    """Found in review: a null Feature was an internal error; the GeoJSON input's marker travelled into a
    Parquet output, whose --lat latitude was then refused as 'a GeoJSON file'; integer ids in one chunk
    and string ids in a later one were refused as incompatible."""
    import pyarrow.parquet as pq

    from dprivacy.data.io import GEOJSON_COORDS_KEY, read_batches

    pt = {"type": "Feature", "geometry": {"type": "Point", "coordinates": [2.3, 48.8]}, "properties": {"n": 1}}
    (tmp_path / "nf.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": [pt, None]}))
    with pytest.raises(ValueError, match="feature 2 is not a Feature object"):  # numbered from 1, like rows
        obfuscate_file(tmp_path / "nf.geojson", tmp_path / "nf.csv", epsilon=1.0, rng=1)
    (tmp_path / "g.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": [pt]}))
    obfuscate_file(tmp_path / "g.geojson", tmp_path / "g.parquet", epsilon=1.0, rng=1)
    assert GEOJSON_COORDS_KEY not in (pq.read_schema(tmp_path / "g.parquet").metadata or {})
    obfuscate_file(tmp_path / "g.parquet", tmp_path / "g2.csv", epsilon=1.0, lat="latitude", lon="longitude", rng=1)
    feats = [dict(pt, id=(k if k < 70_000 else f"s{k}")) for k in range(70_010)]  # past the first chunk
    (tmp_path / "ids.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    schema, batches = read_batches(tmp_path / "ids.geojson")
    ids = [i for b in batches for i in b.column("id").to_pylist()]
    assert str(schema.field("id").type) == "string" and ids[:2] == ["0", "1"] and ids[-1] == "s70009"


def test_a_geoparquet_s_geometry_and_bounding_box_are_never_released(tmp_path):
    """A GeoParquet file with a WKB geometry column beside lat/lon: the geometry (the true points) was copied
    byte for byte into the release, and its "geo" metadata (the bounding box of the true points) too. A
    declared geometry column, or any column named like a coordinate or a geometry besides the two obfuscated
    ones, is now refused before anything is written; the input's schema metadata never reaches the output
    (local and Dask engines)."""
    import struct

    import pyarrow.parquet as pq

    lat, lon = [48.85, 51.5, 40.4], [2.35, -0.12, -3.7]
    geo = {"version": "1.0.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Point"],
                                    "bbox": [min(lon), min(lat), max(lon), max(lat)]}}}
    meta = {b"geo": json.dumps(geo).encode()}
    wkb = [struct.pack("<BIdd", 1, 1, x, y) for x, y in zip(lon, lat)]
    pq.write_table(pa.table({"id": [1, 2, 3], "lat": lat, "lon": lon, "shape": wkb}).replace_schema_metadata(
        {b"geo": json.dumps({**geo, "primary_column": "shape", "columns": {"shape": geo["columns"]["geometry"]}}).encode()}),
        tmp_path / "with_geometry.parquet")
    with pytest.raises(ValueError, match="'shape' are GeoParquet geometries holding the true locations"):
        obfuscate_file(tmp_path / "with_geometry.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert not (tmp_path / "o.parquet").exists()
    for extra in ("latitude", "geom", "WKT"):
        pq.write_table(pa.table({"lat": lat, "lon": lon, extra: lat}), tmp_path / "x.parquet")
        with pytest.raises(ValueError, match=f"'{extra}' look like locations"):
            obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, lat="lat", lon="lon", rng=1)
    pq.write_table(pa.table({"id": [1, 2, 3], "lat": lat, "lon": lon}).replace_schema_metadata(meta), tmp_path / "bbox.parquet")
    obfuscate_file(tmp_path / "bbox.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert not (pq.read_schema(tmp_path / "o.parquet").metadata or {}).get(b"geo")
    assert pq.read_table(tmp_path / "o.parquet").column_names == ["id", "lat", "lon"]
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    from dprivacy.data.dask_engine import obfuscate_dask

    obfuscate_dask(tmp_path / "bbox.parquet", tmp_path / "d.parquet", workers=1, epsilon=1.0, rng=1, key="id")
    parts = sorted((tmp_path / "d.parquet").glob("*.parquet"))
    assert parts and all(not (pq.read_schema(p).metadata or {}).get(b"geo") for p in parts)


def test_the_sidecar_never_quotes_a_rejected_row_s_true_location(tmp_path):
    """With --skip-invalid the report (printed, and the sidecar beside the release) quoted the first rejected
    row's coordinates: "row 2: latitude 151.2093 outside [-90, 90]" (a true location given in lon,lat order).
    It now names the row and the problem only, and says that a row's presence depends on its location."""
    src = tmp_path / "sw.csv"
    src.write_text("lat,lon,name\n48.85,2.35,a\n151.2093,-33.8688,swapped\n,2.3,c\n")
    rep = obfuscate_file(src, tmp_path / "o.csv", epsilon=1.0, skip_invalid=True, rng=1)
    assert rep.rows_rejected == 2 and rep.first_rejected == "row 2: latitude outside [-90, 90]"
    side = (tmp_path / "o.csv.dprivacy.json").read_text()
    assert "151.2" not in side and "33.86" not in side and "2.3," not in side
    assert any("presence tells that its true location was valid" in n for n in rep.notes)
    with pytest.raises(ValueError, match=r"row 2: latitude 151.2093 outside \[-90, 90\]"):  # the owner's error names it
        obfuscate_file(src, tmp_path / "p.csv", epsilon=1.0, rng=1)


def test_a_csv_s_other_columns_are_written_back_as_they_were_read(tmp_path):
    """CSV to CSV rewrote the columns it keeps by type inference: zip code 02134 as 2134, 007 as 7, NA as an
    empty cell, 1e5 as 100000, TRUE as true, a 20-digit id as 1.2345678901234567e+19. They are now read and
    written as their text. And a coordinate that is not a number after the first 16 MiB block (where the
    column's type was inferred) refused the whole file; it is now a rejected row like any other."""
    from pyarrow import csv as pacsv

    src = tmp_path / "t.csv"
    src.write_text("lat,lon,zip,code,flag,note,big\n48.85,2.35,02134,1e5,TRUE,NA,12345678901234567890\n"
                   "48.86,2.36,\"00,7\",007,false,,1\n")
    # (a zip code locates a row to its area: released only when declared with --keep)
    obfuscate_file(src, tmp_path / "p.parquet", epsilon=1.0, rng=1, keep=("zip",))  # other outputs keep the inferred types
    import pyarrow.parquet as pq

    assert pq.read_schema(tmp_path / "p.parquet").field("big").type == pa.float64()
    obfuscate_file(src, tmp_path / "o.csv", epsilon=1.0, rng=1, keep=("zip",))
    out = pacsv.read_csv(tmp_path / "o.csv", convert_options=pacsv.ConvertOptions(
        column_types={c: pa.string() for c in ("zip", "code", "flag", "note", "big")}, strings_can_be_null=False))
    assert out.column("zip").to_pylist() == ["02134", "00,7"] and out.column("code").to_pylist() == ["1e5", "007"]
    assert out.column("flag").to_pylist() == ["TRUE", "false"] and out.column("note").to_pylist() == ["NA", ""]
    assert out.column("big").to_pylist() == ["12345678901234567890", "1"]
    big = tmp_path / "big.csv"
    n = 1_000_000  # about 19 MB: the bad value lies past the first 16 MiB block
    lat = np.round(np.random.default_rng(0).uniform(40, 50, n), 6)
    with open(big, "w") as f:
        f.write("lat,lon\n")
        f.writelines(f"{v:.6f},2.000000\n" for v in lat[:-1])
        f.write("abc,2.0\n")
    assert big.stat().st_size > (1 << 24) + 1_000_000
    rep = obfuscate_file(big, tmp_path / "b.csv", epsilon=1.0, skip_invalid=True, rng=1)
    assert rep.rows_rejected == 1 and rep.rows_written == n - 1 and rep.first_rejected.startswith(f"row {n}:")


@pytest.mark.parametrize("extra", ["pickup_latitude", "homeLat", "Latitude_2", "GPSLongitude", "wkb_geometry", "home",
                                   "loc", "track"])
def test_other_copies_of_the_location_are_refused(tmp_path, extra):
    """Copied untouched into the release: columns pickup_latitude, Latitude_2 (only exact names were refused), a
    struct column home{lat, lon}, and a WKB binary column without GeoParquet metadata."""
    import struct

    import pyarrow.parquet as pq

    value = {"home": [{"lat": 48.85, "lon": 2.35}], "loc": [struct.pack("<BIdd", 1, 1, 2.35, 48.85)],
             "track": [[{"lat": 48.85, "lon": 2.35}]]}.get(extra, [48.85])  # a list<struct<lat, lon>> (review)
    pq.write_table(pa.table({"lat": [48.85], "lon": [2.35], "name": ["a"], extra: value}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match=f"'{extra}(.lat|\\[\\].lat)?'.* look like locations"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, lat="lat", lon="lon", rng=1)
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("extra", ["latlng", "latlon", "lonlat", "homelat", "pickuplatitude", "dropoff_latlong", "Latitud",
                                   "longitud", "x_coord", "geohash"])
def test_names_with_the_location_inside_a_word_are_refused(tmp_path, extra):
    """Found by a review: only whole words were matched, and these names were released with the true points."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"lat": [48.85], "lon": [2.35], extra: ["somewhere"]}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match=f"'{extra}'.* look like locations"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, lat="lat", lon="lon", rng=1)


def _dms(x: float, hemi: str) -> str:
    d = abs(x)
    m = (d % 1) * 60
    return f"{int(d)}°{int(m)}'{(m % 1) * 60:.1f}\"{hemi[0] if x >= 0 else hemi[1]}"


def _copies_table(n=50, seed=0):
    rng = np.random.default_rng(seed)
    lat, lon = 40 + 10 * rng.random(n), -5 + 20 * rng.random(n)
    return lat, lon, {"lat": lat, "lon": lon, "temp": 15 + 10 * rng.random(n), "id": np.arange(n),
                      "note": [f"Route {k}, km {k % 7}.5" for k in range(n)], "city": ["Paris"] * n}


@pytest.mark.parametrize("name, make", [
    ("x", lambda lat, lon: lon), ("Breite", lambda lat, lon: lat + 0.004),
    ("location", lambda lat, lon: [f"{a:.5f},{o:.5f}" for a, o in zip(lat, lon)]),
    ("shape", lambda lat, lon: [f"POINT ({o:.6f} {a:.6f})" for a, o in zip(lat, lon)]),
    ("pos", lambda lat, lon: [{"y": a, "x": o} for a, o in zip(lat, lon)]),
    ("path", lambda lat, lon: [[o, a] for a, o in zip(lat, lon)]),
    # other units (a review): radians, E7 integers (Google location history), Garmin semicircles, Web Mercator metres
    ("phi", lambda lat, lon: np.radians(lat)), ("e_e7", lambda lat, lon: np.round(lon * 1e7).astype(np.int64)),
    ("sc", lambda lat, lon: np.round(lat * 2.0**31 / 180).astype(np.int64)),
    ("mx", lambda lat, lon: [f"{6378137.0 * np.radians(o):.2f}" for o in lon]),
    ("my", lambda lat, lon: 6378137.0 * np.log(np.tan(np.pi / 4 + np.radians(lat) / 2))),
    # degrees, minutes and seconds (a review)
    ("dms", lambda lat, lon: [_dms(a, "NS") + " " + _dms(o, "EW") for a, o in zip(lat, lon)]),
    ("dms2", lambda lat, lon: [f"{int(abs(a))} {abs(a) % 1 * 60:.3f} {'N' if a >= 0 else 'S'}, "
                               f"{int(abs(o))} {abs(o) % 1 * 60:.3f} {'E' if o >= 0 else 'W'}" for a, o in zip(lat, lon)]),
])
def test_a_copy_of_the_points_under_any_name_is_refused_by_its_values(tmp_path, name, make):
    """Found by a review: x/y, Breite/Länge, 'location' = "42.55623,1.53319", a struct<y, x> and a list<double>
    released the true points under names no word list can foresee; the values give them away, and --keep
    cannot release them."""
    import pyarrow.parquet as pq

    lat, lon, cols = _copies_table()
    cols[name] = make(lat, lon)
    pq.write_table(pa.table(cols), tmp_path / "x.parquet")
    for keep in ((), (name,)):
        with pytest.raises(ValueError, match=f"'{name}' hold a copy of the points"):
            obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, keep=keep)
    assert not (tmp_path / "o.parquet").exists()


def _geocache(x: float, hemi: str) -> str:
    return f"{hemi[0] if x >= 0 else hemi[1]} {int(abs(x)):02d}° {abs(x) % 1 * 60:06.3f}"


@pytest.mark.parametrize("form", ["{a:.4f}° {ns}, {o:.4f}° {ew}", "{ns} {a:.5f} {ew} {o:.5f}", "{a:.4f}{ns} {o:.4f}{ew}",
                                  "geocache"])
def test_decimal_degrees_with_hemisphere_letters_are_a_copy(tmp_path, form):
    """Found by a review: "40.4461° N, 79.9822° W" was read as the numbers 40.4461 and 79.9822, and west of Greenwich
    the second never matched the longitude, so the column was released with the true points."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    lat, lon = 35 + 10 * rng.random(60), -80 + 10 * rng.random(60)
    text = [_geocache(a, "NS") + " " + _geocache(o, "EW") if form == "geocache" else
            form.format(a=abs(a), o=abs(o), ns="N" if a >= 0 else "S", ew="E" if o >= 0 else "W") for a, o in zip(lat, lon)]
    pq.write_table(pa.table({"lat": lat, "lon": lon, "where": text}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="'where' hold a copy of the points"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, keep=("where",))
    assert not (tmp_path / "o.parquet").exists()


def test_times_are_not_read_as_degrees_minutes_seconds():
    """A match separated by colons or spaces only is an angle only with a hemisphere letter (a review found
    "09:51:00" decoded as 9.85°)."""
    from dprivacy.data.io import _dms_values

    assert _dms_values("09:51:00") == []
    assert _dms_values("left 09 51 00, arrived 10 02") == []
    assert _dms_values("40:26:46N") == pytest.approx([40 + 26 / 60 + 46 / 3600])
    assert _dms_values("40°26'46\"N 79°58'56\"W") == pytest.approx([40.446111, -79.982222], abs=1e-6)
    assert _dms_values("40.4461° N, 79.9822° W") == pytest.approx([40.4461, -79.9822])
    assert _dms_values("S 33.9, E 151.2") == pytest.approx([-33.9, 151.2])
    # the geocaching form, the hemisphere before the degrees (a review: the trailing letter was taken from the next
    # coordinate's prefix, so both signs came out wrong), and a word after a time is no hemisphere
    assert _dms_values("N 40° 26.767 W 079° 58.933") == pytest.approx([40.446117, -79.982217], abs=1e-6)
    assert _dms_values("S 33° 51.5 E 151° 12.5") == pytest.approx([-33.858333, 151.208333], abs=1e-6)
    assert _dms_values("09:51 sunny, 20°C") == []


def test_the_copy_check_reads_every_batch_and_every_dask_part(tmp_path, monkeypatch):
    """Found by a review: the check read the first 10,000 rows of the file only (a copy after them was released
    untouched) and, on Dask, the first part only (a first part of one row: nothing was checked at all)."""
    import pyarrow.parquet as pq

    lat, lon, cols = _copies_table(n=30_000)
    raw = np.array([f"{a:.5f} {o:.5f}" for a, o in zip(lat, lon)], dtype=object)
    raw[:12_000] = ""  # the copy starts after the rows the check used to read
    pq.write_table(pa.table({**cols, "raw": raw}), tmp_path / "late.parquet")
    with pytest.raises(ValueError, match="'raw' hold a copy of the points"):
        obfuscate_file(tmp_path / "late.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    # a copy only in a later batch (batches of 5,000 rows here): refused, and nothing written
    from dprivacy.data import io as dio

    read = dio.read_batches
    monkeypatch.setattr(dio, "read_batches", lambda path, **kw: read(path, **{**kw, "batch_rows": 5_000}))
    raw2 = np.array([""] * 30_000, dtype=object)
    raw2[20_000:] = raw[20_000:]
    pq.write_table(pa.table({**cols, "raw": raw2}), tmp_path / "later.parquet")
    with pytest.raises(ValueError, match="'raw' hold a copy of the points"):
        obfuscate_file(tmp_path / "later.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert not (tmp_path / "o.parquet").exists() and not list(tmp_path.glob("*.partial*"))
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    from dprivacy.data.dask_engine import obfuscate_dask

    t = pa.table({"lat": lat[:3000], "lon": lon[:3000], "x": lon[:3000], "y": lat[:3000]})
    w = pq.ParquetWriter(tmp_path / "rg1.parquet", t.schema)
    w.write_table(t.slice(0, 1))  # a first part of one row
    w.write_table(t.slice(1))
    w.close()
    with pytest.raises(ValueError, match="'x', 'y' hold a copy of the points"):
        obfuscate_dask(tmp_path / "rg1.parquet", tmp_path / "d.parquet", workers=1, epsilon=1.0)
    assert not (tmp_path / "d.parquet").exists()


@pytest.mark.parametrize("name", ["Address1", "postcode", "zip_code", "ZIP", "postal_code", "street", "pluscode",
                                  "easting"])
def test_an_address_or_a_spatial_index_is_refused_by_its_name(tmp_path, name):
    """Found by a review: sample_geojson.geojson released Address1-3 and Postcode ("SN15 1JW", about 100 m) beside
    points moved by 2 km. Such columns need --keep."""
    import pyarrow.parquet as pq

    lat, lon, cols = _copies_table()
    cols[name] = ["SN15 1JW"] * len(lat)
    pq.write_table(pa.table(cols), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match=f"'{name}' look like locations"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, keep=(name,))
    assert name in pq.read_schema(tmp_path / "o.parquet").names


def test_columns_whose_values_are_not_the_points_are_kept(tmp_path):
    import pyarrow.parquet as pq

    _, _, cols = _copies_table()
    pq.write_table(pa.table(cols), tmp_path / "x.parquet")
    obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert pq.read_table(tmp_path / "o.parquet").column_names == list(cols)


def test_names_that_only_contain_the_letters_are_kept(tmp_path):
    import pyarrow.parquet as pq

    cols = {"lat": [48.85], "lon": [2.35], "plate": ["x"], "latency": [3], "long_description": ["y"], "salon": ["z"],
            "flat": ["2b"], "platform": ["p"], "colony": ["c"], "epsilon": [0.1], "coordinator": ["ann"],
            "geometric_mean": [3.0], "semicolon": [";"], "chocolat": ["yes"]}
    pq.write_table(pa.table(cols), tmp_path / "x.parquet")
    obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert pq.read_table(tmp_path / "o.parquet").column_names == list(cols)


def test_a_geoparquet_with_only_its_geometry_says_so(tmp_path):
    import struct

    import pyarrow.parquet as pq

    geo = {"version": "1.0.0", "primary_column": "geometry", "columns": {"geometry": {"encoding": "WKB"}}}
    pq.write_table(pa.table({"id": [1], "geometry": [struct.pack("<BIdd", 1, 1, 2.35, 48.85)]}).replace_schema_metadata(
        {b"geo": json.dumps(geo).encode()}), tmp_path / "g.parquet")
    with pytest.raises(ValueError, match="geometry column.s. 'geometry' .WKB., which obfuscate does not read"):
        obfuscate_file(tmp_path / "g.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)


def test_keep_releases_a_column_the_user_declares_is_no_location(tmp_path):
    """lat_err and LatAm were refused with no way out (review): --keep names columns that hold no location."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"lat": [48.85], "lon": [2.35], "lat_err": [3.0], "LatAm": ["no"]}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="'lat_err', 'LatAm' look like locations .* --keep COL"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    rep = obfuscate_file(tmp_path / "x.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, keep=["lat_err", "LatAm"])
    assert pq.read_table(tmp_path / "o.parquet").column("lat_err").to_pylist() == [3.0]
    assert any("--keep" in n for n in rep.notes)
    for bad, says in ((["nope"], "no such column"), (["lat"], "obfuscated coordinate")):
        with pytest.raises(ValueError, match=says):
            obfuscate_file(tmp_path / "x.parquet", tmp_path / "p.parquet", epsilon=1.0, rng=1, keep=bad)


def test_the_input_fields_metadata_is_not_released(tmp_path):
    """Found by a review: Arrow field metadata of the input (here a bbox of the true points and a first latitude)
    reached the Parquet release and the GeoJSON schema member."""
    import pyarrow.parquet as pq

    schema = pa.schema([pa.field("name", pa.string(), metadata={"bbox": "[-72.35, -54.8, 72.3, 42.56]"}),
                        pa.field("lat", pa.float64(), metadata={"first": "42.55623"}), pa.field("lon", pa.float64()),
                        pa.field("tags", pa.struct([pa.field("k", pa.string(), metadata={"secret": "x"})]))])
    pq.write_table(pa.table({"name": ["a", "b"], "lat": [42.55623, 48.8], "lon": [1.53, 2.35],
                             "tags": [{"k": "x"}, {"k": "y"}]}, schema=schema), tmp_path / "x.parquet")
    for out in ("o.parquet", "o.geojson"):
        obfuscate_file(tmp_path / "x.parquet", tmp_path / out, epsilon=1.0, rng=1)
    released = pq.read_schema(tmp_path / "o.parquet")
    assert all(f.metadata is None for f in released) and released.field("tags").type.field(0).metadata is None
    text = (tmp_path / "o.geojson").read_text()
    assert "42.55623" not in text and "bbox" not in text and "secret" not in text


def test_a_seeded_release_says_so_in_the_file_itself(tmp_path):
    """Found by a review: a seeded Parquet or GeoJSON release carried no mark; apart from its sidecar it looked like
    a release (and anyone with the seed can undo the noise)."""
    import pyarrow.parquet as pq

    (tmp_path / "p.csv").write_text("lat,lon\n48.8,2.3\n48.9,2.4\n")
    for out, rng in (("s.parquet", 3), ("s.geojson", 3), ("r.parquet", None), ("r.geojson", None)):
        obfuscate_file(tmp_path / "p.csv", tmp_path / out, epsilon=1.0, rng=rng)
    assert b"NOT for release" in pq.read_schema(tmp_path / "s.parquet").metadata[b"dprivacy:notice"]
    assert "NOT for release" in json.loads((tmp_path / "s.geojson").read_text())["dprivacy:notice"]
    assert pq.read_schema(tmp_path / "r.parquet").metadata is None
    assert "dprivacy:notice" not in json.loads((tmp_path / "r.geojson").read_text())


def test_parquet_row_groups_do_not_follow_the_input(tmp_path, monkeypatch):
    """Found by a review: row groups were the reader's batches, whose sizes follow the bytes of the true
    coordinates' text (and the rows rejected): 354459, 352141, 350908, ... rows."""
    import pyarrow.parquet as pq

    from dprivacy.data import io

    monkeypatch.setattr(io, "PARQUET_GROUP_ROWS", 1000)
    monkeypatch.setattr(io, "BATCH_ROWS", 777)
    rng = np.random.default_rng(0)
    digits = rng.integers(1, 12, size=5000)
    (tmp_path / "p.csv").write_text("lat,lon\n" + "".join(f"{48 + r:.{k}f},{2 + r:.{k}f}\n"
                                                          for r, k in zip(rng.random(5000), digits)))
    obfuscate_file(tmp_path / "p.csv", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    meta = pq.ParquetFile(tmp_path / "o.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [1000] * 5


def test_geojson_ids_and_non_numeric_positions(tmp_path):
    """Found by a review: a property called "id" first seen after feature 1000 took the Features' ids' column (the
    ids were dropped); a position [true, 42.5] was read as longitude 1.0, and ["1.5", "42.5"] stopped the run even
    with --skip-invalid."""
    feats = [{"type": "Feature", "id": f"F{k}", "geometry": {"type": "Point", "coordinates": [2.0 + k * 1e-4, 48.0]},
              "properties": {"name": f"n{k}", **({"id": "PROP"} if k == 1200 else {})}} for k in range(1500)]
    (tmp_path / "ids.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    obfuscate_file(tmp_path / "ids.geojson", tmp_path / "o.geojson", epsilon=1.0, rng=1)
    out = json.loads((tmp_path / "o.geojson").read_text())["features"]
    assert [f["id"] for f in out] == [f"F{k}" for k in range(1500)] and out[1200]["properties"]["id"] == "PROP"
    bad = [{"type": "Feature", "geometry": {"type": "Point", "coordinates": c}, "properties": {}}
           for c in ([2.0, 48.0], [True, 42.5], ["1.5", "42.5"], [2.1, 48.1])]
    (tmp_path / "bad.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": bad}))
    with pytest.raises(ValueError, match="row 2: missing or non-numeric coordinate"):
        obfuscate_file(tmp_path / "bad.geojson", tmp_path / "b.geojson", epsilon=1.0, rng=1)
    rep = obfuscate_file(tmp_path / "bad.geojson", tmp_path / "b.geojson", epsilon=1.0, rng=1, skip_invalid=True)
    assert rep.rows_rejected == 2 and rep.rows_written == 2


def test_damaged_files_are_named(tmp_path):
    """Found by a review: a truncated .gz said 'Truncated compressed stream', a .gz that is not one 'zlib inflate
    failed', a truncated GeoJSON 'Unterminated string ... line 1 column 705339' (a position in a buffer)."""
    import gzip

    body = "lat,lon\n" + "".join(f"{48 + k * 1e-4},{2 + k * 1e-4}\n" for k in range(20000))
    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(body.encode())[:5000])
    (tmp_path / "n.csv.gz").write_text(body)
    feats = [{"type": "Feature", "geometry": {"type": "Point", "coordinates": [2.0, 48.0]}, "properties": {"n": "x"}}] * 50
    (tmp_path / "t.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": feats})[:1500])
    for name in ("t.csv.gz", "n.csv.gz", "t.geojson"):
        with pytest.raises(ValueError, match=f"cannot read .*{name}"):
            obfuscate_file(tmp_path / name, tmp_path / ("o." + name.split(".", 1)[1]), epsilon=1.0, rng=1)


def test_dictionary_and_view_text_coordinates_are_read(tmp_path):
    """Found by a review: dictionary-encoded and string_view coordinate columns were refused as not numeric while
    plain text was parsed."""
    import pyarrow.parquet as pq

    lat = pa.array(["48.85", "48.86"]).dictionary_encode()
    pq.write_table(pa.table({"lat": lat, "lon": pa.array([2.35, 2.36]).dictionary_encode()}), tmp_path / "d.parquet")
    rep = obfuscate_file(tmp_path / "d.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert rep.rows_written == 2 and pq.read_schema(tmp_path / "o.parquet").field("lat").type == pa.float64()


def test_an_altitude_column_is_refused_unless_kept(tmp_path):
    """A GPS track's altitudes locate its points (with an elevation model); a GeoJSON position's altitude was refused
    while an 'alt' column of a CSV (obiszow_mtb_xcm.csv) was released untouched."""
    src = _data("obiszow_mtb_xcm.csv")
    with pytest.raises(ValueError, match="'alt' look like locations"):
        obfuscate_file(src, tmp_path / "o.csv", epsilon=5, unit="km", rng=1)
    assert obfuscate_file(src, tmp_path / "o.csv", epsilon=5, unit="km", rng=1, keep=["alt"]).rows_written > 0


def test_the_copy_check_on_big_ids_lists_and_decimal_commas(tmp_path):
    """Found by a review of the copy check: a 64-bit id beyond 2^53 made obfuscation fail ('Integer value not in
    range'); an accelerometer list near longitude 0 was taken for a copy; a decimal-comma copy ("41,41185") passed."""
    import pyarrow.parquet as pq

    n = 40
    rng = np.random.default_rng(5)
    lat, lon = 51.4 + 0.2 * rng.random(n), -0.1 + 0.2 * rng.random(n)
    base = {"lat": lat, "lon": lon, "tweet_id": pa.array(2**62 + np.arange(n), pa.int64()),
            "accel": [list(rng.normal(0, 0.05, 8)) for _ in range(n)]}
    pq.write_table(pa.table(base), tmp_path / "ok.parquet")
    assert obfuscate_file(tmp_path / "ok.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1).rows_written == n
    pq.write_table(pa.table({**base, "breite": [f"{a:.5f}".replace(".", ",") for a in lat]}), tmp_path / "c.parquet")
    with pytest.raises(ValueError, match="'breite' hold a copy of the points"):
        obfuscate_file(tmp_path / "c.parquet", tmp_path / "o2.parquet", epsilon=1.0, rng=1)


def test_a_failure_while_writing_the_last_row_group_leaves_no_output(tmp_path, monkeypatch):
    """Found by a review: the last row group is written when the writer closes, and an error there (a SIGTERM, a
    full disk) still renamed the temporary file over OUTPUT: an empty or cut release."""
    from dprivacy.data import io

    (tmp_path / "p.csv").write_text("lat,lon\n48.8,2.3\n48.9,2.4\n")

    def fail(self, *, final):
        raise OSError("No space left on device")

    monkeypatch.setattr(io.AtomicWriter, "_write_groups", fail)
    with pytest.raises(OSError, match="No space"):
        obfuscate_file(tmp_path / "p.csv", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]


def test_row_groups_are_cut_across_batches(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from dprivacy.data import io

    monkeypatch.setattr(io, "PARQUET_GROUP_ROWS", 1000)
    schema = pa.schema([("v", pa.int64())])
    with io.AtomicWriter(tmp_path / "o.parquet", schema) as w:
        start = 0
        for size in (777, 1, 555, 1200, 3, 999):  # 3535 rows in batches of uneven sizes
            w.write(pa.RecordBatch.from_arrays([pa.array(np.arange(start, start + size))], schema=schema))
            start += size
    f = pq.ParquetFile(tmp_path / "o.parquet")
    assert [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)] == [1000, 1000, 1000, 535]
    assert f.read().column("v").to_pylist() == list(range(3535))


def test_a_copy_in_semicircles_is_refused(tmp_path):
    """Found by a review: under --coords semicircles a copy of the position columns (in semicircles) was released."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    la = np.round((48 + rng.random(30)) / (180 / 2**31)).astype(np.int64)
    lo = np.round((2 + rng.random(30)) / (180 / 2**31)).astype(np.int64)
    pq.write_table(pa.table({"position_lat": la, "position_long": lo, "copy": la}), tmp_path / "s.parquet")
    with pytest.raises(ValueError, match="'copy' hold a copy of the points"):
        obfuscate_file(tmp_path / "s.parquet", tmp_path / "o.parquet", epsilon=1.0, coords="semicircles", rng=1)
    pq.write_table(pa.table({"position_lat": la, "position_long": lo, "speed": rng.random(30)}), tmp_path / "t.parquet")
    assert obfuscate_file(tmp_path / "t.parquet", tmp_path / "o.parquet", epsilon=1.0, coords="semicircles",
                          rng=1).rows_written == 30


def test_a_file_sorted_by_location_is_named_in_the_report(tmp_path):
    """Found by a review: the row order is released as it is, so a file sorted by latitude gave each row's
    latitude from its rank (1.2 km where the released points were 9.4 km off). The report says so."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    lat, lon = rng.uniform(40, 50, 500), rng.uniform(0, 10, 500)
    pq.write_table(pa.table({"lat": np.sort(lat), "lon": lon}), tmp_path / "s.parquet")
    pq.write_table(pa.table({"lat": lat, "lon": lon}), tmp_path / "u.parquet")
    r = obfuscate_file(tmp_path / "s.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert any("ordered by latitude" in n for n in r.notes)
    r = obfuscate_file(tmp_path / "u.parquet", tmp_path / "o2.parquet", epsilon=1.0, rng=1)
    assert not any("ordered by" in n for n in r.notes)
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    from dprivacy.data.dask_engine import obfuscate_dask

    r = obfuscate_dask(tmp_path / "s.parquet", tmp_path / "d.parquet", workers=1, epsilon=1.0)
    assert any("ordered by latitude" in n for n in r.notes)


def test_shuffle_releases_the_rows_in_a_random_order_each_with_its_own_noise(tmp_path):
    """--shuffle: the rows in a uniform random order from the random source (a sorted file's order gave its rows'
    latitudes away); each row keeps its own columns and its own noisy point; seeded runs repeat."""
    import pyarrow.parquet as pq
    from scipy.stats import spearmanr

    n = 3000
    lat = np.sort(np.random.default_rng(0).uniform(40, 50, n))
    pq.write_table(pa.table({"id": np.arange(n), "lat": lat, "lon": np.full(n, 5.0)}), tmp_path / "s.parquet")
    r = obfuscate_file(tmp_path / "s.parquet", tmp_path / "o.parquet", epsilon=10.0, unit="km", rng=3, shuffle=True)
    assert not any("ordered by" in x for x in r.notes) and any("random order" in x for x in r.notes)
    out = pq.read_table(tmp_path / "o.parquet").to_pandas()
    ids = out["id"].to_numpy()
    assert sorted(ids) == list(range(n)) and (ids != np.arange(n)).mean() > 0.99
    assert abs(spearmanr(np.arange(n), out["lat"]).statistic) < 0.1
    assert np.abs(out["lat"].to_numpy() - lat[ids]).max() < 0.1  # ε = 10/km: each row within a few km of its own point
    again = obfuscate_file(tmp_path / "s.parquet", tmp_path / "o2.parquet", epsilon=10.0, unit="km", rng=3, shuffle=True)
    assert again.rows_written == n and pq.read_table(tmp_path / "o2.parquet").equals(pq.read_table(tmp_path / "o.parquet"))
    # evaluated by row position, each released row met another row's true point (7,270 km for a predicted 2 km: a
    # review): a shuffled release is matched by --key only
    from dprivacy.data.locations import evaluate_files

    with pytest.raises(ValueError, match="random row order .* --key COL"):
        evaluate_files(tmp_path / "s.parquet", tmp_path / "o.parquet")
    res = evaluate_files(tmp_path / "s.parquet", tmp_path / "o.parquet", key="id")
    assert res["displacement_m"]["mean"] < 1000


def test_shuffle_on_dask_releases_the_rows_in_a_random_order_over_all_parts(tmp_path, monkeypatch):
    """Found open in a stop note: --shuffle was refused with --engine dask, whose parts kept the input's order. The
    rows now go to parts by 128-bit keys from the random source and are sorted by them in each part: read in order,
    the parts are a random permutation over all parts (rows move between parts), each row with its own noisy point.
    Seeded with a key, the order is a function of the seed and the keys only: the same over any partitioning."""
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    import pyarrow.parquet as pq
    from scipy.stats import spearmanr

    from dprivacy.data import dask_engine
    from dprivacy.data.dask_engine import obfuscate_dask

    monkeypatch.setattr(dask_engine, "SHUFFLE_PART_ROWS", 1000)  # 4 parts of about 1,000 rows
    n = 4000
    lat = np.sort(np.random.default_rng(0).uniform(40, 50, n))
    t = pa.table({"id": np.arange(n), "lat": lat, "lon": np.full(n, 5.0)})
    pq.write_table(t, tmp_path / "s.parquet", row_group_size=1000)
    r = obfuscate_dask(tmp_path / "s.parquet", tmp_path / "d.parquet", workers=1, epsilon=10.0, unit="km", shuffle=True)
    assert not any("ordered by" in x for x in r.notes) and any("random order" in x for x in r.notes)
    parts = sorted((tmp_path / "d.parquet").glob("part-*.parquet"))
    assert len(parts) == 4 and not (tmp_path / "d.parquet" / "stage").exists()
    out = pa.concat_tables([pq.read_table(p) for p in parts]).to_pandas()
    ids = out["id"].to_numpy()
    assert sorted(ids) == list(range(n)) and r.rows_written == n
    assert abs(spearmanr(np.arange(n), ids).statistic) < 0.1
    first = pq.read_table(parts[0]).column("id").to_numpy()
    assert (first >= 1000).mean() > 0.5  # the first part holds rows of every input row group
    assert np.abs(out["lat"].to_numpy() - lat[ids]).max() < 0.1
    # research mode: the order depends on the seed and the keys only, not on the row groups (the parts are ranges of
    # the keys, so their concatenation is the same)
    a = obfuscate_dask(tmp_path / "s.parquet", tmp_path / "k1.parquet", workers=1, epsilon=10.0, unit="km", shuffle=True,
                       rng=5, key="id")
    pq.write_table(t, tmp_path / "s2.parquet", row_group_size=1500)  # 3 parts instead of 4
    obfuscate_dask(tmp_path / "s2.parquet", tmp_path / "k2.parquet", workers=1, epsilon=10.0, unit="km", shuffle=True,
                   rng=5, key="id")
    read = [pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / f).glob("part-*.parquet"))])
            for f in ("k1.parquet", "k2.parquet")]
    assert a.rows_written == n and read[0].equals(read[1])
    assert abs(spearmanr(np.arange(n), read[0].column("id").to_numpy()).statistic) < 0.1
    # and the local engine gives the same release (--key: the same output whatever the engine; a review found the
    # orders different)
    obfuscate_file(tmp_path / "s.parquet", tmp_path / "local.parquet", epsilon=10.0, unit="km", shuffle=True, rng=5,
                   key="id")
    assert pq.read_table(tmp_path / "local.parquet").equals(read[0].replace_schema_metadata(
        pq.read_table(tmp_path / "local.parquet").schema.metadata))


def test_the_release_order_keys_share_no_word_with_the_noise_stream():
    """A review found the seeded order keys equal to a word of the records' own noise stream (the same Philox key and
    counter): they now have a key of their own."""
    from dprivacy.sampling.keyed import KeyedStream, record_order_keys

    keys = np.arange(1, 200, dtype=np.uint64) * np.uint64(7919)
    k0, k1 = record_order_keys(7, keys)
    stream = KeyedStream(7, keys)
    words = {int(w) for call in range(3) for k in range(3) for w in
             [stream.extension_word(i, call, k) for i in range(keys.size)]}
    assert len(words) == 9 * keys.size and not (words & {int(x) for x in np.concatenate([k0, k1])})


def test_a_shuffled_dask_release_has_one_part_per_million_rows_and_empty_parts_are_written(tmp_path, monkeypatch):
    """A review: parts as many as row groups made the staged files grow as their square (144.5 s against 5.5 s on 200
    row groups); and an empty bucket left a gap in the part numbers."""
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    import pyarrow.parquet as pq

    from dprivacy.data import dask_engine

    n = 300
    rng = np.random.default_rng(1)
    pq.write_table(pa.table({"lat": rng.uniform(40, 50, n), "lon": rng.uniform(0, 5, n)}), tmp_path / "s.parquet",
                   row_group_size=100)
    r = dask_engine.obfuscate_dask(tmp_path / "s.parquet", tmp_path / "d.parquet", workers=1, epsilon=1.0, shuffle=True)
    assert [p.name for p in (tmp_path / "d.parquet").iterdir()] == ["part-00000.parquet"] and r.rows_written == n
    monkeypatch.setattr(dask_engine, "SHUFFLE_PART_ROWS", 1)  # 300 parts for 300 rows: about a third are empty
    dask_engine.obfuscate_dask(tmp_path / "s.parquet", tmp_path / "e.parquet", workers=1, epsilon=1.0, shuffle=True)
    parts = sorted(p.name for p in (tmp_path / "e.parquet").iterdir())
    assert parts == [f"part-{b:05d}.parquet" for b in range(n)]
    assert sum(pq.read_metadata(tmp_path / "e.parquet" / p).num_rows for p in parts) == n


def test_small_numbers_near_the_prime_meridian_or_the_equator_are_not_a_copy(tmp_path):
    """Found by a review: near longitude 0 every small number is within 0.01° of it in E7, semicircle or Web Mercator
    units, so a 1-5 rating (or a row id) was refused as a copy of the points, --keep or not. A number alone is compared
    with a coordinate within the tolerance of 0 to 1e-6° only (an exact copy, in any unit, is still refused: a second
    review found x = lon released when most rows were that close); a text holding both coordinates is compared as
    before."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    n = 500
    lat, lon = 51.47 + 0.01 * rng.random(n), 0.003 * (2 * rng.random(n) - 1)
    for lat_, lon_ in ((lat, lon), (0.003 * (2 * rng.random(n) - 1), 32.58 + 0.01 * rng.random(n))):
        cols = {"lat": lat_, "lon": lon_, "rating": rng.integers(1, 6, n), "id": np.arange(1, n + 1)}
        pq.write_table(pa.table(cols), tmp_path / "g.parquet")
        r = obfuscate_file(tmp_path / "g.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1, force=True)
        assert r.rows_written == n
        cols["where"] = [f"{a:.5f},{o:.5f}" for a, o in zip(lat_, lon_)]
        pq.write_table(pa.table(cols), tmp_path / "g.parquet")
        with pytest.raises(ValueError, match="'where' hold a copy of the points"):
            obfuscate_file(tmp_path / "g.parquet", tmp_path / "o2.parquet", epsilon=1.0, rng=1)
        del cols["where"]
        for copy in (lon_ if np.abs(lon_).max() < 0.01 else lat_, np.round(lon_ * 1e7).astype(np.int64)
                     if np.abs(lon_).max() < 0.01 else np.round(lat_ * 1e7).astype(np.int64)):
            pq.write_table(pa.table({**cols, "x": copy}), tmp_path / "g.parquet")
            with pytest.raises(ValueError, match="'x' hold a copy of the points"):
                obfuscate_file(tmp_path / "g.parquet", tmp_path / "o2.parquet", epsilon=1.0, rng=1)
