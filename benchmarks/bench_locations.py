"""Obfuscation throughput on real-sized files (issue 11): planar Laplace end to end on 1 and 10 million
points (rows/s, peak memory), the grid mechanisms on a 1000×1000-cell grid (1 million points), and the
Dask engine with 2 workers against the local engine on the same file.

    python benchmarks/bench_locations.py [--sizes 1000000 10000000] [--skip-dask]

Each end-to-end run is a separate process (``dprivacy obfuscate``), so its peak RSS (ru_maxrss) is its
own. Results go to benchmarks/results_locations.json; ratios are against the in-memory core (noise +
geodesic step) measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def make_file(path: Path, n: int, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    w = None
    chunk = 1_000_000
    for a in range(0, n, chunk):
        m = min(chunk, n - a)
        t = pa.table({"id": np.arange(a, a + m, dtype=np.int64), "lat": 48.0 + 1.0 * rng.random(m),
                      "lon": 2.0 + 1.0 * rng.random(m), "value": rng.random(m)})
        if w is None:
            w = pq.ParquetWriter(path, t.schema)
        w.write_table(t, row_group_size=500_000)
    w.close()


def run_cli(args: list[str], src: str | None = None) -> tuple[float, float]:
    """(seconds, peak RSS of the child in MiB) for one ``dprivacy`` command (``src``: run that source
    tree's dprivacy instead, e.g. an older checkout, for a baseline in the same run)."""
    import os

    env = dict(os.environ, PYTHONPATH=src) if src else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "dprivacy.cli", *args], capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(p.stderr)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return dt, max(peak, before) / 1024.0


def core(n: int) -> float:
    from dprivacy.data.locations import NOISE_PARTS, displace, planar_laplace_displacements
    from dprivacy.sampling import random_source

    g = random_source(None).generator
    lat = 48 + np.random.default_rng(1).random(n)
    lon = 2 + np.random.default_rng(2).random(n)
    t0 = time.perf_counter()
    r, az = planar_laplace_displacements(n, epsilon=1e-3, generator=g, threads=NOISE_PARTS)
    displace(lat, lon, r, az)
    return n / (time.perf_counter() - t0)


def grid_case(mech: str, n: int) -> dict:
    from dprivacy.data.grid_release import build_grid_release
    from dprivacy.data.location_grid import LocationGrid
    from dprivacy.sampling import random_source

    # ~100 km × 100 km around Paris in 100 m cells: a 1000×1000 grid
    grid = LocationGrid.build("1.68,48.40,3.02,49.30", "100m")
    t0 = time.perf_counter()
    rel = build_grid_release(grid, mech, epsilon_m=1 / 100)  # ε·cell = 1: above the Euclidean threshold 0.665
    build = time.perf_counter() - t0
    rng = np.random.default_rng(3)
    lat = 48.45 + 0.8 * rng.random(n)
    lon = 1.75 + 1.2 * rng.random(n)
    g = random_source(None).generator
    t0 = time.perf_counter()
    rel.apply(lat, lon, g)
    apply = time.perf_counter() - t0
    return {"mechanism": mech, "grid": f"{grid.width}x{grid.height}", "points": n, "build_s": build, "apply_s": apply,
            "points_per_s": n / apply}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--baseline-src", metavar="DIR", help="also run the end-to-end cases with the dprivacy of this source "
                    "tree (e.g. a checkout before a change), interleaved in the same run")
    args = ap.parse_args()
    out: dict = {"core_points_per_s": core(1_000_000), "end_to_end": [], "grid": [], "dask": []}
    print(f"core (noise + geodesic, in memory, 1e6 points): {out['core_points_per_s'] / 1e6:.2f} M points/s", flush=True)
    for mech in ("planar-laplace-grid", "tight-constraints"):
        r = grid_case(mech, 1_000_000)
        out["grid"].append(r)
        print(f"{mech:20s} {r['grid']}: build {r['build_s']:.2f} s, 1e6 points in {r['apply_s']:.2f} s "
              f"({r['points_per_s'] / 1e6:.2f} M/s)", flush=True)
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        for n in args.sizes:
            src = d / f"in-{n}.parquet"
            make_file(src, n)
            dt, rss = run_cli(["obfuscate", str(src), "-o", str(d / f"out-{n}.parquet"), "--epsilon", "1"])
            rec = {"points": n, "seconds": dt, "points_per_s": n / dt, "peak_rss_mib": rss}
            print(f"end to end, {n:>11,} points: {dt:6.2f} s, {n / dt / 1e6:.2f} M points/s, peak RSS {rss:.0f} MiB", flush=True)
            if args.baseline_src:
                bt, brss = run_cli(["obfuscate", str(src), "-o", str(d / f"base-{n}.parquet"), "--epsilon", "1"], args.baseline_src)
                rec["baseline"] = {"src": args.baseline_src, "seconds": bt, "points_per_s": n / bt}
                print(f"  baseline ({args.baseline_src}): {bt:6.2f} s, {n / bt / 1e6:.2f} M points/s", flush=True)
            out["end_to_end"].append(rec)
            if not args.skip_dask and n == max(args.sizes):
                for engine in ("local", "dask"):
                    o = d / f"{engine}-{n}.parquet"
                    cmd = ["obfuscate", str(src), "-o", str(o), "--epsilon", "1", "--seed", "1", "--key", "id"]
                    if engine == "dask":
                        cmd += ["--engine", "dask", "--workers", "2"]
                    dt, rss = run_cli(cmd)
                    out["dask"].append({"engine": engine, "points": n, "seconds": dt, "points_per_s": n / dt})
                    print(f"keyed, {engine:5s} engine, {n:,} points: {dt:6.2f} s ({n / dt / 1e6:.2f} M/s)", flush=True)
                import pyarrow.parquet as pq

                same = pq.read_table(d / f"local-{n}.parquet").equals(pq.read_table(d / f"dask-{n}.parquet"))
                out["dask_equals_local"] = bool(same)
                print(f"dask output equals local: {same}", flush=True)
    Path(__file__).with_name("results_locations.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
