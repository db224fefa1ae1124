"""The Dask engine against the local engine per core (issue 33): ``dprivacy obfuscate`` of one Parquet file of
points in release mode, in three ways, interleaved, the minimum of ``--repeats`` each:

- ``local``: the local engine (its pipeline's threads on every core of the machine);
- ``dask, own cluster``: ``--engine dask --workers W``, which starts a LocalCluster of W one-threaded worker
  processes and closes it (both inside the timed command);
- ``dask, running cluster``: ``--engine dask --scheduler ADDRESS`` on a LocalCluster of W one-threaded workers
  started before the timed runs, as a cluster is used in production (its start is not the command's).

Points per second per core divides by the cores each way uses (the machine's for the local engine, W for Dask).

    python benchmarks/bench_dask.py [--points 10000000] [--workers 2] [--repeats 3]

Writes benchmarks/results_dask.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timed(args: list[str]) -> float:
    """Seconds of one ``dprivacy`` command in its own process (as the console script runs it)."""
    code = f"import sys\nfrom dprivacy.cli import main\nsys.argv = {['dprivacy', *args]!r}\nmain()"
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"dprivacy {' '.join(args)} failed:\n{p.stderr}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    import dask
    from bench_locations import make_file
    from distributed import LocalCluster

    from dprivacy.data.dask_engine import _worker_environ

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        src = d / "in.parquet"
        make_file(src, args.points)
        common = [str(src), "--epsilon", "1", "--force"]
        # the running cluster: as the engine's own LocalCluster is made (one thread a worker, its workers' environment)
        with dask.config.set(_worker_environ()), LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                                              dashboard_address=None, silence_logs=logging.ERROR) as cluster:
            ways = {
                "local": ["obfuscate", *common, "-o", str(d / "local.parquet")],
                "dask, own cluster": ["obfuscate", *common, "-o", str(d / "own.parquet"), "--engine", "dask",
                                      "--workers", str(args.workers)],
                "dask, running cluster": ["obfuscate", *common, "-o", str(d / "running.parquet"), "--engine", "dask",
                                          "--scheduler", cluster.scheduler_address],
            }
            got: dict = {k: [] for k in ways}
            for _ in range(args.repeats):
                for k, cmd in ways.items():
                    got[k].append(timed(cmd))
                    print(f"{k:22s} {got[k][-1]:.3f} s", flush=True)
    used = {"local": cores, "dask, own cluster": args.workers, "dask, running cluster": args.workers}
    rows = {k: {"seconds": min(v), "all_seconds": v, "cores": used[k], "points_per_s": args.points / min(v),
                "points_per_s_per_core": args.points / min(v) / used[k]} for k, v in got.items()}
    base = rows["local"]["points_per_s_per_core"]
    for k, r in rows.items():
        r["per_core_over_local"] = r["points_per_s_per_core"] / base
        print(f"{k:22s} {r['seconds']:.3f} s  {r['points_per_s'] / 1e6:.2f} M points/s  "
              f"{r['points_per_s_per_core'] / 1e6:.2f} M points/s a core  ({r['per_core_over_local']:.2f}× local's)")
    out = {"date": time.strftime("%Y-%m-%d"), "machine": f"{cores} cores", "points": args.points,
           "workers": args.workers, "repeats": args.repeats, "load_average": os.getloadavg(), "rows": rows,
           "command": "python benchmarks/bench_dask.py " + " ".join(sys.argv[1:])}
    (HERE / "results_dask.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
