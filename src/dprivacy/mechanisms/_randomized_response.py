"""k-ary randomized response (Warner 1965; the k-ary form of Kairouz et al.).

On k values, report the true one with probability e^{ε'}/(k−1+e^{ε'}) and each of the k−1 others with
probability 1/(k−1+e^{ε'}). It is the optimal mechanism of Alvim et al. 2015 Thm 28 for a clique with the uniform
prior (Example 30, Table 1(b): diagonal 2/7, elsewhere 1/7 for k = 6, ε = ln 2) and the one-individual
factor of the mechanism of Alvim et al. 2015 Prop 16.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validate import check_epsilon
from .base import Mechanism, built_from_log
from ..spaces import MetricSpace, clique


def randomized_response(n_or_space, *, epsilon: float) -> Mechanism:
    """k-ary randomized response on the points of a space.

    Parameters
    ----------
    n_or_space : int or MetricSpace
        An int k means ``spaces.clique(k)`` (every two values at distance 1, i.e. standard ε-DP on one
        categorical value). A space gives the k points and their labels.
    epsilon : float
        The privacy level: the channel is ε·d-private for the space's metric d.

    Returns
    -------
    Mechanism
        Dense, or a :class:`~dprivacy.mechanisms.base.LogMechanism` (its exact log-entries) where its float64
        entries would underflow.
        k × k with H[y, y] = e^{ε'}/(k−1+e^{ε'}) and H[y, z] = 1/(k−1+e^{ε'}) for z ≠ y, where
        ε' = ε · min_{y≠y'} d(y, y') (over pairs at finite distance; ∞, giving the identity, when
        there is none).

    Notes
    -----
    Every pair of rows has log-ratio exactly ε' (on the two columns where they differ), so the channel
    is ε·d-private iff ε' ≤ ε d(y, y') for all pairs, and ε' above is the largest such value. On a
    clique with distance δ (all pairs at δ) this is ε δ and the privacy is tight: the smallest ε for
    which the channel is ε·d-private is ``epsilon``. On other spaces only the closest pairs are tight and
    the mechanism ignores the larger distances (it is private but not tailored to the metric).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Prop 9 (on a
       clique, which is ball-size symmetric, it is the tight-constraints mechanism).
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Thm 28.
    """
    e = check_epsilon(epsilon)
    if isinstance(n_or_space, Integral) and not isinstance(n_or_space, bool):
        space = clique(int(n_or_space))
    elif isinstance(n_or_space, MetricSpace):
        space = n_or_space
    else:
        raise TypeError(
            f"randomized_response needs an int k (a clique of k values) or a MetricSpace, got "
            f"{type(n_or_space).__name__}"
        )
    k = space.n
    i, j = space.constraint_pairs()
    d = space.distances[i, j] if i.size else np.zeros(0)
    d = d[np.isfinite(d)]
    eps_prime = e * float(d.min()) if d.size else float("inf")
    # In log space: log H = −log(1 + (k−1)e^{−ε'}) on the diagonal, −ε' below it; where e^{−ε'} underflows
    # (ε' above about 708) the float64 identity would not be private as stored, and a LogMechanism is returned.
    log_denom = float(np.log1p((k - 1) * np.exp(-eps_prime))) if np.isfinite(eps_prime) else 0.0
    lg = np.full((k, k), -eps_prime - log_denom)
    np.fill_diagonal(lg, -log_denom)
    return built_from_log(lg, space, epsilon=e, name="randomized-response",
                 reason=f"k-ary randomized response at ε' = ε·min d = {eps_prime:.6g}: every two rows differ by the factor e^ε' exactly (Alvim et al. 2015 §5)")
