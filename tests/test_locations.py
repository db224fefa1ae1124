"""Geodesic planar Laplace on real location files (issue 11; Chatzikokolakis et al. 2013 §6.2). The privacy attacks found on obfuscate
(copies of the points, metadata, row order, float noise, ...) are kept as tests in tests/attacks/ (issue #30)."""

from __future__ import annotations

import gzip
import json
import re
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
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "out-of-range coordinate" in p.stderr and "95" not in p.stderr
    p = _cli("obfuscate", str(bad), "-o", "out.csv", "--epsilon", "1", "--owner", cwd=tmp_path)  # the owner sees the row
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "row 2: latitude 95" in p.stderr and "Traceback" not in p.stderr
    assert not any(tmp_path.glob("out.csv*")) and not any(tmp_path.glob(".out.csv*"))
    p = _cli("obfuscate", str(bad), "-o", "out.csv", "--epsilon", "1", "--skip-invalid", "--json", cwd=tmp_path)
    rep = json.loads(p.stdout)
    assert p.returncode == 0 and rep["rows_rejected"] == 2 and rep["rows_written"] == 1
    p = _cli("obfuscate", str(bad), "-o", "out.csv", "--epsilon", "1", cwd=tmp_path)
    assert p.returncode == 2 and "exists" in p.stderr  # never overwritten without --force
    proj = tmp_path / "proj.csv"
    proj.write_text("x,latitude,longitude\n1,5500000,400000\n")
    p = _cli("obfuscate", str(proj), "-o", "o2.csv", "--epsilon", "1", "--owner", cwd=tmp_path)
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
    with pytest.raises(ValueError, match=r"1 key\(s\) of .*c.csv are not in .*a.csv \(e.g. '99'\)"):  # (as written)
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


def test_output_lattice_fast_path_equals_the_row_by_row_computation(monkeypatch):
    # a batch whose rows share one longitude step skips the per-row cos/log2 (_uniform_coarsening); it must give
    # the indices of the row-by-row computation bit for bit, also in bands straddling a doubling of the step
    import math

    import dprivacy.data.planar_noise as pn

    rng = np.random.default_rng(7)
    cases = []
    for step in (1e-7, 1e-6, 180 / 2**31):
        for k in range(0, 12):  # the latitudes where the step doubles (x = 2^(k-1)), and bands around them
            c = math.degrees(math.acos(min(1.0, pn.MIN_CELL_WIDTH_M / (math.radians(step) * pn.WGS84_A) / 2.0 ** (k - 1))))
            for w in (1e-9, 1e-7, 1e-5, 1e-3, 0.1):
                cases.append((step, c, w))
        cases += [(step, rng.uniform(-85, 85), 10 ** rng.uniform(-7, 1)) for _ in range(40)]
    taken = 0
    for step, c, w in cases:
        lat = np.clip(c + w * rng.standard_normal(300), -90, 90) * rng.choice([-1, 1])
        lon = np.r_[rng.uniform(-180, 180, 296), 180.0, -180.0, 179.99999999, -179.99999996]
        fast = pn.output_lattice(lat, lon, step)
        n90 = round(90 / step)
        ia = np.abs(np.clip(np.rint(lat / step), -n90, n90)).astype(np.int64)
        full = round(360 / step)
        taken += pn._uniform_coarsening(int(ia.min()), int(ia.max()), step, n90,
                                        min(pn.MAX_COARSENING, (full & -full).bit_length() - 1)) is not None
        with monkeypatch.context() as m:
            m.setattr(pn, "_uniform_coarsening", lambda *a: None)
            slow = pn.output_lattice(lat, lon, step)
        assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1]), (step, c, w)
    assert taken > len(cases) // 2


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
    with pytest.raises(ValueError, match=r"missing, non-numeric or out-of-range coordinate") as e:
        obfuscate_file(src, tmp_path / "o.csv", epsilon=1e4, rng=1)
    assert "abc" not in str(e.value) and re.search(r"row 2: missing or non-numeric coordinate .*as read: lat = 'abc'", e.value.detail)
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
    # every output, Parquet too, has the text as read (a type guessed from the first block made a late value refuse
    # the file: tests/attacks/test_attack_csv_types.py)
    obfuscate_file(src, tmp_path / "p.parquet", epsilon=1.0, rng=1, keep=("zip",))
    import pyarrow.parquet as pq

    back = pq.read_table(tmp_path / "p.parquet")
    assert back.schema.field("big").type == pa.string() and back.column("big").to_pylist() == ["12345678901234567890", "1"]
    assert back.column("zip").to_pylist() == ["02134", "00,7"]
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


def _copies_table(n=50, seed=0):
    rng = np.random.default_rng(seed)
    lat, lon = 40 + 10 * rng.random(n), -5 + 20 * rng.random(n)
    return lat, lon, {"lat": lat, "lon": lon, "temp": 15 + 10 * rng.random(n), "id": np.arange(n),
                      "note": [f"Route {k}, km {k % 7}.5" for k in range(n)], "city": ["Paris"] * n}


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
    with pytest.raises(ValueError, match="missing, non-numeric or out-of-range coordinate") as e:
        obfuscate_file(tmp_path / "bad.geojson", tmp_path / "b.geojson", epsilon=1.0, rng=1)
    assert "row 2: missing or non-numeric coordinate" in e.value.detail
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


def test_parquet_release_keeps_small_dictionaries_and_stops_large_ones_early(tmp_path):
    # a kept column of few values keeps its dictionary; one of distinct values stops growing its dictionary at
    # PARQUET_DICTIONARY_BYTES (not a whole row group's worth: the hashing cost a third of the release's CPU)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprivacy.data.io import PARQUET_DICTIONARY_BYTES

    n = 20_000
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"id": np.arange(n), "lat": 48 + rng.random(n), "lon": 2 + rng.random(n),
                             "cat": pa.array(rng.choice(["a", "b", "c"], n))}), tmp_path / "i.parquet")
    obfuscate_file(tmp_path / "i.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    md = pq.ParquetFile(tmp_path / "o.parquet").metadata.row_group(0)
    cols = {md.column(i).path_in_schema: md.column(i) for i in range(md.num_columns)}
    assert cols["cat"].has_dictionary_page and "PLAIN" not in cols["cat"].encodings[1:]  # (the dictionary page is PLAIN)
    assert not cols["lat"].has_dictionary_page and not cols["lon"].has_dictionary_page
    # the id column: a dictionary page of at most PARQUET_DICTIONARY_BYTES, then plain pages
    assert PARQUET_DICTIONARY_BYTES <= 1 << 16
    assert cols["id"].has_dictionary_page
    assert cols["id"].data_page_offset - cols["id"].dictionary_page_offset < PARQUET_DICTIONARY_BYTES + 1024
    out = pq.read_table(tmp_path / "o.parquet")
    assert out["id"].to_pylist() == list(range(n)) and out["cat"].equals(pa.chunked_array([pa.array(
        pq.read_table(tmp_path / "i.parquet")["cat"].to_pylist())]))


def test_pipeline_raises_a_batch_error_and_leaves_nothing_behind(tmp_path, monkeypatch):
    # batches are computed on worker threads (obfuscate_file's pipeline): an error in one is raised by the command,
    # nothing after it is written, and neither OUTPUT, its temporary file nor a sidecar is left
    import pyarrow as pa
    import pyarrow.parquet as pq

    import dprivacy.data.obfuscator as obf
    from dprivacy.data.formats import BATCH_ROWS

    n = 2 * BATCH_ROWS + 1000  # three batches
    rng = np.random.default_rng(0)
    pq.write_table(pa.table({"lat": 48 + rng.random(n), "lon": 2 + rng.random(n)}), tmp_path / "i.parquet")
    real, calls = obf.released_cells, []

    def failing(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("batch failed")
        return real(*a, **k)

    monkeypatch.setattr(obf, "released_cells", failing)
    with pytest.raises(RuntimeError, match="batch failed"):
        obfuscate_file(tmp_path / "i.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.parquet"]
    monkeypatch.setattr(obf, "released_cells", real)
    obfuscate_file(tmp_path / "i.parquet", tmp_path / "o.parquet", epsilon=1.0, rng=1)  # and the same call works
    assert pq.ParquetFile(tmp_path / "o.parquet").metadata.num_rows == n
