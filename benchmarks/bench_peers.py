"""dprivacy side by side with its peers on the rows of issue 33's table, in one run on one machine.

Peers (the ``bench`` extra: ``pip install -e '.[bench]'``): diffprivlib 0.6.6 (IBM; needs scikit-learn < 1.6),
OpenDP 0.16 with its Polars front end, and libqif's Python bindings (``qif``). Data: seattle-weather (the copy
shipped by ``vega-datasets``: bokeh-sampledata, which the issue names, ships no seattle-weather in any of its
versions) and Superstore (``SampleSuperstore.csv.gz`` of bokeh-sampledata); synthetic Parquet files for the
10-million-row and location rows.

Every timed row runs the peer and dprivacy alternately, ``--repeats`` times each (interleaved), and keeps the
minimum; the ratio is printed. Accuracy rows report the mean |error| over ``--reps`` releases or more (until its
standard error is within 10% of it) at the same ε and
bounds, all in release mode (fresh randomness), with its standard error, and the expected |error| of each tool by
its own noise law (dprivacy's stated accuracy, OpenDP's ``summarize()``, diffprivlib's laws from its source; for the
median, each tool's selection law — permute-and-flip for dprivacy and OpenDP, the exponential mechanism for
diffprivlib — computed from the data), which has no sampling error: at 200 releases a Laplace's mean
|error| has a standard error of 7% of itself, and the smaller of two peers' noisy means is biased low. The neighbouring relation is one row replaced with the row count
public for dprivacy and OpenDP (``unit_of(changes=1)``, lengths invariant); diffprivlib's tools are defined for
one row added or removed, and its per-group counts are given ε/2 each so that one replaced row (which can move
between two groups) is covered as for the others. Times measured while other work shares the machine are noisy:
the ratios within one run are what counts.

    python benchmarks/bench_peers.py [--reps 200] [--repeats 3] [--skip-heavy] [--only-accuracy] [--laws-only]

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


def _dp_law(path, spec, eps, **kw):
    """dprivacy's own E|error| of the release (the exact worst case over the answer range, averaged over groups);
    None where it is stated in ranks only (a percentile under standard)."""
    from dprivacy.data.tables import parse_query, run_query

    r = run_query(str(path), parse_query(spec), epsilon=eps, rng=0, **kw)
    errs = [a.expected_abs_error for a in r.answers]
    return None if any(e != e for e in errs) else float(np.mean(errs))


def _geometric_abs(scale: float) -> float:
    """E|K| of the two-sided geometric (integer Laplace) P(K = k) ∝ exp(−|k|/scale): 2α/(1 − α²), α = e^{−1/scale}."""
    a = np.exp(-1.0 / scale)
    return float(2 * a / (1 - a * a))


def _odp_law(summary, n: int):
    """OpenDP's E|error| from its own summary of the query (distribution and scale): a float Laplace of scale b has
    E|K| = b, an integer Laplace the two-sided geometric's; a mean is its noisy sum over the public length (scale 0);
    None for anything else (a quantile's selection)."""
    rows = summary.to_dicts()
    noisy = [r for r in rows if r["scale"] and r["scale"] > 0]
    if len(noisy) != 1:
        return None
    r = noisy[0]
    if r["distribution"] == "Float Laplace":
        e = float(r["scale"])
    elif r["distribution"] == "Integer Laplace":
        e = _geometric_abs(float(r["scale"]))
    else:
        return None
    lengths = [q for q in rows if q["aggregate"] == "Length"]
    return e / n if lengths and r["aggregate"] == "Sum" else e


def accuracy_rows(tables: dict, reps: int) -> list[dict]:
    """Mean |error| of count, count by group, bounded sum and mean (ε = 1), and of the median (ε = 0.1 and 1)."""
    import diffprivlib.tools as dpl
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    rows = []
    laws = accuracy_laws(tables)

    resolved: dict = {}

    def odp(df, eps, build, by=None, summary=False, key=None):
        """OpenDP's release of ``build`` at ``eps``. With ``key``, the query is resolved into its measurement once
        (OpenDP's Context searches the noise scale at every release: 0.5 s for a median, 2 ms to invoke it) and the
        measurement is invoked on the data for each release: the same mechanism and noise law."""
        if key is not None and (key, eps) in resolved:
            return resolved[key, eps](df.lazy()).collect()
        margins = [dp.polars.Margin(by=[], invariant="lengths", max_length=len(df))]
        if by:
            margins.append(dp.polars.Margin(by=[by], invariant="keys"))
        ctx = dp.Context.compositor(data=df.lazy(), privacy_unit=dp.unit_of(changes=1),
                                    privacy_loss=dp.loss_of(epsilon=eps), split_evenly_over=1, margins=margins)
        q = build(ctx.query())
        if summary:
            return q.summarize()
        if key is None:
            return q.release().collect()
        m = resolved[key, eps] = q.resolve()
        assert m.map(1) <= eps * (1 + 1e-9), (key, eps, m.map(1))  # (the context's budget: one replaced row costs eps)
        return m(df.lazy()).collect()

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
                "count": lambda eps: float(odp(df, eps, lambda q: q.filter(pl.col(wcol) == wval).select(dp.len()),
                                               key=(name, "count"))[0, 0]),
                "count by group": lambda eps: _odp_groups(odp(df, eps, lambda q: q.group_by(gcol).agg(dp.len()), by=gcol,
                                                              key=(name, "count by group")), gcol, keys),
                "bounded sum": lambda eps: float(odp(df, eps, lambda q: q.select(
                    pl.col(col).fill_null(0).dp.sum(bounds=(lo, hi))), key=(name, "bounded sum"))[0, 0]),
                "bounded mean": lambda eps: float(odp(df, eps, lambda q: q.select(
                    pl.col(col).fill_null(0).dp.mean(bounds=(lo, hi))), key=(name, "bounded mean"))[0, 0]),
            },
        }
        for task in ("count", "count by group", "bounded sum", "bounded mean"):
            rows.append(_accuracy(f"{task} ({name})", 1.0, truth[task], ours[task],
                                  {p: f[task] for p, f in peers.items()}, reps, law=laws[f"{task} ({name})", 1.0]))
        # the median: diffprivlib's median, OpenDP's with candidates every `step`, dprivacy's default with --unit `step`
        # (the same candidate set as OpenDP's)
        med = float(np.median(np.clip(x, lo, hi)))
        step = t["candidate_step"]
        cand = list(np.round(np.arange(lo, hi + step / 2, step), 6))
        for eps in (0.1, 1.0):
            rows.append(_accuracy(
                f"median ({name} {col}, bounds {lo:g}..{hi:g})", eps, med,
                lambda e: _dp_answer(t["parquet"], f"percentile:{col}:50", e, bounds=(lo, hi), unit=step)[0],
                {"diffprivlib": lambda e: dpl.median(x, epsilon=e, bounds=(lo, hi)),
                 "OpenDP": lambda e: float(odp(df, e, lambda q: q.select(
                     pl.col(col).fill_null(0).dp.median(candidates=cand)), key=(name, "median"))[0, 0])}, reps,
                note=f"OpenDP's candidates and dprivacy's --unit every {step:g}", law=laws[f"median ({name} {col}, bounds {lo:g}..{hi:g})", eps]))
    return rows


def accuracy_laws(tables: dict) -> dict:
    """Each tool's E|error| by its own noise law, for every accuracy row: {(task, ε): {tool: E|error|}}. No release is
    drawn: dprivacy's stated accuracy, OpenDP's ``summarize()``, diffprivlib's laws from its source (count_nonzero: a
    geometric of sensitivity 1; sum: a Laplace of scale (U − L)/ε; mean: (U − L)/(n·ε), both truncated to the answer
    range, far from the truth here), and for the median each tool's selection law computed from the data
    (:func:`_median_laws`)."""
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    laws = {}
    for name, t in tables.items():
        df = pl.read_parquet(t["parquet"])
        col, lo, hi, unit = t["value"]
        gcol, keys, wcol, wval = t["group"], t["keys"], t["where_col"], t["where_val"]
        n, where = len(df), f"{wcol} = '{wval}'"
        law = {
            "count": {"dprivacy": _dp_law(t["parquet"], "count", 1.0, where=where), "diffprivlib": _geometric_abs(1.0)},
            "count by group": {"dprivacy": _dp_law(t["parquet"], "count", 1.0, group_by=gcol, keys=keys),
                               "diffprivlib": _geometric_abs(2.0)},
            "bounded sum": {"dprivacy": _dp_law(t["parquet"], f"sum:{col}", 1.0, bounds=(lo, hi), unit=unit),
                            "diffprivlib": (hi - lo) / 1.0},
            "bounded mean": {"dprivacy": _dp_law(t["parquet"], f"avg:{col}", 1.0, bounds=(lo, hi), unit=unit),
                             "diffprivlib": (hi - lo) / (n * 1.0)},
        }
        odp_build = {
            "count": (lambda q: q.filter(pl.col(wcol) == wval).select(dp.len()), None),
            "count by group": (lambda q: q.group_by(gcol).agg(dp.len()), gcol),
            "bounded sum": (lambda q: q.select(pl.col(col).fill_null(0).dp.sum(bounds=(lo, hi))), None),
            "bounded mean": (lambda q: q.select(pl.col(col).fill_null(0).dp.mean(bounds=(lo, hi))), None),
        }
        for task, (build, by) in odp_build.items():
            margins = [dp.polars.Margin(by=[], invariant="lengths", max_length=n)]
            if by:
                margins.append(dp.polars.Margin(by=[by], invariant="keys"))
            ctx = dp.Context.compositor(data=df.lazy(), privacy_unit=dp.unit_of(changes=1),
                                        privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1, margins=margins)
            law[task]["OpenDP"] = _odp_law(build(ctx.query()).summarize(), n)
            laws[f"{task} ({name})", 1.0] = law[task]
        x = df[col].fill_null(0).to_numpy().astype(float)
        step = t["candidate_step"]
        cand = np.round(np.arange(lo, hi + step / 2, step), 6)
        for eps in (0.1, 1.0):
            laws[f"median ({name} {col}, bounds {lo:g}..{hi:g})", eps] = _median_laws(x, lo, hi, step, cand, eps)
    return laws


def _ranks(values: np.ndarray, candidates: np.ndarray):
    xs = np.sort(values)
    lt = np.searchsorted(xs, candidates, side="left")
    return lt, xs.size - np.searchsorted(xs, candidates, side="right"), xs.size


def _odp_log_weights(values, candidates, eps) -> np.ndarray:
    """OpenDP's median: the score |#{x < c} − #{x > c}| (checked with make_quantile_score_candidates; sensitivity 2
    under one row replaced, hence the scale 4/ε its ``summarize()`` states), as log-weights −ε·score/4."""
    lt, gt, _ = _ranks(values, candidates)
    return -eps * np.abs(lt - gt) / 4.0


def _dp_log_weights(values, candidates, eps) -> np.ndarray:
    """dprivacy's median: the distance from n/2 to the span of the positions of c's rows (the i-th smallest at
    i − ½), or to c's position #{x < c} when no row holds c, as log-weights −ε·distance/2
    (:mod:`dprivacy.mechanisms.rank_quantile`)."""
    lt, gt, n = _ranks(values, candidates)
    held = (lt + gt < n).astype(float)
    return -eps * np.maximum(0.0, np.maximum(lt + held / 2 - n / 2, gt + held / 2 - n / 2)) / 2.0


def _exponential_abs(logw: np.ndarray, candidates: np.ndarray, med: float) -> float:
    """E|c − med| of the exponential mechanism, P(c) ∝ exp(logw[c])."""
    p = np.exp(logw - logw.max())
    return float((p * np.abs(candidates - med)).sum() / p.sum())


def _permute_and_flip_abs(logw: np.ndarray, candidates: np.ndarray, med: float) -> float:
    """E|c − med| of permute-and-flip with coins w_c = exp(logw[c] − max), equivalently report-noisy-max with
    exponential noise (McKenna and Sheldon 2020; Ding et al. 2021): P(c) = w_c·∫_0^1 Π_{d≠c} (1 − w_d·t) dt.
    Candidates of one weight share their law (grouped); the integral by Gauss–Legendre on panels whose ends grow
    geometrically from 10^-14/Σw to 1 (the product falls like exp(−t·Σw) near 0); the sum of the P(c) is checked
    against 1."""
    levels, inverse, counts = np.unique(logw - logw.max(), return_inverse=True, return_counts=True)
    w = np.exp(levels)
    edges = np.unique(np.concatenate([[0.0], np.geomspace(1e-14 / (counts * w).sum(), 1.0, 200)]))
    x, gw = np.polynomial.legendre.leggauss(24)
    a, b = edges[:-1, None], edges[1:, None]
    t = ((b - a) / 2 * x + (a + b) / 2).ravel()
    dt = ((b - a) / 2 * gw).ravel()
    p_level = np.zeros(levels.size)
    for c0 in range(0, t.size, 400):  # (chunks of t: levels × t at once would not fit for 20,001 candidates)
        tc, dc = t[c0:c0 + 400], dt[c0:c0 + 400]
        log1 = np.log1p(-np.minimum(w[:, None] * tc[None, :], 1.0))  # (levels, t)
        total = (counts[:, None] * log1).sum(axis=0)
        with np.errstate(invalid="ignore"):
            others = np.where(np.isfinite(log1), total[None, :] - log1, -np.inf)
        p_level += (w[:, None] * np.exp(others) * dc[None, :]).sum(axis=1)
    assert abs((p_level * counts).sum() - 1.0) < 1e-9, (p_level * counts).sum()
    p = p_level[inverse]
    return float((p * np.abs(candidates - med)).sum())


def _median_laws(x: np.ndarray, lo: float, hi: float, unit: float, cand: np.ndarray, eps: float) -> dict:
    """E|error| of each tool's median at ε, exactly from the data (the truth: the median of the clamped values).
    dprivacy: the values clamped and rounded to the --unit lattice as it reads them (half away from zero), every
    lattice point a candidate, permute-and-flip (its default; "dprivacy (exponential)": ``--mechanism exponential``);
    OpenDP: its candidates; diffprivlib: an interval between consecutive sorted clamped
    values (the bounds added) chosen with probability ∝ its length · exp(−ε·|i − n/2|/2), then a uniform point in it."""
    c = np.clip(x, lo, hi)
    med = float(np.median(c))
    v = c / unit
    grid = np.sign(v) * np.floor(np.abs(v) + 0.5)
    lattice = np.arange(round(lo / unit), round(hi / unit) + 1, dtype=float)
    ours = _permute_and_flip_abs(_dp_log_weights(grid, lattice, eps), lattice, med / unit) * unit
    ours_em = _exponential_abs(_dp_log_weights(grid, lattice, eps), lattice, med / unit) * unit
    odp = _permute_and_flip_abs(_odp_log_weights(x, cand, eps), cand, med)
    ends = np.sort(np.append(c, [lo, hi]))
    a, b = ends[:-1], ends[1:]
    i = np.arange(a.size)
    logw = -eps * np.abs(i - c.size / 2) / 2
    w = (b - a) * np.exp(logw - logw.max())
    inside = np.where(b > a, ((med - a) ** 2 + (b - med) ** 2) / (2 * np.where(b > a, b - a, 1)), 0.0)
    e = np.where(med <= a, (a + b) / 2 - med, np.where(med >= b, med - (a + b) / 2, inside))
    return {"dprivacy": ours, "dprivacy (exponential)": ours_em, "diffprivlib": float((w * e).sum() / w.sum()),
            "OpenDP": odp}


def _odp_groups(frame, gcol, keys):
    got = dict(zip(frame[gcol].to_list(), frame["len"].to_list()))
    return np.array([float(got.get(k, 0)) for k in keys])


#: An accuracy row draws ``--reps`` more releases of every tool while some tool's mean |error| has a standard error
#: above this share of itself (a median that is exact in 96% of releases: 200 releases left 30–40%)...
TARGET_RELATIVE_SE = 0.1
#: ... up to this many times ``--reps`` releases in all.
MAX_REPS_FACTOR = 20


def _accuracy(task, eps, truth, ours, peers: dict, reps: int, note: str = "", law: dict | None = None) -> dict:
    """Mean |error| (averaged over groups for grouped answers) over at least ``reps`` releases of each, interleaved, with
    its standard error (more releases, ``reps`` at a time, until each tool's is at most :data:`TARGET_RELATIVE_SE` of
    its mean, or :data:`MAX_REPS_FACTOR`·``reps`` of them); and, where every tool's noise law gives it (``law``), the
    expected |error| without sampling error.

    The measured ratio to the *best* peer is biased upwards when the tools are equally accurate: the smaller of two
    noisy means is too small on average (by about 0.56 standard errors for two equal ones), and at 200 releases a
    Laplace's mean |error| has a standard error of 7% of itself. The ratio by the noise laws has neither."""
    errs = {"dprivacy": [], **{p: [] for p in peers}}

    def stats():
        mean = {k: float(np.mean(v)) for k, v in errs.items()}
        se = {k: float(np.std(v, ddof=1) / np.sqrt(len(v))) for k, v in errs.items()}
        return mean, se

    while True:
        for _ in range(reps):
            for p, f in peers.items():
                errs[p].append(float(np.mean(np.abs(np.asarray(f(eps), dtype=float) - truth))))
            errs["dprivacy"].append(float(np.mean(np.abs(np.asarray(ours(eps), dtype=float) - truth))))
        mean, se = stats()
        done = all(se[k] <= TARGET_RELATIVE_SE * mean[k] for k in mean if mean[k] > 0)
        if done or len(errs["dprivacy"]) >= MAX_REPS_FACTOR * reps:
            break
    reps = len(errs["dprivacy"])
    best_peer = min(mean[p] for p in peers)
    row = {"task": task, "epsilon": eps, "mean_abs_error": mean, "standard_error": se, "reps": reps,
           "dprivacy_over_best_peer": mean["dprivacy"] / best_peer if best_peer > 0 else float("inf"), "note": note}
    if law and all(law.get(k) is not None for k in mean):
        row["expected_abs_error_by_law"] = {k: float(v) for k, v in law.items() if v is not None}
        row["law_dprivacy_over_best_peer"] = law["dprivacy"] / min(law[p] for p in peers)
    print(f"{task:60s} ε={eps:<4g} " + "  ".join(f"{k} {v:.4g} ± {se[k]:.2g}" for k, v in mean.items())
          + f"   dprivacy / best peer = {row['dprivacy_over_best_peer']:.2f}"
          + (f"   by the laws {row['law_dprivacy_over_best_peer']:.3f}" if "law_dprivacy_over_best_peer" in row else ""),
          flush=True)
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
             f"at least {out['reps']} releases each, interleaved, more ({out['reps']} at a time) until every tool's "
             f"standard error is within {TARGET_RELATIVE_SE:.0%} of its mean or {MAX_REPS_FACTOR}×{out['reps']} releases "
             "(the releases column)"
             + (f" (the accuracy rows are from an earlier run, {out['accuracy_run']})" if out.get("accuracy_run") else "")
             + (f"; only the {out.get('measured_only', 'obfuscate')} rows were measured in this run, the other timed rows "
                f"are from {out['other_timed_run']}"
                if out.get("other_timed_run") else "")
             + (f"; only the accuracy rows were measured in this run (load average {out['load_average'][0]:.2f} at its "
                f"start, {out['load_average_after'][0]:.2f} at its end), the timed rows are from {out['timed_run']}"
                if out.get("timed_run") else "")
             + (f"; the E|error| by the noise laws computed {out['laws_computed']}" if out.get("laws_computed") else "")
             + ". The machine was shared with other work: ratios within the run are what counts.", "",
             "| task | ε | releases | mean abs error ± standard error | dprivacy / best peer | E\\|error\\| by each tool's "
             "noise law | dprivacy / best peer, by the laws |", "|---|---|---|---|---|---|---|"]
    for r in out["accuracy"]:
        se = r.get("standard_error", {})
        errs = ", ".join(f"{k} {v:.4g}" + (f" ± {se[k]:.2g}" if k in se else "") for k, v in r["mean_abs_error"].items())
        law = r.get("expected_abs_error_by_law")
        laws = ", ".join(f"{k} {v:.4g}" for k, v in law.items()) if law else "—"
        ratio = f"{r['law_dprivacy_over_best_peer']:.3f}" if law else "—"
        lines.append(f"| {r['task']}{' (' + r['note'] + ')' if r['note'] else ''} | {r['epsilon']:g} | "
                     f"{r.get('reps', out['reps']):,} | {errs} | "
                     f"{r['dprivacy_over_best_peer']:.2f} | {laws} | {ratio} |")
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
    ap.add_argument("--reps", type=int, default=200, help="releases per accuracy row (at least; more where the standard "
                    "error is above 10%% of the mean)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs per timed row (the minimum is kept)")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--points", type=int, nargs="+", default=[2_000_000, 10_000_000])
    ap.add_argument("--skip-heavy", action="store_true", help="skip the 10⁷-row, location and 100×100 rows")
    ap.add_argument("--only-obfuscate", action="store_true", help="measure the obfuscate rows only; every other row "
                    "is kept from the previous run's results_peers.json (labelled with that run)")
    ap.add_argument("--only-accuracy", action="store_true", help="measure the accuracy rows only; every timed row is "
                    "kept from the previous run's results_peers.json (labelled with that run)")
    ap.add_argument("--laws-only", action="store_true", help="recompute the accuracy rows' E|error| by each tool's noise "
                    "law (no release drawn) in the previous run's results_peers.json, keeping its measured rows")
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
        if args.laws_only:
            prev = json.loads((HERE / "results_peers.json").read_text())
            laws = accuracy_laws(tables)
            for r in prev["accuracy"]:
                law = laws[r["task"], r["epsilon"]]
                r.pop("expected_abs_error_by_law", None)
                r.pop("law_dprivacy_over_best_peer", None)
                if all(law.get(k) is not None for k in r["mean_abs_error"]):
                    r["expected_abs_error_by_law"] = {k: float(v) for k, v in law.items() if v is not None}
                    peers = [k for k in r["mean_abs_error"] if k != "dprivacy"]
                    r["law_dprivacy_over_best_peer"] = law["dprivacy"] / min(law[k] for k in peers)
            prev["laws_computed"] = f"{time.strftime('%Y-%m-%d')}: python benchmarks/bench_peers.py --laws-only"
            (HERE / "results_peers.json").write_text(json.dumps(prev, indent=1, default=float))
            write_markdown(prev, HERE / "RESULTS.md")
            return
        if args.only_accuracy:
            prev = json.loads((HERE / "results_peers.json").read_text())
            out["timed"], out["repeats"] = prev["timed"], prev["repeats"]
            out["timed_run"] = prev.get("timed_run") or (
                f"{prev['date']}: {prev['command']}" + (f" (its {prev.get('measured_only', 'obfuscate')} rows; the others "
                                                        f"from {prev['other_timed_run']})" if prev.get("other_timed_run") else ""))
            out["load_average"] = os.getloadavg()
            out["accuracy"] = accuracy_rows(tables, args.reps)
            out["load_average_after"] = os.getloadavg()
            (HERE / "results_peers.json").write_text(json.dumps(out, indent=1, default=float))
            write_markdown(out, HERE / "RESULTS.md")
            return
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
            earlier = prev.get("timed_run") or prev.get("other_timed_run") or f"{prev['date']}: {prev['command']}"
            if prev.get("laws_computed"):
                out["laws_computed"] = prev["laws_computed"]
            if not prev.get("timed_run") and prev.get("other_timed_run") and prev.get("measured_only", "obfuscate") != kind:
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
