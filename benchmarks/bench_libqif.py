"""dprivacy's optimal mechanism against libqif's ``min_loss_given_d``, same prior, same run.

libqif (``pip install qif``; not a dependency of dprivacy) solves the ε·d-private LP of minimal
expected loss with every pair constrained, its distances and losses given as Python callables. Here
the loss is the binary one (0 on the diagonal, 1 elsewhere), so its optimum is 1 − the optimal Bayes
vulnerability that ``optimal_mechanism`` maximises (binary gain): the two must agree to 1e-6.

Priors: the world-cities density over Europe on a k×k Euclidean grid (``bench_lp_scale.city_prior``),
with zeros. ε = 1.

    pip install qif && python benchmarks/bench_libqif.py --grids 4 6 8 [--time-limit 600]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

from bench_lp_scale import city_prior
from dprivacy import spaces
from dprivacy.mechanisms.optimal import optimal_mechanism

HERE = Path(__file__).resolve().parent


def _qif(k, eps, queue):
    import qif

    sp = spaces.grid(k, k)
    p = city_prior(k, k)
    d = sp.distances
    t = time.perf_counter()
    c = np.asarray(qif.mechanism.d_privacy.min_loss_given_d(p, sp.n, lambda i, j: eps * d[i, j],
                                                             lambda i, j: 0.0 if i == j else 1.0))
    seconds = time.perf_counter() - t
    loss = float((p[:, None] * c * (1 - np.eye(sp.n))).sum())
    queue.put({"seconds": seconds, "value": 1.0 - loss})


def run_qif(k, eps, time_limit):
    q = mp.Queue()
    proc = mp.Process(target=_qif, args=(k, eps, q))
    proc.start()
    proc.join(time_limit)
    if proc.is_alive():
        proc.terminate()
        return {"seconds": None, "value": None, "note": f"stopped at the {time_limit:g} s limit"}
    return q.get() if not q.empty() else {"seconds": None, "value": None, "note": "failed"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grids", type=int, nargs="*", default=[4, 6, 8])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--out", type=Path, default=HERE / "results_libqif.json")
    args = ap.parse_args()
    rows = []
    for k in args.grids:
        sp = spaces.grid(k, k)
        p = city_prior(k, k)
        t = time.perf_counter()
        r = optimal_mechanism(sp, p, epsilon=args.epsilon)
        ours = {"seconds": time.perf_counter() - t, "value": r.value, "bound": r.bound, "method": r.method}
        lq = run_qif(k, args.epsilon, args.time_limit)
        row = {"grid": f"{k}x{k}", "dprivacy": ours, "libqif": lq}
        if lq.get("value") is not None:
            row["difference"] = abs(lq["value"] - ours["value"])
            row["libqif_over_dprivacy_time"] = lq["seconds"] / ours["seconds"]
        rows.append(row)
        print(f"grid:{k}x{k}  dprivacy ({ours['method']}) {ours['seconds']:7.2f} s value {ours['value']:.10f}   libqif "
              + (f"{lq['seconds']:7.2f} s value {lq['value']:.10f}   |diff| {row['difference']:.1e}   "
                 f"libqif/dprivacy time {row['libqif_over_dprivacy_time']:.1f}x" if lq.get("value") is not None
                 else lq.get("note", "")), flush=True)
    args.out.write_text(json.dumps({"epsilon": args.epsilon, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
