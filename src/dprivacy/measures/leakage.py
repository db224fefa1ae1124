"""Bayes vulnerability, min-entropy and min-entropy leakage (seed 001 §2.1; seed 000 §3.5).

Entropies and leakages are in bits (log2).
"""

from __future__ import annotations

import numpy as np

from .._validate import as_prior
from ._dispatch import dense_matrix, mechanism_of, n_inputs


def prior_vulnerability(prior) -> float:
    """Bayes vulnerability V(π) = max_y π_y: the probability of guessing the secret in one try.

    References
    ----------
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1
       (vulnerability V(A)).
    """
    return float(as_prior(prior).max())


def posterior_vulnerability(channel, prior) -> float:
    """Posterior Bayes vulnerability V(π, H) = Σ_z max_y π_y H[y, z] (seed 001 §2.1).

    ``channel`` is a Mechanism (an implicit one is measured without its dense matrix), a Channel or a
    stochastic matrix.

    References
    ----------
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1
       (conditional vulnerability V(A|B)).
    """
    p = as_prior(prior, n_inputs(channel))
    m = mechanism_of(channel)
    if m is not None:
        r = m._binary_utility(p)
        if r is not None:
            return float(r.value)
    h = dense_matrix(channel)
    return float((p[:, None] * h).max(axis=0).sum())


def min_entropy(prior) -> float:
    """Rényi min-entropy H∞(π) = −log2 max_y π_y, in bits.

    References
    ----------
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1.
    .. [2] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.5.
    """
    return float(-np.log2(prior_vulnerability(prior)))


def conditional_min_entropy(channel, prior) -> float:
    """Conditional min-entropy H∞(Y|Z) = −log2 Σ_z max_y π_y H[y, z], in bits (seed 000 §3.5).

    References
    ----------
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1.
    .. [2] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.5.
    """
    return float(-np.log2(posterior_vulnerability(channel, prior)))


def multiplicative_leakage(channel, prior) -> float:
    """Multiplicative Bayes leakage V(π, H) / V(π) (so that leakage = log2 of it).

    References
    ----------
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1
       (min-entropy leakage as log2 V(A|B)/V(A)).
    """
    p = as_prior(prior, n_inputs(channel))
    return posterior_vulnerability(channel, p) / float(p.max())


def min_entropy_leakage(channel, prior) -> float:
    """Min-entropy leakage L(H, π) = H∞(π) − H∞(Y|Z) = log2 V(π,H)/V(π), in bits (seed 000 §3.5).

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.5
       (min-mutual information L(H, π)).
    .. [2] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1.
    """
    return float(np.log2(multiplicative_leakage(channel, prior)))


def min_capacity(channel) -> float:
    """Min-capacity ML(H) = log2 Σ_z max_y H[y, z], in bits: the leakage maximized over priors,
    attained by the uniform prior (Braun et al., recalled in seed 001 §2.1 and seed 000 §5.2).

    References
    ----------
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1
       (min-capacity, attained at the uniform prior).
    .. [2] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §5.2.
    """
    m = mechanism_of(channel)
    if m is not None:
        s = m._capacity_sum()
        if s is not None:
            return float(np.log2(s))
    h = dense_matrix(channel)
    return float(np.log2(h.max(axis=0).sum()))
