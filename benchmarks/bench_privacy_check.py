"""Benchmark: the d-privacy check of a 1,600×1,600 channel, against a plain per-pair loop and against libqif.

Run:  python benchmarks/bench_privacy_check.py [--repeats 3] [--skip-loop]
Writes benchmarks/results_privacy_check.json and prints two tables. Times are measured in one run on the same
machine, with the 1-minute load average recorded around each part; the claim is the ratio, not the wall-clock figure.

Part 1 (``--skip-loop`` skips it: the loop takes ~30 s per metric). The exponential mechanism H[y,z] ∝ exp(−ε d(y,z)/2)
on grid:40x40 (1,600 cells), built with numpy so that the benchmark depends only on the check, checked at ε = 1:
- baseline: a Python loop over all n(n−1)/2 pairs, each comparing two rows with numpy;
- all pairs: `check_privacy` on a space that does not know its structure (a MetricSpace of the same distances);
- structured: `check_privacy` on the grid space: its essential pairs for Manhattan (4-neighbours, ElSalamouny
  et al. 2013 Prop 1), every pair settled by the pruned sweep's bound or compared for Euclidean.

Part 2, issue 33's two rows side by side with libqif (``qif``, the bench extra), on the planar-Laplace-like channel
H[y,z] ∝ e^{−d(y,z)} of grid:40x40 Euclidean (its smallest ε is 1.338…): "the smallest ε" and "is it private at
ε = 1?" (not: the early exit). Three ways, interleaved, the minimum of ``--repeats`` each: libqif, dprivacy, and
dprivacy's plain sweep (the pruned sweep turned off; the full blocked sweep on two threads that preceded it). All
three must agree on the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import platform
import time
from pathlib import Path

import numpy as np

from dprivacy import Channel, MetricSpace, measures, spaces
from dprivacy.channels import _pruned


def per_pair_loop(h: np.ndarray, d: np.ndarray, epsilon: float) -> tuple[bool, float]:
    """The plain method: every unordered pair, one numpy comparison of two rows each."""
    n = h.shape[0]
    logh = np.log(h)
    worst = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r = np.max(np.abs(logh[i] - logh[j])) / d[i, j]
            if r > worst:
                worst = r
    return worst <= epsilon + 1e-9, worst


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def load() -> float:
    return round(os.getloadavg()[0], 2)


def loop_rows() -> list[dict]:
    eps = 1.0
    rows = []
    for metric in ("manhattan", "euclidean"):
        g = spaces.grid(40, 40, metric=metric)
        d = np.array(g.distances)
        h = np.exp(-eps * d / 2)
        h /= h.sum(axis=1, keepdims=True)
        ch = Channel(h)
        unstructured = MetricSpace(d, validate=False)
        before = load()
        (ok_loop, eps_loop), t_loop = timed(per_pair_loop, h, d, eps)
        r_all, t_all = timed(measures.check_privacy, ch, unstructured, epsilon=eps)
        r_str, t_str = timed(measures.check_privacy, ch, spaces.grid(40, 40, metric=metric), epsilon=eps)
        assert ok_loop == r_all.ok == r_str.ok
        assert abs(eps_loop - r_all.smallest_epsilon) < 1e-9 and abs(eps_loop - r_str.smallest_epsilon) < 1e-9
        rows.append({"space": g.name, "n": g.n, "pairs_all": g.n * (g.n - 1) // 2, "pairs_structured": r_str.pairs_checked,
                     "smallest_epsilon": r_str.smallest_epsilon, "seconds_loop": t_loop,
                     "seconds_vectorized_all_pairs": t_all, "seconds_vectorized_structured": t_str,
                     "speedup_all_pairs": t_loop / t_all, "speedup_structured": t_loop / t_str,
                     "load_average": [before, load()]})
    print(f"{'space':28s} {'pairs':>9s} {'loop s':>8s} {'vec s':>8s} {'struct s':>9s} {'x vec':>7s} {'x struct':>9s}")
    for r in rows:
        print(f"{r['space']:28s} {r['pairs_structured']:9d} {r['seconds_loop']:8.2f} {r['seconds_vectorized_all_pairs']:8.2f} "
              f"{r['seconds_vectorized_structured']:9.3f} {r['speedup_all_pairs']:7.1f} {r['speedup_structured']:9.1f}")
    return rows


def plain(fn):
    """``fn`` with the pruned sweep turned off (the plain blocked sweep on every size)."""
    def run():
        saved = _pruned.PRUNE_MIN_WORK
        _pruned.PRUNE_MIN_WORK = 1 << 62
        try:
            return fn()
        finally:
            _pruned.PRUNE_MIN_WORK = saved
    return run


def libqif_rows(repeats: int) -> list[dict]:
    import qif

    g = spaces.grid(40, 40)
    d = g.distances
    h = np.exp(-1.0 * d)
    h /= h.sum(axis=1, keepdims=True)
    eps = 1.0
    smallest = lambda: measures.check_privacy(h, spaces.grid(40, 40), epsilon=eps).smallest_epsilon  # noqa: E731
    verdict = lambda: measures.check_privacy(h, spaces.grid(40, 40), epsilon=eps, smallest=False).ok  # noqa: E731
    cases = {
        "smallest ε of a 40×40 Euclidean channel": {
            "libqif": lambda: qif.measure.d_privacy.smallest_epsilon(h, lambda i, j: d[i, j]),
            "dprivacy": smallest, "dprivacy plain sweep": plain(smallest)},
        "is this 40×40 channel private? (not private)": {
            "libqif": lambda: qif.measure.d_privacy.is_private(h, lambda i, j: eps * d[i, j]),
            "dprivacy": verdict, "dprivacy plain sweep": plain(verdict)},
    }
    measures.check_privacy(h[:3, :3] / h[:3, :3].sum(1, keepdims=True), spaces.grid(3, 1), epsilon=1.0)  # imports
    rows = []
    for task, ways in cases.items():
        times, answers, before = {k: [] for k in ways}, {}, load()
        for _ in range(repeats):
            for k, fn in ways.items():  # interleaved
                a, t = timed(fn)
                times[k].append(t)
                answers[k] = float(a)
        assert len(set(answers.values())) == 1, answers
        best = {k: min(v) for k, v in times.items()}
        rows.append({"task": task, "answer": answers["dprivacy"], "seconds": best, "all_seconds": times,
                     "libqif_over_dprivacy": best["libqif"] / best["dprivacy"],
                     "plain_over_pruned": best["dprivacy plain sweep"] / best["dprivacy"],
                     "load_average": [before, load()]})
    print(f"\n{'task':48s} {'libqif s':>9s} {'dprivacy s':>11s} {'plain s':>8s} {'libqif/dp':>10s} {'plain/dp':>9s}  load")
    for r in rows:
        s = r["seconds"]
        print(f"{r['task']:48s} {s['libqif']:9.4g} {s['dprivacy']:11.4g} {s['dprivacy plain sweep']:8.4g} "
              f"{r['libqif_over_dprivacy']:10.1f} {r['plain_over_pruned']:9.1f}  {r['load_average']}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs per way in part 2 (the minimum is kept)")
    ap.add_argument("--skip-loop", action="store_true", help="skip part 1 (the per-pair loop, ~30 s per metric)")
    args = ap.parse_args()
    out_path = Path(__file__).with_name("results_privacy_check.json")
    prev = json.loads(out_path.read_text()) if out_path.exists() else {}
    rows = prev.get("rows", []) if args.skip_loop else loop_rows()
    out = {
        "benchmark": "d-privacy check of a 1600x1600 channel",
        "command": "python benchmarks/bench_privacy_check.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "processor": platform.processor(),
                    "cpus": os.cpu_count()},
        "numpy": np.__version__,
        "rows": rows,
        "rows_run": prev.get("rows_run", prev.get("date", "an earlier run")) if args.skip_loop else time.strftime("%Y-%m-%d"),
        "libqif": libqif_rows(args.repeats),
    }
    out_path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
