"""d-privacy of channels and priors (ElSalamouny et al. 2014 Def 1; Chatzikokolakis et al. 2013 Def 1).

H is ε·d-private iff H[y, z] ≤ e^{ε d(y, y')} H[y', z] for all y, y', z, i.e. d_P(H_y, H_y') ≤ ε d(y, y')
with d_P the multiplicative distance between distributions. Only the space's *essential pairs* need
checking when the space knows them (ElSalamouny et al. 2013 Prop 1: on a graph metric the adjacent pairs suffice):
along a tight chain y = y_0, …, y_k = y' the constraints multiply, so the largest ratio
d_P(H_y, H_y') / d(y, y') over all pairs is attained on an essential pair.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_prior, check_epsilon
from ..channels import Channel
from ..channels.privacy import (LOG_FLOOR_ULPS, PRIVACY_RTOL, PrivacyResult, _check_rows, check_privacy_log,
                                check_stored_privacy, finite_log, rounding_floor, validated_matrix)
from ..spaces import MetricSpace
from ._dispatch import dense_matrix, mechanism_of

__all__ = ["LOG_FLOOR_ULPS", "PRIVACY_RTOL", "PrivacyResult", "check_prior_privacy", "check_privacy", "check_privacy_log",
           "is_private", "multiplicative_distance", "rounding_floor", "smallest_epsilon"]


def multiplicative_distance(p, q) -> float:
    """d_P(p, q) = max_z |ln p(z)/q(z)|, with 0/0 counted as 0 and x/0 as ∞ (ElSalamouny et al. 2014 §3.1).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.1 (the
       multiplicative distance d_P).
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError(f"distributions must be 1-D of equal length, got shapes {p.shape} and {q.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.abs(np.log(p) - np.log(q))
    r[(p == 0) & (q == 0)] = 0.0
    return float(r.max())



def check_privacy(channel, space: MetricSpace | None = None, *, epsilon: float | None = None,
                  rtol: float = PRIVACY_RTOL, atol: float | None = None, smallest: bool = True) -> PrivacyResult:
    """Check that ``channel`` is ε·d-private on ``space`` (ElSalamouny et al. 2014 Def 1).

    ``channel`` is a Mechanism, a Channel or a stochastic matrix. For a Mechanism, ``space`` and
    ``epsilon`` default to its own, and an implicit mechanism is checked without its dense matrix
    where it can be; for anything else both are required.

    Vectorized over pairs and outputs; examines only the space's constraint pairs (its essential pairs
    when known, e.g. the edges of a graph metric), which suffices by ElSalamouny et al. 2013 Prop 1.

    *Tolerance.* A triple (y, y', z) passes when ln H[y,z] − ln H[y',z] ≤ ε·d(y,y')·(1 + rtol) + atol:
    ``rtol`` (default :data:`PRIVACY_RTOL` = 1e-9) is relative to ε·d, so a channel built at ε = 1e-12
    fails at 1e-14 just as one built at 1 fails at 0.99; ``atol`` defaults to the float64 rounding of the
    logarithms compared (:func:`rounding_floor`, ~3e-14 for entries near 1/n), below which no float64
    channel can be told from an exact one. ``smallest_epsilon`` is computed without tolerance.

    *Verdict only.* ``smallest=False`` asks only whether the channel is private: the check stops at the
    first pairs it compares that hold a violation (nearest neighbours of a few secrets spread over the space
    first, on the logarithms of only their rows, when every pair is constrained; else the first block of pairs
    in row order), and returns the worst of them as the witness ``worst`` with ``complete=False`` and
    ``smallest_epsilon`` NaN. A private channel is checked whole either way (every pair must be settled), and its
    ``smallest_epsilon`` is then exact. The default (``smallest=True``) settles every pair, because the library's
    own callers report the smallest ε of channels that fail (the LP's and spanner's reports, a stored mechanism's
    certificate); callers that read only ``ok`` (:func:`is_private`) pass False. Mechanisms that answer the check
    by their own structure (a log-held or implicit mechanism) return a complete result either way.

    *Speed.* When every pair is constrained (a Euclidean grid, a space without known essential pairs) and the
    channel is large, most pairs are settled by an upper bound on their log-ratio, two numbers per row and one
    subtraction per pair (``dprivacy.channels._pruned``: on a grid max_z |ln H[y,z] − ln H[y',z]| ≤ ε₀·d(y,y') +
    the spread of ln H[y,·] + ε₀·d(y,·)), and only the pairs whose bound reaches the largest ratio found are
    compared output by output: the same smallest ε, worst pair and verdict as comparing every pair. Otherwise
    (or when the bound settles too few pairs) the pairs are swept in blocks of rows: max_z |ln H[y,z] − ln H[y',z]|
    of a block against the rows after it is one compiled Chebyshev-distance call (scipy's ``cdist``, which
    releases the GIL, so two threads share the blocks), with no temporary array of differences. A matrix is
    validated in two passes (its minimum and its row sums).

    Returns
    -------
    PrivacyResult
        ``ok``, the ``smallest_epsilon`` for which the channel is private, and the ``worst`` triple
        (y, y', z) with H[y,z] = e^{worst_ratio} H[y',z].

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1 (§3.1:
       d-privacy via d_P).
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 1.
    .. [3] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Prop 1 (the constraints
       between adjacent answers suffice).
    """
    m = mechanism_of(channel)
    if m is not None:
        space = m.space if space is None else space
        epsilon = m.epsilon if epsilon is None else epsilon
    if space is None or epsilon is None:
        raise TypeError("check_privacy needs space= and epsilon= for a channel that is not a Mechanism")
    e = check_epsilon(epsilon, allow_zero=True)
    if m is not None:
        if m.n_inputs != space.n:
            raise ValueError(f"mechanism has {m.n_inputs} rows but the space has {space.n} points")
        r = m._check_privacy(space, e, rtol)
        if r is not None:
            return r
    if m is None and not isinstance(channel, Channel):  # a matrix: validated in two passes, its minimum kept
        h, smallest_entry = validated_matrix(channel)
    else:
        h, smallest_entry = dense_matrix(channel), None
    return check_stored_privacy(h, space, epsilon=e, rtol=rtol, atol=atol, smallest=smallest,
                                _smallest_entry=smallest_entry, _stochastic=True)


def smallest_epsilon(channel, space: MetricSpace) -> float:
    """The smallest ε for which ``channel`` is ε·d-private: max_{y,y'} d_P(H_y, H_y') / d(y, y').

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1 (§3.1).
    """
    return check_privacy(channel, space, epsilon=0.0).smallest_epsilon


def is_private(channel, space: MetricSpace, *, epsilon: float, rtol: float = PRIVACY_RTOL, atol: float | None = None) -> bool:
    """Whether ``channel`` is ε·d-private on ``space`` (:func:`check_privacy`'s tolerance).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1 (§3.1).
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Def 1.
    """
    return check_privacy(channel, space, epsilon=epsilon, rtol=rtol, atol=atol, smallest=False).ok


def check_prior_privacy(space: MetricSpace, prior, *, epsilon: float, rtol: float = PRIVACY_RTOL,
                        atol: float | None = None) -> PrivacyResult:
    """How d-private a prior is: π_y ≤ e^{ε d(y,y')} π_y' for all y, y' (the property every d-regular
    prior has, ElSalamouny et al. 2014 Prop 1). The result's ``worst`` triple has z = 0.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Prop 1 (every
       d-regular prior satisfies π_y ≤ e^{d(y,y')} π_y').
    """
    e = check_epsilon(epsilon, allow_zero=True)
    p = as_prior(prior, space.n)
    return _check_rows(finite_log(p)[:, None], space, e, rtol, atol)
