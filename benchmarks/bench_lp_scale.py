"""The optimal-mechanism LP at scale: constraint generation against the full LP, in the same run.

Priors come from real data: the 45,065 places of ``bokeh_sampledata``'s world_cities binned on a
k×k grid over Europe (longitude −10…30, latitude 35…60); cells without a place have prior 0, as in a
real location prior. One run measures, for each case, the methods compared (Dantzig–Wolfe
decomposition and constraint generation by default, the full LP on small grids), and reports the
value, the bound, the relative gap, the rounds and the seconds of each.

    python benchmarks/bench_lp_scale.py --time-limit 300               # default cases (about 40 minutes)
    python benchmarks/bench_lp_scale.py --grids 8 10 --manhattan --loss-grids 10 20
    python benchmarks/bench_lp_scale.py --grids --manhattan --loss-manhattan 20 30 --methods dantzig-wolfe
    python benchmarks/bench_lp_scale.py --graphs --grids --manhattan   # count:1000 and grid:50x50:manhattan only
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from pathlib import Path

import numpy as np

from dprivacy import spaces
from dprivacy.mechanisms.optimal import optimal_mechanism
from dprivacy.cli.specs import parse_space

HERE = Path(__file__).resolve().parent
BOX = (-10.0, 30.0, 35.0, 60.0)  # lon min, lon max, lat min, lat max (Europe)


def city_points() -> np.ndarray:
    import bokeh_sampledata

    path = Path(os.path.dirname(bokeh_sampledata.__file__)) / "_data" / "world_cities.csv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        next(f)
        rows = [line.rsplit(",", 2) for line in f]
    return np.array([[float(r[2]), float(r[1])] for r in rows])  # lon, lat


def city_prior(rows: int, cols: int) -> np.ndarray:
    """Places per cell of a rows×cols grid over BOX, normalised (row-major, row 0 = south)."""
    pts = city_points()
    x0, x1, y0, y1 = BOX
    inside = (pts[:, 0] >= x0) & (pts[:, 0] < x1) & (pts[:, 1] >= y0) & (pts[:, 1] < y1)
    h, _, _ = np.histogram2d(pts[inside, 1], pts[inside, 0], bins=[rows, cols], range=[[y0, y1], [x0, x1]])
    return (h / h.sum()).ravel()


def line_prior(n: int) -> np.ndarray:
    """A count query's prior: places per 0.04° of latitude band over BOX (a real, lumpy histogram)."""
    pts = city_points()
    x0, x1, y0, y1 = BOX
    inside = (pts[:, 0] >= x0) & (pts[:, 0] < x1) & (pts[:, 1] >= y0) & (pts[:, 1] < y1)
    h, _ = np.histogram(pts[inside, 1], bins=n, range=(y0, y1))
    return h / h.sum()


def run(space, prior, eps, method, *, loss=None, time_limit=None, gap=1e-7):
    t = time.perf_counter()
    r = optimal_mechanism(space, prior, epsilon=eps, method=method, loss=loss, time_limit=time_limit, gap=gap)
    return {
        "method": r.method, "ok": r.ok, "status": r.status, "message": r.solver_message, "value": r.value,
        "bound": r.bound, "gap": r.gap, "rounds": r.rounds, "constraints": r.n_constraints,
        "variables": r.n_variables, "seconds": time.perf_counter() - t,
        "smallest_epsilon": r.smallest_epsilon,
    }


def show(name, res):
    print(f"{name:<28} {res['method']:<22} {res['seconds']:>8.1f} s  value {res['value']:.10f}  bound "
          f"{res['bound']:.10f}  gap {res['gap']:.2e}  rounds {res['rounds']:>3}  rows {res['constraints']:>9,}  "
          f"ok {res['ok']}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grids", type=int, nargs="*", default=[8, 10, 12, 14, 20], help="Euclidean k×k grids, binary gain")
    ap.add_argument("--manhattan", type=int, nargs="*", default=[12, 20], help="Manhattan k×k grids, binary gain")
    ap.add_argument("--methods", nargs="*", default=["dantzig-wolfe", "constraint-generation"],
                    help="methods compared on every case (in the same run)")
    ap.add_argument("--full-max", type=int, default=8, help="largest k for the full-LP baseline")
    ap.add_argument("--graphs", action="store_true", help="count:1000 and grid:50x50:manhattan, binary gain, method auto")
    ap.add_argument("--loss-grids", type=int, nargs="*", default=[], help="Euclidean k×k grids, expected distance loss")
    ap.add_argument("--loss-manhattan", type=int, nargs="*", default=[],
                    help="Manhattan k×k grids, expected distance loss (gap 1e-3)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--out", type=Path, default=HERE / "results_lp_scale.json")
    args = ap.parse_args()

    results = []

    def compare(name, space, prior, methods, loss=None, gap=1e-7):
        case = {"case": name, "n": space.n, "zero_prior": int((prior == 0).sum())}
        for method in methods:
            res = run(space, prior, args.epsilon, method, loss=loss, time_limit=args.time_limit, gap=gap)
            show(name, res)
            case[method] = res
        results.append(case)

    for k in args.grids:
        methods = list(args.methods) + (["full"] if k <= args.full_max else [])
        compare(f"grid:{k}x{k} binary", spaces.grid(k, k), city_prior(k, k), methods)
    for k in args.manhattan:
        methods = list(args.methods) + (["full"] if k <= 12 else [])
        compare(f"grid:{k}x{k}:manhattan binary", spaces.grid(k, k, metric="manhattan"), city_prior(k, k), methods)
    if args.graphs:
        for spec, prior in (("count:1000", line_prior(1001)), ("grid:50x50:manhattan", city_prior(50, 50))):
            compare(f"{spec} binary", parse_space(spec), prior, ["auto"])
    for k in args.loss_grids:
        space = spaces.grid(k, k)
        compare(f"grid:{k}x{k} distance loss", space, city_prior(k, k), args.methods, loss=space.distances, gap=1e-3)
    for k in args.loss_manhattan:
        space = spaces.grid(k, k, metric="manhattan")
        compare(f"grid:{k}x{k}:manhattan distance loss", space, city_prior(k, k), args.methods, loss=space.distances,
                gap=1e-3)
    args.out.write_text(json.dumps({"epsilon": args.epsilon, "time_limit": args.time_limit, "cases": results},
                                   indent=1, default=float))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
