"""Channels: mechanisms as stochastic matrices (Alvim et al. 2015 §2.1; ElSalamouny et al. 2014 §3.1).

A mechanism H : Y → Z with finite Y and Z is a row-stochastic matrix: rows are indexed by secrets,
columns by outputs, and H[y, z] is the probability of reporting z when the secret is y.

This package holds :class:`Channel` (here), the d-privacy check of a stored channel on a metric space
(:mod:`.privacy`) and the Mechanism object, a channel built on a metric space at a privacy level ε with the
certificate of its privacy (:mod:`.mechanism`, also at :mod:`dprivacy.mechanisms.base`): what the measures,
the kernels and the mechanism constructors above all share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .._validate import as_prior, as_stochastic, check_row_indices
from ..sampling import as_generator

#: Two posteriors closer than this in every entry are the same inner of a hyper-distribution.
POSTERIOR_ATOL = 1e-12


@dataclass(frozen=True)
class Hyper:
    """A hyper-distribution [π ▷ H]: a distribution ``outer`` on posteriors ``inners`` (columns).

    ``inners[:, k]`` is the k-th posterior on secrets and ``outer[k]`` its probability; outputs of
    probability zero are dropped and outputs with equal posteriors merged, so the hyper depends only on
    the information the channel releases, not on its output labels.
    """

    outer: np.ndarray
    inners: np.ndarray


class Channel:
    """A stochastic matrix H : Y → Z with labelled inputs and outputs.

    Parameters
    ----------
    matrix : array_like, shape (n, m)
        Non-negative, finite, rows summing to 1 (within ``atol``); validated here, never renormalized.
    inputs, outputs : sequence, optional
        Labels of the secrets (rows) and of the outputs (columns); default ``0..n-1`` and ``0..m-1``.
    atol : float
        Tolerance on the row sums.
    """

    __array_priority__ = 1000  # so that ndarray @ Channel defers to Channel.__rmatmul__

    def __init__(self, matrix, *, inputs: Sequence | None = None, outputs: Sequence | None = None, atol: float = 1e-9):
        h = as_stochastic(matrix, atol=atol).view()  # a view, so the caller's array stays writable
        h.setflags(write=False)
        self._h = h
        n, m = h.shape
        self.inputs = _labels(inputs, n, "inputs")
        self.outputs = _labels(outputs, m, "outputs")

    @classmethod
    def _trusted(cls, h: np.ndarray, inputs=None, outputs=None) -> "Channel":
        """Wrap a matrix the library built itself (already stochastic up to rounding)."""
        obj = cls.__new__(cls)
        h = np.ascontiguousarray(h, dtype=np.float64).view()
        h.setflags(write=False)
        obj._h = h
        obj.inputs = _labels(inputs, h.shape[0], "inputs")
        obj.outputs = _labels(outputs, h.shape[1], "outputs")
        return obj

    # -- basic properties ----------------------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        """The stochastic matrix (read-only)."""
        return self._h

    def __array__(self, dtype=None, copy=None):
        return self._h if dtype is None else self._h.astype(dtype)

    @property
    def shape(self) -> tuple[int, int]:
        return self._h.shape

    @property
    def n_inputs(self) -> int:
        return self._h.shape[0]

    @property
    def n_outputs(self) -> int:
        return self._h.shape[1]

    def __repr__(self) -> str:
        return f"<Channel {self.n_inputs}x{self.n_outputs}>"

    # -- composition ---------------------------------------------------------------------------
    def cascade(self, other) -> "Channel":
        """The cascade H·R: run H, then feed its output to R (a channel Z → W)."""
        r = other._h if isinstance(other, Channel) else as_stochastic(other, name="second channel")
        if r.shape[0] != self.n_outputs:
            raise ValueError(f"cannot cascade a {self.shape} channel with a {r.shape} one: inner dimensions differ")
        outs = other.outputs if isinstance(other, Channel) else None
        return Channel._trusted(self._h @ r, self.inputs, outs)

    def __matmul__(self, other) -> "Channel":
        return self.cascade(other)

    def __rmatmul__(self, other) -> "Channel":
        return Channel(other).cascade(self)

    def remap(self, remap, *, n_guesses: int | None = None) -> "Channel":
        """Post-process the outputs with a remap R : Z → W.

        ``remap`` is either a stochastic matrix (m × w) or a deterministic map given as an integer
        array of length m (output z ↦ guess ``remap[z]``, guesses ``0..n_guesses-1``).
        """
        r = np.asarray(remap)
        if r.ndim == 1:
            if not np.issubdtype(r.dtype, np.integer):
                raise TypeError(f"a deterministic remap must be an integer array, got dtype {r.dtype}")
            if r.shape[0] != self.n_outputs:
                raise ValueError(f"remap has {r.shape[0]} entries, expected {self.n_outputs} (one per output)")
            w = int(r.max()) + 1 if n_guesses is None else int(n_guesses)
            if r.min() < 0 or r.max() >= w:
                raise ValueError(f"remap values must lie in 0..{w - 1}, got range {r.min()}..{r.max()}")
            out = np.zeros((self.n_inputs, w))
            np.add.at(out.T, r, self._h.T)
            return Channel._trusted(out, self.inputs, None)
        return self.cascade(r)

    # -- Bayesian views ------------------------------------------------------------------------
    def joint(self, prior) -> np.ndarray:
        """The joint distribution J[y, z] = π_y H[y, z]."""
        p = as_prior(prior, self.n_inputs)
        return p[:, None] * self._h

    def output_distribution(self, prior) -> np.ndarray:
        """The distribution of outputs, (πH)_z = Σ_y π_y H[y, z]."""
        p = as_prior(prior, self.n_inputs)
        return p @ self._h

    def posteriors(self, prior) -> tuple[np.ndarray, np.ndarray]:
        """Posterior distributions on secrets, one per output of positive probability.

        Returns ``(outputs, post)``: the indices of the outputs with positive probability and a matrix
        whose column k is the posterior p(· | z = outputs[k]).
        """
        j = self.joint(prior)
        pz = j.sum(axis=0)
        keep = np.flatnonzero(pz > 0)
        return keep, j[:, keep] / pz[keep]

    def hyper(self, prior) -> Hyper:
        """The hyper-distribution [π ▷ H] (zero-probability outputs dropped, equal posteriors merged)."""
        j = self.joint(prior)
        pz = j.sum(axis=0)
        keep = np.flatnonzero(pz > 0)
        post = j[:, keep] / pz[keep]
        label = _merge_close_columns(post, POSTERIOR_ATOL)
        groups, first, inverse = np.unique(label, return_index=True, return_inverse=True)
        outer = np.bincount(inverse, weights=pz[keep])
        order = np.argsort(first)  # keep the order in which posteriors first appear
        return Hyper(outer=outer[order], inners=post[:, first[order]])

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, secrets, rng=None) -> np.ndarray:
        """Draw one output index for each secret index in ``secrets`` (vectorized), exactly.

        The requested rows are quantised to integer weights summing to 2^62 (every positive entry stays
        reachable; rows with entries below 2^-32 are first mixed with the uniform distribution on their
        support at a weight γ ≤ m·2^-32, which keeps ε·d-privacy) and sampled with uniform integers
        (:mod:`dprivacy.sampling.exact`): what is drawn is exactly that quantised channel, and no output of
        positive probability is unreachable. ``rng``: None is the release-grade source, an int seed or a
        Generator is reproducible research mode (:func:`dprivacy.sampling.random_source`).
        """
        from ..sampling.exact import ExactSampler

        gen = as_generator(rng)
        ys = check_row_indices(secrets, self.n_inputs)
        if ys.size == 0:
            return np.zeros(ys.shape, dtype=np.intp)
        rows, inverse = np.unique(ys.ravel(), return_inverse=True)
        sampler = ExactSampler.from_matrix(self._h[rows])
        return sampler.sample(inverse, gen).reshape(ys.shape)


def _merge_close_columns(a: np.ndarray, atol: float) -> np.ndarray:
    """Group the columns of ``a`` that are within ``atol`` of each other in every entry (transitively).

    Columns are sorted by their first entry, and each is compared only with the following ones whose
    first entry is within ``atol`` (equal columns are neighbours in that order), so rounding differences
    across any rounding boundary are merged, unlike with rounding to fixed decimals.
    Returns one group label per column.
    """
    k = a.shape[1]
    parent = np.arange(k)

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    order = np.argsort(a[0], kind="stable")
    lead = a[0, order]
    for pos in range(k):
        stop = np.searchsorted(lead, lead[pos] + atol, side="right")
        if stop <= pos + 1:
            continue
        i = order[pos]
        js = order[pos + 1 : stop]
        close = js[np.abs(a[:, js] - a[:, [i]]).max(axis=0) <= atol]
        for j in close:
            ri, rj = root(i), root(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
    return np.array([root(i) for i in range(k)])


def _labels(labels, k: int, what: str) -> list:
    if labels is None:
        return list(range(k))
    labels = list(labels)
    if len(labels) != k:
        raise ValueError(f"{what} has {len(labels)} labels, expected {k}")
    return labels


def identity(n: int) -> Channel:
    """The identity channel on n secrets (reveals everything)."""
    return Channel._trusted(np.eye(n))


def constant(n: int, m: int = 1) -> Channel:
    """A channel whose output does not depend on the secret (reveals nothing): uniform on m outputs."""
    return Channel._trusted(np.full((n, m), 1.0 / m))
