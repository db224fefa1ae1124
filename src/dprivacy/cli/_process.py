"""The command line's process: the stop signals from its first instruction to its exit, and how it ends.

``dprivacy`` (the console script: ``dprivacy.cli:main``) and ``python -m dprivacy`` / ``python -m dprivacy.cli`` call
:func:`main` before any command's module is loaded — this module and :mod:`dprivacy._system` import the standard
library only. From there:

* Ctrl-C (SIGINT), SIGTERM and SIGHUP stop the command with one line on standard error — ``dprivacy: interrupted``
  (exit 130) or ``dprivacy: terminated (signal N)`` (exit 128 + N) — whether they come while argparse, numpy,
  pyarrow or DuckDB load (about the first second), during the work, or while another outcome is being reported. They
  raise (SIGTERM and SIGHUP as :class:`_Terminated`, a KeyboardInterrupt) so that the same clean-up runs: atomic
  writers remove their temporary files, a solver's child process is killed.
* Once the command is complete (its release and sidecar written: ``io.ON_COMPLETE``; or it returned its status) a
  first signal is noted and the command finishes with its own status; a second ends the process at once. At the
  very end of the interpreter's shutdown the stop signals are ignored: Python resets its handlers to the system's
  default there, and a signal then ended a finished command "killed by SIGINT".
* C code that catches the KeyboardInterrupt does not make the command go on, nor misreport it: numpy's C extension
  imports datetime with PyCapsule_Import, which turns it into an ImportError (datetime is imported first, here), and
  pyarrow imports pandas from C++ (pandas is imported first, :func:`dprivacy._system.import_pandas_for_pyarrow`, or,
  for the file commands, made unavailable: :func:`dprivacy._system.pyarrow_without_pandas`); an
  error that follows a stop signal is reported as the interrupt (:func:`stopped`), and a release is not committed
  after one (``_system.STOP_REQUESTED``, checked by ``data.commit.release_commit``).
* Under a memory limit (``ulimit -v``) OpenBLAS is given one thread before numpy loads
  (:func:`dprivacy._system.one_blas_thread_under_a_limit`).
* glibc keeps batch-sized arrays in the heap (:func:`dprivacy._system.keep_batch_arrays_in_the_heap`).
* :func:`main` called in-process (``main(argv)``) puts the caller's handlers back and hands it a signal noted late.

What remains outside: a signal in the first milliseconds (about 20 ms here, 30 ms on a loaded machine), while Python
starts, runs the console script's ``import re`` and imports this package, before :func:`main` runs, meets Python's
own handling — a KeyboardInterrupt traceback for SIGINT, the system's default
action (the process killed) for SIGTERM and SIGHUP.
"""

from __future__ import annotations

from ._signals import (_COMPLETE, _LATE, _ignore_stop_signals_at_exit, _stop, _stop_being_interruptible,  # noqa: F401
                       interrupted, stopped)

def _install() -> dict:
    """Install :func:`_stop` for the stop signals, in the main thread, and return the handlers it replaced. The C
    module ``_signal`` only: ``signal`` imports ``enum``, and ``threading`` is not loaded yet at this point of the
    console script (a Ctrl-C while they loaded was a traceback)."""
    import _signal

    restore = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(_signal, name, None)
        if sig is None:
            continue
        try:
            old = _signal.getsignal(sig)
            # ignored (nohup): stays ignored; Ctrl-C: ours only where Python's own is installed (a caller's handler is
            # kept, as the caller wants it)
            if old in (_signal.SIG_IGN, None) or (name == "SIGINT" and old is not _signal.default_int_handler):
                restore[sig] = old
                continue
            restore[sig] = _signal.signal(sig, _stop)
        except ValueError:  # not the main thread: the handlers are the main thread's own work's
            return {}
    return restore


def main(argv=None) -> int:
    """Run the command line (``argv``: the arguments, default ``sys.argv[1:]``) and return its exit status."""
    _LATE.clear()
    _COMPLETE.clear()
    from .._system import STOP_REQUESTED

    STOP_REQUESTED.clear()
    restore: dict = {}
    hooked = False
    code = None
    try:
        try:  # (the handlers installed inside: a signal right after them is reported like any other)
            restore = _install()
            # numpy's C extension imports datetime with PyCapsule_Import, which turns a KeyboardInterrupt meanwhile into
            # an ImportError ("Importing the numpy C-extensions failed"): imported here, an interrupt stays one
            import datetime  # noqa: F401
            import threading

            from .._system import keep_batch_arrays_in_the_heap, one_blas_thread_under_a_limit

            in_main_thread = threading.current_thread() is threading.main_thread()
            if argv is None:  # the command line's own process (a library caller's environment is theirs)
                import atexit

                atexit.register(_ignore_stop_signals_at_exit)  # (registered first: run last)
                one_blas_thread_under_a_limit()
                keep_batch_arrays_in_the_heap()
            from ..data import io as data_io
            from . import app

            if in_main_thread:
                # (only here: a main() in another thread must not change the handlers of the main thread's own work)
                hooked = True
                data_io.ON_COMPLETE.append(_stop_being_interruptible)
            code = app._main(argv)
            if argv is None:
                _COMPLETE.append(True)
        except KeyboardInterrupt:  # a signal while the modules loaded, or while _main reported another outcome
            if argv is None:
                _COMPLETE.append(True)
            code = interrupted()
        return code
    finally:
        if hooked and _stop_being_interruptible in data_io.ON_COMPLETE:
            data_io.ON_COMPLETE.remove(_stop_being_interruptible)
        if argv is None:
            # the command line's own process: from here to its exit a signal no longer turns a finished command
            # into a traceback nor a wrong exit status
            _stop_being_interruptible()
        else:  # called in-process (argv given): the caller's handlers come back, and a signal noted late reaches them
            import signal

            for sig, handler in restore.items():
                signal.signal(sig, handler)
            late, _LATE[:] = list(_LATE), []
            _COMPLETE.clear()
            if late:
                signal.raise_signal(late[0])
