"""Attacks on grid releases (obfuscate --mechanism planar-laplace-grid | tight-constraints | optimal over --region):
nothing a release writes — rows kept or dropped, their order, the sidecar, a refusal — may depend on whether a true
point lies inside the region, and the sidecar's sampler counters are read after sampling and never depend on the
true points. Issue #30."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pyproj = pytest.importorskip("pyproj")
pa = pytest.importorskip("pyarrow")

from dprivacy.data.location_grid import LocationGrid  # noqa: E402
from dprivacy.data.locations import evaluate_files, obfuscate_file  # noqa: E402

PARIS = "2.22,48.81,2.47,48.91"
SRC = Path(__file__).resolve().parents[2] / "src"


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, "-m", "dprivacy.cli", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def _points(n: int, seed: int, outside=()):
    """n points in the Paris region (random order), those at the indices ``outside`` moved out of it, spread around."""
    rng = np.random.default_rng(seed)
    lat = 48.82 + 0.08 * rng.random(n)
    lon = 2.25 + 0.2 * rng.random(n)
    far = [(51.5, -0.12), (48.86, 2.9), (40.4, -3.7), (48.70, 2.30), (-33.9, 151.2), (48.95, 2.60)]
    for j, i in enumerate(outside):
        lat[i], lon[i] = far[j % len(far)]
    return lat, lon


def _write(path: Path, lat, lon, *, extra_row: str | None = None) -> None:
    rows = [f"{i},{a:.7f},{b:.7f},v{i}\n" for i, (a, b) in enumerate(zip(lat, lon))]
    if extra_row is not None:
        rows.insert(3, extra_row)
    path.write_text("id,lat,lon,tag\n" + "".join(rows))


def _sidecar_bytes(path: Path) -> bytes:
    """The sidecar as written, with its one wall-clock field (``seconds``) blanked."""
    return re.sub(rb'"seconds": [-+0-9.eE]+', b'"seconds": 0', path.read_bytes())


GRID = ["--cell", "1km", "--region", PARIS]


# Leak: with --skip-invalid a grid release dropped the rows whose true point lay outside --region (every other column
# and the order kept), so the missing rows named exactly the people outside.
def test_a_grid_release_keeps_every_row_in_order_inside_or_outside_the_region(tmp_path):
    lat, lon = _points(40, 1, outside=(0, 5, 17, 39))
    _write(tmp_path / "pts.csv", lat, lon, extra_row="99,abc,2.3,unreadable\n")  # one coordinate that is no number
    p = _cli("obfuscate", "pts.csv", "-o", "rel.csv", "--epsilon", "1", "--mechanism", "planar-laplace-grid", *GRID,
             "--skip-invalid", "--seed", "4", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    # only the unreadable row is dropped (as planar Laplace drops it), never a row for where its point is
    assert (rep["rows_read"], rep["rows_written"], rep["rows_rejected"]) == (41, 40, 1)
    assert rep["first_rejected"] == "row 4: missing or non-numeric coordinate"
    import pyarrow.csv as pcsv

    t = pcsv.read_csv(tmp_path / "rel.csv")
    assert t.column("id").to_pylist() == list(range(40)) and t.column("tag").to_pylist() == [f"v{i}" for i in range(40)]
    g = LocationGrid.build(PARIS, "1km")
    la, lo = t.column("lat").to_numpy(), t.column("lon").to_numpy()
    c = g.cell_of(la, lo)
    assert np.array_equal(np.c_[g.centre_of(c)], np.c_[la, lo])  # every row, outside ones included, is a cell centre


# Leak: the sidecar said how many rows were outside and named the first; it must be the same whichever rows lie outside.
@pytest.mark.parametrize("mechanism, extra", [("planar-laplace-grid", []), ("tight-constraints", []),
                                              ("optimal", ["--prior", "uniform"])])
def test_the_sidecar_is_the_same_whichever_rows_lie_outside_the_region(tmp_path, monkeypatch, mechanism, extra):
    cell = "5km" if mechanism == "optimal" else "1km"  # optimal: a 4×3 grid (its LP has n² variables)
    sides, reps = [], []
    for name, where in (("inside", (48.86, 2.35)), ("outside", (51.5, -0.12))):
        d = tmp_path / name
        d.mkdir()
        lat, lon = _points(30, 2)
        lat[7], lon[7] = where  # the two inputs differ in this one row only
        _write(d / "pts.csv", lat, lon)
        monkeypatch.chdir(d)  # the same relative paths in both sidecars
        from dprivacy.data.grid_release import build_grid_release

        g = LocationGrid.build(PARIS, cell)
        prior = "uniform" if extra else None
        rel = build_grid_release(g, mechanism, epsilon_m=1e-3, prior=prior)
        reps.append(obfuscate_file("pts.csv", "rel.csv", epsilon=1.0, rng=3, release=rel, skip_invalid=True))
        sides.append(_sidecar_bytes(d / "rel.csv.dprivacy.json"))
    assert sides[0] == sides[1]
    assert [(r.rows_written, r.rows_rejected, r.first_rejected) for r in reps] == [(30, 0, None)] * 2
    assert [r.owner_only["rows_outside_region"] for r in reps] == [0, 1]  # the owner's to see
    side = json.loads(sides[1])
    assert "ε·d holds between the cells the true points are mapped to" in side["guarantee"]
    assert "no extra protection" in side["guarantee"] and "nearest" in side["guarantee"]
    text = sides[1].decode()
    for word in ("outside --region", "rows_outside_region", "rows_clamped", "acceptance_rate", "sampler_proposals"):
        assert word not in text, word


# Leak: without --skip-invalid a point outside the region was refused with an error naming its row — a free yes/no
# question on one person's location. The release goes through; nothing on stderr names a row.
def test_no_refusal_names_a_row_outside_the_region(tmp_path):
    lat, lon = _points(20, 3, outside=(11,))
    _write(tmp_path / "pts.csv", lat, lon)
    p = _cli("obfuscate", "pts.csv", "-o", "rel.csv", "--epsilon", "1", "--mechanism", "tight-constraints", *GRID,
             "--seed", "1", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "row 12" not in p.stderr and "outside" not in p.stderr
    assert json.loads(p.stdout)["rows_written"] == 20
    assert "not_private" not in json.loads(p.stdout)  # the owner's counts only on request


# Leak: the number of rows outside the region is the owner's to see (--owner), never the sidecar's nor the output's.
def test_only_the_owner_sees_how_many_rows_lay_outside(tmp_path):
    lat, lon = _points(25, 4, outside=(2, 9, 20))
    g = LocationGrid.build(PARIS, "1km")
    # a cell centre outside the lon/lat box (the grid tiles the projected rectangle): its own cell, not clamped
    clat, clon = g.centre_of(np.arange(g.n))
    k = int(np.flatnonzero(~g.inside(clat, clon))[0])
    lat[20], lon[20] = clat[k], clon[k]
    _write(tmp_path / "pts.csv", lat, lon)
    assert not g.inside(lat[20], lon[20]) and not g.locate(lat[20:21], lon[20:21])[1][0]
    p = _cli("obfuscate", "pts.csv", "-o", "rel.csv", "--epsilon", "1", "--mechanism", "planar-laplace-grid", *GRID,
             "--seed", "2", "--owner", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    owner = json.loads(p.stdout)["not_private"]
    assert owner["rows_outside_region"] == 3 and owner["rows_clamped"] == 2 and "never to be published" in owner["meaning"]
    side = (tmp_path / "rel.csv.dprivacy.json").read_text()
    assert "not_private" not in side and "rows_outside_region" not in side and "rows_clamped" not in side
    p = _cli("obfuscate", "pts.csv", "-o", "rel.csv", "--epsilon", "1", "--mechanism", "planar-laplace-grid", *GRID,
             "--seed", "2", "--owner", "--force", cwd=tmp_path)  # the table a terminal shows
    assert p.returncode == 0 and "rows outside region 3" in " ".join(p.stdout.split())


# Mathematics of the clamping: a point outside the grid goes to the cell nearest it in the projection, and clamping never
# lengthens a projected distance, so the cells of two points are at most their projected distance + a diagonal apart.
def test_a_point_outside_goes_to_the_nearest_cell_and_clamping_is_non_expansive():
    g = LocationGrid.build(PARIS, "2km")
    rng = np.random.default_rng(7)
    lat = np.r_[rng.uniform(47.5, 50.5, 400), -48.86, 89.0]
    lon = np.r_[rng.uniform(0.5, 4.5, 400), 2.345 - 180, 2.3]  # then the projection centre's antipode (no projection)
    cells, clamped = g.locate(lat, lon)
    assert ((cells >= 0) & (cells < g.n)).all()
    x, y = pyproj.Transformer.from_crs("EPSG:4326", g.crs, always_xy=True).transform(lon, lat)
    x, y = np.asarray(x), np.asarray(y)
    fin = np.isfinite(x) & np.isfinite(y)
    # brute force: the distance from each point to every cell's square
    r, c = np.divmod(np.arange(g.n), g.width)
    x0, y0 = g.x0 + c * g.cell_m, g.y0 + r * g.cell_m
    dx = np.maximum(np.maximum(x0[None, :] - x[fin, None], 0), x[fin, None] - (x0[None, :] + g.cell_m))
    dy = np.maximum(np.maximum(y0[None, :] - y[fin, None], 0), y[fin, None] - (y0[None, :] + g.cell_m))
    dist = np.hypot(dx, dy)
    own = dist[np.arange(fin.sum()), cells[fin]]
    assert np.allclose(own, dist.min(axis=1), rtol=0, atol=1e-6)
    inside_rect = (x >= g.x0) & (x < g.x0 + g.width * g.cell_m) & (y >= g.y0) & (y < g.y0 + g.height * g.cell_m)
    assert np.array_equal(clamped[fin], ~inside_rect[fin]) and clamped[fin].sum() > 100
    # non-expansive: |centre(c) − centre(c')| ≤ |x − x'| + the cell diagonal, for every pair of points
    cx, cy = g.x0 + (c[cells[fin]] + 0.5) * g.cell_m, g.y0 + (r[cells[fin]] + 0.5) * g.cell_m
    d_cells = np.hypot(cx[:, None] - cx[None, :], cy[:, None] - cy[None, :])
    d_pts = np.hypot(x[fin, None] - x[None, fin], y[fin, None] - y[None, fin])
    assert (d_cells <= d_pts + math.sqrt(2) * g.cell_m + 1e-6).all()


# Leak (through dropped rows, and a stale report): evaluate matches a grid release to its input by position, as for
# planar Laplace; the prior it bins from the data puts an outside point in its nearest cell, as the release does.
def test_evaluate_matches_a_grid_release_by_position(tmp_path):
    from dprivacy.data.evaluation import evaluate_release

    lat, lon = _points(60, 5, outside=(0, 30, 59))
    _write(tmp_path / "pts.csv", lat, lon)
    g = LocationGrid.build(PARIS, "2km")
    from dprivacy.data.grid_release import build_grid_release

    rel = build_grid_release(g, "planar-laplace-grid", epsilon_m=1e-3)
    obfuscate_file(tmp_path / "pts.csv", tmp_path / "rel.csv", epsilon=1.0, rng=6, release=rel, skip_invalid=True)
    rep = evaluate_files(tmp_path / "pts.csv", tmp_path / "rel.csv")
    assert rep["rows"] == 60 and "rows_not_released" not in rep
    import pyarrow.csv as pcsv

    t = pcsv.read_csv(tmp_path / "rel.csv")
    _, _, d = pyproj.Geod(ellps="WGS84").inv(lon, lat, t.column("lon").to_numpy(), t.column("lat").to_numpy())
    assert rep["displacement_m"]["max"] == pytest.approx(np.max(d), rel=1e-12)  # row i against row i
    full = evaluate_release(tmp_path / "pts.csv", tmp_path / "rel.csv")
    assert full["grid"]["points_used"] == 60 and full["grid"]["points_outside_region"] == 3


# Bug and leak: the sidecar's sampler counters were read when the mechanism was built (draws_from_the_mixture 0 and
# acceptance_rate null after 15,650 draws); they are counted during sampling and read after it.
@pytest.mark.parametrize("mechanism", ["planar-laplace-grid", "tight-constraints"])
def test_the_sampling_counts_are_read_after_sampling(tmp_path, monkeypatch, mechanism):
    from dprivacy.data.grid_release import build_grid_release

    monkeypatch.chdir(tmp_path)
    g = LocationGrid.build(PARIS, "1km")
    got = {}
    for n in (10, 5000):
        lat, lon = _points(n, 8, outside=(1,))
        _write(tmp_path / f"p{n}.csv", lat, lon)
        rel = build_grid_release(g, mechanism, epsilon_m=1e-3)
        rep = obfuscate_file(f"p{n}.csv", f"r{n}.csv", epsilon=1.0, rng=9, release=rel)
        side = json.loads((tmp_path / f"r{n}.csv.dprivacy.json").read_text())
        got[n] = (side["sampling"], rep.owner_only)
        assert side["sampling"]["draws"] == n
    (s10, o10), (s5k, o5k) = got[10], got[5000]
    if mechanism == "planar-laplace-grid":
        # one lattice proposal at least per draw; the acceptance of the lattice sampler is about 0.75
        for s, n in ((s10, 10), (s5k, 5000)):
            assert n <= s["lattice_proposals"] <= 3 * n
        assert 0.6 < 5000 / s5k["lattice_proposals"] < 0.9
    else:
        assert s5k["draws_from_the_mixture"] >= 0 and "draws_from_the_mixture" in s10
        for o, n in ((o10, 10), (o5k, 5000)):  # the proposals depend on the true cells: the owner's only
            assert o["sampler_proposals"] >= n and o["sampler_acceptance_rate"] == pytest.approx(n / o["sampler_proposals"])
        assert o5k["sampler_proposals"] > o10["sampler_proposals"]
        assert "acceptance_rate" not in json.dumps(s5k)


# The mixture count in the sidecar is exactly the draws the uniform mixture replaced: one Bernoulli(γ) per draw from the
# random source before the secret is used, so it is the same whatever the secrets are. The rejection rounds accept with
# probability (Φz)_y/(K·z_max) = (1 + r_y)/(K·z_max): the same for a corner and a middle cell but for the residual r_y.
def test_the_mixture_count_is_counted_per_draw_and_independent_of_the_secrets():
    import dprivacy as dp
    from dprivacy._kernels.sampling import KernelRejectionSampler
    from dprivacy.spaces import GridSpace

    g = GridSpace(12, 10)
    res = dp.tight_constraints(g, epsilon=1.0)
    s = KernelRejectionSampler(g, res.mechanism.z, 1.0, mixture_bits=2)  # γ = 1/4
    n = 4000
    expected = int((np.random.default_rng(11).integers(0, 4, size=n, dtype=np.int64) == 0).sum())
    counts = []
    for secrets in (np.zeros(n, dtype=np.int64), np.full(n, 5 * 12 + 6, dtype=np.int64)):  # a corner, the middle
        st: dict = {}
        s.sample(secrets, rng=np.random.default_rng(11), stats=st)
        counts.append(st)
    assert counts[0]["mixed"] == counts[1]["mixed"] == expected and abs(expected - n / 4) < 5 * math.sqrt(n * 3 / 16)
    p = 1.0 / (s._kernel_total * s.z_max)
    for c in counts:
        assert c["accepted"] == n - c["mixed"]  # one accepted round per unmixed draw
        m = c["proposals"]
        assert abs(c["accepted"] - p * m) < 5 * math.sqrt(m * p * (1 - p))  # Binomial(rounds, p), p the same
    assert "acceptance_rate" not in s.to_dict() and "draws_from_the_mixture" not in s.to_dict()


# Leak: a counter that depends on which cells the true points are in would give the points' distribution away through
# the sidecar. Two inputs, every point in a corner cell vs every point in the middle: the sidecars' counts are the same
# (the rejection rounds, whose law depends on the cells through the solver's residual, are the owner's only).
def test_the_sidecar_counts_do_not_depend_on_where_the_true_points_are(tmp_path, monkeypatch):
    from dprivacy.data.grid_release import build_grid_release

    g = LocationGrid.build(PARIS, "1km")
    corner_lat, corner_lon = g.centre_of(np.zeros(1, dtype=np.int64))
    mid_lat, mid_lon = g.centre_of(np.array([g.n // 2 + g.width // 2]))
    sides, owners = [], []
    for name, (a, b) in (("border", (corner_lat[0], corner_lon[0])), ("middle", (mid_lat[0], mid_lon[0]))):
        d = tmp_path / name
        d.mkdir()
        _write(d / "pts.csv", np.full(500, a), np.full(500, b))
        monkeypatch.chdir(d)
        rel = build_grid_release(g, "tight-constraints", epsilon_m=1e-3)
        rep = obfuscate_file("pts.csv", "rel.csv", epsilon=1.0, rng=12, release=rel)
        owners.append(rep.owner_only)
        sides.append(json.loads(_sidecar_bytes(d / "rel.csv.dprivacy.json"))["sampling"])
    assert sides[0] == sides[1] and set(sides[0]) == {"draws", "draws_from_the_mixture", "meaning"}
    assert all(o["sampler_proposals"] >= 500 for o in owners)


# The Dask engine's tasks count their own draws (the mechanism object they share on a worker is never read for counts);
# the client adds them up: the same counts as the local engine for the same seed and record keys.
def test_dask_counts_every_task_s_draws(tmp_path):
    pytest.importorskip("distributed")
    import pyarrow.parquet as pq

    lat, lon = _points(3000, 13, outside=(4, 400))
    pq.write_table(pa.table({"id": np.arange(3000), "lat": lat, "lon": lon}), tmp_path / "pts.parquet", row_group_size=1000)
    args = ["--epsilon", "1", "--mechanism", "planar-laplace-grid", *GRID, "--seed", "1", "--key", "id", "--owner", "--json"]
    p = _cli("obfuscate", "pts.parquet", "-o", "d.parquet", "--engine", "dask", "--workers", "1", *args, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    q = _cli("obfuscate", "pts.parquet", "-o", "l.parquet", *args, cwd=tmp_path)
    assert q.returncode == 0, q.stderr
    dask_rep, local_rep = json.loads(p.stdout), json.loads(q.stdout)
    assert dask_rep["sampling"]["draws"] == 3000 and dask_rep["sampling"] == local_rep["sampling"]
    assert dask_rep["not_private"]["rows_outside_region"] == local_rep["not_private"]["rows_outside_region"] == 2
    assert pq.read_table(tmp_path / "d.parquet").num_rows == 3000
