"""``dprivacy obfuscate`` from several source trees against bench_peers' numpy float baseline, interleaved, in one run.

    python benchmarks/bench_obfuscate_ab.py --points 2000000 --repeats 3 --trees /path/to/old/src src

Each tree is run as ``PYTHONPATH=TREE python -c "...; sys.argv = ['dprivacy', 'obfuscate', ...]; main()"`` (as the console
script runs it) on the
same synthetic Parquet file as bench_peers' obfuscate row (id, lat, lon, value; ε = 1 per km, release mode); every
run is its own process (peak RSS from VmHWM). Prints the minimum time and points per second of each, and all times
(the machine is shared: compare within a run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=2_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trees", nargs="+", default=[str(HERE.parent / "src")], help="source trees (folders holding dprivacy)")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_locations import make_file

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "pts.parquet"
        make_file(src, args.points)
        base = (f"import numpy as np, pyarrow as pa, pyarrow.parquet as pq\nt = pq.read_table({str(src)!r})\n"
                "lat, lon = t['lat'].to_numpy(), t['lon'].to_numpy()\ng = np.random.default_rng()\n"
                "r = g.gamma(2.0, 1.0, lat.size); a = g.uniform(0, 2 * np.pi, lat.size)\n"
                "lat2 = lat + r * np.cos(a) / 111.32\nlon2 = lon + r * np.sin(a) / (111.32 * np.cos(np.radians(lat)))\n"
                f"pq.write_table(t.set_column(1, 'lat', pa.array(lat2)).set_column(2, 'lon', pa.array(lon2)), {d + '/b.parquet'!r})")
        codes = {"numpy float baseline": (base, None)}
        for k, tree in enumerate(args.trees):
            codes[tree] = (f"import sys\nfrom dprivacy.cli import main\nsys.argv = ['dprivacy', 'obfuscate', {str(src)!r}, '-o', "
                           f"{d + f'/o{k}.parquet'!r}, '--epsilon', '1', '--force']\nmain()", str(Path(tree).resolve()))
        rss = "\nprint('RSS', [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')][0])"
        times = {k: [] for k in codes}
        peak = dict.fromkeys(codes, 0)
        for _ in range(args.repeats):
            for k, (code, tree) in codes.items():
                env = dict(os.environ, PYTHONPATH=tree) if tree else None
                t0 = time.perf_counter()
                p = subprocess.run([sys.executable, "-c", code + rss], capture_output=True, text=True, env=env)
                times[k].append(time.perf_counter() - t0)
                if p.returncode:
                    sys.exit(p.stderr[-2000:])
                peak[k] = max(peak[k], int(p.stdout.split("RSS ")[-1].split()[0]) // 1024)
        for k, v in times.items():
            print(f"{k:40s} {min(v):.2f} s ({args.points / min(v) / 1e6:.2f} M points/s), peak {peak[k]} MiB; "
                  f"all: {', '.join(f'{x:.2f}' for x in v)}")
        print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
