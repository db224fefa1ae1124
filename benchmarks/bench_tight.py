"""Benchmark: the tight-constraints mechanism and its threshold ε* (ElSalamouny et al. 2014 §6–7).

Run:  python benchmarks/bench_tight.py [--repeats R] [--no-scan]

1. Times ``tight_constraints`` (certified: factorization, refinement, error bound) against a plain
   ``numpy.linalg.solve(Φ, 1)`` in the same run, on grid:30x30 (Euclidean, ε = 1) and on the answers
   of the sum query sum:150,5 (751 answers, adjacent iff |i − j| ≤ 5).
2. Runs ``tight_threshold`` on sum:150,5, kcount:30,2 (the two case studies of ElSalamouny et al. 2014 §7.1, published
   ε* = 0.8 and 0.9 at 0.01 steps) and grid:30x30, and reports ε*, the certified bracket, the number of
   solves, and the smallest ε on the paper's 0.01 grid at which the mechanism exists.
3. Checks the papers' assumption that the mechanism exists for every ε above ε*: the monotonicity
   scan of ``tight_threshold`` on the papers' spaces (line, ring, clique, sum, kcount, small grids),
   and a 0.01-step scan over the case studies' plotted range (up to ε = 1.5).

Prints a table and writes ``benchmarks/results_tight.json``.
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

from dprivacy.priors import constraints_matrix

from dprivacy import spaces
from dprivacy.mechanisms.tight import tight_constraints
from dprivacy.spaces import MetricSpace
from dprivacy.threshold import tight_threshold

HERE = Path(__file__).resolve().parent


def sum_space(u: int, v: int) -> MetricSpace:
    try:
        from dprivacy.queries import sum_space as qs

        return qs(u, v)
    except ImportError:  # d = ceil(|i − j| / v); essential pairs = the edges |i − j| ≤ v
        x = np.arange(u * v + 1)
        diff = np.abs(x[:, None] - x[None, :])
        i, j = np.nonzero(np.triu((diff >= 1) & (diff <= v)))
        return MetricSpace(np.ceil(diff / v), name=f"sum:{u},{v}", essential_pairs=(i, j), validate=False)


def kcount_space(u: int, k: int) -> MetricSpace:
    try:
        from dprivacy.queries import kcount_space as qk

        return qk(u, k)
    except ImportError:  # answers {0..u}^k, Chebyshev (king) distance
        c = np.stack(np.unravel_index(np.arange((u + 1) ** k), (u + 1,) * k), axis=1)
        d = np.abs(c[:, None, :] - c[None, :, :]).max(axis=2).astype(float)
        return MetricSpace(d, name=f"kcount:{u},{k}", validate=False)


def timed(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def bench_solve(space: MetricSpace, eps: float, repeats: int) -> dict:
    phi = constraints_matrix(space, epsilon=eps)
    ones = np.ones(space.n)
    t_plain, z_plain = timed(lambda: np.linalg.solve(phi, ones), repeats)
    t_tight, res = timed(lambda: tight_constraints(space, epsilon=eps), repeats)
    return {
        "space": space.name, "n": space.n, "epsilon": eps,
        "seconds_tight_constraints": t_tight, "seconds_numpy_solve": t_plain,
        "ratio_vs_numpy_solve": t_tight / t_plain,
        "exists": res.exists, "certainty": res.certainty, "method": res.method,
        "min_z": res.min_z, "margin": res.margin, "error_bound": res.error_bound,
        "residual": res.residual, "condition_estimate": res.condition,
        "max_abs_diff_vs_numpy": float(np.abs(res.z - z_plain).max()),
    }


def grid_001(space: MetricSpace, eps_star: float) -> dict:
    """The paper's procedure: the smallest ε = k/100 at which the mechanism exists (ElSalamouny et al. 2014 §7.1)."""
    k = math.ceil(round(eps_star * 100, 9))
    at = tight_constraints(space, epsilon=k / 100)
    below = tight_constraints(space, epsilon=(k - 1) / 100)
    return {
        "epsilon_001": k / 100,
        "exists_at": at.exists, "certainty_at": at.certainty,
        "exists_below": below.exists, "certainty_below": below.certainty,
    }


def bench_threshold(space: MetricSpace, published: float | None, scan: int) -> dict:
    t = time.perf_counter()
    r = tight_threshold(space, scan=scan)
    dt = time.perf_counter() - t
    out = {
        "space": space.name, "n": space.n, "published": published, "seconds": dt,
        "epsilon_star": r.epsilon_star, "bracket": list(r.bracket) if r.bracket else None,
        "certified": r.certified, "always_exists": r.always_exists, "solves": r.solves,
        "reason": r.reason,
    }
    m = r.monotone_checked
    if m is not None:
        out["monotone"] = {
            "scanned": int(m.epsilons.size),
            "range": [float(m.epsilons.min()), float(m.epsilons.max())] if m.epsilons.size else None,
            "failures": [list(f) for f in m.failures], "undecided": list(m.undecided), "holds": m.ok,
            "note": m.note,
        }
    if r.certified and r.epsilon_star:
        out.update(grid_001(space, r.epsilon_star))
    return out


def dense_scan(space: MetricSpace, start: float, stop: float) -> dict:
    eps = np.round(np.arange(start, stop + 1e-9, 0.01), 2)
    res = [tight_constraints(space, epsilon=float(e)) for e in eps]
    return {
        "space": space.name, "from": float(eps[0]), "to": float(eps[-1]), "count": int(eps.size),
        "fails_at": [float(e) for e, r in zip(eps, res) if not r.exists],
        "undecided_at": [float(e) for e, r in zip(eps, res) if not r.decided],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-scan", action="store_true", help="skip the 0.01-step scans")
    args = ap.parse_args()

    s150 = sum_space(150, 5)
    k30 = kcount_space(30, 2)
    g30 = spaces.grid(30, 30)

    print("== tight_constraints: certified solve vs numpy.linalg.solve (median of", args.repeats, "runs)")
    solves = [bench_solve(g30, 1.0, args.repeats), bench_solve(s150, 1.0, args.repeats)]
    print(f"{'space':<22}{'n':>6}{'eps':>6}{'tight [s]':>11}{'np.solve [s]':>14}{'ratio':>7}  exists  certainty   min z       margin")
    for b in solves:
        print(
            f"{b['space']:<22}{b['n']:>6}{b['epsilon']:>6g}{b['seconds_tight_constraints']:>11.4f}"
            f"{b['seconds_numpy_solve']:>14.4f}{b['ratio_vs_numpy_solve']:>7.2f}  {str(b['exists']):<7} "
            f"{b['certainty']:<11} {b['min_z']:<11.4g} {b['margin']:.3g}"
        )

    print("\n== threshold ε* (certified bracket, tol 1e-4) and monotonicity scan above it")
    cases = [
        (s150, 0.8), (k30, 0.9), (g30, None),
        (sum_space(150, 4), None),  # the reading "values 1..5" of ElSalamouny et al. 2014 §7.1 (see queries.sum_space)
        (sum_space(20, 5), None), (kcount_space(10, 2), None),
        (spaces.line(50), None), (spaces.ring(40), None), (spaces.clique(30), None),
        (spaces.grid(5, 5), None), (spaces.grid(10, 10), None),
        (spaces.grid(10, 10, metric="manhattan"), None), (spaces.grid(10, 10, metric="chebyshev"), None),
    ]
    thresholds = [bench_threshold(sp, pub, 30) for sp, pub in cases]
    print(f"{'space':<26}{'n':>6}{'eps*':>10}{'bracket':>26}{'0.01 grid':>10}{'paper':>7}{'solves':>7}{'time [s]':>9}  monotone above")
    for t in thresholds:
        br = "" if t["bracket"] is None else f"({'-' if t['bracket'][0] is None else format(t['bracket'][0], '.5f')}, {t['bracket'][1]:.5f}]"
        mono = t.get("monotone")
        mtxt = "-" if mono is None else ("by Prop 9" if mono["note"] else ("yes" if mono["holds"] else f"NO {mono['failures'][:3]} undecided {mono['undecided'][:3]}"))
        print(
            f"{t['space']:<26}{t['n']:>6}{t['epsilon_star'] if t['epsilon_star'] is not None else float('nan'):>10.5f}{br:>26}"
            f"{t.get('epsilon_001', float('nan')):>10.2f}{t['published'] if t['published'] else float('nan'):>7.2f}"
            f"{t['solves']:>7}{t['seconds']:>9.2f}  {mtxt}"
        )

    scans = []
    if not args.no_scan:
        print("\n== 0.01-step scans over the case studies' range (ElSalamouny et al. 2014 Fig 6: up to 1.3)")
        for sp, t in ((s150, thresholds[0]), (k30, thresholds[1])):
            sc = dense_scan(sp, t["epsilon_001"], 1.5)
            scans.append(sc)
            print(f"{sc['space']:<14} ε in [{sc['from']}, {sc['to']}] ({sc['count']} values): fails at {sc['fails_at'] or 'none'}; undecided at {sc['undecided_at'] or 'none'}")

    out = {
        "machine": {
            "python": platform.python_version(), "numpy": np.__version__, "cpu_count": os.cpu_count(),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        },
        "solve": solves, "threshold": thresholds, "dense_scans": scans,
    }
    path = HERE / "results_tight.json"
    path.write_text(json.dumps(out, indent=2, default=float) + "\n")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
