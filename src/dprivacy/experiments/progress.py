"""Progress of ``dprivacy reproduce`` on stderr.

On a terminal, a rich progress bar. Otherwise (stderr piped to a file or a CI log) plain lines: one when an
experiment starts, one when it ends, and while one runs a line at least every ``every`` seconds (30 by
default), so that a long run is never silent — the pattern of the command line's solve status. The heartbeat
is a timer thread; ``clock`` is injectable, and :meth:`PlainProgress.tick` can be called directly, so the
lines can be tested without waiting."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable


class PlainProgress:
    """Plain lines on ``stream`` (default: ``sys.stderr`` at the time of writing). ``heartbeat``: seconds
    between the timer thread's checks (None: no thread; :meth:`tick` is then called by the caller)."""

    def __init__(self, total: int, *, stream=None, clock: Callable[[], float] = time.monotonic, every: float = 30.0,
                 heartbeat: float | None = 1.0, prefix: str = "dprivacy reproduce"):
        self.total = total
        self.every = every
        self.prefix = prefix
        self._stream = stream
        self._clock = clock
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._done = 0
        self._current = None  # (index, experiment id, start time)
        self._t0 = clock()
        self._last = self._t0
        if heartbeat is not None:
            threading.Thread(target=self._beat, args=(heartbeat,), name="dprivacy-reproduce-progress", daemon=True).start()

    def _say(self, text: str) -> None:
        # under the lock; stamps the time of the last line (the heartbeat counts from it)
        self._last = self._clock()
        print(f"{self.prefix}: {text}", file=self._stream or sys.stderr, flush=True)

    def started(self, exp) -> None:
        with self._lock:
            i = self._done + 1
            self._current = (i, exp.id, self._clock())
            self._say(f"[{i}/{self.total}] {exp.id} started")

    def finished(self, exp, seconds: float, error: bool = False, claims: int = 0, differ: int = 0) -> None:
        with self._lock:
            self._done += 1
            self._current = None
            what = "FAILED" if error else f"done, {claims} claim{'s' if claims != 1 else ''}" + (f", {differ} differ" if differ else "")
            self._say(f"[{self._done}/{self.total}] {exp.id} {what} in {seconds:.1f} s "
                      f"({self._clock() - self._t0:.0f} s in all)")

    def tick(self) -> None:
        """A line when ``every`` seconds have passed since the last one: which experiment runs, and for how long."""
        with self._lock:
            now = self._clock()
            if self._stopped.is_set() or now - self._last < self.every:
                return
            if self._current is not None:
                i, eid, t = self._current
                self._say(f"[{i}/{self.total}] {eid} still running, {now - t:.0f} s ({now - self._t0:.0f} s in all)")
            else:
                self._say(f"{self._done}/{self.total} experiments done, writing the report ({now - self._t0:.0f} s in all)")

    def _beat(self, every: float) -> None:
        while not self._stopped.wait(every):
            self.tick()

    def stop(self) -> None:
        self._stopped.set()


class BarProgress:
    """A rich progress bar on stderr (for a terminal)."""

    def __init__(self, total: int):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                             TimeElapsedColumn(), console=Console(stderr=True), transient=False)
        self._task = self._bar.add_task("reproducing", total=total)
        self._bar.start()

    def started(self, exp) -> None:
        self._bar.update(self._task, description=exp.id)

    def finished(self, exp, seconds: float, error: bool = False, claims: int = 0, differ: int = 0) -> None:
        self._bar.advance(self._task)

    def stop(self) -> None:
        self._bar.stop()


def make(mode, total: int):
    """The progress reporter for ``report.run(progress=mode)``: True picks the bar on a terminal and plain lines
    otherwise; "bar", "plain", None/False (nothing), or an object with ``started``/``finished``/``stop``."""
    if mode is None or mode is False:
        return None
    if mode is True:
        mode = "bar" if sys.stderr.isatty() else "plain"
    if mode == "bar":
        return BarProgress(total)
    if mode == "plain":
        return PlainProgress(total)
    return mode
