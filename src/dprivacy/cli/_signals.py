"""The command line's stop signals and their state: the handlers that :mod:`._process` installs from the first
instruction, whether a signal came (:func:`stopped`), and the one line that says so (:func:`interrupted`). Below
both :mod:`._process` and :mod:`.app`, which read this state; it imports the standard library only."""

from __future__ import annotations

import os
import sys

EXIT_INTERRUPTED = 130


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised like Ctrl-C so that the same clean-up runs (atomic writers remove their
    temporary files, a solver's child process is killed), so `timeout -s TERM` leaves no .partial file."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


#: The signal that asked the command to stop (a KeyboardInterrupt raised from it may come back converted, e.g. by
#: DuckDB as its own interrupt, and would read as Ctrl-C).
_SIGNALLED: list = []

#: Seconds a terminated command has for its clean-up before it exits anyway (a solver in C code, HiGHS, only
#: returns to Python at its next check: `timeout -s TERM 8` took a minute).
TERMINATE_GRACE = 15.0

#: Set once the command is complete: from then on a signal is noted (:func:`_late_signal`), not raised.
_COMPLETE: list = []

#: Signals received once the command's work is complete (its release and sidecar written, or the command returned).
_LATE: list = []


def _terminate(signum, frame):
    import threading

    if not _SIGNALLED:
        _SIGNALLED.append(signum)

        def hard_exit():
            print(f"dprivacy: terminated (signal {signum}; clean-up not finished in {TERMINATE_GRACE:g} s)", file=sys.stderr,
                  flush=True)
            os._exit(128 + signum)

        t = threading.Timer(TERMINATE_GRACE, hard_exit)
        t.daemon = True
        t.start()
    raise _Terminated(signum)


def _stop(signum, frame):
    """The handler of the stop signals from :func:`main`'s first instruction: while the command runs, Ctrl-C raises
    KeyboardInterrupt and SIGTERM/SIGHUP raise :class:`_Terminated`; once it is complete, the signal is noted."""
    import _signal

    if _COMPLETE:
        return _late_signal(signum, frame)
    from .._system import STOP_REQUESTED

    STOP_REQUESTED.append(signum)
    if signum == _signal.SIGINT:
        raise KeyboardInterrupt
    return _terminate(signum, frame)


def _late_signal(signum, frame):
    """From the point where the command's work is complete: a first Ctrl-C or SIGTERM is noted and the command
    finishes (printing its report) with its own exit status — nothing is undone, and a complete release is never
    reported as interrupted; a second one ends the process at once."""
    if _LATE:
        os._exit(128 + signum)
    _LATE.append(signum)


def _stop_being_interruptible(*_) -> None:
    import signal
    import threading

    from .._system import stop_signals

    if threading.current_thread() is threading.main_thread():
        _COMPLETE.append(True)
        for sig in stop_signals():
            signal.signal(sig, _late_signal)


def stopped() -> bool:
    """Whether a stop signal came while the command ran: an error that follows it is reported as the interrupt (C code
    that imports a module turns the KeyboardInterrupt into an ImportError: numpy's import of datetime did)."""
    from .._system import STOP_REQUESTED

    return bool(STOP_REQUESTED)


def interrupted() -> int:
    """Say that the command was stopped by a signal (one line) and return its exit status: 128 + the signal for
    SIGTERM/SIGHUP (possibly seen through another library's interrupt), 130 for Ctrl-C."""
    # A KeyboardInterrupt raised inside a string eval/exec (collections.namedtuple's, while numpy.random loads) leaves
    # CPython's "unhandled interrupt" flag set, and at exit the interpreter would kill itself with SIGINT in place of
    # this status; the next string eval resets the flag.
    eval("None")
    if _SIGNALLED:
        print(f"dprivacy: terminated (signal {_SIGNALLED[0]})", file=sys.stderr)
        return 128 + _SIGNALLED[0]
    print("dprivacy: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def _ignore_stop_signals_at_exit() -> None:
    """The last exit hook of the command line's process: nothing is left to stop, and Python's shutdown resets the
    handlers to the system's default (which would end a finished command as killed by the signal)."""
    import signal

    from .._system import stop_signals

    for sig in stop_signals():
        signal.signal(sig, signal.SIG_IGN)
