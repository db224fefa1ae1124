"""Geodesic planar Laplace on real location files (issue 11; seed 002 §6.2)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
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
    obfuscate_file(src, a, epsilon=5, unit="km", rng=7)
    obfuscate_file(src, b, epsilon=5, unit="km", rng=7)
    rep = obfuscate_file(src, c, epsilon=5, unit="km")
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
