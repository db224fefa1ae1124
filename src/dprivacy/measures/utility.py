"""Utility of a mechanism: expected gain (or loss) under the optimal remap (Alvim et al. 2015 §6; ElSalamouny et al. 2014 §3.4).

A user who sees output z guesses w = R(z); a gain matrix ``gain[y, w]`` scores the guess w when the true
value is y (rows: secrets, columns: guesses). The utility is the expected gain under the best remap
R̂(z) = argmax_w Σ_y π_y H[y, z] gain[y, w]. With the binary gain (identity matrix) it is the posterior
Bayes vulnerability, so U = 2^{−H∞(Y|Z)} (Alvim et al. 2015 Prop 24).
"""

from __future__ import annotations

import numpy as np

from .._validate import as_float_matrix, as_prior
from ..results import UtilityResult
from ._dispatch import dense_matrix, mechanism_of, n_inputs


def _joint(channel, prior) -> np.ndarray:
    h = dense_matrix(channel)
    p = as_prior(prior, h.shape[0])
    return p[:, None] * h


def _gain_matrix(g, n: int, name: str) -> np.ndarray:
    g = as_float_matrix(g, name=name)
    if g.shape[0] != n:
        raise ValueError(f"{name} has {g.shape[0]} rows, expected {n} (one per secret); columns are guesses")
    if not np.isfinite(g).all():
        raise ValueError(f"{name} must be finite")
    return g


def utility(channel, prior, gain=None) -> UtilityResult:
    """Expected gain of the channel for ``prior`` under the optimal remap.

    Parameters
    ----------
    channel : Channel or array_like (n, m)
    prior : array_like (n,)
    gain : array_like (n, w), optional
        ``gain[y, w]``: the gain of guessing w when the secret is y. Default: the binary gain
        g_b(y, w) = [y = w] on w ∈ Y (ElSalamouny et al. 2014 §3.4), for which the value is Σ_z max_y π_y H[y, z].

    Returns
    -------
    UtilityResult
        ``value`` (this is the g-vulnerability V_g(π, H) of QIF) and the optimal ``remap``.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.4 (utility
       with the binary gain and an optimal remap).
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Def 22, Prop
       23 (gain functions and the optimal guess).
    """
    if gain is None:
        m = mechanism_of(channel)
        if m is not None:
            r = m._binary_utility(as_prior(prior, n_inputs(channel)))
            if r is not None:
                return r
    j = _joint(channel, prior)
    if gain is None:
        # Binary gain: the best guess for z is the most likely secret a posteriori.
        remap = j.argmax(axis=0)
        return UtilityResult(float(j.max(axis=0).sum()), remap)
    g = _gain_matrix(gain, j.shape[0], "gain")
    score = j.T @ g  # score[z, w] = Σ_y π_y H[y,z] g[y,w]
    remap = score.argmax(axis=1)
    return UtilityResult(float(score.max(axis=1).sum()), remap)


def g_vulnerability(channel, prior, gain) -> float:
    """Posterior g-vulnerability V_g(π, H) = Σ_z max_w Σ_y π_y H[y,z] gain[y,w].

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Def 22, Prop
       23.
    """
    return utility(channel, prior, gain).value


def prior_g_vulnerability(prior, gain) -> float:
    """Prior g-vulnerability V_g(π) = max_w Σ_y π_y gain[y, w] (no observation).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Def 22.
    """
    p = as_prior(prior)
    g = _gain_matrix(gain, p.shape[0], "gain")
    return float((p @ g).max())


def expected_loss(channel, prior, loss) -> UtilityResult:
    """Smallest expected loss Σ_z min_w Σ_y π_y H[y,z] loss[y,w] over remaps, and the remap attaining it.

    ``loss[y, w]`` is the loss of guessing w when the secret is y (e.g. a distance matrix for the
    expected-distance loss of location privacy). The result's ``kind`` is "loss".

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §4.2, Def 6–7 (utility with a loss
       function and an optimal remap).
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Prop 23.
    """
    j = _joint(channel, prior)
    l_ = _gain_matrix(loss, j.shape[0], "loss")
    score = j.T @ l_
    remap = score.argmin(axis=1)
    return UtilityResult(float(score.min(axis=1).sum()), remap, kind="loss")


def binary_gain(n: int) -> np.ndarray:
    """The binary (identity) gain matrix on n secrets.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.4 (the
       binary gain).
    """
    return np.eye(n)
