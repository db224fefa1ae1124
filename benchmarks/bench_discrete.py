"""Exact integer samplers against the float ones they replace, in one run (draws per second).

    python benchmarks/bench_discrete.py [--n 1000000] [--repeat 3]

* two-sided geometric (ε = 1): the exact discrete Laplace of CKS 2020 in integers, on the release source
  (AES-128-CTR on AES-NI, else ChaCha20) and on PCG64, against the old difference of numpy float geometric
  variates (PCG64);
* 1-D Laplace (ε = 1, Δ = 1): ``laplace_sample`` default (lattice + exact discrete Laplace) against
  ``method="textbook"`` (float) on the same generators;
* planar Laplace (ε = 1): ``planar_laplace_sample`` default (exact discrete planar Laplace on the lattice
  ≈ 2^-20/ε) and the lattice offsets alone at obfuscate's lattice (2^-22 m, ε = 1/km), on the release source and
  PCG64, against the old float samplers on PCG64 (θ = 2πU with the Lambert-W radius, and obfuscate's
  numpy Gamma(2) + bearing);
* the 10⁶-cell tight-constraints mechanism (grid:1000x1000, ε = 1): ``sample_indices`` of 10⁶ secrets.

Rates are draws per second of wall time, best of ``--repeat``, and of CPU time (the machine is shared:
CPU time is what the code costs, wall time what a user waits).
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
    """(draws per wall second, draws per CPU second), best of ``repeat``."""
    import time as _t

    best_w = best_c = float("inf")
    for _ in range(repeat):
        w, c = _t.perf_counter(), _t.process_time()
        fn(n)
        best_w = min(best_w, _t.perf_counter() - w)
        best_c = min(best_c, _t.process_time() - c)
    return n / best_w, n / best_c


def old_planar_float(n, generator):
    """The float planar Laplace sampler the library used before (θ = 2πU, r = C_ε⁻¹(U) by Lambert W)."""
    import math

    from dprivacy.mechanisms.planar_laplace import planar_laplace_radius

    theta = generator.random(n) * (2.0 * math.pi)
    r = planar_laplace_radius(generator.random(n), epsilon=1.0)
    return np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-grid", action="store_true", help="skip the 10⁶-cell tight-constraints sampler")
    args = ap.parse_args()
    p = geometric_parameters(1.0, 1.0)
    source = release_source()
    chacha = source.generator
    print(f"release source: {source.description}")
    pcg = np.random.default_rng(0)
    a = 1 - np.exp(-1.0)
    from dprivacy.mechanisms.planar_laplace import planar_laplace_sample
    from dprivacy.sampling.planar import LatticeLaplace

    obf = LatticeLaplace.build(1e-3, 2.0**-22)
    zeros = np.zeros((args.n, 2))
    rows = {
        "geometric exact (CKS), release source": rate(lambda n: discrete_laplace(n, p.s, p.t, chacha), args.n, args.repeat),
        "geometric exact (CKS), PCG64": rate(lambda n: discrete_laplace(n, p.s, p.t, pcg), args.n, args.repeat),
        "geometric float (numpy G1 - G2), PCG64": rate(lambda n: pcg.geometric(a, n) - pcg.geometric(a, n), args.n, args.repeat),
        "laplace_sample default (lattice, exact), release source": rate(
            lambda n: laplace_sample(np.zeros(n), epsilon=1.0, rng=chacha), args.n, args.repeat),
        "laplace_sample textbook (float), PCG64": rate(
            lambda n: laplace_sample(np.zeros(n), epsilon=1.0, rng=pcg, method="textbook"), args.n, args.repeat),
        "planar_laplace_sample default (exact lattice), release source": rate(
            lambda n: planar_laplace_sample(zeros[:n], epsilon=1.0, rng=chacha), args.n, args.repeat),
        "planar_laplace_sample default (exact lattice), PCG64": rate(
            lambda n: planar_laplace_sample(zeros[:n], epsilon=1.0, rng=pcg), args.n, args.repeat),
        "planar lattice offsets, obfuscate's 2^-22 m at 1/km, release source": rate(lambda n: obf.offsets(n, chacha), args.n, args.repeat),
        "old planar float (2πU + Lambert W radius), PCG64": rate(lambda n: old_planar_float(n, pcg), args.n, args.repeat),
        "old obfuscate float noise (Gamma(2) + bearing), PCG64": rate(
            lambda n: (pcg.gamma(2.0, 1000.0, n), pcg.uniform(0.0, 360.0, n)), args.n, args.repeat),
    }
    if not args.skip_grid:
        from dprivacy import spaces
        from dprivacy.mechanisms.tight import tight_constraints

        mech = tight_constraints(spaces.grid(1000, 1000), epsilon=1.0).mechanism
        ys = np.random.default_rng(4).integers(0, 10**6, args.n)
        rows["tight-constraints grid:1000x1000, sample_indices, release source"] = rate(
            lambda n: mech.sample_indices(ys[:n], rng=chacha), args.n, args.repeat)
        rows["tight-constraints grid:1000x1000, sample_indices, PCG64"] = rate(
            lambda n: mech.sample_indices(ys[:n], rng=pcg), args.n, args.repeat)
    base = rows["geometric float (numpy G1 - G2), PCG64"][0]
    old = rows["old planar float (2πU + Lambert W radius), PCG64"][0]
    for k, (w, c) in rows.items():
        print(f"{k:<66} {w / 1e6:7.2f} M/s wall  {c / 1e6:7.2f} M/s CPU")
    new = rows["planar_laplace_sample default (exact lattice), release source"][0]
    print(f"planar Laplace: exact/release source over old float/PCG64, same run: {new / old:.2f} (wall)")
    print(json.dumps({k: {"wall_per_s": w, "cpu_per_s": c} for k, (w, c) in rows.items()}))


if __name__ == "__main__":
    main()
