"""dprivacy side by side with its peers on the rows of issue 33's table, in one run on one machine.

Peers (the ``bench`` extra: ``pip install -e '.[bench]'``): diffprivlib 0.6.6 (IBM; needs scikit-learn < 1.6),
OpenDP 0.16 with its Polars front end, and libqif's Python bindings (``qif``). Data: seattle-weather (the copy
shipped by ``vega-datasets``: bokeh-sampledata, which the issue names, ships no seattle-weather in any of its
versions) and Superstore (``SampleSuperstore.csv.gz`` of bokeh-sampledata); synthetic Parquet files for the
10-million-row and location rows.

Every timed row runs the peer and dprivacy alternately, ``--repeats`` times each (interleaved), and keeps the
minimum; the ratio is printed. Accuracy rows report the mean |error| over ``--reps`` releases at the same ε and
bounds, all in release mode (fresh randomness). The neighbouring relation is one row replaced with the row count
public for dprivacy and OpenDP (``unit_of(changes=1)``, lengths invariant); diffprivlib's tools are defined for
one row added or removed, and its per-group counts are given ε/2 each so that one replaced row (which can move
between two groups) is covered as for the others. Times measured while other work shares the machine are noisy:
the ratios within one run are what counts.

    python benchmarks/bench_peers.py [--reps 200] [--repeats 3] [--skip-heavy]

Writes benchmarks/results_peers.json and the section of benchmarks/RESULTS.md between the markers
``<!-- bench_peers begin -->`` and ``<!-- bench_peers end -->`` (appended when they are absent).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REGIONS = ("Central", "East", "South", "West")


# ------------------------------------------------------------------------------------------------- data
def seattle_path() -> str:
    import importlib.resources as ir

    return str(ir.files("vega_datasets") / "_data" / "seattle-weather.csv")


def superstore_path() -> str:
    import bokeh_sampledata

    return os.path.join(os.path.dirname(bokeh_sampledata.__file__), "_data", "SampleSuperstore.csv.gz")


def to_parquet(csv: str, out: Path) -> Path:
    import pyarrow.csv as pc
    import pyarrow.parquet as pq

    pq.write_table(pc.read_csv(csv), out)
    return out


# ------------------------------------------------------------------------------------------------- accuracy
def _dp_answer(path, spec, eps, **kw):
    from dprivacy.data.tables import parse_query, run_query

    r = run_query(str(path), parse_query(spec), epsilon=eps, **kw)
    return [a.noisy for a in r.answers]


def accuracy_rows(tables: dict, reps: int) -> list[dict]:
    """Mean |error| of count, count by group, bounded sum and mean (ε = 1), and of the median (ε = 0.1 and 1)."""
    import diffprivlib.tools as dpl
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    rows = []

    def odp(df, eps, build, by=None):
        margins = [dp.polars.Margin(by=[], invariant="lengths", max_length=len(df))]
        if by:
            margins.append(dp.polars.Margin(by=[by], invariant="keys"))
        ctx = dp.Context.compositor(data=df.lazy(), privacy_unit=dp.unit_of(changes=1),
                                    privacy_loss=dp.loss_of(epsilon=eps), split_evenly_over=1, margins=margins)
        return build(ctx.query()).release().collect()

    for name, t in tables.items():
        df = pl.read_parquet(t["parquet"])
        col, lo, hi, unit = t["value"]
        gcol, keys, wcol, wval = t["group"], t["keys"], t["where_col"], t["where_val"]
        x = df[col].to_numpy().astype(float)
        g = df[gcol].to_numpy()
        truth = {
            "count": float((df[wcol] == wval).sum()),
            "count by group": np.array([float((g == k).sum()) for k in keys]),
            "bounded sum": float(np.clip(x, lo, hi).sum()),
            "bounded mean": float(np.clip(x, lo, hi).mean()),
        }
        where = f"{wcol} = '{wval}'"
        ours = {
            "count": lambda eps: _dp_answer(t["parquet"], "count", eps, where=where)[0],
            "count by group": lambda eps: np.array(_dp_answer(t["parquet"], "count", eps, group_by=gcol, keys=keys)),
            "bounded sum": lambda eps: _dp_answer(t["parquet"], f"sum:{col}", eps, bounds=(lo, hi), unit=unit)[0],
            "bounded mean": lambda eps: _dp_answer(t["parquet"], f"avg:{col}", eps, bounds=(lo, hi), unit=unit)[0],
        }
        mask = (df[wcol] == wval).to_numpy()
        peers = {
            "diffprivlib": {
                "count": lambda eps: dpl.count_nonzero(mask, epsilon=eps),
                "count by group": lambda eps: np.array([dpl.count_nonzero(g == k, epsilon=eps / 2) for k in keys]),
                "bounded sum": lambda eps: dpl.sum(x, epsilon=eps, bounds=(lo, hi)),
                "bounded mean": lambda eps: dpl.mean(x, epsilon=eps, bounds=(lo, hi)),
            },
            "OpenDP": {
                "count": lambda eps: float(odp(df, eps, lambda q: q.filter(pl.col(wcol) == wval).select(dp.len()))[0, 0]),
                "count by group": lambda eps: _odp_groups(odp(df, eps, lambda q: q.group_by(gcol).agg(dp.len()), by=gcol),
                                                          gcol, keys),
                "bounded sum": lambda eps: float(odp(df, eps, lambda q: q.select(
                    pl.col(col).fill_null(0).dp.sum(bounds=(lo, hi))))[0, 0]),
                "bounded mean": lambda eps: float(odp(df, eps, lambda q: q.select(
                    pl.col(col).fill_null(0).dp.mean(bounds=(lo, hi))))[0, 0]),
            },
        }
        for task in ("count", "count by group", "bounded sum", "bounded mean"):
            rows.append(_accuracy(f"{task} ({name})", 1.0, truth[task], ours[task],
                                  {p: f[task] for p, f in peers.items()}, reps))
        # the median: diffprivlib's median, OpenDP's with the --unit lattice as candidates, dprivacy's default
        med = float(np.median(np.clip(x, lo, hi)))
        step = t["candidate_step"]
        cand = list(np.round(np.arange(lo, hi + step / 2, step), 6))
        for eps in (0.1, 1.0):
            rows.append(_accuracy(
                f"median ({name} {col}, bounds {lo:g}..{hi:g})", eps, med,
                lambda e: _dp_answer(t["parquet"], f"percentile:{col}:50", e, bounds=(lo, hi), unit=unit)[0],
                {"diffprivlib": lambda e: dpl.median(x, epsilon=e, bounds=(lo, hi)),
                 "OpenDP": lambda e: float(odp(df, e, lambda q: q.select(
                     pl.col(col).fill_null(0).dp.median(candidates=cand)))[0, 0])}, reps,
                note=f"OpenDP candidates every {step:g}"))
    return rows


def _odp_groups(frame, gcol, keys):
    got = dict(zip(frame[gcol].to_list(), frame["len"].to_list()))
    return np.array([float(got.get(k, 0)) for k in keys])


def _accuracy(task, eps, truth, ours, peers: dict, reps: int, note: str = "") -> dict:
    """Mean |error| (averaged over groups for grouped answers) over ``reps`` releases of each, interleaved."""
    errs = {"dprivacy": [], **{p: [] for p in peers}}
    for _ in range(reps):
        for p, f in peers.items():
            errs[p].append(float(np.mean(np.abs(np.asarray(f(eps), dtype=float) - truth))))
        errs["dprivacy"].append(float(np.mean(np.abs(np.asarray(ours(eps), dtype=float) - truth))))
    mean = {k: float(np.mean(v)) for k, v in errs.items()}
    best_peer = min(mean[p] for p in peers)
    row = {"task": task, "epsilon": eps, "mean_abs_error": mean, "reps": reps,
           "dprivacy_over_best_peer": mean["dprivacy"] / best_peer if best_peer > 0 else float("inf"), "note": note}
    print(f"{task:60s} ε={eps:<4g} " + "  ".join(f"{k} {v:.4g}" for k, v in mean.items())
          + f"   dprivacy / best peer = {row['dprivacy_over_best_peer']:.2f}", flush=True)
    return row


# ------------------------------------------------------------------------------------------------- processes
def run_process(code: str) -> tuple[float, float, str]:
    """(seconds, peak RSS in MiB, stdout) of ``python -c code`` in its own process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(p.stderr[-2000:])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return dt, max(peak, before) / 1024.0, p.stdout


def run_processes(codes: dict, repeats: int) -> dict:
    """Each code ``repeats`` times, interleaved; the minimum time and the largest peak RSS of each."""
    out = {k: {"seconds": [], "rss": 0.0} for k in codes}
    for _ in range(repeats):
        for k, c in codes.items():
            # the child's own peak (VmHWM starts afresh at exec; ru_maxrss would carry the parent's over)
            dt, _, stdout = run_process(
                c + "\nprint('RSS', [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')][0])")
            out[k]["seconds"].append(dt)
            rss = [ln for ln in stdout.splitlines() if ln.startswith("RSS ")]
            out[k]["rss"] = max(out[k]["rss"], int(rss[-1].split()[1]) / 1024.0 if rss else 0.0)
    return {k: {"seconds": min(v["seconds"]), "peak_rss_mib": v["rss"]} for k, v in out.items()}


def big_table_rows(d: Path, n: int, repeats: int) -> list[dict]:
    sys.path.insert(0, str(HERE))
    from bench_tables import make_table

    path = d / "big.parquet"
    make_table(path, n)
    keys = ",".join(REGIONS)
    rows = []
    cases = {
        "count by group": {
            "dprivacy": f"from dprivacy.data.tables import parse_query, run_query\n"
                        f"run_query({str(path)!r}, parse_query('count'), epsilon=1.0, group_by='Region', keys={list(REGIONS)!r})",
            "diffprivlib": f"import pyarrow.parquet as pq, numpy as np, diffprivlib.tools as t\n"
                           f"g = pq.read_table({str(path)!r}, columns=['Region'])['Region'].to_numpy(zero_copy_only=False)\n"
                           f"[t.count_nonzero(g == k, epsilon=0.5) for k in {list(REGIONS)!r}]",
            "OpenDP": _odp_code(path, n, "q.group_by('Region').agg(dp.len())", by="Region"),
        },
        "bounded mean": {
            "dprivacy": f"from dprivacy.data.tables import parse_query, run_query\n"
                        f"run_query({str(path)!r}, parse_query('avg:Sales'), epsilon=1.0, bounds=(0, 2000), unit=0.01)",
            "diffprivlib": f"import pyarrow.parquet as pq, diffprivlib.tools as t\n"
                           f"x = pq.read_table({str(path)!r}, columns=['Sales'])['Sales'].to_numpy()\n"
                           f"t.mean(x, epsilon=1.0, bounds=(0, 2000))",
            "OpenDP": _odp_code(path, n, "q.select(pl.col('Sales').fill_null(0).dp.mean(bounds=(0.0, 2000.0)))"),
        },
    }
    for task, codes in cases.items():
        got = run_processes(codes, repeats)
        rows.append(_timed_row(f"{task}, {n:,}-row Parquet (whole process)", got))
    return rows


def _odp_code(path, n, build, by=None):
    margins = f"[dp.polars.Margin(by=[], invariant='lengths', max_length={n})" + (
        f", dp.polars.Margin(by=[{by!r}], invariant='keys')]" if by else "]")
    return (f"import opendp.prelude as dp, polars as pl\ndp.enable_features('contrib')\n"
            f"ctx = dp.Context.compositor(data=pl.scan_parquet({str(path)!r}), privacy_unit=dp.unit_of(changes=1), "
            f"privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1, margins={margins})\n"
            f"q = ctx.query()\n({build}).release().collect()")


def _timed_row(task: str, got: dict) -> dict:
    best_peer = min((v["seconds"], k) for k, v in got.items() if k != "dprivacy")
    row = {"task": task, "results": got, "best_peer": best_peer[1],
           "peer_over_dprivacy_time": best_peer[0] / got["dprivacy"]["seconds"]}
    print(f"{task:60s} " + "  ".join(f"{k} {v['seconds']:.3g} s / {v['peak_rss_mib']:.0f} MiB" for k, v in got.items())
          + f"   {best_peer[1]} / dprivacy time = {row['peer_over_dprivacy_time']:.2f}", flush=True)
    return row


def obfuscate_rows(d: Path, sizes, repeats: int) -> list[dict]:
    sys.path.insert(0, str(HERE))
    from bench_locations import make_file

    # dprivacy's bytecode compiled first, as pip does on install: where PYTHONDONTWRITEBYTECODE is set (this machine),
    # every run would otherwise compile its ~40 modules from source again (~0.05 s), which the peers, installed
    # with their bytecode, do not pay
    import compileall

    import dprivacy

    compileall.compile_dir(str(Path(dprivacy.__file__).parent), quiet=1)
    rows = []
    for n in sizes:
        src = d / f"pts-{n}.parquet"
        make_file(src, n)
        codes = {
            # as the console script runs it (main() reads sys.argv: the command line's own process settings apply)
            "dprivacy": f"import sys\nfrom dprivacy.cli import main\n"
                        f"sys.argv = ['dprivacy', 'obfuscate', {str(src)!r}, '-o', {str(d / 'o.parquet')!r}, '--epsilon', '1', "
                        f"'--force']\nmain()",
            # the naive baseline: float planar Laplace (radius Gamma(2, 1/ε), uniform angle) on a flat-earth step
            "numpy float baseline": f"import numpy as np, pyarrow as pa, pyarrow.parquet as pq\n"
                                    f"t = pq.read_table({str(src)!r})\n"
                                    f"lat, lon = t['lat'].to_numpy(), t['lon'].to_numpy()\n"
                                    f"g = np.random.default_rng()\n"
                                    f"r = g.gamma(2.0, 1.0, lat.size); a = g.uniform(0, 2 * np.pi, lat.size)\n"
                                    f"lat2 = lat + r * np.cos(a) / 111.32\n"
                                    f"lon2 = lon + r * np.sin(a) / (111.32 * np.cos(np.radians(lat)))\n"
                                    f"pq.write_table(t.set_column(1, 'lat', pa.array(lat2)).set_column(2, 'lon', "
                                    f"pa.array(lon2)), {str(d / 'b.parquet')!r})",
        }
        got = run_processes(codes, repeats)
        for v in got.values():
            v["points_per_s"] = n / v["seconds"]
        row = _timed_row(f"obfuscate {n:,} points, ε = 1/km (whole process)", got)
        print(f"{'':60s} dprivacy {got['dprivacy']['points_per_s'] / 1e6:.2f} M points/s, baseline "
              f"{got['numpy float baseline']['points_per_s'] / 1e6:.2f} M points/s", flush=True)
        rows.append(row)
    return rows


#: The tasks of :func:`channel_rows` (the beginning of their names).
CHECK_TASKS = ("is this 40×40 channel private?", "smallest ε of a 40×40 Euclidean channel")


def channel_rows(repeats: int) -> list[dict]:
    """40×40 Euclidean grid: a non-private channel judged (early exit), and the smallest ε (full sweep)."""
    import qif

    from dprivacy import measures, spaces

    g = spaces.grid(40, 40)
    d = g.distances
    h = np.exp(-1.0 * d)
    h /= h.sum(axis=1, keepdims=True)  # a planar-Laplace-like grid channel: ε* ≈ 1.34 > 1 (its normalisation)
    eps = 1.0
    rows = []
    cases = {
        "is this 40×40 channel private? (not private)": (
            lambda: qif.measure.d_privacy.is_private(h, lambda i, j: eps * d[i, j]),
            lambda: measures.check_privacy(h, spaces.grid(40, 40), epsilon=eps, smallest=False).ok),
        "smallest ε of a 40×40 Euclidean channel": (
            lambda: qif.measure.d_privacy.smallest_epsilon(h, lambda i, j: d[i, j]),
            lambda: measures.check_privacy(h, spaces.grid(40, 40), epsilon=eps).smallest_epsilon),
    }
    measures.check_privacy(h[:3, :3] / h[:3, :3].sum(1, keepdims=True), spaces.grid(3, 1), epsilon=1.0)  # imports
    for task, (peer, ours) in cases.items():
        t_peer, t_ours, vals, load = [], [], {}, os.getloadavg()[0]
        for _ in range(repeats):
            t0 = time.perf_counter()
            vals["libqif"] = peer()
            t_peer.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            vals["dprivacy"] = ours()
            t_ours.append(time.perf_counter() - t0)
        got = {"libqif": {"seconds": min(t_peer), "peak_rss_mib": 0.0, "answer": float(vals["libqif"])},
               "dprivacy": {"seconds": min(t_ours), "peak_rss_mib": 0.0, "answer": float(vals["dprivacy"])}}
        row = _timed_row(task + f" [answers: libqif {vals['libqif']}, dprivacy {vals['dprivacy']}]", got)
        row["load_average"] = [load, os.getloadavg()[0]]  # the 1-minute load before and after the row
        rows.append(row)
    return rows


def tight_rows(repeats: int) -> list[dict]:
    codes = {
        "libqif": "import numpy as np, qif\nfrom dprivacy import spaces\nd = spaces.grid(100, 100).distances\n"
                  "c = qif.mechanism.d_privacy.tight_constraints(10000, lambda i, j: 1.0 * d[i, j])",
        "dprivacy": "from dprivacy import spaces\nfrom dprivacy.mechanisms import tight_constraints\n"
                    "r = tight_constraints(spaces.grid(100, 100), epsilon=1.0)\nassert r.exists",
    }
    got = run_processes(codes, repeats)
    return [_timed_row("tight-constraints mechanism, 100×100 Euclidean grid, ε = 1 (whole process)", got)]


# ------------------------------------------------------------------------------------------------- report
BEGIN, END = "<!-- bench_peers begin -->", "<!-- bench_peers end -->"


def write_markdown(out: dict, path: Path) -> None:
    lines = [BEGIN, "## dprivacy and its peers side by side (issue 33)", "",
             f"Measured {out['date']} on {out['machine']}, in one run ({out['command']}); versions: "
             + ", ".join(f"{k} {v}" for k, v in out["versions"].items()) + ". Timed rows: the peer and dprivacy "
             "alternately, the minimum of " f"{out['repeats']}" " each; accuracy rows: mean |error| over "
             f"{out['reps']} releases each, interleaved"
             + (f" (the accuracy rows are from an earlier run, {out['accuracy_run']})" if out.get("accuracy_run") else "")
             + (f"; only the {out.get('measured_only', 'obfuscate')} rows were measured in this run, the other timed rows "
                f"are from {out['other_timed_run']}"
                if out.get("other_timed_run") else "")
             + ". The machine was shared with other work: ratios within the run are what counts.", "",
             "| task | ε | mean abs error | dprivacy / best peer |", "|---|---|---|---|"]
    for r in out["accuracy"]:
        errs = ", ".join(f"{k} {v:.4g}" for k, v in r["mean_abs_error"].items())
        lines.append(f"| {r['task']}{' (' + r['note'] + ')' if r['note'] else ''} | {r['epsilon']:g} | {errs} | "
                     f"{r['dprivacy_over_best_peer']:.2f} |")
    lines += ["", "| task | seconds / peak RSS | best peer's time / dprivacy's |", "|---|---|---|"]
    for r in out["timed"]:
        res = ", ".join(f"{k} {v['seconds']:.3g} s" + (f" / {v['peak_rss_mib']:.0f} MiB" if v["peak_rss_mib"] else "")
                        + (f" ({v['points_per_s'] / 1e6:.2f} M points/s)" if "points_per_s" in v else "")
                        for k, v in r["results"].items())
        lines.append(f"| {r['task']} | {res} | {r['peer_over_dprivacy_time']:.2f} ({r['best_peer']}) |")
    lines.append(END)
    section = "\n".join(lines)
    text = path.read_text() if path.exists() else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="releases per accuracy row")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs per timed row (the minimum is kept)")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--points", type=int, nargs="+", default=[2_000_000, 10_000_000])
    ap.add_argument("--skip-heavy", action="store_true", help="skip the 10⁷-row, location and 100×100 rows")
    ap.add_argument("--only-obfuscate", action="store_true", help="measure the obfuscate rows only; every other row "
                    "is kept from the previous run's results_peers.json (labelled with that run)")
    ap.add_argument("--only-check", action="store_true", help="measure the two privacy-check rows (against libqif) "
                    "only; every other row is kept from the previous run's results_peers.json (labelled with its run)")
    ap.add_argument("--skip-accuracy", action="store_true", help="keep the accuracy rows of the previous run's "
                    "results_peers.json (labelled with that run) and measure the timed rows only")
    args = ap.parse_args()
    import importlib.metadata as md
    import platform

    versions = {}
    for p in ("dprivacy", "diffprivlib", "opendp", "qif", "polars", "duckdb", "numpy", "scipy"):
        try:
            versions[p] = md.version(p)
        except md.PackageNotFoundError:
            versions[p] = "not installed"
    out = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
           "command": "python benchmarks/bench_peers.py " + " ".join(sys.argv[1:]), "versions": versions,
           "reps": args.reps, "repeats": args.repeats, "accuracy": [], "timed": []}
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        tables = {
            "seattle-weather": {"parquet": to_parquet(seattle_path(), d / "seattle.parquet"),
                                "value": ("temp_max", -10.0, 40.0, 0.1), "group": "weather",
                                "keys": ["drizzle", "fog", "rain", "snow", "sun"], "where_col": "weather",
                                "where_val": "rain", "candidate_step": 0.1},
            "Superstore": {"parquet": to_parquet(superstore_path(), d / "superstore.parquet"),
                           "value": ("Sales", 0.0, 2000.0, 0.01), "group": "Region", "keys": list(REGIONS),
                           "where_col": "Region", "where_val": "West", "candidate_step": 0.1},
        }
        if args.only_obfuscate or args.only_check:
            prev = json.loads((HERE / "results_peers.json").read_text())
            run = prev.get("accuracy_run") or f"{prev['date']}: {prev['command']}"
            out["accuracy"], out["reps"], out["accuracy_run"] = prev["accuracy"], prev["reps"], run
            if args.only_obfuscate:
                kind, rows, mine = "obfuscate", obfuscate_rows(d, args.points, args.repeats), ("obfuscate",)
            else:
                kind, rows, mine = "privacy-check", channel_rows(args.repeats), CHECK_TASKS
            for r in prev["timed"]:  # the new rows where the old ones were
                if not r["task"].startswith(mine):
                    out["timed"].append(r)
                elif rows:
                    out["timed"] += rows
                    rows = []
            out["timed"] += rows
            out["measured_only"] = kind
            earlier = prev.get("other_timed_run") or f"{prev['date']}: {prev['command']}"
            if prev.get("other_timed_run") and prev.get("measured_only", "obfuscate") != kind:
                earlier = (f"{prev['date']}: {prev['command']} (its {prev.get('measured_only', 'obfuscate')} rows) and "
                           f"{prev['other_timed_run']}")
            out["other_timed_run"] = earlier
            (HERE / "results_peers.json").write_text(json.dumps(out, indent=1, default=float))
            write_markdown(out, HERE / "RESULTS.md")
            return
        out["timed"] += channel_rows(args.repeats)
        if args.skip_accuracy:
            prev = json.loads((HERE / "results_peers.json").read_text())
            out["accuracy"], out["reps"] = prev["accuracy"], prev["reps"]
            out["accuracy_run"] = prev.get("accuracy_run") or f"{prev['date']}: {prev['command']}"
        else:
            out["accuracy"] = accuracy_rows(tables, args.reps)
        if not args.skip_heavy:
            out["timed"] += big_table_rows(d, args.rows, args.repeats)
            out["timed"] += obfuscate_rows(d, args.points, args.repeats)
            out["timed"] += tight_rows(args.repeats)
    (HERE / "results_peers.json").write_text(json.dumps(out, indent=1, default=float))
    write_markdown(out, HERE / "RESULTS.md")


if __name__ == "__main__":
    main()
