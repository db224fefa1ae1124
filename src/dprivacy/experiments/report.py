"""Run the experiments and write the report: index.html, summary.json and the figures' CSV/PNG."""

from __future__ import annotations

import html
import json
import platform
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path

from .claims import Claim
from .registry import PAPER_TITLES, PAPERS, Context, Outcome, load_all


def _versions() -> dict:
    import matplotlib
    import networkx
    import numpy
    import scipy

    from .. import __version__

    return {
        "dprivacy": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "networkx": networkx.__version__,
        "matplotlib": matplotlib.__version__,
    }


def _machine() -> dict:
    import os

    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count()}


def run(out: Path, *, quick: bool = False, only: list[str] | None = None, progress: bool = True) -> dict:
    """Run the selected experiments, write the report to ``out`` and return the summary dict."""
    registry = load_all()
    if only:
        unknown = [i for i in only if i not in registry]
        if unknown:
            raise ValueError(f"unknown experiment id(s) {', '.join(unknown)}: expected some of {', '.join(sorted(registry))}")
        selected = [registry[i] for i in only]
    else:
        selected = list(registry.values())
    final = Path(out)
    if final.exists() and not final.is_dir():
        raise ValueError(f"--out {final} is a file, expected a report folder")
    if final.is_dir() and any(final.iterdir()) and not (final / "summary.json").exists():
        raise ValueError(f"--out {final} is a folder that is not a dprivacy report (no summary.json); refusing to "
                         "replace its contents: choose an empty or new folder")
    if not final.parent.exists():
        raise FileNotFoundError(f"the folder {final.parent} of --out does not exist")
    # Build the report beside its destination and swap it in at the end: a run never leaves files of an
    # earlier run behind (stale figures of experiments not selected this time), and an interrupted run
    # leaves the previous report intact.
    out = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
    try:
        summary = _run_into(out, registry, selected, quick, progress)
        _swap(out, final)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return summary


def _swap(new: Path, final: Path) -> None:
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
    os.replace(new, final)
    os.chmod(final, 0o755 & ~_umask())
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _run_into(out: Path, registry, selected, quick: bool, progress: bool) -> dict:
    ctx = Context(out=out, quick=quick)
    results: list[tuple] = []

    def one(exp):
        t0 = time.perf_counter()
        try:
            outcome = exp.run(ctx)
            error = None
        except Exception:  # an experiment that crashes is reported, not hidden
            outcome = Outcome()
            error = traceback.format_exc()
        results.append((exp, outcome, error, time.perf_counter() - t0))

    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(), transient=False) as bar:
            task = bar.add_task("reproducing", total=len(selected))
            for exp in selected:
                bar.update(task, description=f"{exp.id}")
                one(exp)
                bar.advance(task)
    else:
        for exp in selected:
            one(exp)

    claims = [c for _, o, _, _ in results for c in o.claims]
    summary = {
        "quick": quick,
        "versions": _versions(),
        "machine": _machine(),
        "experiments": [
            {
                "id": e.id,
                "paper": PAPERS[e.paper],
                "title": e.title,
                "seconds": s,
                "error": err,
                "quick_note": e.quick_note if quick else "",
                "figures": [f.__dict__ for f in o.figures],
                "notes": o.notes,
            }
            for e, o, err, s in results
        ],
        "claims": [c.to_json() for c in claims],
        "counts": {
            "claims": len(claims),
            "agrees": sum(c.verdict == "agrees" for c in claims),
            "differs": sum(c.verdict == "differs" for c in claims),
            "not_comparable": sum(c.verdict == "not comparable" for c in claims),
            "errors": sum(err is not None for _, _, err, _ in results),
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=_json_default))
    (out / "index.html").write_text(_html(summary, results))
    return summary


def _json_default(x):
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.bool_):
        return bool(x)
    return str(x)


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%;margin:1em 0;font-size:14px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f2f2f2}
.agrees{background:#e6f4e6}.differs{background:#fbe3e3}.nc{background:#f4f1e0}
figure{display:inline-block;margin:1em;max-width:48%}figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:13px;color:#444}
pre{background:#f8f8f8;padding:8px;overflow:auto;font-size:12px}
.meta{font-size:13px;color:#555}
"""


def _html(summary: dict, results) -> str:
    esc = html.escape
    c = summary["counts"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>dprivacy reproduction report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>dprivacy: the papers recomputed</h1>",
        f"<p>{c['claims']} claims: <b>{c['agrees']}</b> agree, <b>{c['differs']}</b> differ, "
        f"<b>{c['not_comparable']}</b> not comparable; {c['errors']} experiment error(s).</p>",
    ]
    if summary["quick"]:
        parts.append("<p><b>Quick run</b> (<code>--quick</code>): slow experiments were shrunk as noted in their sections; "
                     "claims that depend on problem size were not shrunk.</p>")
    v, m = summary["versions"], summary["machine"]
    parts.append("<p class='meta'>" + esc(", ".join(f"{k} {val}" for k, val in v.items())) + "<br>"
                 + esc(f"{m['platform']}, {m['processor']}, {m['cpus']} CPU(s)") + "</p>")
    by_paper: dict[str, list] = {}
    for exp, outcome, err, secs in results:
        by_paper.setdefault(exp.paper, []).append((exp, outcome, err, secs))
    for paper in sorted(by_paper):
        parts.append(f"<h2>Seed {paper} — {esc(PAPER_TITLES[paper])}</h2><p class='meta'>{PAPERS[paper]}</p>")
        for exp, outcome, err, secs in by_paper[paper]:
            parts.append(f"<h3 id='{esc(exp.id)}'>{esc(exp.title)} <span class='meta'>[{esc(exp.id)}, {secs:.1f} s]</span></h3>")
            if summary["quick"] and exp.quick_note:
                parts.append(f"<p class='meta'>Quick run: {esc(exp.quick_note)}</p>")
            if err:
                parts.append(f"<p class='differs'>The experiment failed; this is a defect to fix:</p><pre>{esc(err)}</pre>")
            if outcome.claims:
                parts.append("<table><tr><th>where</th><th>published</th><th>computed</th><th>tolerance</th><th>verdict</th><th>note</th></tr>")
                for cl in outcome.claims:
                    cls = {"agrees": "agrees", "differs": "differs"}.get(cl.verdict, "nc")
                    tol = "—" if cl.tolerance is None else (f"{cl.tolerance:g}" + (" (relative)" if cl.relative else ""))
                    note = esc(cl.note)
                    if cl.readings:
                        note += "<br><b>Readings tried:</b><ul>" + "".join(
                            f"<li>{esc(r.get('reading', ''))}: {esc(_fmt(r.get('value')))}</li>" for r in cl.readings) + "</ul>"
                    parts.append(
                        f"<tr class='{cls}'><td>{esc(cl.where)}</td><td>{esc(_fmt(cl.published))}</td><td>{esc(_fmt(cl.computed))}</td>"
                        f"<td>{esc(tol)}</td><td>{cl.verdict}</td><td>{note}</td></tr>"
                    )
                parts.append("</table>")
            for n in outcome.notes:
                parts.append(f"<p>{esc(n)}</p>")
            for f in outcome.figures:
                parts.append(f"<figure><a href='{esc(f.png)}'><img src='{esc(f.png)}' alt='{esc(f.caption)}'></a><figcaption>{esc(f.where)}: {esc(f.caption)} "
                             f"(<a href='{esc(f.csv)}'>data</a>)</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)
