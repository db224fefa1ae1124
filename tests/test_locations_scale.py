"""Keyed research-mode randomness, the Dask engine and Garmin semicircles (issue 11, items 4-5)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pyproj = pytest.importorskip("pyproj")

from dprivacy.data.grid_release import build_grid_release  # noqa: E402
from dprivacy.data.location_grid import LocationGrid  # noqa: E402
from dprivacy.data.locations import evaluate_files, obfuscate_file  # noqa: E402
from dprivacy.sampling.keyed import KeyedStream, philox4x32, record_keys  # noqa: E402

PARIS = "2.22,48.81,2.47,48.91"


def _points(path: Path, n: int, row_group: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    t = pa.table({"id": np.arange(n, dtype=np.int64) * 7 + 3, "lat": 48.82 + 0.08 * rng.random(n),
                  "lon": 2.25 + 0.2 * rng.random(n), "name": [f"p{i}" for i in range(n)]})
    pq.write_table(t, path, row_group_size=row_group)


def test_philox_matches_the_known_answers_and_randomgen():
    # Random123's known-answer vectors for philox4x32-10
    kat = [(([0, 0, 0, 0], (0, 0)), [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
           (([0xFFFFFFFF] * 4, (0xFFFFFFFF, 0xFFFFFFFF)), [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
           (([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], (0xA4093822, 0x299F31D0)),
            [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1])]
    for (ctr, key), want in kat:
        assert [int(x) for x in philox4x32(ctr, key)] == want
    randomgen = pytest.importorskip("randomgen")
    key = (0x12345678, 0x9ABCDEF0)
    g = randomgen.Philox(number=4, width=32, key=np.array([key[0] | key[1] << 32], dtype=np.uint64), counter=0)
    raw = g.random_raw(8)  # randomgen increments the counter before each block
    ours = np.concatenate([np.array(philox4x32([c, 0, 0, 0], key)) for c in (1, 2)])
    assert np.array_equal(raw, ours)


def test_keyed_uniforms_are_uniform_and_depend_only_on_seed_key_and_draw():
    keys = np.arange(200_000, dtype=np.uint64) * np.uint64(2654435761)
    a = KeyedStream(9, keys)
    u1, u2 = a.random(keys.size), a.random(keys.size)
    assert stats.kstest(u1, "uniform").pvalue > 1e-4 and abs(np.corrcoef(u1, u2)[0, 1]) < 0.01
    sub = KeyedStream(9, keys[5000:6000])
    assert np.array_equal(sub.random(1000), u1[5000:6000])  # the same record, the same draw, in any batch
    assert not np.array_equal(KeyedStream(10, keys[:100]).random(100), u1[:100])
    with pytest.raises(RuntimeError, match="one value per record"):
        a.random(7)
    ints = KeyedStream(1, keys[:50_000]).integers(0, 1 << 62, size=50_000)
    assert ints.min() >= 0 and ints.max() < 1 << 62
    assert record_keys(pa.array(["a", "b"])).dtype == np.uint64


@pytest.mark.parametrize("mech", ["planar-laplace", "planar-laplace-grid", "optimal", "tight-constraints"])
def test_keyed_output_does_not_depend_on_how_the_file_is_split(tmp_path, mech):
    release = None
    if mech == "planar-laplace-grid":
        release = build_grid_release(LocationGrid.build(PARIS, "250m"), mech, epsilon_m=0.002)
    elif mech == "optimal":
        release = build_grid_release(LocationGrid.build(PARIS, "3km"), mech, epsilon_m=0.002, prior="uniform")
    elif mech == "tight-constraints":
        release = build_grid_release(LocationGrid.build(PARIS, "500m"), mech, epsilon_m=0.002)
    outs = []
    for rg in (5000, 613):
        src = tmp_path / f"in-{rg}.parquet"
        _points(src, 5000, rg)
        out = tmp_path / f"out-{rg}.parquet"
        obfuscate_file(src, out, epsilon=2, unit="km", rng=11, key="id", release=release)
        outs.append(pq.read_table(out))
    assert outs[0].equals(outs[1])
    assert not outs[0].column("lat").equals(pq.read_table(tmp_path / "in-5000.parquet").column("lat"))


def test_keyed_planar_laplace_follows_the_radial_law(tmp_path):
    """Keyed mode draws the radius by the inverse CDF; the geodesic displacement is still Gamma(2, 1/ε),
    and a mis-scaled ε is rejected (power)."""
    src = tmp_path / "in.parquet"
    _points(src, 6000, 6000, seed=4)
    out = tmp_path / "out.parquet"
    obfuscate_file(src, out, epsilon=1 / 300, unit="m", rng=2, key="id", precision=0)
    a, b = pq.read_table(src), pq.read_table(out)
    _, _, d = pyproj.Geod(ellps="WGS84").inv(a["lon"].to_numpy(), a["lat"].to_numpy(), b["lon"].to_numpy(), b["lat"].to_numpy())
    assert stats.kstest(d, lambda r: stats.gamma.cdf(r, a=2, scale=300)).pvalue > 1e-4
    assert stats.kstest(d, lambda r: stats.gamma.cdf(r, a=2, scale=300 / 1.15)).pvalue < 1e-4


def test_keyed_mode_refusals(tmp_path):
    src = tmp_path / "in.parquet"
    _points(src, 100, 100)
    with pytest.raises(ValueError, match="give --seed"):
        obfuscate_file(src, tmp_path / "o.parquet", epsilon=1, key="id")
    with pytest.raises(ValueError, match="no key column"):
        obfuscate_file(src, tmp_path / "o.parquet", epsilon=1, rng=1, key="nope")
    dup = tmp_path / "dup.csv"
    dup.write_text("id,lat,lon\n1,48.85,2.3\n2,48.86,2.31\n1,48.87,2.32\n")
    with pytest.raises(ValueError, match="record 3 of those kept: key 1 .* repeated"):
        obfuscate_file(dup, tmp_path / "o.csv", epsilon=1, rng=1, key="id")
    assert not any(tmp_path.glob("o.*")) and not any(tmp_path.glob(".o.*"))
    # the repeated key named whatever its type (integer keys are not kept beside their record keys)
    import pyarrow as pa
    import pyarrow.parquet as pq

    for vals, want in (([5, -7, 3, -7], "record 4 of those kept: key -7 "), (["a", "b", "a"], "record 3 of those kept: key 'a' ")):
        pq.write_table(pa.table({"id": vals, "lat": [48.0 + i / 100 for i in range(len(vals))], "lon": [2.0] * len(vals)}),
                       tmp_path / "k.parquet")
        with pytest.raises(ValueError, match=want):
            obfuscate_file(tmp_path / "k.parquet", tmp_path / "o.parquet", epsilon=1, rng=1, key="id")


def test_dask_two_workers_equal_the_local_engine_and_fail_cleanly(tmp_path):
    pytest.importorskip("distributed", reason="the Dask engine is the optional extra dprivacy[dask]")
    from dprivacy.data.dask_engine import obfuscate_dask

    _points(tmp_path / "a.parquet", 20_000, 20_000)
    _points(tmp_path / "b.parquet", 20_000, 3_001)  # same rows, other partitioning
    obfuscate_file(tmp_path / "a.parquet", tmp_path / "local.parquet", epsilon=2, rng=8, key="id")
    rep = obfuscate_dask(tmp_path / "b.parquet", tmp_path / "dask.parquet", workers=2, epsilon=2, rng=8, key="id")
    assert rep.rows_written == 20_000 and (tmp_path / "dask.parquet").is_dir()
    assert pq.read_table(tmp_path / "dask.parquet").equals(pq.read_table(tmp_path / "local.parquet"))
    side = json.loads((tmp_path / "dask.parquet.dprivacy.json").read_text())
    assert "Dask engine: 7 row groups" in " ".join(side["notes"]) and side["random_source"]["keyed_by"] == "id"
    # a bad row in one partition: an error naming it, nothing left at OUTPUT
    t = pq.read_table(tmp_path / "b.parquet").to_pylist()
    t[4000]["lat"] = 123.0
    pq.write_table(pa.Table.from_pylist(t), tmp_path / "bad.parquet", row_group_size=3_001)
    with pytest.raises(ValueError, match="out-of-range coordinate") as e:  # the row, for the owner only
        obfuscate_dask(tmp_path / "bad.parquet", tmp_path / "bad-out.parquet", workers=2, epsilon=2)
    assert "123" not in str(e.value) and "row group 1: row 1000: latitude 123" in e.value.detail
    assert not any(p.name.startswith(("bad-out", ".bad-out")) for p in tmp_path.iterdir())
    with pytest.raises(ValueError, match="needs --key"):
        obfuscate_dask(tmp_path / "b.parquet", tmp_path / "x.parquet", epsilon=2, rng=8)


def test_garmin_semicircles_of_a_real_ride(tmp_path):
    bs = pytest.importorskip("bokeh_sampledata")
    src = Path(os.path.dirname(bs.__file__)) / "_data" / "cycling.csv.gz"
    with pytest.raises(ValueError, match="'altitude' look like locations"):  # a ride's altitudes locate it
        obfuscate_file(src, tmp_path / "o.csv", epsilon=0.02, unit="m", coords="semicircles")
    with pytest.raises(ValueError, match="semicircles"):
        obfuscate_file(src, tmp_path / "o.csv", epsilon=0.02, unit="m", keep=["altitude"])
    rep = obfuscate_file(src, tmp_path / "ride.parquet", epsilon=0.02, unit="m", coords="semicircles", rng=3,
                         keep=["altitude"])
    assert rep.rows_written == 4391
    out = pq.read_table(tmp_path / "ride.parquet")
    assert pa.types.is_integer(out.schema.field("position_lat").type)  # written back as integer semicircles
    ev = evaluate_files(src, tmp_path / "ride.parquet")
    assert ev["coords"] == "semicircles" and ev["rows"] == 4391
    # mean displacement 2/ε = 100 m; 4391 draws give a standard error of ~1.1 m
    assert abs(ev["displacement_m"]["mean"] - 100.0) < 5.0


def test_displacement_quantiles_match_scipy_without_importing_it():
    # the summary's quantiles come from a pure-Python Newton solve (scipy.stats costs 0.5–0.9 s to import)
    import subprocess
    import sys

    from dprivacy.data.planar_noise import displacement_quantiles, gamma2_quantile

    for q in np.r_[np.linspace(1e-3, 1 - 1e-9, 400), 0.5, 0.9, 0.95, 0.99]:
        assert gamma2_quantile(q) == pytest.approx(stats.gamma.ppf(q, 2.0), rel=1e-13)
    got = displacement_quantiles(1e-3)
    assert got["mean"] == 2000.0 and got["p95"] == pytest.approx(stats.gamma.ppf(0.95, 2.0, scale=1000.0), rel=1e-13)
    code = ("import sys; from dprivacy.data.planar_noise import displacement_quantiles; displacement_quantiles(0.001); "
            "print('scipy.stats' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
