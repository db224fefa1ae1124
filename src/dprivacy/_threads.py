"""Thread pools kept for the life of the process, one per purpose.

Creating threads per call costs fresh malloc arenas (page faults on the first large arrays) and start-up
time on every batch; the pools are made on first use and grown when a caller asks for more threads.
The work handed to them releases the GIL (numpy kernels, HiGHS ``run``).
"""

from __future__ import annotations

import threading

_POOLS: dict = {}
_LOCK = threading.Lock()


def thread_pool(name: str, threads: int):
    """The process's pool ``name`` with at least ``threads`` workers."""
    from concurrent.futures import ThreadPoolExecutor

    with _LOCK:
        pool = _POOLS.get(name)
        if pool is None or pool._max_workers < threads:
            pool = _POOLS[name] = ThreadPoolExecutor(threads, thread_name_prefix=f"dprivacy-{name}")
        return pool
