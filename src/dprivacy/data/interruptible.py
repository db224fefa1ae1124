"""Long solves that Ctrl-C can stop: run a function in a child process and wait for it interruptibly.

The optimal mechanism's linear program runs for minutes inside HiGHS (C++), where Python's signal
handler cannot run: Ctrl-C would be ignored until HiGHS returns. :func:`call_in_child` runs the function
in a child process (which ignores SIGINT) and waits for its answer in short polls; on Ctrl-C (or
any exception) the parent kills the child — its memory goes with it — and re-raises, so the command
stops at once with its usual one line and exit status 130. Progress reports of the child (the LP's
rounds) are passed back through the same pipe and handed to ``progress`` in the parent.

The child is forked from multiprocessing's fork server, a process with no threads, not from the caller: a
fork of a process whose other threads hold a lock (stderr's, the import lock, a progress thread's) gives a
child that waits on that lock for ever. The function, its arguments and its result therefore travel
pickled.
"""

from __future__ import annotations

import os
import signal


def _child(conn, fn, args, kwargs, with_progress: bool) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it kills this process on Ctrl-C
    try:
        if with_progress:
            kwargs = dict(kwargs, progress=lambda r: conn.send(("progress", r)))
        out = fn(*args, **kwargs)
        msg = ("ok", out)
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        msg = ("error", exc)
    try:
        conn.send(msg)
    except Exception as exc:  # an unpicklable result or exception: say so
        conn.send(("error", RuntimeError(f"{type(exc).__name__} while returning from the worker process: {exc}")))
    finally:
        conn.close()
        os._exit(0)  # no atexit handlers, no flushing of the parent's inherited buffers


def call_in_child(fn, *args, progress=None, tick=None, poll: float = 0.2, **kwargs):
    """``fn(*args, **kwargs)`` computed in a child process (from the fork server), returned here; exceptions re-raised.

    ``progress``: if given, ``fn`` is called with ``progress=`` a function that sends each report to
    the parent, where ``progress(report)`` is called; ``tick()`` is called at every poll (about 5 times a
    second) while waiting. KeyboardInterrupt (or any exception) in the parent
    while waiting kills the child and propagates. Where ``forkserver`` is not available the function runs in
    this process (and Ctrl-C is honoured only between the solver's rounds).
    """
    import multiprocessing as mp

    try:
        ctx = mp.get_context("forkserver")
    except ValueError:
        if progress is not None:
            kwargs = dict(kwargs, progress=progress)
        return fn(*args, **kwargs)
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args, kwargs, progress is not None), daemon=True)
    proc.start()
    send.close()
    try:
        while True:
            if tick is not None:
                tick()
            if recv.poll(poll):
                try:
                    kind, payload = recv.recv()
                except EOFError:
                    proc.join()
                    raise MemoryError(f"the solver's process ended without an answer (exit status {proc.exitcode}; "
                                      "out of memory?): use larger cells or a smaller region") from None
                if kind == "progress":
                    if progress is not None:
                        progress(payload)
                    continue
                proc.join()
                if kind == "error":
                    raise payload
                return payload
            if not proc.is_alive() and not recv.poll(0):
                raise MemoryError(f"the solver's process ended without an answer (exit status {proc.exitcode}; out of "
                                  "memory?): use larger cells or a smaller region")
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
        recv.close()
