"""What the library needs to know about the process and the files it is given, with the standard library only.

Light on purpose: the command line imports it before any heavy module (numpy, pyarrow, DuckDB), to install its
signal handlers and to see the memory limit before OpenBLAS starts its threads.

* :func:`check_input_file`: every file the library reads (tables, points, priors, key lists, sidecars, ledgers) is a
  regular file, checked by ``stat`` before it is opened — a FIFO waits for a writer for ever (and a pipe can be read
  only once, while the commands read their input twice), a device such as ``/dev/zero`` never ends;
* :func:`stop_signals`: the signals that stop a command;
* :func:`address_space_limit` and :func:`memory_failure`: the memory limit set on the process (``ulimit -v``), and
  whether an exception means that memory ran out;
* :func:`import_pandas_for_pyarrow`: pandas imported where an interrupt is not lost.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_input_file(path, what: str = "input file", *, folder: bool = False, expected: str = "a file") -> None:
    """Refuse ``path`` unless it is a regular file (or, with ``folder``, a folder: a Parquet folder of parts, whose
    parts the reader checks in turn), without opening it: FileNotFoundError when it does not exist, ValueError with
    one line naming the path, what it is and ``expected`` otherwise. Symbolic links are followed."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {path}") from None
    except OSError as exc:  # a name too long, a folder on the way that is a file, no permission
        raise ValueError(f"{what} {path}: {exc.strerror or exc}, expected {expected}") from None
    if stat.S_ISREG(st.st_mode) or (folder and stat.S_ISDIR(st.st_mode)):
        return
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{what} {path} is a folder, expected {expected}")
    kind = next((name for test, name in _KINDS if test(st.st_mode)), "a special file")
    raise ValueError(f"{what} {path} is {kind}, not a regular file: expected {expected} on disk (a pipe waits for a "
                     "writer and is read only once, a device never ends: copy the data to a file first)")


#: Stop signals received while a command runs (appended by the command line's handler): C code that catches the
#: KeyboardInterrupt a signal raised (a module imported from C, pyarrow's import of pandas) must not let the command
#: commit its release as if nothing had happened (:func:`dprivacy.data.commit.release_commit` checks it).
STOP_REQUESTED: list = []


def stop_signals() -> list:
    """SIGINT, SIGTERM and SIGHUP (where it exists) that have a handler: not those ignored, as under nohup, whose
    command must go on when the terminal closes."""
    import signal

    sigs = (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP"))
    return [s for s in sigs if s is not None and signal.getsignal(s) not in (signal.SIG_IGN, None)]


def address_space_limit() -> int | None:
    """The bytes of address space (``ulimit -v``: RLIMIT_AS) or of data (``ulimit -d``: RLIMIT_DATA, which also
    limits mmap on Linux) this process may use, the smaller one; None when neither is limited."""
    try:
        import resource
    except ImportError:  # not on this system
        return None
    limits = []
    for name in ("RLIMIT_AS", "RLIMIT_DATA"):
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            soft = resource.getrlimit(which)[0]
        except (OSError, ValueError):
            continue
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(int(soft))
    return min(limits) if limits else None


#: The variables OpenBLAS reads for its number of threads, in its order.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread_under_a_limit(environ=os.environ) -> bool:
    """Under a memory limit (:func:`address_space_limit`), and unless the user chose a number of threads, set
    ``OPENBLAS_NUM_THREADS=1`` (before numpy is loaded; True when it was set). OpenBLAS reserves about 41 MB of
    address space per core when numpy loads (its buffer and the thread's stack: 98 MB against 139 MB for numpy's
    import on 2 cores, measured), and a failure there ends the process from C ("pthread_create failed", "Memory
    allocation still failed after 10 retries") before Python can say anything: on 64 cores that is 2.6 GB, over a
    limit of 1.5 GB. The commands' dense algebra took no longer on one thread (design --mechanism optimal on a 12×12
    grid: 58 s against 88 s on two)."""
    if address_space_limit() is None or any(environ.get(v) for v in BLAS_THREAD_VARIABLES):
        return False
    environ["OPENBLAS_NUM_THREADS"] = "1"
    return True


#: glibc's mallopt parameters (malloc.h) and the values the command line sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
HEAP_MMAP_THRESHOLD = 32 << 20
HEAP_TRIM_THRESHOLD = 64 << 20


def keep_batch_arrays_in_the_heap() -> bool:
    """With glibc, serve allocations below 32 MiB from the heap and keep up to 64 MiB of freed heap (``mallopt``; True
    when set). glibc's defaults map each array of 128 KiB or more afresh and give freed memory back at once, so every
    batch of a data command (arrays of 0.1–2 MiB, made and freed per batch on several threads) paid for page faults
    and the kernel's zeroing of its pages: 0.40–0.54 s of system time against 0.20–0.31 s with these values, for
    10⁶ points of ``obfuscate`` (measured). The command line's own process only: a library caller's allocator is its
    own. The values are upper bounds on memory kept, not taken."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # (glibc only: musl has no mallopt thresholds)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, HEAP_TRIM_THRESHOLD))


class _PandasNotUsed:
    """A meta path finder for which pandas is not installed (:func:`pyarrow_without_pandas`)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError(f"{name} is not used by this command (dprivacy._system.pyarrow_without_pandas)")
        return None


_PANDAS_NOT_USED = _PandasNotUsed()

#: The command line's commands that read and write files through pyarrow and DuckDB only (their local engine).
COMMANDS_WITHOUT_PANDAS = frozenset({"obfuscate", "query", "series"})


def pyarrow_without_pandas() -> bool:
    """Make pandas unavailable to this process (True when it was not loaded yet). pyarrow imports pandas on its first
    conversion to or from numpy (``to_numpy``, ``pa.array``) when pandas is installed — 0.2 s of a command's start —
    and works the same without it (pandas is optional to pyarrow: the conversions of numbers, text and the other types
    the data commands use do not involve it). For the command line's own process only, and only for the commands that
    use no pandas (:data:`COMMANDS_WITHOUT_PANDAS` on the local engine): pyarrow then remembers, for the rest of the
    process, that pandas is absent. It also closes the window :func:`import_pandas_for_pyarrow` guards."""
    import sys

    if "pandas" in sys.modules:
        return False
    if _PANDAS_NOT_USED not in sys.meta_path:
        sys.meta_path.insert(0, _PANDAS_NOT_USED)
    return True


def import_pandas_for_pyarrow() -> None:
    """Import pandas (when installed) from Python, before pyarrow does. pyarrow imports it from C++ the first time it
    converts an array to numpy (``to_numpy``, even zero-copy: about 0.45 s here), with the command's threads running: a
    Ctrl-C in that window can be lost (the command goes on, writes its release and exits 0) or leave pandas
    half-imported ("partially initialized module 'pandas'", reported as an internal error). Imported here, in the main
    thread, an interrupt stops the command as anywhere else; the time is the same, since pyarrow would import it
    anyway."""
    import importlib.util
    import sys

    if "pandas" in sys.modules or _PANDAS_NOT_USED in sys.meta_path or importlib.util.find_spec("pandas") is None:
        return
    import pandas  # noqa: F401


#: Address space OpenBLAS's buffer takes when a thread first multiplies matrices (32 MB in its builds for x86-64, and
#: guard pages), with a margin.
BLAS_BUFFER_BYTES = 48 * 2**20


def reserve_blas_buffer() -> None:
    """Under a memory limit, have OpenBLAS allocate its buffer now (a 64×64 product) rather than at the first product
    of the work: OpenBLAS allocates it on first use and, when that fails, prints "Memory allocation still failed after
    10 retries, giving up" and ends the process from C (exit 1; seen under ulimit -v 400000 in obfuscate). Before it,
    MemoryError when the limit leaves less than :data:`BLAS_BUFFER_BYTES` (the process's size read from /proc), which
    the caller reports in one line. Other threads that multiply matrices allocate their own buffer later: that case
    still ends in C."""
    limit = address_space_limit()
    if limit is None:
        return
    size = None
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    size = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        size = None
    if size is not None and limit - size < BLAS_BUFFER_BYTES:
        raise MemoryError(f"memory ran out: {size / 2**20:.0f} MB of the address-space limit of {limit / 2**20:.0f} MB "
                          "(ulimit -v) are taken once the program is loaded, and the linear algebra needs "
                          f"{BLAS_BUFFER_BYTES / 2**20:.0f} MB more")
    import numpy as np

    a = np.ones((64, 64))
    a @ a


def memory_failure(exc) -> str | None:
    """One line saying that memory ran out, when ``exc`` is a failure to allocate or to load (a MemoryError, numpy's
    and pyarrow's included; DuckDB's OutOfMemoryException; a shared library that could not be mapped; a thread that
    could not be started); None for any other exception."""
    text = str(exc).strip()
    msg = text.splitlines()[0] if text else ""
    low = msg.lower()
    if "memory ran out" in low:  # (said already, e.g. by a ledger's charge of the failure)
        return msg
    if isinstance(exc, MemoryError):
        # (the library's own refusals, "... needs about 12 GiB ... over the memory limit", already say it)
        return msg if "memory" in low else f"memory ran out ({msg or type(exc).__name__})"
    if type(exc).__name__ == "OutOfMemoryException" or "out of memory error" in low:  # DuckDB
        return f"memory ran out ({msg})"
    if isinstance(exc, (ImportError, OSError)) and ("failed to map segment" in low or "cannot allocate memory" in low
                                                   or getattr(exc, "errno", None) == errno.ENOMEM):
        return f"memory ran out while loading the program ({msg})"
    if "can't start new thread" in low or "failed to launch worker thread" in low:  # Python's, pyarrow's
        return f"memory ran out: a thread could not be started ({msg})"
    return None


class RefusedWithDetail(ValueError):
    """A refusal whose message says what is wrong without a person's values; ``detail`` names the row and its values,
    for the data owner only (the command line prints it with ``--owner``)."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail

    def __reduce__(self):  # (raised on Dask workers too)
        return (RefusedWithDetail, (str(self), self.detail))


@contextlib.contextmanager
def signals_held():
    """Ctrl-C, SIGTERM and SIGHUP wait (noted, delivered on leaving) while a release is renamed into place and its
    sidecar written, so that a release never stands beside another release's sidecar, nor a sidecar without its
    release. The handlers are swapped, not the thread's signal mask: CPython runs every handler in the main thread
    whichever thread the kernel chose, and a mask blocks only its own thread. A handler installed inside (the
    command line's, once the release is complete) stays and gets the waiting signal. Main thread only."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list = []

    def wait(signum, frame):
        pending.append(signum)

    saved = {sig: signal.signal(sig, wait) for sig in stop_signals()}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if signal.getsignal(sig) is wait:
                signal.signal(sig, handler)
        if pending:
            signal.raise_signal(pending[0])
