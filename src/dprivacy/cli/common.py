"""What every subcommand shares: the one-line error, the number type of options, reading a channel or a prior,
the printed report, and progress on stderr."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

EXIT_NO = 1  # the answer is no (check: not private), like diff and grep
EXIT_USAGE = 2
#: The reader closed the pipe: the status of a process ended by SIGPIPE (128 + 13), which is neither "done"
#: nor "the answer is no" (1 made `dprivacy check ... --json | true` read as "not private").
EXIT_PIPE = 141


def _ascii_float(text: str) -> float:
    """argparse type of every numeric option: a number written with ASCII characters only (Python's
    float() also reads '１' and ' 1 ', which a user did not mean as 1)."""
    import re

    if not re.fullmatch(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)", text,
                        flags=re.ASCII | re.IGNORECASE):
        raise argparse.ArgumentTypeError(f"expected a number written with the ASCII digits 0-9 (e.g. 0.5 or 1e-3), "
                                         f"got {text!r}")
    x = float(text)
    if x == 0 and re.search(r"[1-9]", text.split("e")[0].split("E")[0]):  # 1e-400: "must be > 0, got 0.0"
        raise argparse.ArgumentTypeError(f"{text} is below the smallest positive float64 (about 5e-324)")
    return x


class CliError(Exception):
    """An error to report on one line with exit status 2."""


def examples(*pairs: str) -> dict:
    """``add_parser`` keywords for a subcommand whose ``--help`` ends with examples: ``pairs`` alternate a
    comment and a command line (each command runs as written in a folder with the inputs it names; the
    tests run them all). The formatter keeps the epilog's line breaks, and "examples::" makes it a literal block in
    the documentation (sphinx-argparse reads the epilog as reStructuredText)."""
    lines = ["examples::", ""]
    for comment, command in zip(pairs[::2], pairs[1::2]):
        lines += [f"  # {comment}", f"  {command}"]
    return {"epilog": "\n".join(lines), "formatter_class": argparse.RawDescriptionHelpFormatter}


#: The help text of every --json option.
JSON_HELP = "print exactly one JSON object on stdout, with every figure of the report, instead of the summary"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage over several lines)
        raise CliError(f"{self.prog}: error: {message}")


# -- helpers ------------------------------------------------------------------------------------


def _load_array(path: str, what: str):
    from ..spaces import load_array

    return load_array(path, what, ndmin=2 if what == "channel matrix" else 1)


def _channel(path: str, normalize: bool):
    """A Channel from a file; with ``normalize``, rows within 1e-6 of summing to 1 are rescaled (said in
    the report), anything further is still an error."""
    import numpy as np

    from ..channels import Channel

    h = _load_array(path, "channel matrix")
    if normalize:
        s = h.sum(axis=1)
        bad = np.flatnonzero(np.abs(s - 1) > 1e-6)
        if bad.size:
            raise ValueError(f"--normalize rescales rows within 1e-6 of 1; row {bad[0]} sums to {s[bad[0]]:.12g}")
        h = h / s[:, None]
    try:
        return Channel(h)
    except ValueError as exc:
        if "row-stochastic" in str(exc) and not normalize:
            raise ValueError(f"{exc}; if the rows are off only by rounding, pass --normalize") from None
        raise


def _prior(arg: str | None, n: int, shape: tuple[int, int] | None = None, *, report: dict | None = None):
    """The prior of ``--prior`` (:func:`dprivacy.spaces.read_prior`: 'uniform', a flat vector, or a height×width
    array where the space is a grid of that ``shape``; weights normalised). The normalisation, when there was one,
    is stated in ``report["prior_normalised"]``."""
    from ..spaces import read_prior

    p, note = read_prior("uniform" if arg is None else arg, n, shape=shape)
    if note and report is not None:
        report["prior_normalised"] = note
    return p


def _lp_optimal(gap, requested: float | None = None) -> bool | None:
    """Whether an optimal-mechanism solve reached its relative ``gap`` (``requested``, default the LP's 1e-7): False
    for a run stopped above it (at its time limit), None when the method reports no gap (NaN)."""
    import math

    if requested is None:
        from ..mechanisms.lp_solve import DEFAULT_GAP

        requested = DEFAULT_GAP
    if gap is None or not math.isfinite(float(gap)):
        return None
    return bool(float(gap) <= requested * (1 + 1e-9))


def _grid_shape(space):
    """(height, width) of a grid space (its --prior may be a height×width array), else None."""
    from ..spaces import GridSpace

    return (space.height, space.width) if isinstance(space, GridSpace) else None


def _emit(report: dict, as_json: bool, title: str, kind: str | None = None) -> None:
    """Print ``report``: one JSON object under ``--json``; otherwise the summary of command ``kind`` for people
    (:mod:`.render`), drawn from the same JSON so that it shows nothing the JSON does not hold."""
    import json

    from ..results import dumps

    text = dumps(report)
    if as_json:
        print(text)
        return
    from . import render

    data = json.loads(text)
    if kind in render.RENDERERS:
        render.render(kind, data, title)
        return
    s = render.Summary(title)
    for k, v in data.items():
        s.row(k.replace("_", " "), v)
    s.print()


class _RowProgress:
    """A progress bar on stderr over the rows of a file: with a total for Parquet (from its metadata),
    a running count otherwise. ``update(rows)`` after each batch; ``update(text)`` changes the label."""

    def __init__(self, path, label: str):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        total = None
        if str(path).lower().endswith((".parquet", ".pq")):
            try:
                import pyarrow.parquet as pq

                total = pq.ParquetFile(path).metadata.num_rows
            except Exception:  # the command itself reports an unreadable file
                total = None
        cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
        if total:
            cols.append(TimeRemainingColumn())
        self._p = Progress(*cols, console=Console(stderr=True), transient=True)
        self._task = self._p.add_task(label, total=total)

    def start(self):
        self._p.start()

    def stop(self):
        self._p.stop()

    def update(self, what, total=None):
        if isinstance(what, str):
            self._p.update(self._task, description=what)
        else:
            self._p.update(self._task, completed=what, **({"total": total} if total else {}))


class _SolveStatus:
    """Progress of a long solve on stderr: a rich status line on a terminal; otherwise (with --json too: the JSON
    is on stdout) a plain line after the first 5 s and then every 30 s, so that a long run is never silent. With
    ``heartbeat`` (seconds) a timer thread checks for the plain line too: a solver's first report can
    take longer than that (one round of the decomposition on 50×50 Manhattan is about 30 s). A solve in a
    child process (:func:`~dprivacy.data.interruptible.call_in_child`, forked from the fork server, not from
    this process) has its polling loop call :meth:`tick`."""

    def __init__(self, show_tty: bool, plain: bool, what: str, heartbeat: float | None = None, loss: bool = False):
        import threading

        self.what = what
        #: the LP engines report in gain form (a loss negated): the lines show the user's loss, with its lower bound
        self.loss = loss
        self.plain = plain and not show_tty
        self._status = None
        self._t0 = time.perf_counter()
        self._last = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        if self.plain and heartbeat is not None:
            threading.Thread(target=self._heartbeat, args=(heartbeat,), name="dprivacy-progress", daemon=True).start()
        if show_tty:
            from rich.console import Console

            self._status = Console(stderr=True).status(f"{what}... (Ctrl-C stops)")
            self._status.start()

    def update(self, r) -> None:
        if hasattr(r, "round"):  # a round of an LP engine: its objective (certified, when checked), bound and gap
            sign, word = (-1.0, "loss") if self.loss else (1.0, "utility")
            value = (f"objective {sign * r.objective + 0.0:.9g}" if r.certified != r.certified else
                     f"{word} {sign * r.certified + 0.0:.9g} certified")
            self._text = (f"{self.what}: round {r.round}, {value}, bound {sign * r.bound + 0.0:.9g}, gap {r.gap:.2e}, "
                          f"{r.rows:,} constraints, {r.columns:,} columns")
        else:
            self._text = f"{self.what}: {r}"
        if self._status is not None:
            self._status.update(self._text + " (Ctrl-C stops)")
        self.tick()

    def tick(self) -> None:
        """A plain line on stderr after 5 s and then every 30 s (not on a terminal)."""
        if not self.plain:
            return
        with self._lock:
            now = time.perf_counter() - self._t0
            if self._stopped.is_set() or now < 5 or (self._last is not None and now - self._last < 30):
                return
            self._last = now
            print(f"dprivacy: {getattr(self, '_text', self.what)}, {now:.0f} s (Ctrl-C stops)", file=sys.stderr, flush=True)

    def _heartbeat(self, every: float) -> None:
        while not self._stopped.wait(every):
            self.tick()

    def stop(self) -> None:
        self._stopped.set()
        if self._status is not None:
            self._status.stop()


def _same_file(a, b) -> bool:
    """True when paths a and b name the same file (or folder), existing or not."""
    import os

    pa, pb = Path(a), Path(b)
    try:
        if pa.exists() and pb.exists():
            return os.path.samefile(pa, pb)
    except OSError:
        pass
    return pa.resolve() == pb.resolve()
