"""Benchmark: tight-constraints mechanisms on large grids with dprivacy._kernels (ElSalamouny et al. 2014 §7.2 at scale).

Run:  python benchmarks/bench_structured.py [--parts dense100,big1000,...] [--quick]
Prints a table and writes benchmarks/results_structured.json. Not part of the tests.

Each part runs in its own Python process, so that its peak resident memory (``resource.getrusage``,
ru_maxrss) is its own; the peak of traced allocations (``tracemalloc``, which sees numpy's buffers) is
reported too. Timings are wall-clock in one run on a shared machine (the load average before and after
is recorded); the claims are ratios and orders of magnitude, not the exact seconds.

Parts:
- ``dense100``: grid:100x100 (Euclidean, step 1, ε = 1): FFT + CG vs numpy's dense solve of the same
  10,000×10,000 system (target ≥ 100× faster, the same z to 1e-8).
- ``big1000``: grid:1000x1000 at ε = 1 and ε = 0.7 (targets: < 60 s, < 2 GB peak memory).
- ``threshold``: the threshold ε* on grid:300x300 (Euclidean), and on grid:100x100 (the paper's grid).
- ``sampling``: samples/s of the exact sampler on the 1000×1000 mechanism at ε = 1 (target ≥ 1e5/s).
- ``preconditioners``: iterations and time per preconditioner on grid:300x300 (the evidence behind
  ``solve.EMBEDDING_BELOW_A``).
- ``maxconv``: utility for non-uniform priors (the max-convolution) on large grids.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("results_structured.json")
PARTS = ("dense100", "big1000", "threshold", "sampling", "preconditioners", "maxconv")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB


# ---------------------------------------------------------------------------------------------
# Parts (each runs in a fresh process and returns a JSON-able dict)
# ---------------------------------------------------------------------------------------------


def part_dense100(quick: bool) -> dict:
    from dprivacy.spaces import GridSpace
    from dprivacy._kernels.solve import tight_constraints_grid

    w = 60 if quick else 100
    g = GridSpace(w, w)
    eps = 1.0
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        res = tight_constraints_grid(g, epsilon=eps)
        runs.append(time.perf_counter() - t0)
    t_struct = float(np.median(runs))
    t0 = time.perf_counter()
    phi = np.exp(-eps * g.distances)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    z_dense = np.linalg.solve(phi, np.ones(g.n))
    t_dense = time.perf_counter() - t0
    return dict(
        grid=f"{w}x{w}", epsilon=eps, structured_s=t_struct, structured_runs_s=runs,
        dense_build_phi_s=t_build, dense_solve_s=t_dense, speedup_vs_solve=t_dense / t_struct,
        speedup_vs_build_and_solve=(t_dense + t_build) / t_struct,
        max_abs_z_difference=float(np.abs(res.z - z_dense).max()), iterations=res.iterations,
        certainty=res.certainty, exists=res.exists, min_z=res.min_z, error_bound=res.error_bound,
        preconditioner=res.preconditioner,
    )


def part_big1000(quick: bool, eps: float) -> dict:
    from dprivacy.spaces import GridSpace
    from dprivacy._kernels.solve import tight_constraints_grid

    w = 300 if quick else 1000
    g = GridSpace(w, w)
    tracemalloc.start()
    t0 = time.perf_counter()
    res = tight_constraints_grid(g, epsilon=eps)
    elapsed = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    b = res.eigenvalue_bound
    return dict(
        grid=f"{w}x{w}", epsilon=eps, seconds=elapsed, iterations=res.iterations,
        preconditioner=res.preconditioner, traced_peak_mb=traced, rss_peak_mb=_peak_rss_mb(),
        exists=res.exists, certainty=res.certainty, min_z=res.min_z, max_z=float(res.z.max()),
        argmin_cell=int(np.argmin(res.z)), negative_entries=int(res.negative[0].size),
        residual_inf=res.residual, residual_2=res.residual_norm, error_bound=res.error_bound,
        margin=res.margin, lambda_min_bound=b.value, lambda_bound_source=b.source,
        symbol_bound=b.symbol, embedding_bound=b.embedding, condition_bound=res.condition,
        utility_uniform=float(res.z.sum() / g.n), leakage_uniform_bits=float(np.log2(res.z.sum())),
        reason=res.reason,
    )


def part_threshold(quick: bool) -> dict:
    from dprivacy.spaces import GridSpace
    from dprivacy._kernels.threshold import tight_threshold_grid

    out = {}
    for w, metric in ((100, "euclidean"), (100 if quick else 300, "euclidean"), (100 if quick else 300, "chebyshev")):
        g = GridSpace(w, w, metric=metric)
        t0 = time.perf_counter()
        r = tight_threshold_grid(g, tol=1e-4, scan=5)
        out[f"{w}x{w}:{metric}"] = dict(
            seconds=time.perf_counter() - t0, epsilon_star=r.epsilon_star, bracket=r.bracket,
            certified=r.certified, solves=r.solves, monotone=r.monotone_checked.ok if r.monotone_checked else None,
            reason=r.reason,
        )
    out["rss_peak_mb"] = _peak_rss_mb()
    return out


def part_sampling(quick: bool) -> dict:
    from dprivacy.spaces import GridSpace
    from dprivacy._kernels.solve import tight_constraints_grid

    w = 300 if quick else 1000
    g = GridSpace(w, w)
    mech = tight_constraints_grid(g, epsilon=1.0).mechanism
    t0 = time.perf_counter()
    sampler = mech.sampler
    build = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    out = dict(grid=f"{w}x{w}", epsilon=1.0, build_s=build, table_entries=int(sampler._cdf.size))
    for name, ys in (
        ("random_secrets", rng.integers(0, g.n, 1_000_000)),
        ("corner_secret", np.zeros(1_000_000, dtype=np.int64)),
        ("centre_secret", np.full(1_000_000, (w // 2) * w + w // 2)),
    ):
        sampler.proposals = sampler.accepted = 0
        t0 = time.perf_counter()
        mech.sample_indices(ys, rng=rng)
        dt = time.perf_counter() - t0
        out[name] = dict(samples=ys.size, seconds=dt, samples_per_s=ys.size / dt, acceptance=sampler.acceptance_rate)
    out["rss_peak_mb"] = _peak_rss_mb()
    return out


def part_preconditioners(quick: bool) -> dict:
    from dprivacy.spaces import GridSpace
    from dprivacy._kernels.operator import GridConstraintsOperator
    from dprivacy._kernels.solve import tight_constraints_grid

    w = 100 if quick else 300
    out = {}
    for metric in ("euclidean", "chebyshev"):
        g = GridSpace(w, w, metric=metric)
        for eps in (0.1, 0.3, 0.5, 1.0):
            op = GridConstraintsOperator(g, eps)
            row = {}
            for pre in ("none", "embedding", "circulant"):
                if pre == "embedding" and not op.embedding_min > 0:
                    row[pre] = None
                    continue
                t0 = time.perf_counter()
                # Unpreconditioned CG needs thousands of iterations at small ε: cap it (reported).
                r = tight_constraints_grid(g, epsilon=eps, preconditioner=pre, operator=op,
                                           max_iter=1000 if pre == "none" else 5000)
                row[pre] = dict(iterations=r.iterations, seconds=time.perf_counter() - t0, decided=r.decided,
                                converged=r.converged)
            row["auto_choice"] = tight_constraints_grid(g, epsilon=eps, operator=op, max_iter=1, refine=False).preconditioner
            out[f"{w}x{w}:{metric}:eps={eps}"] = row
    return out


def part_maxconv(quick: bool) -> dict:
    from dprivacy.spaces import GridSpace
    from dprivacy._kernels.maxplus import max_convolution
    from dprivacy._kernels.solve import tight_constraints_grid

    def bumps(g, rng):
        r, c = np.mgrid[0 : g.height, 0 : g.width]
        p = np.full((g.height, g.width), 1e-3)
        for _ in range(20):
            cy, cx, s = rng.uniform(0, g.height), rng.uniform(0, g.width), rng.uniform(2, g.height / 10)
            p += rng.uniform(0.5, 2) * np.exp(-((r - cy) ** 2 + (c - cx) ** 2) / (2 * s * s))
        return (p / p.sum()).ravel()

    out = {}
    rng = np.random.default_rng(0)
    big = 300 if quick else 1000
    for metric, w in (("manhattan", big), ("chebyshev", big), ("euclidean", 100 if quick else 300)):
        g = GridSpace(w, w, metric=metric)
        for name, p in (("bumps", bumps(g, rng)), ("dirichlet0.5", rng.dirichlet(np.full(g.n, 0.5)))):
            t0 = time.perf_counter()
            m, arg = max_convolution(g, p, 1.0)
            out[f"{w}x{w}:{metric}:{name}"] = dict(
                seconds=time.perf_counter() - t0, identity_remap_optimal_fraction=float((arg == np.arange(g.n)).mean()),
            )
    # The whole utility of the tight mechanism for a non-uniform prior, and for the uniform one (closed
    # form Σz/n, no max-convolution), on the large Euclidean grid.
    from dprivacy import measures

    g = GridSpace(big, big)
    mech = tight_constraints_grid(g, epsilon=1.0).mechanism
    p = bumps(g, rng)
    t0 = time.perf_counter()
    u = measures.utility(mech, p)
    out[f"{big}x{big}:euclidean:bumps:utility"] = dict(
        seconds=time.perf_counter() - t0, value=u.value,
        identity_remap_optimal_fraction=float((u.remap == np.arange(g.n)).mean()),
    )
    t0 = time.perf_counter()
    out["uniform_closed_form"] = dict(value=measures.utility(mech, np.full(g.n, 1.0 / g.n)).value, seconds=time.perf_counter() - t0)
    return out


def run_part(name: str, quick: bool) -> dict:
    if name == "dense100":
        return part_dense100(quick)
    if name == "big1000":
        return {f"eps={e}": _in_child(f"big1000:{e}", quick) for e in (1.0, 0.7)}
    return dict(threshold=part_threshold, sampling=part_sampling, preconditioners=part_preconditioners,
                maxconv=part_maxconv)[name](quick)


def _in_child(spec: str, quick: bool) -> dict:
    cmd = [sys.executable, __file__, "--worker", spec] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return dict(error=proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _worker(spec: str, quick: bool) -> None:
    if spec.startswith("big1000:"):
        out = part_big1000(quick, float(spec.split(":")[1]))
    else:
        out = run_part(spec, quick)
    print(json.dumps(out, default=_jsonable))


def _jsonable(x):
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(type(x).__name__)


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _table(results: dict) -> str:
    lines = []
    add = lines.append
    if "dense100" in results and "error" not in results["dense100"]:
        r = results["dense100"]
        add(f"grid:{r['grid']} ε={r['epsilon']}: structured {r['structured_s']:.3f} s ({r['iterations']} it, "
            f"{r['preconditioner']}) vs dense np.linalg.solve {r['dense_solve_s']:.1f} s (+{r['dense_build_phi_s']:.1f} s "
            f"to build Φ): {r['speedup_vs_solve']:.0f}× faster; max |Δz| = {r['max_abs_z_difference']:.1e}; "
            f"{r['certainty']}, exists={r['exists']}")
    if "big1000" in results:
        for k, r in results["big1000"].items():
            if "error" in r:
                add(f"grid big {k}: ERROR {r['error']}")
                continue
            add(f"grid:{r['grid']} {k}: {r['seconds']:.1f} s, {r['iterations']} it ({r['preconditioner']}), "
                f"peak RSS {r['rss_peak_mb']:.0f} MB, traced {r['traced_peak_mb']:.0f} MB; exists={r['exists']} "
                f"({r['certainty']}), min z = {r['min_z']:.6g}, error bound {r['error_bound']:.2g}, "
                f"λ_min ≥ {r['lambda_min_bound']:.4g} ({r['lambda_bound_source']})")
    if "threshold" in results:
        for k, r in results["threshold"].items():
            if isinstance(r, dict):
                add(f"threshold {k}: ε* ∈ ({r['bracket'][0]:.6g}, {r['bracket'][1]:.6g}] certified={r['certified']} "
                    f"in {r['seconds']:.1f} s, {r['solves']} solves, monotone scan {r['monotone']}")
    if "sampling" in results:
        r = results["sampling"]
        for k in ("random_secrets", "corner_secret", "centre_secret"):
            s = r[k]
            add(f"sampling {r['grid']} {k}: {s['samples_per_s']:,.0f} samples/s (acceptance {s['acceptance']:.3f})")
    if "preconditioners" in results:
        for k, row in results["preconditioners"].items():
            cells = []
            for pre in ("none", "embedding", "circulant"):
                v = row[pre]
                cells.append(f"{pre}: " + ("n/a" if v is None else f"{v['iterations']} it {v['seconds']:.2f} s"
                                           + ("" if v.get("converged", True) else " (capped, not converged)")))
            add(f"precond {k}: " + "; ".join(cells) + f"; auto → {row['auto_choice']}")
    if "maxconv" in results:
        for k, r in results["maxconv"].items():
            if "identity_remap_optimal_fraction" in r:
                add(f"max-convolution {k}: {r['seconds']:.2f} s (identity remap optimal on "
                    f"{100 * r['identity_remap_optimal_fraction']:.1f} % of outputs)")
            else:
                add(f"utility {k}: {r['value']:.6g} in {r['seconds']:.3f} s")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--quick", action="store_true", help="small grids (a smoke run)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args.worker, args.quick)
        return
    parts = [p for p in args.parts.split(",") if p]
    bad = [p for p in parts if p not in PARTS]
    if bad:
        ap.error(f"unknown part(s) {bad}; choose from {', '.join(PARTS)}")
    import scipy

    meta = dict(
        python=platform.python_version(), numpy=np.__version__, scipy=scipy.__version__,
        machine=platform.machine(), cpus=os.cpu_count(), load_average_before=os.getloadavg(),
        quick=args.quick, started=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    results = {}
    for p in parts:
        t0 = time.perf_counter()
        results[p] = run_part(p, args.quick) if p == "big1000" else _in_child(p, args.quick)
        print(f"[{p} done in {time.perf_counter() - t0:.0f} s]", file=sys.stderr, flush=True)
    meta["load_average_after"] = os.getloadavg()
    meta["parts"] = parts
    previous = json.loads(OUT.read_text()) if OUT.exists() and not args.quick else {}
    merged = {**previous.get("results", {}), **results}
    runs = previous.get("runs", []) + [meta]  # one entry per invocation: which parts, load, versions
    if not args.quick:
        OUT.write_text(json.dumps(dict(runs=runs, results=merged), indent=2, default=_jsonable) + "\n")
    print(_table(results))
    print(f"(load average before {meta['load_average_before']}, after {meta['load_average_after']}; {meta['cpus']} CPUs)")


if __name__ == "__main__":
    main()
