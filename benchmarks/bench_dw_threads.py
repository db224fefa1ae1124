"""Dantzig–Wolfe pricing threads (issue 13): the same optimal-mechanism solve with 1 and 2 pricing
threads, in one run, on the world-cities prior of bench_lp_scale.py (binary gain, ε = 1).

    python benchmarks/bench_dw_threads.py grid:14x14 --threads 2 1 --time-limit 300
"""

from __future__ import annotations

import argparse
import time

from bench_lp_scale import city_prior

from dprivacy.cli.specs import parse_space
from dprivacy.mechanisms import decomposition
from dprivacy.mechanisms.optimal import optimal_mechanism


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("space", help="grid:KxK or grid:KxK:manhattan")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--time-limit", type=float, default=300.0)
    args = ap.parse_args()
    space = parse_space(args.space)
    k = int(args.space.split(":")[1].split("x")[0])
    prior = city_prior(k, k)
    base = None
    for th in args.threads:
        decomposition.PRICING_THREADS = th
        t = time.perf_counter()
        r = optimal_mechanism(space, prior, epsilon=1.0, method="dantzig-wolfe", time_limit=args.time_limit)
        dt = time.perf_counter() - t
        base = base or dt
        print(f"{args.space} threads {th}: value {r.value:.10f} bound {r.bound:.10f} gap {r.gap:.3g} "
              f"{dt:.1f} s (first case / this: {base / dt:.2f})", flush=True)


if __name__ == "__main__":
    main()
