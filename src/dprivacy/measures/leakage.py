"""Bayes vulnerability, min-entropy and min-entropy leakage (seed 001 §2.2; seed 000 §3.5).

Entropies and leakages are in bits (log2).
"""

from __future__ import annotations

import numpy as np

from .._validate import as_prior
from ._dispatch import dense_matrix, mechanism_of, n_inputs


def prior_vulnerability(prior) -> float:
    """Bayes vulnerability V(π) = max_y π_y: the probability of guessing the secret in one try."""
    return float(as_prior(prior).max())


def posterior_vulnerability(channel, prior) -> float:
    """Posterior Bayes vulnerability V(π, H) = Σ_z max_y π_y H[y, z] (seed 001 §2.2).

    ``channel`` is a Mechanism (an implicit one is measured without its dense matrix), a Channel or a
    stochastic matrix.
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
    """Rényi min-entropy H∞(π) = −log2 max_y π_y, in bits."""
    return float(-np.log2(prior_vulnerability(prior)))


def conditional_min_entropy(channel, prior) -> float:
    """Conditional min-entropy H∞(Y|Z) = −log2 Σ_z max_y π_y H[y, z], in bits (seed 000 §3.5)."""
    return float(-np.log2(posterior_vulnerability(channel, prior)))


def multiplicative_leakage(channel, prior) -> float:
    """Multiplicative Bayes leakage V(π, H) / V(π) (so that leakage = log2 of it)."""
    p = as_prior(prior, n_inputs(channel))
    return posterior_vulnerability(channel, p) / float(p.max())


def min_entropy_leakage(channel, prior) -> float:
    """Min-entropy leakage L(H, π) = H∞(π) − H∞(Y|Z) = log2 V(π,H)/V(π), in bits (seed 000 §3.5)."""
    return float(np.log2(multiplicative_leakage(channel, prior)))


def min_capacity(channel) -> float:
    """Min-capacity ML(H) = log2 Σ_z max_y H[y, z], in bits: the leakage maximized over priors,
    attained by the uniform prior (Braun et al., recalled in seed 001 §2.2 and seed 000 §5.2)."""
    m = mechanism_of(channel)
    if m is not None:
        s = m._capacity_sum()
        if s is not None:
            return float(np.log2(s))
    h = dense_matrix(channel)
    return float(np.log2(h.max(axis=0).sum()))
