"""Where ``optimal_mechanism(method="auto")`` should switch from the full (edges) LP to the Dantzig–Wolfe
decomposition (issue 13): both methods, one after the other, on the world-cities prior of
bench_lp_scale.py for grids (a Dirichlet(1) prior, seed 1, otherwise), binary gain, ε = 1; then what
auto picks.

    python benchmarks/bench_auto_crossover.py grid:8x8:manhattan grid:10x10:manhattan grid:12x12:manhattan sum:40,3
"""

from __future__ import annotations

import sys
import time

import numpy as np
from bench_lp_scale import city_prior

from dprivacy.cli.specs import parse_space
from dprivacy.mechanisms.optimal import optimal_mechanism


def main() -> None:
    for spec in sys.argv[1:]:
        space = parse_space(spec)
        if spec.startswith("grid"):
            k = int(spec.split(":")[1].split("x")[0])
            prior = city_prior(k, k)
        else:
            prior = np.random.default_rng(1).dirichlet(np.ones(space.n))
        for method in ("full", "dantzig-wolfe", "auto"):
            t = time.perf_counter()
            r = optimal_mechanism(space, prior, epsilon=1.0, method=method)
            print(f"{spec:24s} {method:14s} -> {r.method:14s} {time.perf_counter() - t:7.2f} s  value {r.value:.10f}  "
                  f"gap {r.gap:.2g}  ok {r.ok}", flush=True)


if __name__ == "__main__":
    main()
