"""The d-privacy check of a stored channel: every constraint H[y, z] ≤ e^{ε d(y, y')} H[y', z] (seed 000
Def 1; seed 002 Def 1), swept over the space's constraint pairs and every output, on the float64 matrix or on
its exact natural logarithms.

Only the space's *essential pairs* need checking when the space knows them (seed 004 Prop 1: on a graph
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

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1 (§3.1).
    .. [2] ``002_3df4dd999d47c651.txt``: Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
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


    @property
    def reason(self) -> str:
        if self.worst is None:
            return "no pair at finite distance to compare: private for every ε"
        y, y2, z = self.worst
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


def _better(best, per_unit, top_pos, top_neg, dist, i_idx, j_idx, logh, epsilon):
    """Update ``best`` with the largest ratio in a block, orienting the worst triple.

    ``best`` is (ratio per unit distance, (y, y', z), log-ratio, distance, largest excess), where the
    excess of a pair is its log-ratio minus ε·d: ``ok`` is decided on the largest excess over all
    pairs, not only at the pair of largest ratio (a farther pair can exceed ε·d + tol by more).
    """
    top = np.maximum(top_pos, top_neg)
    with np.errstate(invalid="ignore"):
        excess = np.where(np.isinf(dist), -np.inf, np.where(top >= _HUGE, np.inf, top) - epsilon * dist)
    exc = max(best[4], float(excess.max()) if excess.size else -np.inf)
    k = int(np.argmax(per_unit))
    if not per_unit[k] > best[0]:
        return best[:4] + (exc,)
    i, j = int(i_idx[k]), int(j_idx[k])
    diff = logh[i] - logh[j]
    if top_pos[k] >= top_neg[k]:
        y, y2, z = i, j, int(np.argmax(diff))
    else:
        y, y2, z = j, i, int(np.argmin(diff))
    lr = float(max(top_pos[k], top_neg[k]))
    if lr >= _HUGE:
        lr = np.inf
    return (float(per_unit[k]), (y, y2, z), lr, float(dist[k]), exc)


def _ratios_block(top_pos, top_neg, dist):
    top = np.maximum(top_pos, top_neg)
    top = np.where(top >= _HUGE, np.inf, top)
    with np.errstate(divide="ignore", invalid="ignore"):
        # Pairs at infinite distance constrain nothing (seed 002 §3): never let them be the worst pair.
        return np.where(np.isinf(dist), -np.inf, top / dist)


_START = (-1.0, None, 0.0, 0.0, -np.inf)


def _all_pairs_ratios(logh: np.ndarray, d: np.ndarray, epsilon: float):
    """Largest d_P(row_i, row_j)/d(i,j) over all pairs: row i against the block of rows after it.

    Broadcasting one row against a contiguous block avoids gathering pairs; max and min of the signed
    difference give both orientations in two passes. Rows are split over threads (numpy releases the GIL
    in its reductions).
    """
    n = logh.shape[0]
    best = _START

    def rows(start, stop):
        b = _START
        for i in range(start, stop):
            if i + 1 >= n:
                break
            diff = logh[i] - logh[i + 1 :]
            pos, neg = diff.max(axis=1), -diff.min(axis=1)
            dist = d[i, i + 1 :]
            js = np.arange(i + 1, n)
            b = _better(b, _ratios_block(pos, neg, dist), pos, neg, dist, np.full(js.size, i), js, logh, epsilon)
        return b

    # Split rows so that the blocks carry equal work (row i compares against n−i−1 rows).
    workers = 2 if n >= 256 else 1
    cuts = [0] + [int(n * (1 - np.sqrt(1 - k / workers))) for k in range(1, workers)] + [n]
    if workers == 1:
        results = [rows(0, n)]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(workers) as ex:
            results = list(ex.map(lambda ab: rows(*ab), zip(cuts[:-1], cuts[1:])))
    exc = max(r[4] for r in results)
    for r in results:
        if r[0] > best[0]:
            best = r
    return best[:4] + (exc,)


def _listed_pairs_ratios(logh: np.ndarray, d, space: MetricSpace, pairs, epsilon: float):
    """Largest d_P(row_i, row_j)/d(i,j) over the listed pairs, in chunks of gathered rows."""
    I, J = pairs
    m = logh.shape[1]
    best = _START
    chunk = max(1, _CHUNK_ELEMENTS // max(m, 1))
    for a in range(0, I.size, chunk):
        i, j = I[a : a + chunk], J[a : a + chunk]
        dist = d[i, j] if d is not None else space.pair_distances(i, j)
        diff = logh[i] - logh[j]
        pos, neg = diff.max(axis=1), -diff.min(axis=1)
        best = _better(best, _ratios_block(pos, neg, dist), pos, neg, dist, i, j, logh, epsilon)
    return best


def _check_rows(logh: np.ndarray, space: MetricSpace, epsilon: float, rtol: float, atol: float | None = None) -> PrivacyResult:
    from ..spaces import GridSpace

    rtol = _check_tol(rtol, "rtol")
    atol = rounding_floor(logh) if atol is None else _check_tol(atol, "atol")
    # The excess of a pair is its log-ratio minus ε·d·(1 + rtol): holds iff the largest excess ≤ atol.
    e_tol = epsilon * (1.0 + rtol)

    pairs = space.constraint_pairs()
    n = space.n
    d = None if isinstance(space, GridSpace) and space._distances is None else space.distances
    if d is not None and pairs[0].size > 0.25 * n * (n - 1) / 2:
        # Most pairs are needed anyway: the contiguous all-pairs sweep is cheaper than gathering.
        ratio, worst, lr, dist, excess = _all_pairs_ratios(logh, d, e_tol)
        pairs = np.triu_indices(n, k=1)
    else:
        ratio, worst, lr, dist, excess = _listed_pairs_ratios(logh, d, space, pairs, e_tol)
    if worst is None:  # one point, or every pair at infinite distance
        return PrivacyResult(True, epsilon, 0.0, None, 0.0, 0.0, int(pairs[0].size), rtol, atol)
    ok = bool(excess <= atol)
    # (+ 0.0 turns the −0.0 that equal rows can give into 0.0)
    return PrivacyResult(ok, epsilon, max(ratio, 0.0) + 0.0, worst, lr, dist, int(pairs[0].size), rtol, atol)


def _check_tol(x, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}") from None
    if not (v >= 0 and np.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    return v


def check_stored_privacy(h: np.ndarray, space: MetricSpace, *, epsilon: float, rtol: float = PRIVACY_RTOL,
                         atol: float | None = None) -> PrivacyResult:
    """The check of :func:`dprivacy.measures.check_privacy` on a stored float64 channel matrix ``h`` (rows:
    the space's points), at ε ≥ 0, with its tolerance."""
    e = check_epsilon(epsilon, allow_zero=True)
    if h.shape[0] != space.n:
        raise ValueError(f"channel has {h.shape[0]} rows but the space has {space.n} points")
    if np.isnan(h).any():
        # NaN compares false, so it would pass every constraint: a channel with a NaN entry is not private
        i, j = (int(v[0]) for v in np.nonzero(np.isnan(h)))
        raise ValueError(f"the channel has NaN entries (the first at row {i}, column {j}): not a channel, so not private")
    return _check_rows(_finite_log(h), space, e, rtol, atol)


def check_privacy_log(log_matrix, space: MetricSpace, *, epsilon: float, rtol: float = PRIVACY_RTOL,
                      atol: float | None = None) -> PrivacyResult:
    """:func:`check_privacy` for a channel given by the natural logarithms of its entries (−∞ for 0).

    For mechanisms whose entries underflow in float64 (e^{−εd} < 1e-308 when ε·d > 708) but whose
    logarithms are exact, e.g. log H[y,z] = −ε d(y,z) + log z_z for a tight-constraints mechanism: the
    check then concerns the mechanism, not its rounded float64 matrix.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1 (§3.1).
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
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
        return _check_rows(lg, space, e, rtol, atol)
    # Log-entries this large (ε·d of 1e299: a truncated geometric at ε = 1e299) reach the sentinel of 0
    # and the threshold of "0 beside a positive entry": the check is homogeneous (ln H and ε·d scaled by
    # the same 1/s, atol too), so it runs on ln H / s and ε / s and is reported in the caller's units.
    scale = big / _LOG_SCALE_ABOVE
    lg = lg / scale
    lg[zero] = _LOG_ZERO
    r = _check_rows(lg, space, e / scale, rtol, None if atol is None else atol / scale)
    return replace(r, epsilon=e, smallest_epsilon=r.smallest_epsilon * scale, worst_ratio=r.worst_ratio * scale,
                   atol=r.atol * scale)
