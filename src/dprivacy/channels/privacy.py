"""The d-privacy check of a stored channel: every constraint H[y, z] ≤ e^{ε d(y, y')} H[y', z] (ElSalamouny et al. 2014
Def 1; Chatzikokolakis et al. 2013 Def 1), swept over the space's constraint pairs and every output, on the float64 matrix or on
its exact natural logarithms.

Only the space's *essential pairs* need checking when the space knows them (ElSalamouny et al. 2013 Prop 1: on a graph
metric the adjacent pairs suffice): along a tight chain y = y_0, …, y_k = y' the constraints multiply, so
the largest ratio d_P(H_y, H_y') / d(y, y') over all pairs is attained on an essential pair.

The check sits below the Mechanism object (:mod:`.mechanism` certifies a stored channel with it and checks a
log-held mechanism on its log-entries); :func:`dprivacy.measures.check_privacy` is its front door for
Mechanisms, Channels and matrices alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._validate import check_epsilon
from ..results import Result
from ..spaces import MetricSpace

#: Relative tolerance of the check: a log-ratio ln H[y,z] − ln H[y',z] passes when it is at most
#: ε·d(y,y')·(1 + PRIVACY_RTOL) + the rounding floor. Relative, so that the check keeps its meaning at any
#: scale of ε·d (an absolute 1e-9 made every channel "private" at ε·d ≲ 1e-9).
PRIVACY_RTOL = 1e-9

#: The rounding floor, in units of the float64 spacing of the logarithms compared: a log-ratio of two
#: entries each correct to a few ulps, ln h = ln(h(1 + δ)) − δ, is off by at most ~|δ₁| + |δ₂| plus the
#: rounding of the logs themselves, ~2^-52·|ln h|. The floor is LOG_FLOOR_ULPS · 2^-52 · max(1, max |ln H|)
#: over the compared (positive) entries: 7e-15 for entries near 1/n on small spaces, 2e-13 where the
#: smallest entry is e^-30.
LOG_FLOOR_ULPS = 32


def rounding_floor(log_entries) -> float:
    """The absolute floor of the privacy check for logarithms ``log_entries`` (finite ones only):
    ``LOG_FLOOR_ULPS · 2^-52 · max(1, max |ln H|)``."""
    a = np.asarray(log_entries, dtype=np.float64)
    finite = a[(a > _LOG_ZERO / 2) & np.isfinite(a)]
    big = float(np.abs(finite).max()) if finite.size else 0.0
    return LOG_FLOOR_ULPS * float(np.finfo(np.float64).eps) * max(1.0, big)

#: Elements per chunk when comparing gathered rows (a few MB, to stay near the cache).
_CHUNK_ELEMENTS = 1 << 19


@dataclass(frozen=True)
class PrivacyResult(Result):
    """Outcome of a d-privacy check.

    Attributes
    ----------
    ok : bool
        Whether the channel is ε·d-private: every log-ratio ln H[y,z] − ln H[y',z] is at most
        ε·d(y,y')·(1 + ``rtol``) + ``atol``.
    epsilon : float
        The ε checked.
    smallest_epsilon : float
        The smallest ε' for which the channel is ε'·d-private: max over pairs at finite distance of
        d_P(H_y, H_y') / d(y, y'). ``inf`` when some output is possible from y and impossible from a
        y' at finite distance; 0 for a channel whose rows are equal.
    worst : tuple (y, y', z) or None
        Row indices and output attaining ``smallest_epsilon`` (H[y,z] > H[y',z]); None if no pair.
    worst_ratio : float
        ln(H[y,z] / H[y',z]) at ``worst``.
    distance : float
        d(y, y') at ``worst`` (in the space's units, before scaling by ε).
    pairs_checked : int
        How many unordered pairs were examined (the essential pairs when the space knows them).
    rtol : float
        Relative tolerance on ε·d used for ``ok`` (default :data:`PRIVACY_RTOL`).
    atol : float
        Absolute floor on log-ratios used for ``ok``: the float64 rounding of the logarithms compared
        (:func:`rounding_floor`), unless given.
    complete : bool
        False when the check was asked for the verdict only (``smallest=False``) and stopped at the first
        block of pairs with a violation: ``worst`` is then that violation (the witness: its log-ratio exceeds
        ε·d beyond the tolerance), ``pairs_checked`` counts the pairs examined, and ``smallest_epsilon`` is
        NaN (not computed; it exceeds ε). True when every pair was examined.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1 (§3.1).
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 1.
    """

    ok: bool
    epsilon: float
    smallest_epsilon: float
    worst: tuple[int, int, int] | None
    worst_ratio: float
    distance: float
    pairs_checked: int
    rtol: float = PRIVACY_RTOL
    atol: float = 0.0
    complete: bool = True

    @property
    def reason(self) -> str:
        if self.worst is None:
            return "no pair at finite distance to compare: private for every ε"
        y, y2, z = self.worst
        if not self.complete:
            return (f"NOT private at ε = {self.epsilon:g}: secrets {y}, {y2} and output {z} have log-ratio "
                    f"{self.worst_ratio:.12g} > ε·d = {self.epsilon * self.distance:.12g} (stopped at this violation "
                    f"after {self.pairs_checked:,} pairs; the smallest ε was not computed)")
        verdict = "private" if self.ok else "NOT private"
        return (f"{verdict} at ε = {self.epsilon:g}: the largest log-ratio per unit of distance is "
                f"{self.smallest_epsilon:.12g}, at secrets {y}, {y2} and output {z}")

    @property
    def certificate(self):
        return self.worst

    @property
    def excess(self) -> float:
        """ln-ratio minus ε·d at the worst triple (positive means violated)."""
        return self.worst_ratio - self.epsilon * self.distance if self.worst else -np.inf


#: log(0) is replaced by this finite sentinel so that 0-vs-0 gives 0 and 0-vs-positive gives a huge
#: value, without NaN passes (the smallest positive double has log ≈ −745).
_LOG_ZERO = -1e300
_HUGE = 1e299
#: log-entries larger in magnitude are checked scaled down to it (:func:`check_privacy_log`), far from
#: the sentinels above
_LOG_SCALE_ABOVE = 1e296


def _finite_log(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        out = np.log(a)
    out[a == 0] = _LOG_ZERO
    return out


class _Sweep:
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


def _orient(logh: np.ndarray, pair):
    """(y, y', z, log-ratio, distance) of a pair (i, j, max |log-ratio|, d): the triple with H[y,z] > H[y',z]."""
    i, j, lr, dist = pair
    diff = logh[i] - logh[j]
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


def _all_pairs_sweep(logh: np.ndarray, space: MetricSpace, d, sweep: _Sweep, stop_above: float | None):
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


def _listed_pairs_sweep(logh: np.ndarray, d, space: MetricSpace, pairs, sweep: _Sweep, stop_above: float | None):
    """The listed pairs, in chunks of gathered rows (a few MB each); ``stop_above`` as in :func:`_all_pairs_sweep`."""
    I, J = pairs
    m = logh.shape[1]
    chunk = max(1, _CHUNK_ELEMENTS // max(m, 1))
    for a in range(0, I.size, chunk):
        i, j = I[a : a + chunk], J[a : a + chunk]
        dist = d[i, j] if d is not None else space.pair_distances(i, j)
        top = np.abs(logh[i] - logh[j]).max(axis=1)
        if sweep.add(top, np.asarray(dist, dtype=np.float64), i, j) > (np.inf if stop_above is None else stop_above):
            return


def _every_pair(space: MetricSpace) -> bool:
    """Whether the space's constraint pairs are every pair at finite distance (no essential pairs known), told
    without listing them (listing the 1.3 million pairs of a 40×40 grid took longer than an early "no")."""
    from ..spaces import GridSpace

    if getattr(space, "_essential", None) is not None:
        return False
    if type(space).constraint_pairs is MetricSpace.constraint_pairs:
        return True
    return isinstance(space, GridSpace) and space.metric not in ("manhattan", "chebyshev")


def _check_rows(logh: np.ndarray, space: MetricSpace, epsilon: float, rtol: float, atol: float | None = None, *,
                smallest: bool = True) -> PrivacyResult:
    from ..spaces import GridSpace

    rtol = _check_tol(rtol, "rtol")
    atol = rounding_floor(logh) if atol is None else _check_tol(atol, "atol")
    # The excess of a pair is its log-ratio minus ε·d·(1 + rtol): holds iff the largest excess ≤ atol.
    sweep = _Sweep(epsilon * (1.0 + rtol))
    stop_above = None if smallest else atol
    n = space.n
    d = None if isinstance(space, GridSpace) and space._distances is None else space.distances
    pairs = None if _every_pair(space) else space.constraint_pairs()
    if pairs is None or pairs[0].size > 0.25 * n * (n - 1) / 2:
        # Most pairs are needed anyway: the contiguous all-pairs sweep is cheaper than gathering them.
        _all_pairs_sweep(logh, space, d, sweep, stop_above)
    else:
        _listed_pairs_sweep(logh, d, space, pairs, sweep, stop_above)
    if sweep.pair is None:  # one point, or every pair at infinite distance
        return PrivacyResult(True, epsilon, 0.0, None, 0.0, 0.0, sweep.pairs, rtol, atol)
    ok = bool(sweep.excess <= atol)
    if not ok and not smallest:
        # stopped at the first violation (or swept everything and found one): the witness is the pair of largest
        # excess; the smallest ε is not known (only that it exceeds ε), so it is NaN
        worst, lr, dist = _orient(logh, sweep.excess_pair)
        return PrivacyResult(False, epsilon, float("nan"), worst, lr, dist, sweep.pairs, rtol, atol, complete=False)
    worst, lr, dist = _orient(logh, sweep.pair)
    # (+ 0.0 turns the −0.0 that equal rows can give into 0.0)
    return PrivacyResult(ok, epsilon, max(sweep.ratio, 0.0) + 0.0, worst, lr, dist, sweep.pairs, rtol, atol)


def _check_tol(x, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}") from None
    if not (v >= 0 and np.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    return v


def check_stored_privacy(h: np.ndarray, space: MetricSpace, *, epsilon: float, rtol: float = PRIVACY_RTOL,
                         atol: float | None = None, smallest: bool = True) -> PrivacyResult:
    """The check of :func:`dprivacy.measures.check_privacy` on a stored float64 channel matrix ``h`` (rows:
    the space's points), at ε ≥ 0, with its tolerance; ``smallest=False`` stops at the first violation."""
    e = check_epsilon(epsilon, allow_zero=True)
    if h.shape[0] != space.n:
        raise ValueError(f"channel has {h.shape[0]} rows but the space has {space.n} points")
    if np.isnan(h).any():
        # NaN compares false, so it would pass every constraint: a channel with a NaN entry is not private
        i, j = (int(v[0]) for v in np.nonzero(np.isnan(h)))
        raise ValueError(f"the channel has NaN entries (the first at row {i}, column {j}): not a channel, so not private")
    return _check_rows(_finite_log(h), space, e, rtol, atol, smallest=smallest)


def check_privacy_log(log_matrix, space: MetricSpace, *, epsilon: float, rtol: float = PRIVACY_RTOL,
                      atol: float | None = None, smallest: bool = True) -> PrivacyResult:
    """:func:`check_privacy` for a channel given by the natural logarithms of its entries (−∞ for 0).

    For mechanisms whose entries underflow in float64 (e^{−εd} < 1e-308 when ε·d > 708) but whose
    logarithms are exact, e.g. log H[y,z] = −ε d(y,z) + log z_z for a tight-constraints mechanism: the
    check then concerns the mechanism, not its rounded float64 matrix. ``smallest=False``: stop at the first
    violation (see :func:`dprivacy.measures.check_privacy`).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1 (§3.1).
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 1.
    """
    e = check_epsilon(epsilon, allow_zero=True)
    lg = np.array(log_matrix, dtype=np.float64)
    if lg.ndim != 2 or lg.shape[0] != space.n:
        raise ValueError(f"log matrix must be 2-D with {space.n} rows (one per point), got shape {lg.shape}")
    if np.isnan(lg).any() or (lg == np.inf).any():
        raise ValueError("log matrix must not contain NaN or +inf")
    zero = np.isneginf(lg)
    finite = lg[~zero]
    big = float(np.abs(finite).max()) if finite.size else 0.0
    if not big > _LOG_SCALE_ABOVE:
        lg[zero] = _LOG_ZERO
        return _check_rows(lg, space, e, rtol, atol, smallest=smallest)
    # Log-entries this large (ε·d of 1e299: a truncated geometric at ε = 1e299) reach the sentinel of 0
    # and the threshold of "0 beside a positive entry": the check is homogeneous (ln H and ε·d scaled by
    # the same 1/s, atol too), so it runs on ln H / s and ε / s and is reported in the caller's units.
    scale = big / _LOG_SCALE_ABOVE
    lg = lg / scale
    lg[zero] = _LOG_ZERO
    r = _check_rows(lg, space, e / scale, rtol, None if atol is None else atol / scale, smallest=smallest)
    return replace(r, epsilon=e, smallest_epsilon=r.smallest_epsilon * scale, worst_ratio=r.worst_ratio * scale,
                   atol=r.atol * scale)
