"""Benchmark: how large a Euclidean grid the spanner LP (CCS 2014) solves within a time limit.

For each objective — the binary gain (posterior Bayes vulnerability) and the expected Euclidean
distance as loss (outputs = the grid cells) — with the uniform prior and ε = 1, grids of increasing
side are solved by :func:`dprivacy.mechanisms.spanner.optimal_mechanism_spanner` with a target
dilation (default 1.1, which gives the king graph, achieved dilation ≤ 1/cos(π/8) ≈ 1.0824). An
objective stops at the first size whose solve fails or exceeds the time limit (default 600 s).

For each row: grid, n, the spanner's achieved dilation and edge count, the LP's constraint count
(and the all-pairs count n + n(n−1)·n for scale), solver seconds, the value, the smallest ε certified
on the original Euclidean metric by ``measures.check_privacy`` (must be ≤ 1), and, for the sizes in
``--exact``, the exact LP optimum (essential pairs of the Euclidean grid at ε) with its seconds, so
that the loss of optimality caused by the spanner is measured.

Usage::

    python benchmarks/bench_spanner.py                                  # writes results_spanner.json
    python benchmarks/bench_spanner.py --grids 6 8 10 --exact 6 8 --time-limit 120

The machine is shared (2 cores, several other jobs): seconds are wall clock under that load; the load
average at start and end is recorded. Results are written after every row, so an interrupted run
keeps what it reached.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
import scipy

from dprivacy import spaces
from dprivacy.mechanisms.optimal import optimal_mechanism
from dprivacy.mechanisms.spanner import optimal_mechanism_spanner
from dprivacy.spanners import build_spanner

HERE = Path(__file__).resolve().parent


def run_one(side, kind, args, spanner_cache):
    space = spaces.grid(side, side)
    n = space.n
    prior = np.full(n, 1.0 / n)
    if side not in spanner_cache:
        spanner_cache[side] = build_spanner(space, dilation=args.dilation, method=args.spanner)
    sp = spanner_cache[side]
    loss = np.array(space.distances) if kind == "loss" else None
    opts = {"time_limit": float(args.time_limit)}
    t0 = time.perf_counter()
    r = optimal_mechanism_spanner(
        space, prior, epsilon=args.epsilon, spanner=sp, loss=loss, method=args.method, options=opts,
        exact=side in args.exact, exact_options=opts,
    )
    total = time.perf_counter() - t0
    nan = float("nan")
    return {
        "grid": f"{side}x{side}",
        "n": n,
        "kind": kind,
        "target_dilation": args.dilation,
        "spanner_method": sp.method,
        "spanner_k": sp.k,
        "dilation": sp.dilation,
        "edges": sp.n_edges,
        "spanner_seconds": sp.seconds,
        "constraints": r.n_constraints,
        "variables": r.n_variables,
        "all_pairs_constraints": r.all_pairs_constraints,
        "success": r.solved,
        "status": r.status,
        "message": r.solver_message,
        "seconds": r.seconds,
        "build_seconds": r.build_seconds,
        "certify_seconds": r.certify_seconds,
        "total_seconds": total,
        "value": r.value,
        "lp_epsilon": r.lp_epsilon,
        "smallest_epsilon": r.smallest_epsilon,
        "private": r.private,
        "repair_mass": r.lp.repair_mass if r.solved else nan,
        "exact_value": r.exact_value,
        "exact_seconds": r.exact_seconds,
        "exact_constraints": r.exact_n_constraints,
        "exact_success": None if r.exact is None else r.exact.solved,
        "optimality_loss": r.optimality_loss,
        "relative_loss": r.relative_loss,
    }


def fmt(x, spec):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        width = "".join(ch for ch in spec.split(".")[0] if ch.isdigit())
        return "-".rjust(int(width or 1))
    return format(x, spec)


def print_row(row):
    print(f"{row['kind']:<5} {row['grid']:>6} {row['n']:>5} {row['dilation']:>8.5f} {row['edges']:>6} "
          f"{row['constraints']:>10} {fmt(row['seconds'], '9.1f')} {fmt(row['value'], '12.8f')} "
          f"{fmt(row['smallest_epsilon'], '10.7f')} {fmt(row['exact_value'], '12.8f')} "
          f"{fmt(row['exact_seconds'], '8.1f')} {fmt(row['relative_loss'], '8.4f')}"
          + ("" if row["success"] else f"   FAILED: {row['message']}"), flush=True)


def tradeoff(side, args):
    """Value against dilation on one grid: each target δ's spanner LP vs the exact LP (solved once)."""
    space = spaces.grid(side, side)
    n = space.n
    prior = np.full(n, 1.0 / n)
    opts = {"time_limit": float(args.time_limit)}
    rows = []
    print(f"\ntrade-off on grid {side}x{side} (n = {n}), ε = {args.epsilon:g}")
    print(f"{'kind':<5} {'target':>6} {'method':>8} {'k':>3} {'dilation':>8} {'edges':>6} {'constraints':>11} "
          f"{'seconds':>8} {'value':>12} {'smallest ε':>10} {'rel.loss':>8}")
    for kind in args.kinds:
        loss = np.array(space.distances) if kind == "loss" else None
        ex = optimal_mechanism(space, prior, epsilon=args.epsilon, loss=loss, method="full", solver=args.method, options=opts)
        print(f"{kind:<5} {'exact':>6} {'':>8} {'':>3} {1.0:>8.5f} {'':>6} {ex.n_constraints:>11} "
              f"{ex.seconds:>8.1f} {ex.value:>12.8f} {ex.smallest_epsilon:>10.7f} {0.0:>8.4f}", flush=True)
        rows.append({"grid": f"{side}x{side}", "n": n, "kind": kind, "target_dilation": None, "exact": True,
                     "constraints": ex.n_constraints, "seconds": ex.seconds, "value": ex.value,
                     "smallest_epsilon": ex.smallest_epsilon, "success": ex.solved})
        for t in args.tradeoff_dilations:
            sp = build_spanner(space, dilation=t, method=args.spanner)
            r = optimal_mechanism_spanner(space, prior, epsilon=args.epsilon, spanner=sp, loss=loss,
                                          method=args.method, options=opts, exact=False)
            rel = ((ex.value - r.value) if kind == "gain" else (r.value - ex.value)) / abs(ex.value)
            print(f"{kind:<5} {t:>6.3g} {sp.method:>8} {fmt(sp.k, '3d')} {sp.dilation:>8.5f} {sp.n_edges:>6} "
                  f"{r.n_constraints:>11} {r.seconds:>8.1f} {r.value:>12.8f} {r.smallest_epsilon:>10.7f} "
                  f"{rel:>8.4f}", flush=True)
            rows.append({"grid": f"{side}x{side}", "n": n, "kind": kind, "target_dilation": t, "exact": False,
                         "spanner_method": sp.method, "spanner_k": sp.k, "dilation": sp.dilation,
                         "edges": sp.n_edges, "constraints": r.n_constraints, "seconds": r.seconds,
                         "value": r.value, "smallest_epsilon": r.smallest_epsilon, "private": r.private,
                         "success": r.solved, "exact_value": ex.value, "relative_loss": rel})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grids", type=int, nargs="+", default=[6, 8, 10, 12, 14, 15, 16, 18, 20, 24],
                    help="grid side lengths (W = H), increasing")
    ap.add_argument("--kinds", nargs="+", default=["gain", "loss"], choices=["gain", "loss"])
    ap.add_argument("--exact", type=int, nargs="*", default=[6, 8], help="sides for which the exact LP is also solved")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--dilation", type=float, default=1.1)
    ap.add_argument("--spanner", default="auto", choices=["auto", "greedy", "offsets"])
    ap.add_argument("--method", default="highs-ipm", choices=["highs-ipm", "highs", "highs-ds"])
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per LP solve; a size over it ends the kind")
    ap.add_argument("--tradeoff-grid", type=int, default=0,
                    help="also tabulate value against dilation on this grid side (0: skip)")
    ap.add_argument("--tradeoff-dilations", type=float, nargs="+", default=[1.5, 1.1, 1.05, 1.02])
    ap.add_argument("--skip-main", action="store_true", help="only the trade-off table")
    ap.add_argument("--out", type=Path, default=HERE / "results_spanner.json")
    args = ap.parse_args(argv)

    load_start = os.getloadavg()
    out = {
        "benchmark": "optimal mechanism by LP on spanner edges (CCS 2014), Euclidean grids, uniform prior",
        "epsilon": args.epsilon,
        "target_dilation": args.dilation,
        "spanner": args.spanner,
        "method": args.method,
        "time_limit": args.time_limit,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "cpu_count": os.cpu_count(),
            "loadavg_start": load_start,
            "note": "shared machine (2 cores, other helpers' jobs running): wall-clock seconds under load",
        },
        "largest_solved": {},
        "results": [],
    }
    if args.tradeoff_grid:
        rows = tradeoff(args.tradeoff_grid, args)
        if args.skip_main and args.out.exists():
            # keep an earlier main table; add or replace only the trade-off section
            out = json.loads(args.out.read_text())
        out["tradeoff"] = {"loadavg": os.getloadavg(), "rows": rows}
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    if args.skip_main:
        print(f"wrote {args.out}")
        return
    header = (f"{'kind':<5} {'grid':>6} {'n':>5} {'dilation':>8} {'edges':>6} {'constraints':>10} "
              f"{'seconds':>9} {'value':>12} {'smallest ε':>10} {'exact':>12} {'exact s':>8} {'rel.loss':>8}")
    print(header)
    print("-" * len(header))
    cache = {}
    for kind in args.kinds:
        for side in args.grids:
            row = run_one(side, kind, args, cache)
            out["results"].append(row)
            print_row(row)
            ok = row["success"] and row["seconds"] <= args.time_limit
            if ok:
                out["largest_solved"][kind] = {"grid": row["grid"], "n": row["n"], "seconds": row["seconds"]}
            out["machine"]["loadavg_end"] = os.getloadavg()
            args.out.write_text(json.dumps(out, indent=2) + "\n")
            if not ok:
                break
    load_end = os.getloadavg()
    print(f"\nlargest grid solved within {args.time_limit:g} s: "
          + ", ".join(f"{k}: {v['grid']} (n = {v['n']}, {v['seconds']:.0f} s)" for k, v in out["largest_solved"].items()))
    print(f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end (shared machine)")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
