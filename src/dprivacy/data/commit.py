"""Putting a finished release in place: never over another one without ``force``, and with its own sidecar.

A release is written to a temporary name beside OUTPUT and moved to OUTPUT when complete (:class:`~.io.AtomicWriter`,
the Dask engine's folder of parts). Checking that OUTPUT does not exist and then renaming is not one step: two runs
on one OUTPUT both passed the check, both renamed, both said they had succeeded, and all releases but the last were
replaced without a word. Here:

* :func:`commit_new` moves the temporary file or folder to OUTPUT with an operation that fails when OUTPUT exists
  (``renameat2(RENAME_NOREPLACE)``; where the system lacks it, ``link`` for a file and ``mkdir`` then a rename onto
  that empty folder for a folder) — of two runs exactly one succeeds, the other gets FileExistsError and removes only
  its own temporary file; with ``force`` the move replaces OUTPUT (the last run wins);
* :func:`release_commit` is the step from that move to the sidecar: other runs committing into the same folder wait
  (an exclusive ``flock`` on the folder itself, which leaves no file behind), so that two runs with ``force`` each
  put their release *and* their sidecar, never one's release beside the other's sidecar; and signals wait
  (:func:`dprivacy._system.signals_held`);
* :func:`fresh_temp_name`: a temporary name known before the file exists, so that an interrupt at any point can
  remove it (``mkstemp`` returns the name only once the file is made: a Ctrl-C in between left it behind).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_renameat2 = []  # [function or None], looked up once


def _libc_renameat2():
    if not _renameat2:
        fn = None
        try:
            import ctypes
            import ctypes.util

            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fn = libc.renameat2  # glibc 2.28 and later
            fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
            fn.restype = ctypes.c_int
        except (OSError, AttributeError, ImportError):
            fn = None
        _renameat2.append(fn)
    return _renameat2[0]


def _rename_noreplace(src, dst) -> bool:
    """Rename ``src`` to ``dst`` in one step unless ``dst`` exists (FileExistsError); False when the system or the
    file system cannot do it (the caller then falls back)."""
    fn = _libc_renameat2()
    if fn is None:
        return False
    import ctypes

    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):  # the kernel or the file system lacks it
        return False
    raise OSError(err, os.strerror(err), str(dst))


def commit_new(tmp, path, *, force: bool) -> None:
    """Move the finished temporary file or folder ``tmp`` to ``path``: with ``force`` over whatever is there; without,
    only if nothing is at ``path`` at that instant (FileExistsError otherwise, ``path`` untouched and ``tmp`` left to
    the caller to remove)."""
    tmp, path = os.fspath(tmp), os.fspath(path)
    if force:
        os.replace(tmp, path)
        return
    try:
        if _rename_noreplace(tmp, path):
            return
        if os.path.isdir(tmp):
            os.mkdir(path)  # claims the name (fails if anything is there); a rename onto an empty folder replaces it
            try:
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.rmdir(path)
                raise
            return
        try:
            os.link(tmp, path)  # fails if anything is at path
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise
            # a file system without hard links: claim the name with an empty file, then rename over it
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.replace(tmp, path)
            return
        os.unlink(tmp)
    except FileExistsError:
        raise FileExistsError(f"output {path} exists (written meanwhile by another run?); it is left as it is: use "
                              "--force to replace it") from None


def fresh_temp_name(path, suffix: str = ".partial") -> Path:
    """A new hidden name beside ``path`` (``.NAME.<random>.partial``), not yet a file: the caller keeps the name, then
    creates the file or folder, so that whatever interrupts it can remove what was made."""
    path = Path(path)
    return path.parent / f".{path.name}.{secrets.token_hex(8)}{suffix}"


@contextlib.contextmanager
def folder_locked(folder):
    """An exclusive lock on ``folder`` itself (``flock`` on the folder's descriptor: nothing is created in it) while
    the body runs; other runs committing into the same folder wait for it. Where the file system does not lock (some
    network file systems), the body runs without the lock. Waiting can be interrupted (Ctrl-C)."""
    try:
        import fcntl

        fd = os.open(os.fspath(folder) or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # no locks on this file system: as before, without
            pass
        yield
    finally:
        os.close(fd)  # (releases the lock)


@contextlib.contextmanager
def release_commit(output_path):
    """The step from a release's move to OUTPUT to its sidecar: the folder locked (:func:`folder_locked`), then the
    stop signals waiting (:func:`dprivacy._system.signals_held`) until the sidecar is written or the release removed.
    A release kept in memory (:class:`~.memory.MemoryRelease`) has no folder and no sidecar: nothing is held."""
    from .._system import STOP_REQUESTED
    from .._system import signals_held
    from .memory import in_memory

    if STOP_REQUESTED:  # a stop signal whose KeyboardInterrupt some C code swallowed: the release is not committed
        raise KeyboardInterrupt
    if in_memory(output_path):
        yield
        return
    with folder_locked(Path(os.path.abspath(output_path)).parent), signals_held():
        yield
