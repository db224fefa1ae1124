"""Memory and size guards of the command line: refuse, before any large allocation, a command whose
whole pipeline would not fit.

Every command estimates the peak memory of everything it will do (building the space and the
mechanism, the privacy check, the measures), from the sizes alone, and refuses above
:func:`memory_limit` with one line that gives the estimate, the limit and what to try instead. The
estimates are *measured*, not guessed: peak resident memory of the command at a few sizes, fitted to
``BASE + k · 8n²`` (dense n × n float64 arrays alive at once) or ``BASE + bytes per cell · cells``
(structured grids); the constants below name their measurement. They are upper estimates: a refusal may
be a little early, an accepted command does not die for memory.

The limit is :data:`MEMORY_FRACTION` of the machine's physical memory (``os.sysconf``), or the
``DPRIVACY_MEMORY_LIMIT`` environment variable (bytes, or a number with K, M, G or T), and at most the process's
address-space limit (``ulimit -v``) less :data:`ADDRESS_SPACE_OVERHEAD`.
"""

from __future__ import annotations

import math
import os
import re

#: The share of physical memory one command may plan to use.
MEMORY_FRACTION = 0.5

#: Interpreter, numpy, scipy and HiGHS loaded: ~60-90 MB measured, rounded up.
BASE_BYTES = 150 * 2**20

#: Address space a command uses beyond its resident memory (libraries mapped, allocator reserves): peak virtual size
#: less peak resident size of ``design`` measured at 200 MB (line:1000, line:2000, grid:30x30 tight-constraints, one
#: OpenBLAS thread), rounded up. Under ``ulimit -v`` the estimates are compared with the limit less this.
ADDRESS_SPACE_OVERHEAD = 256 * 2**20

#: Dense n × n float64 arrays alive at the peak of ``design`` (mechanism built, privacy check, utility,
#: leakage), measured as (peak RSS − base) / 8n² at n = 1000 and 2000 (line, clique, ring, grid:30x30).
DENSE_ARRAYS = {
    "truncated-geometric": 4,   # measured 3.5
    "exponential": 4,           # 3.5
    "randomized-response": 4,   # 3.6
    "laplace": 10,              # 9.2 (quadrature of the CDF differences)
    "planar-laplace": 12,       # 11.5 at grid:30x30
    "tight-constraints": 6,     # 5.6 (Φ, its factorisation, the channel, the check)
    "symmetric": 4,             # 3.2
    "optimal": 8,               # 7.0 on line:1000/2000 (distances, tent LP, channel, repair lifts, check)
}

#: HiGHS memory per row of a full privacy-constraints LP (two non-zeros, interior point with crossover):
#: measured 1.1 GB for the 718,200 rows and 360,000 variables of line:600 (--method full), 1.5 KB a row.
LP_BYTES_PER_ROW = 1600

#: Structured (FFT + conjugate-gradient) tight-constraints on a grid: measured 761 MB peak at 1000×1000
#: (10⁶ cells), 173 MB at 400×400: about 730 bytes a cell.
STRUCTURED_BYTES_PER_CELL = 800

#: ... and the threshold search on a grid: 130 MB at 600×600, 73 MB at 300×300, about 210 bytes a cell.
THRESHOLD_BYTES_PER_CELL = 250

#: The structured grid path is refused above this many cells (2000 × 2000), whatever the memory: at
#: 730 bytes and ~9 µs a cell measured (1000×1000: 761 MB, 8.9 s) it is ~2.9 GB and a few minutes of
#: work here, and the time grows faster than the cells (more CG iterations; the threshold search
#: solves many times). Larger grids: a coarser cell (--cell, or a larger step) gives the same ε·d.
STRUCTURED_MAX_CELLS = 4_000_000

#: Bytes of a bare structured grid space per cell (coordinates, labels on demand).
GRID_BYTES_PER_CELL = 48

#: The sum line (``sum:U,V``) on its matrix-free path, peak resident memory measured at 150,001 and
#: 1,500,001 answers (Δ = 5, ε = 2; 2026-11-26): ``design --mechanism tight-constraints`` (solve, spot
#: check, utility, leakage, capacity) 174 MB and 1.12 GB, about 720 bytes an answer; ``threshold`` and
#: ``prior`` 118/116 MB and 584/572 MB, about 340 bytes an answer. The time grows faster than the answers
#: (the threshold search at 1,500,001 answers: 42 solves, 262 s), so the path is limited as ``query``'s is.
SUM_LINE_BYTES_PER_ANSWER = 800
SUM_LINE_SEARCH_BYTES_PER_ANSWER = 400
SUM_LINE_MAX_ANSWERS = 5_000_000


def physical_memory() -> int | None:
    """Bytes of physical memory (``os.sysconf``), or None where the system does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def memory_limit() -> tuple[int, str]:
    """(bytes, how it was set): ``DPRIVACY_MEMORY_LIMIT`` if set, else MEMORY_FRACTION of physical memory
    (8 GiB when the system does not say); at most the address-space limit (``ulimit -v``) less
    :data:`ADDRESS_SPACE_OVERHEAD` (a command planned on the machine's memory died under the limit with numpy's
    "Unable to allocate", or in OpenBLAS)."""
    from .._system import address_space_limit

    limit, how = _memory_limit()
    space = address_space_limit()
    if space is not None and space - ADDRESS_SPACE_OVERHEAD < limit:
        return max(space - ADDRESS_SPACE_OVERHEAD, 0), (f"the address-space limit of {_gib(space)} (ulimit -v) less "
                                                         f"{_gib(ADDRESS_SPACE_OVERHEAD)} for the libraries")
    return limit, how


def _memory_limit() -> tuple[int, str]:
    env = os.environ.get("DPRIVACY_MEMORY_LIMIT")
    if env:
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([KMGT]?)i?B?\s*", env, flags=re.I)
        if not m:
            raise ValueError(f"DPRIVACY_MEMORY_LIMIT={env!r}: expected a number of bytes, e.g. 8G or 500M")
        return int(float(m.group(1)) * _UNITS[m.group(2).upper()]), f"DPRIVACY_MEMORY_LIMIT={env.strip()}"
    phys = physical_memory()
    if phys is None:
        return 8 * 2**30, "8 GiB (the system does not report its memory; set DPRIVACY_MEMORY_LIMIT)"
    return int(MEMORY_FRACTION * phys), (f"{MEMORY_FRACTION:.0%} of the {phys / 2**30:.0f} GiB of RAM; "
                                         "set DPRIVACY_MEMORY_LIMIT to change it")


def _gib(x: float) -> str:
    return f"{x / 2**30:.1f} GiB" if x < 2**30 * 1e4 else f"{x / 2**30:.3g} GiB"


def refuse_over_memory(need: float, what: str, instead: str = "") -> None:
    """Raise ``MemoryError`` (one line: the estimate, the limit, what to try) when ``need`` bytes is over
    :func:`memory_limit`."""
    limit, how = memory_limit()
    if need > limit:
        tail = f"; {instead}" if instead else ""
        raise MemoryError(f"{what} needs about {_gib(need)} at its peak (estimated from its size), over the "
                          f"memory limit of {_gib(limit)} ({how}){tail}")


# -- sizes of SPACE specs without building them ---------------------------------------------------


def spec_points(spec: str) -> tuple[float, bool] | None:
    """(number of points, is structured: a grid or a sum line) of a SPACE spec, computed from its numbers only (the
    spec is validated by :func:`~dprivacy.cli.specs.parse_space` later); None for ``matrix:``/``graph:``
    (their size is the file's) and for specs this cannot read. The count is a float: it may be huge."""
    if not isinstance(spec, str) or ":" not in spec:
        return None
    kind, body = spec.split(":", 1)
    kind = kind.strip().lower()
    nums = [int(x) for x in re.findall(r"[0-9]+", body.split(":")[0])] if re.fullmatch(r"[0-9x,]+", body.split(":")[0]) else None
    if not nums or any(len(str(x)) > 9 for x in nums):  # malformed or over-long: parse_space says why
        return None
    try:
        if kind in ("line", "ring", "clique") and len(nums) == 1:
            return float(nums[0]), False
        if kind == "count" and len(nums) == 1:
            return float(nums[0] + 1), False
        if kind == "grid" and len(nums) == 2:
            return float(nums[0]) * float(nums[1]), True
        if kind == "hamming" and len(nums) == 2:
            return (math.inf if nums[0] * math.log10(max(nums[1], 1)) > 300 else float(nums[1]) ** nums[0]), False
        if kind == "sum" and len(nums) == 2:  # a SumLineSpace: structured (matrix-free front doors)
            return float(nums[0]) * nums[1] + 1, True
        if kind == "kcount" and len(nums) == 2:
            return (math.inf if nums[1] * math.log10(nums[0] + 1) > 300 else float(nums[0] + 1) ** nums[1]), False
    except OverflowError:
        return math.inf, False
    return None


def _points(n: float) -> str:
    if not math.isfinite(n):
        return "more than 10^300"
    return f"{n:,.0f}" if n < 1e15 else f"{n:.3g}"


def space_bytes(n: float, grid: bool) -> float:
    """Memory of the space itself: a dense n × n distance matrix, or a structured grid."""
    return GRID_BYTES_PER_CELL * n if grid else 8.0 * n * n


def _is_sum(spec: str) -> bool:
    return isinstance(spec, str) and spec.split(":", 1)[0].strip().lower() == "sum"


def check_structured_cells(spec: str, n: float, what: str) -> None:
    """Refuse the structured grid path above :data:`STRUCTURED_MAX_CELLS` (a sum line above
    :data:`SUM_LINE_MAX_ANSWERS`)."""
    if _is_sum(spec):
        if n > SUM_LINE_MAX_ANSWERS:
            raise MemoryError(f"{spec} has {_points(n)} answers: {what} on a sum's answers is limited to "
                              f"{SUM_LINE_MAX_ANSWERS:,} answers (measured ~720 bytes an answer, and the time grows faster "
                              "than the answers); use a coarser unit (fewer, larger values per individual)")
        return
    if n > STRUCTURED_MAX_CELLS:
        raise MemoryError(f"{spec} has {_points(n)} cells: {what} on a grid is limited to {STRUCTURED_MAX_CELLS:,} cells "
                          "(2000x2000; measured ~730 bytes and ~9 µs a cell); use a coarser grid (a larger cell or step)")


def guard_design(spec: str, mechanism: str, *, n: float | None = None, grid: bool | None = None,
                 lp_rows: float | None = None) -> None:
    """The whole ``design`` pipeline of ``mechanism`` on ``spec``: refuse before building when it would not
    fit. ``n``/``grid`` override the spec's size (for ``matrix:``/``graph:`` once loaded); ``lp_rows``
    adds a full LP of that many privacy rows (``--mechanism optimal``)."""
    if n is None:
        size = spec_points(spec)
        if size is None:
            return
        n, grid = size
    if mechanism == "tight-constraints" and grid:
        check_structured_cells(spec, n, "tight-constraints")
        per, unit = (SUM_LINE_BYTES_PER_ANSWER, "answers") if _is_sum(spec) else (STRUCTURED_BYTES_PER_CELL, "cells")
        refuse_over_memory(BASE_BYTES + per * n, f"tight-constraints on {spec} ({_points(n)} {unit})")
        return
    k = DENSE_ARRAYS.get(mechanism, 8)
    need = BASE_BYTES + k * 8.0 * n * n
    extra = ""
    if lp_rows:
        need += LP_BYTES_PER_ROW * lp_rows
        extra = f" and a linear program of {lp_rows:,.0f} privacy constraints"
    dense = f"{k} dense {_points(n)}x{_points(n)} arrays" if math.isfinite(n) else "dense n×n arrays"
    refuse_over_memory(need, f"{mechanism} on {spec[:60]} ({_points(n)} points: {dense}{extra})",
                       "use a smaller space" + (" or --method constraint-generation" if lp_rows else "")
                       + (" (on grids and sum:U,V, tight-constraints is structured and needs no dense matrix)"
                          if mechanism != "tight-constraints" else ""))


def guard_threshold(spec: str) -> None:
    size = spec_points(spec)
    if size is None:
        return
    n, grid = size
    if grid:
        check_structured_cells(spec, n, "the threshold search")
        per, unit = (SUM_LINE_SEARCH_BYTES_PER_ANSWER, "answers") if _is_sum(spec) else (THRESHOLD_BYTES_PER_CELL, "cells")
        refuse_over_memory(BASE_BYTES + per * n, f"the threshold search on {spec} ({_points(n)} {unit})")
    else:
        refuse_over_memory(BASE_BYTES + 6 * 8.0 * n * n, f"the threshold search on {spec} ({_points(n)} points: "
                           f"6 dense {_points(n)}x{_points(n)} arrays)")


def guard_prior(spec: str) -> None:
    """``prior``: the regularity test and both bounds go through :func:`dprivacy.regularity`, structured on
    grids (bytes per cell as tight-constraints, the same cell limit) and on the dense Φ elsewhere
    (measured 4.9 arrays of 8n² with the dense tester)."""
    size = spec_points(spec)
    if size is None:
        return
    n, grid = size
    if grid:
        check_structured_cells(spec, n, "the regularity test")
        per, unit = (SUM_LINE_SEARCH_BYTES_PER_ANSWER, "answers") if _is_sum(spec) else (STRUCTURED_BYTES_PER_CELL, "cells")
        refuse_over_memory(BASE_BYTES + per * n, f"the regularity test on {spec} ({_points(n)} {unit})")
        return
    refuse_over_memory(BASE_BYTES + 6 * 8.0 * n * n, f"the regularity test on {spec} ({_points(n)} points: "
                       f"6 dense {_points(n)}x{_points(n)} arrays)", "use a smaller space")


def matrix_shape(path: str) -> tuple[int, int] | None:
    """The shape a .npy file declares (its header only), or None for other files."""
    if not str(path).lower().endswith(".npy") or not os.path.isfile(path):
        return None
    import numpy as np

    try:
        head = np.load(path, allow_pickle=False, mmap_mode="r")
    except Exception:  # load_array reports an unreadable file with its own message
        return None
    shape = tuple(int(s) for s in head.shape)
    if len(shape) == 1:
        return (1, shape[0])
    return shape if len(shape) == 2 else None


def guard_check(matrix_path: str, spec: str) -> None:
    """``check``: the channel's rows must be the space's points (said before building the space), and the
    check (the matrix, its logs and the row differences: 4 copies of n × m, plus the space) must fit."""
    size = spec_points(spec)
    shape = matrix_shape(matrix_path)
    if size is None or shape is None:
        return
    n, grid = size
    if shape[0] != n:
        raise ValueError(f"the channel in {matrix_path} has {shape[0]:,} rows but {spec} has {_points(n)} points: "
                         "expected one row per point of the space")
    m = shape[1]
    refuse_over_memory(BASE_BYTES + 4 * 8.0 * n * m + space_bytes(n, grid),
                       f"checking the {shape[0]:,}x{m:,} channel on {spec}")
