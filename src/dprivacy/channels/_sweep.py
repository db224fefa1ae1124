"""The plain sweeps of the d-privacy check over pairs of rows of ln H (ElSalamouny et al. 2014 Def 1): every pair i < j
in blocks of rows (:func:`all_pairs_sweep`), or a list of pairs (:func:`listed_pairs_sweep`), folded into a
:class:`Sweep` that keeps the pair of largest ratio max_z |ln H[i,z] − ln H[j,z]| / d(i, j) and the pair of largest
excess over ε·d. :mod:`._pruned` settles most pairs by a bound and sweeps the rest with the same fold.
"""

from __future__ import annotations

import numpy as np

from ..spaces import MetricSpace

#: Elements per chunk when comparing gathered rows (a few MB, to stay near the cache).
_CHUNK_ELEMENTS = 1 << 19

#: log(0) is replaced by this finite sentinel so that 0-vs-0 gives 0 and 0-vs-positive gives a huge
#: value, without NaN passes (the smallest positive double has log ≈ −745).
_LOG_ZERO = -1e300
_HUGE = 1e299


def finite_log(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        out = np.log(a)
    out[a == 0] = _LOG_ZERO
    return out


class LogRows:
    """ln H (0 as the sentinel ``_LOG_ZERO``), whole or by rows: from the channel matrix ``h`` (the logarithms of the
    rows asked for, until the whole is needed; ``positive``: h has no zero entry) or from given logarithms ``logh``."""

    def __init__(self, h: np.ndarray | None = None, logh: np.ndarray | None = None, positive: bool = False):
        self.h, self._full, self.positive = h, logh, positive
        self.n, self.m = (h if h is not None else logh).shape

    def rows(self, idx) -> np.ndarray:
        if self._full is not None:
            return self._full[idx]
        return np.log(self.h[idx]) if self.positive else finite_log(self.h[idx])

    def block(self, a: int, b: int, out: np.ndarray) -> np.ndarray:
        """Rows a..b−1 written in ``out``, whose first b − a rows it returns (the caller may overwrite them)."""
        o = out[:b - a]
        if self._full is not None:
            o[...] = self._full[a:b]
        elif self.positive:
            np.log(self.h[a:b], out=o)
        else:
            o[...] = finite_log(self.h[a:b])
        return o

    def full(self) -> np.ndarray:
        if self._full is None:
            self._full = np.log(self.h) if self.positive else finite_log(self.h)
        return self._full


class Sweep:
    """What a sweep over pairs keeps: the pair of largest ratio log-ratio / distance (for ``smallest_epsilon`` and
    the worst triple) and the pair of largest excess log-ratio − ε·d (for ``ok``, decided on the largest excess
    over all pairs, not only at the pair of largest ratio: a farther pair can exceed ε·d + tol by more)."""

    __slots__ = ("ratio", "pair", "excess", "excess_pair", "pairs", "_eps")

    def __init__(self, eps_tol: float):
        self.ratio, self.pair, self.excess, self.excess_pair, self.pairs = -1.0, None, -np.inf, None, 0
        self._eps = eps_tol  # ε·(1 + rtol): the excess of a pair is its log-ratio minus this times d

    def add(self, top, dist, i_idx, j_idx) -> float:
        """Fold in one block: ``top`` = max_z |ln H[i,z] − ln H[j,z]| of the pairs (i_idx, j_idx) at ``dist``
        (flat arrays; pairs at infinite distance constrain nothing, Chatzikokolakis et al. 2013 §3). Returns the block's largest excess."""
        self.pairs += int(top.size)
        if top.size == 0:
            return -np.inf
        top = np.where(top >= _HUGE, np.inf, top)  # a zero beside a positive entry: an infinite log-ratio
        far = np.isinf(dist)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(far, -np.inf, top / dist)
            excess = np.where(far, -np.inf, top - self._eps * dist)
        ratio = np.where(np.isnan(ratio), 0.0, ratio)  # 0/0: equal rows at distance 0 constrain nothing
        excess = np.where(np.isnan(excess), -np.inf, excess)
        k = int(np.argmax(ratio))
        if ratio[k] > self.ratio:
            self.ratio, self.pair = float(ratio[k]), (int(i_idx[k]), int(j_idx[k]), float(top[k]), float(dist[k]))
        k = int(np.argmax(excess))
        if excess[k] > self.excess:
            self.excess, self.excess_pair = float(excess[k]), (int(i_idx[k]), int(j_idx[k]), float(top[k]), float(dist[k]))
        return float(excess[k])


def orient(src: "LogRows", pair):
    """(y, y', z, log-ratio, distance) of a pair (i, j, max |log-ratio|, d): the triple with H[y,z] > H[y',z]."""
    i, j, lr, dist = pair
    a, b = src.rows(np.array([i, j]))
    diff = a - b
    if diff.max() >= -diff.min():
        return (i, j, int(np.argmax(diff))), lr, dist
    return (j, i, int(np.argmin(diff))), lr, dist


#: Blocks of at most this many rows are compared with numpy (the first blocks of the sweep), larger ones with
#: scipy's ``cdist``: an early "no" on a small channel does not pay for importing scipy.spatial (0.3 s).
_NUMPY_ROWS = 2

#: Work (pair × output comparisons) per block of the all-pairs sweep: about 10 ms, so that an early exit stops
#: soon after the first violation and two threads share the blocks evenly.
_BLOCK_WORK = 1 << 23


def _row_blocks(n: int, m: int):
    """Blocks of rows [a, b) of the all-pairs sweep (row i against the rows after it), about :data:`_BLOCK_WORK`
    comparisons each; the first block is one row and a block is at most twice the one before (an early exit
    checks a little first), and the last rows go together."""
    a, prev = 0, 1
    while a < n - 1:
        rows = max(1, min(2 * prev, _BLOCK_WORK // max((n - a - 1) * m, 1))) if a else 1
        b = min(n - 1, a + rows)
        yield a, b
        a, prev = b, rows


def all_pairs_sweep(logh: np.ndarray, space: MetricSpace, d, sweep: Sweep, stop_above: float | None):
    """Every pair i < j: rows [a, b) against the rows after a, one block at a time. max_z |ln H[i,z] − ln H[j,z]|
    is the Chebyshev distance of the log-rows, computed by scipy's ``cdist`` in compiled code (one pass, no
    temporary of the differences, and it releases the GIL: two threads share the blocks). ``stop_above``: stop at
    the first block (in row order) whose largest excess is above it (None: sweep everything)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    n, m = logh.shape

    def block(ab):
        a, b = ab
        if b - a <= _NUMPY_ROWS:  # the first blocks of an early exit: no scipy import for a quick "no"
            top = np.abs(logh[a:b, None, :] - logh[None, a + 1:, :]).max(axis=2)
        else:
            from scipy.spatial.distance import cdist

            top = cdist(logh[a:b], logh[a + 1:], "chebyshev")  # [i − a, j − a − 1]
        dist = (d[a:b, a + 1:] if d is not None else space.distances_from(np.arange(a, b))[:, a + 1:])
        i_loc, j_loc = np.nonzero(np.arange(a + 1, n)[None, :] > np.arange(a, b)[:, None])  # j > i only
        return top[i_loc, j_loc], np.asarray(dist, dtype=np.float64)[i_loc, j_loc], i_loc + a, j_loc + a + 1

    workers = 2 if n * m >= 1 << 16 else 1
    blocks = _row_blocks(n, m)
    first = next(blocks, None)
    if first is None:
        return
    # the first block (one row against all the others) in this thread: an early "no" waits for no thread
    if sweep.add(*block(first)) > (np.inf if stop_above is None else stop_above):
        return
    # an early exit keeps one block ahead per thread (a violation in the first block returns without waiting
    # for much more); the full sweep two
    ahead = workers if stop_above is not None else 2 * workers
    with ThreadPoolExecutor(workers) as ex:
        pending = deque(ex.submit(block, ab) for _, ab in zip(range(ahead), blocks))
        while pending:
            worst = sweep.add(*pending.popleft().result())
            if stop_above is not None and worst > stop_above:
                for f in pending:
                    f.cancel()
                return
            nxt = next(blocks, None)
            if nxt is not None:
                pending.append(ex.submit(block, nxt))


def listed_pairs_sweep(logh: np.ndarray, d, space: MetricSpace, pairs, sweep: Sweep, stop_above: float | None):
    """The listed pairs, in chunks of gathered rows (a few MB each); ``stop_above`` as in :func:`all_pairs_sweep`."""
    I, J = pairs
    m = logh.shape[1]
    chunk = max(1, _CHUNK_ELEMENTS // max(m, 1))
    for a in range(0, I.size, chunk):
        i, j = I[a : a + chunk], J[a : a + chunk]
        dist = d[i, j] if d is not None else space.pair_distances(i, j)
        top = np.abs(logh[i] - logh[j]).max(axis=1)
        if sweep.add(top, np.asarray(dist, dtype=np.float64), i, j) > (np.inf if stop_above is None else stop_above):
            return


def every_pair(space: MetricSpace) -> bool:
    """Whether the space's constraint pairs are every pair at finite distance (no essential pairs known), told
    without listing them (listing the 1.3 million pairs of a 40×40 grid took longer than an early "no")."""
    from ..spaces import GridSpace

    if getattr(space, "_essential", None) is not None:
        return False
    if type(space).constraint_pairs is MetricSpace.constraint_pairs:
        return True
    return isinstance(space, GridSpace) and space.metric not in ("manhattan", "chebyshev")
