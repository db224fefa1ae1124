"""Benchmark: the d-privacy check of a 1,600×1,600 channel, vectorized vs a plain per-pair loop.

Run:  python benchmarks/bench_privacy_check.py
Writes benchmarks/results_privacy_check.json and prints a table. Times are measured in one run on the
same machine; the claim is the ratio, not the wall-clock figure.

The channel is the exponential mechanism H[y,z] ∝ exp(−ε d(y,z)/2) on grid:40x40 (1,600 cells),
built with numpy so that the benchmark depends only on the check. Three ways to check it at ε:
- baseline: a Python loop over all n(n−1)/2 pairs, each comparing two rows with numpy;
- vectorized, all pairs: `check_privacy` on a space that does not know its structure;
- vectorized, structured: `check_privacy` on the grid space, which checks only its essential pairs
  (4-neighbours for Manhattan: ElSalamouny et al. 2013 Prop 1).
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

from dprivacy import Channel, MetricSpace, measures, spaces


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


def main() -> None:
    eps = 1.0
    rows = []
    for metric in ("manhattan", "euclidean"):
        g = spaces.grid(40, 40, metric=metric)
        d = np.array(g.distances)
        h = np.exp(-eps * d / 2)
        h /= h.sum(axis=1, keepdims=True)
        ch = Channel(h)
        unstructured = MetricSpace(d, validate=False)

        (ok_loop, eps_loop), t_loop = timed(per_pair_loop, h, d, eps)
        r_all, t_all = timed(measures.check_privacy, ch, unstructured, epsilon=eps)
        r_str, t_str = timed(measures.check_privacy, ch, g, epsilon=eps)
        assert ok_loop == r_all.ok == r_str.ok
        assert abs(eps_loop - r_all.smallest_epsilon) < 1e-9 and abs(eps_loop - r_str.smallest_epsilon) < 1e-9
        rows.append(
            {
                "space": g.name,
                "n": g.n,
                "pairs_all": g.n * (g.n - 1) // 2,
                "pairs_structured": r_str.pairs_checked,
                "smallest_epsilon": r_str.smallest_epsilon,
                "seconds_loop": t_loop,
                "seconds_vectorized_all_pairs": t_all,
                "seconds_vectorized_structured": t_str,
                "speedup_all_pairs": t_loop / t_all,
                "speedup_structured": t_loop / t_str,
            }
        )
    print(f"{'space':28s} {'pairs':>9s} {'loop s':>8s} {'vec s':>8s} {'struct s':>9s} {'x vec':>7s} {'x struct':>9s}")
    for r in rows:
        print(
            f"{r['space']:28s} {r['pairs_structured']:9d} {r['seconds_loop']:8.2f} {r['seconds_vectorized_all_pairs']:8.2f} "
            f"{r['seconds_vectorized_structured']:9.3f} {r['speedup_all_pairs']:7.1f} {r['speedup_structured']:9.1f}"
        )
    out = {
        "benchmark": "d-privacy check of a 1600x1600 channel",
        "command": "python benchmarks/bench_privacy_check.py",
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "processor": platform.processor()},
        "numpy": np.__version__,
        "rows": rows,
    }
    Path(__file__).with_name("results_privacy_check.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
