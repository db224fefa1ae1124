"""Dantzig–Wolfe settings (issue 13): the same optimal-mechanism solve with 1 and 2 pricing threads,
and with the master's columns purged at different sizes, in one run, on the world-cities prior of
bench_lp_scale.py (binary gain, ε = 1). The first setting is the baseline of the ratios.

    python benchmarks/bench_dw_threads.py grid:14x14 --threads 2 1 --time-limit 300
    python benchmarks/bench_dw_threads.py grid:14x14 --threads 2 --purge 3:2 12:8
    python benchmarks/bench_dw_threads.py grid:14x14 --threads 2 --smoothing fixed auto
    python benchmarks/bench_dw_threads.py grid:20x20:manhattan --threads 2 --tent-basis on off
    python benchmarks/bench_dw_threads.py grid:50x50:manhattan --threads 2 --price-per-round 1000 100000
    python benchmarks/bench_dw_threads.py grid:14x14 --threads 2 --idle 2:3 0:3
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
    ap.add_argument("--purge", nargs="+", default=None, metavar="P:K",
                    help="purge the master above P columns per point down to K (default: the module's)")
    ap.add_argument("--smoothing", nargs="+", choices=["fixed", "auto"], default=None,
                    help="the smoothing weight: fixed (halved only on mispricing) or adjusted each round from "
                         "the subgradient (default: the module's)")
    ap.add_argument("--tent-basis", nargs="+", choices=["on", "off"], default=None,
                    help="the master's rows in the tent basis where it is sparse (default: the module's)")
    ap.add_argument("--price-per-round", type=int, nargs="+", default=None,
                    help="outputs priced per round once a ray has entered (default: the module's)")
    ap.add_argument("--idle", nargs="+", default=None, metavar="R:F",
                    help="outputs priced to the zero ray R rounds in a row wait for every F-th round "
                         "(R = 0: off; default: the module's)")
    ap.add_argument("--time-limit", type=float, default=300.0)
    args = ap.parse_args()
    space = parse_space(args.space)
    k = int(args.space.split(":")[1].split("x")[0])
    prior = city_prior(k, k)
    purges = args.purge or [f"{decomposition.PURGE_PER_POINT}:{decomposition.KEEP_PER_POINT}"]
    smoothings = args.smoothing or ["auto" if getattr(decomposition, "AUTO_SMOOTHING", False) else "fixed"]
    tents = args.tent_basis or ["on" if decomposition.TENT_BASIS else "off"]
    per_round = args.price_per_round or [decomposition.PRICE_PER_ROUND]
    idles = args.idle or [f"{decomposition.IDLE_ROUNDS}:{decomposition.IDLE_FULL_EVERY}"]
    base = None
    for th, purge, smoothing, tent, ppr, idle in ((th, p, s, t, q, i) for th in args.threads for p in purges
                                                 for s in smoothings for t in tents for q in per_round
                                                 for i in idles):
        decomposition.PRICING_THREADS = th
        decomposition.PURGE_PER_POINT, decomposition.KEEP_PER_POINT = (int(x) for x in purge.split(":"))
        decomposition.AUTO_SMOOTHING = smoothing == "auto"
        decomposition.TENT_BASIS = tent == "on"
        decomposition.PRICE_PER_ROUND = ppr
        decomposition.IDLE_ROUNDS, decomposition.IDLE_FULL_EVERY = (int(x) for x in idle.split(":"))
        t = time.perf_counter()
        r = optimal_mechanism(space, prior, epsilon=1.0, method="dantzig-wolfe", time_limit=args.time_limit)
        dt = time.perf_counter() - t
        base = base or dt
        print(f"{args.space} threads {th} purge {purge} smoothing {smoothing} tent basis {tent} "
              f"price/round {ppr} idle {idle}: value {r.value:.10f} bound {r.bound:.10f} "
              f"gap {r.gap:.3g} rounds {r.rounds} {dt:.1f} s (first case / this: {base / dt:.2f})", flush=True)


if __name__ == "__main__":
    main()
