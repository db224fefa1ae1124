"""Wave-2 benchmarks, each a ratio against a baseline measured in the same run:

* start-up: `dprivacy --version` and `import dprivacy` against a bare `python -c pass`;
* sampling: the release-grade ChaCha20 source against numpy's PCG64, and exact integer finite-channel
  sampling against the old float inverse-CDF path;
* obfuscate: geodesic planar Laplace on 1 million points (rows/s), against generating the noise alone;
* threshold: `tight_threshold` on grid:70x70 by the structured path against the dense path on grid:25x25.

Run: python benchmarks/bench_wave2.py [--quick] > benchmarks/results_wave2.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

import numpy as np


def _median_time(cmd, runs=7):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def startup():
    base = _median_time([sys.executable, "-c", "pass"])
    ver = _median_time([sys.executable, "-m", "dprivacy.cli", "--version"])
    imp = _median_time([sys.executable, "-c", "import dprivacy"])
    design = _median_time([sys.executable, "-m", "dprivacy.cli", "design", "grid:100x100", "--epsilon", "1",
                           "--mechanism", "tight-constraints", "--json"], runs=3)
    return {"python_pass_s": base, "version_s": ver, "import_s": imp, "design_100x100_tight_s": design,
            "version_over_bare_python": ver / base}


def sampling(n):
    from dprivacy import spaces
    from dprivacy.mechanisms.geometric import truncated_geometric
    from dprivacy.sampling import random_source

    out = {}
    g_sec, g_pcg = random_source(None).generator, np.random.default_rng(0)
    for name, g in (("chacha20", g_sec), ("pcg64", g_pcg)):
        t = time.perf_counter(); g.integers(0, 1 << 62, n, dtype=np.int64); out[f"{name}_int64_per_s"] = n / (time.perf_counter() - t)
        t = time.perf_counter(); g.gamma(2.0, 1.0, n); g.uniform(0, 360, n); out[f"{name}_planar_laplace_polar_per_s"] = n / (time.perf_counter() - t)
    m = truncated_geometric(spaces.line(1000), epsilon=0.5)
    ys = np.random.default_rng(1).integers(0, 1000, n)
    _ = m.exact_sampler
    t = time.perf_counter(); m.sample_indices(ys); out["exact_tg1000_secure_per_s"] = n / (time.perf_counter() - t)
    h = m.matrix
    t = time.perf_counter()
    cdf = np.cumsum(h, axis=1)
    u = g_pcg.random(n)
    order = np.argsort(ys, kind="stable")
    rows, starts = np.unique(ys[order], return_index=True)
    ends = np.append(starts[1:], n)
    res = np.empty(n, dtype=np.intp)
    for y, a, b in zip(rows, starts, ends):
        res[order[a:b]] = np.searchsorted(cdf[y], u[order[a:b]])
    out["old_float_inverse_cdf_tg1000_pcg64_per_s"] = n / (time.perf_counter() - t)
    out["exact_over_old_ratio"] = out["exact_tg1000_secure_per_s"] / out["old_float_inverse_cdf_tg1000_pcg64_per_s"]
    return out


def obfuscate(n):
    from dprivacy.data.locations import displace, planar_laplace_displacements
    from dprivacy.sampling import random_source

    g = random_source(None).generator
    rng = np.random.default_rng(2)
    lat, lon = rng.uniform(-80, 80, n), rng.uniform(-180, 180, n)
    t = time.perf_counter(); r, az = planar_laplace_displacements(n, epsilon=1e-3, generator=g); noise = time.perf_counter() - t
    t = time.perf_counter(); displace(lat, lon, r, az); geo = time.perf_counter() - t
    return {"points": n, "noise_s": noise, "geodesic_s": geo, "points_per_s": n / (noise + geo),
            "geodesic_over_noise": geo / noise}


def threshold():
    import dprivacy.threshold as T
    from dprivacy import spaces

    t = time.perf_counter(); r70 = T.tight_threshold(spaces.grid(70, 70)); s70 = time.perf_counter() - t
    t = time.perf_counter(); r25 = T.tight_threshold(spaces.grid(25, 25), method="dense"); d25 = time.perf_counter() - t
    t = time.perf_counter(); s25r = T.tight_threshold(spaces.grid(25, 25)); s25 = time.perf_counter() - t
    return {"grid70_structured_s": s70, "grid70_bracket": r70.bracket, "grid25_dense_s": d25, "grid25_structured_s": s25,
            "grid25_dense_over_structured": d25 / s25, "grid25_brackets_agree": bool(abs(r25.bracket[1] - s25r.bracket[1]) < 1e-6)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    n = 200_000 if a.quick else 1_000_000
    res = {"machine": platform.platform(), "python": platform.python_version(), "startup": startup(),
           "sampling": sampling(n), "obfuscate": obfuscate(n), "threshold": threshold()}
    print(json.dumps(res, indent=2, default=str))
