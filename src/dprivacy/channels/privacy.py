"""The d-privacy check of a stored channel: every constraint H[y, z] ≤ e^{ε d(y, y')} H[y', z] (ElSalamouny et al. 2014
Def 1; Chatzikokolakis et al. 2013 Def 1), swept over the space's constraint pairs and every output, on the float64 matrix or on
its exact natural logarithms.

Only the space's *essential pairs* need checking when the space knows them (ElSalamouny et al. 2013 Prop 1: on a graph
metric the adjacent pairs suffice): along a tight chain y = y_0, …, y_k = y' the constraints multiply, so
the largest ratio d_P(H_y, H_y') / d(y, y') over all pairs is attained on an essential pair.

Every pair is swept by :mod:`._sweep` (blocks of rows, or a list of pairs); when every pair is constrained and the
channel is large, :mod:`._pruned` settles most of them by a bound first and compares only the rest, with the same result.

The check sits below the Mechanism object (:mod:`.mechanism` certifies a stored channel with it and checks a
log-held mechanism on its log-entries); :func:`dprivacy.measures.check_privacy` is its front door for
Mechanisms, Channels and matrices alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._validate import SUM_ATOL, as_stochastic, check_epsilon
from ..results import Result
from ..spaces import MetricSpace
from . import _pruned
from ._sweep import _LOG_ZERO, LogRows, Sweep, all_pairs_sweep, every_pair, finite_log, listed_pairs_sweep, orient

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
    lo, hi = (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)
    if lo > _LOG_ZERO / 2 and np.isfinite(lo) and np.isfinite(hi):  # all finite: max |a| is at an end
        big = max(abs(lo), abs(hi))
    else:
        finite = a[(a > _LOG_ZERO / 2) & np.isfinite(a)]
        big = float(np.abs(finite).max()) if finite.size else 0.0
    return _floor(big)


def _floor(big: float) -> float:
    return LOG_FLOOR_ULPS * float(np.finfo(np.float64).eps) * max(1.0, big)


def _matrix_floor(h: np.ndarray, smallest_entry: float, stochastic: bool) -> float:
    """:func:`rounding_floor` of ln h (h ≥ 0) without taking the logarithms: max |ln h| over the positive entries is at
    the smallest or the largest of them (ln is increasing). For a stochastic ``h`` the largest is at most 1 + 1e-9, whose
    |ln| is below max(1, |ln of the smallest|), so only the smallest is needed."""
    small = smallest_entry if smallest_entry > 0 else float(np.min(h, where=h > 0, initial=np.inf))
    ends = [small] if stochastic else [small, float(h.max())]
    ends = np.array([v for v in ends if 0 < v < np.inf])
    return _floor(float(np.abs(np.log(ends)).max()) if ends.size else 0.0)


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


#: log-entries larger in magnitude are checked scaled down to it (:func:`check_privacy_log`), far from
#: the sentinels of :mod:`._sweep`
_LOG_SCALE_ABOVE = 1e296


def _check_rows(logh: np.ndarray, space: MetricSpace, epsilon: float, rtol: float, atol: float | None = None, *,
                smallest: bool = True) -> PrivacyResult:
    """The check on the logarithms ``logh`` of a channel (0 as the sentinel ``_LOG_ZERO``)."""
    zeros = logh <= _LOG_ZERO / 2 if logh.size and logh.min() <= _LOG_ZERO / 2 else None
    return _check(LogRows(logh=logh), space, epsilon, rtol, atol, smallest=smallest, zeros=zeros)


def _check(src: LogRows, space: MetricSpace, epsilon: float, rtol: float, atol: float | None, *, smallest: bool,
           floor: float | None = None, zeros=None) -> PrivacyResult:
    from ..spaces import GridSpace

    rtol = _check_tol(rtol, "rtol")
    if atol is None:
        atol = rounding_floor(src.full()) if floor is None else floor
    else:
        atol = _check_tol(atol, "atol")
    # The excess of a pair is its log-ratio minus ε·d·(1 + rtol): holds iff the largest excess ≤ atol.
    eps_tol = epsilon * (1.0 + rtol)
    stop_above = None if smallest else atol
    n = space.n
    d = None if isinstance(space, GridSpace) and space._distances is None else space.distances
    pairs = None if every_pair(space) else space.constraint_pairs()
    sweep = None
    if pairs is None or pairs[0].size > 0.25 * n * (n - 1) / 2:
        # Most pairs are needed anyway: every pair, settled by a bound where it can be (the pruned sweep), else the
        # contiguous all-pairs sweep, cheaper than gathering them.
        if n * (n - 1) // 2 * src.m >= _pruned.PRUNE_MIN_WORK:
            sweep = _pruned.bounded_sweep(src, space, d, eps_tol, atol, smallest, zeros)
        if sweep is None:
            sweep = Sweep(eps_tol)
            all_pairs_sweep(src.full(), space, d, sweep, stop_above)
    else:
        sweep = Sweep(eps_tol)
        listed_pairs_sweep(src.full(), d, space, pairs, sweep, stop_above)
    if sweep.pair is None:  # one point, or every pair at infinite distance
        return PrivacyResult(True, epsilon, 0.0, None, 0.0, 0.0, sweep.pairs, rtol, atol)
    ok = bool(sweep.excess <= atol)
    if not ok and not smallest:
        # stopped at the first violation (or swept everything and found one): the witness is the pair of largest
        # excess among those compared; the smallest ε is not known (only that it exceeds ε), so it is NaN
        worst, lr, dist = orient(src, sweep.excess_pair)
        return PrivacyResult(False, epsilon, float("nan"), worst, lr, dist, sweep.pairs, rtol, atol, complete=False)
    worst, lr, dist = orient(src, sweep.pair)
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
                         atol: float | None = None, smallest: bool = True, _smallest_entry: float | None = None,
                         _stochastic: bool = False) -> PrivacyResult:
    """The check of :func:`dprivacy.measures.check_privacy` on a stored float64 channel matrix ``h`` (rows:
    the space's points), at ε ≥ 0, with its tolerance; ``smallest=False`` stops at the first violation.

    (``_smallest_entry``: h's smallest entry when the caller has it; ``_stochastic``: h is a validated channel, its
    entries at most 1 + 1e-9.) The logarithms are taken as the sweep needs them: a few rows for an early "no".
    """
    e = check_epsilon(epsilon, allow_zero=True)
    if h.shape[0] != space.n:
        raise ValueError(f"channel has {h.shape[0]} rows but the space has {space.n} points")
    mn = float(h.min()) if _smallest_entry is None else _smallest_entry  # NaN when there is a NaN
    if np.isnan(mn):
        # NaN compares false, so it would pass every constraint: a channel with a NaN entry is not private
        i, j = (int(v[0]) for v in np.nonzero(np.isnan(h)))
        raise ValueError(f"the channel has NaN entries (the first at row {i}, column {j}): not a channel, so not private")
    if mn < 0:  # not a channel (its logarithms are NaN): the plain sweep, as it always did
        return _check_rows(finite_log(h), space, e, rtol, atol, smallest=smallest)
    floor = _matrix_floor(h, mn, _stochastic) if atol is None else None
    return _check(LogRows(h=h, positive=mn > 0), space, e, rtol, atol, smallest=smallest, floor=floor,
                  zeros=h == 0 if mn == 0 else None)


def validated_matrix(matrix) -> tuple[np.ndarray, float]:
    """``matrix`` as a float64 row-stochastic matrix and its smallest entry: the checks of
    :func:`dprivacy._validate.as_stochastic` (2-D, non-empty, no NaN or infinity, non-negative, rows summing to 1)
    in two passes, the minimum and the row sums (NaN and −∞ make the minimum fail, +∞ a row sum);
    ``as_stochastic`` names the fault when there is one."""
    try:
        a = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        a = None
    if a is None or a.ndim != 2 or a.size == 0:
        as_stochastic(matrix)  # raises its TypeError or ValueError
    mn = float(a.min())
    if not (mn >= 0 and bool((np.abs(a.sum(axis=1) - 1.0) <= SUM_ATOL).all())):
        as_stochastic(a)  # raises, naming the entry or row
    return a, mn


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
