"""Benchmark: the optimal-mechanism LP with essential-pair constraints vs all pairs (same run).

For each grid (Manhattan metric, ε = 1, uniform prior, binary gain) the LP of
:func:`dprivacy.mechanisms.optimal.optimal_mechanism` is solved twice:

* ``essential``: privacy constraints on the essential pairs only (the 4-neighbour edges of the grid;
  ElSalamouny et al. 2013 Prop 1), 2·|E|·n inequalities;
* ``all``: constraints on all n(n−1) ordered pairs for each of the n outputs, n(n−1)·n inequalities
  (the formulation without the reduction).

Both must give the same optimum; the uniform prior is d-regular on these grids (their Φ is a Kronecker
product of two lines'), so the optimum is also Σμ with μ = uΦ⁻¹ (ElSalamouny et al. 2014 Thm 2 / Thm 4), printed as a
check. The table shows LP sizes, wall-clock seconds (build and solve) and the ratio all/essential.

Usage::

    python benchmarks/bench_lp.py                       # grid:7x7 and grid:10x10, writes results_lp.json
    python benchmarks/bench_lp.py --grids 5 7 --method highs-ds --time-limit 600

The machine may be shared: absolute seconds vary from run to run; the ratio within one run is the
claim. The load average at start and end is recorded in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from dprivacy.priors import constraints_matrix
import scipy

from dprivacy import spaces
from dprivacy.mechanisms.optimal import optimal_mechanism

HERE = Path(__file__).resolve().parent


def run_one(space, prior, eps, pairs, method, time_limit):
    t0 = time.perf_counter()
    r = optimal_mechanism(space, prior, epsilon=eps, pairs=pairs, method="full", solver=method,
                          options={"time_limit": float(time_limit)})
    total = time.perf_counter() - t0
    return {
        "pairs": pairs,
        "success": r.solved,
        "status": r.status,
        "message": r.solver_message,
        "n_pairs": r.n_pairs,
        "n_variables": r.n_variables,
        "n_constraints": r.n_constraints,
        "build_seconds": r.build_seconds,
        "solve_seconds": r.seconds,
        "total_seconds": total,
        "value": r.value,
        "objective": r.objective,
        "smallest_epsilon": r.smallest_epsilon,
        "raw_smallest_epsilon": r.raw_smallest_epsilon,
        "private": r.private,
        "repair_mass": r.repair_mass,
        "row_sum_error": r.row_sum_error,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grids", type=int, nargs="+", default=[7, 10], help="grid side lengths (W = H)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--method", default="highs-ipm", choices=["highs-ipm", "highs", "highs-ds"])
    ap.add_argument("--time-limit", type=float, default=3600.0, help="seconds per LP solve")
    ap.add_argument("--out", type=Path, default=HERE / "results_lp.json")
    args = ap.parse_args(argv)

    load_start = os.getloadavg()
    rows = []
    header = (f"{'space':<22} {'n':>4} {'pairs':<9} {'constraints':>11} {'build s':>8} {'solve s':>9} "
              f"{'value':>14} {'Σμ':>14} {'ratio':>7}")
    print(header)
    print("-" * len(header))
    for side in args.grids:
        space = spaces.grid(side, side, metric="manhattan")
        n = space.n
        prior = np.full(n, 1.0 / n)
        mu = np.linalg.solve(constraints_matrix(space, epsilon=args.epsilon), prior)
        sum_mu = float(mu.sum()) if (mu >= 0).all() else float("nan")
        ess = run_one(space, prior, args.epsilon, "essential", args.method, args.time_limit)
        full = run_one(space, prior, args.epsilon, "all", args.method, args.time_limit)
        ratio = full["solve_seconds"] / ess["solve_seconds"] if ess["solve_seconds"] > 0 else float("nan")
        for res in (ess, full):
            res_ratio = ratio if res is full else 1.0
            print(f"{space.name:<22} {n:>4} {res['pairs']:<9} {res['n_constraints']:>11} "
                  f"{res['build_seconds']:>8.3f} {res['solve_seconds']:>9.2f} {res['value']:>14.10f} "
                  f"{sum_mu:>14.10f} {res_ratio:>7.1f}"
                  + ("" if res["success"] else f"   FAILED: {res['message']}"))
        rows.append({
            "space": space.name,
            "n": n,
            "epsilon": args.epsilon,
            "prior": "uniform",
            "gain": "binary",
            "sum_mu": sum_mu,
            "essential": ess,
            "all": full,
            "solve_ratio_all_over_essential": ratio,
            "total_ratio_all_over_essential": full["total_seconds"] / ess["total_seconds"],
            "value_difference": abs(full["value"] - ess["value"]),
        })
    load_end = os.getloadavg()
    out = {
        "benchmark": "optimal-mechanism LP: essential pairs vs all n(n-1) ordered pairs",
        "method": args.method,
        "time_limit": args.time_limit,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "cpu_count": os.cpu_count(),
            "loadavg_start": load_start,
            "loadavg_end": load_end,
            "note": "shared machine: other jobs were running; compare the ratio within this run",
        },
        "results": rows,
    }
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nload average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end (shared machine)")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
