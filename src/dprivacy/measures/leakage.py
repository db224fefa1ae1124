"""Bayes vulnerability, min-entropy and min-entropy leakage (Alvim et al. 2015 §2.1; ElSalamouny et al. 2014 §3.5).

Entropies and leakages are in bits (log2).
"""

from __future__ import annotations

import numpy as np

from .._validate import as_prior
from ._dispatch import check_method, dense_matrix, mechanism_of, n_inputs


def prior_vulnerability(prior) -> float:
    """Bayes vulnerability V(π) = max_y π_y: the probability of guessing the secret in one try.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1
       (vulnerability V(A)).
    """
    return float(as_prior(prior).max())


def posterior_vulnerability(channel, prior, *, method: str = "auto") -> float:
    """Posterior Bayes vulnerability V(π, H) = Σ_z max_y π_y H[y, z] (Alvim et al. 2015 §2.1).

    ``channel`` is a Mechanism (an implicit one is measured without its dense matrix), a Channel or a
    stochastic matrix. ``method``: "auto" (the mechanism's structured algorithm when it has one, e.g.
    the exact max-convolution of a grid tight-constraints mechanism, else the dense matrix), "dense"
    (always the dense matrix, built on demand) or "structured" (the structured algorithm, ValueError
    when there is none).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1
       (conditional vulnerability V(A|B)).
    """
    check_method(method)
    p = as_prior(prior, n_inputs(channel))
    m = mechanism_of(channel)
    if m is not None and method != "dense":
        r = m._binary_utility(p)
        if r is not None:
            return float(r.value)
    if method == "structured":
        raise ValueError(f"method='structured': {type(channel).__name__} has no structured algorithm for the "
                         "posterior vulnerability (use method='auto' or 'dense')")
    h = dense_matrix(channel)
    return float((p[:, None] * h).max(axis=0).sum())


def min_entropy(prior) -> float:
    """Rényi min-entropy H∞(π) = −log2 max_y π_y, in bits.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.5.
    """
    return float(-np.log2(prior_vulnerability(prior)))


def conditional_min_entropy(channel, prior, *, method: str = "auto") -> float:
    """Conditional min-entropy H∞(Y|Z) = −log2 Σ_z max_y π_y H[y, z], in bits (ElSalamouny et al. 2014 §3.5).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.5.
    """
    return float(-np.log2(posterior_vulnerability(channel, prior, method=method)))


def multiplicative_leakage(channel, prior, *, method: str = "auto") -> float:
    """Multiplicative Bayes leakage V(π, H) / V(π) (so that leakage = log2 of it); ``method`` as in
    :func:`posterior_vulnerability`.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1
       (min-entropy leakage as log2 V(A|B)/V(A)).
    """
    p = as_prior(prior, n_inputs(channel))
    return posterior_vulnerability(channel, p, method=method) / float(p.max())


def min_entropy_leakage(channel, prior, *, method: str = "auto") -> float:
    """Min-entropy leakage L(H, π) = H∞(π) − H∞(Y|Z) = log2 V(π,H)/V(π), in bits (ElSalamouny et al. 2014 §3.5);
    ``method`` as in :func:`posterior_vulnerability`.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.5
       (min-mutual information L(H, π)).
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1.
    """
    return float(np.log2(multiplicative_leakage(channel, prior, method=method)))


def min_capacity(channel, *, method: str = "auto") -> float:
    """Min-capacity ML(H) = log2 Σ_z max_y H[y, z], in bits: the leakage maximized over priors,
    attained by the uniform prior (Braun et al., recalled in Alvim et al. 2015 §2.1 and ElSalamouny et al. 2014 §5.2).
    ``method`` as in :func:`posterior_vulnerability` (structured: Σ_z max_y H[y, z] = Σ_z z_z for a
    tight-constraints mechanism, whose columns peak on their diagonal).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.1
       (min-capacity, attained at the uniform prior).
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §5.2.
    """
    check_method(method)
    m = mechanism_of(channel)
    if m is not None and method != "dense":
        s = m._capacity_sum()
        if s is not None:
            return float(np.log2(s))
    if method == "structured":
        raise ValueError(f"method='structured': {type(channel).__name__} has no structured algorithm for the "
                         "min-capacity (use method='auto' or 'dense')")
    h = dense_matrix(channel)
    return float(np.log2(h.max(axis=0).sum()))
