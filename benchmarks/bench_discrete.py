"""Exact integer samplers against the float ones they replace, in one run (draws per second).

    python benchmarks/bench_discrete.py [--n 1000000] [--repeat 3]

* two-sided geometric (ε = 1): the exact discrete Laplace of CKS 2020 in integers, on the release
  ChaCha20 source and on PCG64, against the old difference of numpy float geometric variates (PCG64);
* 1-D Laplace (ε = 1, Δ = 1): ``laplace_sample`` default (lattice + exact discrete Laplace) against
  ``method="textbook"`` (float) on the same generators.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dprivacy.mechanisms.laplace import laplace_sample
from dprivacy.sampling.discrete import discrete_laplace, geometric_parameters
from dprivacy.sampling.source import release_source


def rate(fn, n, repeat):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - t)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    p = geometric_parameters(1.0, 1.0)
    chacha = release_source().generator
    pcg = np.random.default_rng(0)
    a = 1 - np.exp(-1.0)
    rows = {
        "geometric exact (CKS), ChaCha20": rate(lambda n: discrete_laplace(n, p.s, p.t, chacha), args.n, args.repeat),
        "geometric exact (CKS), PCG64": rate(lambda n: discrete_laplace(n, p.s, p.t, pcg), args.n, args.repeat),
        "geometric float (numpy G1 - G2), PCG64": rate(lambda n: pcg.geometric(a, n) - pcg.geometric(a, n), args.n, args.repeat),
        "laplace_sample default (lattice, exact), ChaCha20": rate(
            lambda n: laplace_sample(np.zeros(n), epsilon=1.0, rng=chacha), args.n, args.repeat),
        "laplace_sample textbook (float), PCG64": rate(
            lambda n: laplace_sample(np.zeros(n), epsilon=1.0, rng=pcg, method="textbook"), args.n, args.repeat),
    }
    base = rows["geometric float (numpy G1 - G2), PCG64"]
    for k, v in rows.items():
        print(f"{k:<52} {v / 1e6:7.2f} M/s   {v / base:5.2f}x the float geometric")
    print(json.dumps({k: v for k, v in rows.items()}))


if __name__ == "__main__":
    main()
