"""Run the experiments and write the report: index.html, summary.json and the figures' CSV/PNG."""

from __future__ import annotations

import json
import platform
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path

from .claims import Claim
from .registry import PAPERS, Context, Outcome, load_all
from .report_html import render


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


def run(out: Path, *, quick: bool = False, only: list[str] | None = None, progress=True) -> dict:
    """Run the selected experiments, write the report to ``out`` and return the summary dict.

    ``progress`` (on stderr): True for a bar on a terminal and otherwise a plain line per experiment started
    and finished and at least every 30 s (:mod:`~dprivacy.experiments.progress`); "bar", "plain", False, or
    a reporter object."""
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

    from .progress import make

    reporter = make(progress, len(selected))
    try:
        for exp in selected:
            if reporter is not None:
                reporter.started(exp)
            one(exp)
            if reporter is not None:
                _, o, err, secs = results[-1]
                reporter.finished(exp, secs, error=err is not None, claims=len(o.claims),
                                  differ=sum(c.verdict == "differs" for c in o.claims))
    finally:
        if reporter is not None:
            reporter.stop()

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
    (out / "index.html").write_text(render(summary, results))
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
