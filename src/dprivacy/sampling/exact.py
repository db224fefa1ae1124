r"""Exact sampling of finite channels: integer weights, integer draws, the delivered ε stated.

Float inverse-CDF sampling (``searchsorted(cumsum(row), random())``) cannot draw an output whose
probability is below the spacing of doubles near the CDF value, so some outputs of positive probability
are unreachable and leak infinitely much; and the probabilities it realises are not the matrix's.
Here each row is **quantised** to non-negative integer weights w[y, z] summing exactly to 2^K
(K = :data:`WEIGHT_BITS`):

* every positive entry keeps a weight ≥ 1 (so no possible output becomes impossible), every zero stays 0;
* the realised channel is exactly w / 2^K, and its privacy is re-evaluated on the integers:
  the delivered ε is max over constraint pairs of ln(w[y,z]/w[y',z]) / d(y, y') (an output possible
  from y and impossible from y' at finite distance gives ε = ∞, reported as such);
* a draw is one uniform integer u in [0, 2^K) from the random source and the output is the first z with
  cumulative weight > u: exact in integer arithmetic.

Entries far below 2^{-K} (the tails of a geometric mechanism at large ε·d) cannot keep their ratios
after rounding; such rows are first mixed with the uniform distribution at a small weight γ
(:func:`mixing_weight`), which keeps ε·d-privacy exactly and changes expected gains by at most γ. The
delivered ε is then measured on the integers, never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Bits of the integer weights: rows sum to 2^WEIGHT_BITS exactly (int64 cumulative sums cannot overflow).
WEIGHT_BITS = 62


#: Entries are kept to about this many relative bits: tails below 2^-(WEIGHT_BITS - PRECISION_BITS) are
#: lifted by mixing the row with the uniform distribution (see :func:`mixing_weight`).
PRECISION_BITS = 30


def mixing_weight(p: np.ndarray, *, bits: int = WEIGHT_BITS) -> float:
    r"""The weight γ of the uniform distribution (on the outputs that some row can produce) mixed into
    rows whose smallest positive entry is too small to be
    represented with :data:`PRECISION_BITS` relative bits at resolution 2^-bits (0 when none is).

    Mixing keeps ε·d-privacy: for every column, by the mediant inequality,
    ((1−γ)a + γ/m) / ((1−γ)b + γ/m) ≤ max(a/b, 1) ≤ e^{ε d}; and it changes any expected gain or loss
    bounded by 1 by at most γ. With γ = m·2^{PRECISION_BITS − bits} every entry is at least
    2^{PRECISION_BITS − bits}, i.e. 2^{PRECISION_BITS} units, so the rounding to integers changes each
    entry by a relative 2^{−PRECISION_BITS} at most and any log-ratio by about 2^{1−PRECISION_BITS}.
    """
    support = (p > 0).any(axis=0)
    m = int(support.sum())
    floor = 2.0 ** (PRECISION_BITS - bits)
    pos = p[p > 0]
    if pos.size == 0 or pos.min() >= floor:
        return 0.0
    return min(1.0, m * floor)


def quantise_rows(p: np.ndarray, *, bits: int = WEIGHT_BITS, gamma: float = 0.0) -> np.ndarray:
    """Integer weights (int64) w with w.sum(axis=1) == 2^bits exactly and w > 0 wherever p > 0.

    Each row is normalised, mixed with the uniform distribution at weight ``gamma``
    (:func:`mixing_weight`), scaled by 2^bits (exact in float) and floored; positive entries are kept
    at ≥ 1, and the remainder (a few units per entry) goes to the row's largest entry, whose relative
    change it cannot make matter.

    Parameters
    ----------
    p : array_like, shape (k, m)
        Non-negative rows (each with a positive entry).
    """
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"rows must be a 2-D array, got shape {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError("rows must be finite and non-negative")
    s = p.sum(axis=1, keepdims=True)
    if (s <= 0).any():
        raise ValueError(f"row {int(np.flatnonzero(s[:, 0] <= 0)[0])} has no positive entry")
    q = p / s
    if gamma > 0:
        # uniform on the outputs some row can produce: an output impossible from every row stays impossible
        support = (p > 0).any(axis=0)
        q = (1.0 - gamma) * q + np.where(support, gamma / support.sum(), 0.0)[None, :]
    total = 1 << bits
    w = np.floor(np.ldexp(q, bits))  # exact: scaling by a power of two
    w = np.where(q > 0, np.maximum(w, 1.0), 0.0).astype(np.int64)
    deficit = total - w.sum(axis=1, dtype=np.int64)
    top = w.argmax(axis=1)
    w[np.arange(w.shape[0]), top] += deficit
    if (w < 0).any():  # cannot happen for rows of a channel; guard against absurd inputs
        raise ValueError("row quantisation failed: a row has more positive entries than 2^bits can hold")
    return w


#: Above this many (pair, output) comparisons the delivered ε is not computed when a sampler is built
#: (it would dominate sampling); it is reported as None and can be asked for with delivered_epsilon().
DELIVERED_EPS_WORK = 3e8


def delivered_epsilon(weights: np.ndarray, space, pairs=None) -> float:
    """The smallest ε for which the quantised channel w / 2^K is ε·d-private: max over constraint pairs
    (y, y') at finite distance and outputs z of ln(w[y,z]/w[y',z]) / d(y, y') (∞ when an output has
    weight 0 from one and > 0 from the other). Logs of the exact integers (relative error ~1e-16)."""
    i, j = space.constraint_pairs() if pairs is None else pairs
    if i.size == 0:
        return 0.0
    d = space.pair_distances(i, j)
    fin = np.isfinite(d) & (d > 0)
    i, j, d = i[fin], j[fin], d[fin]
    if i.size == 0:
        return 0.0
    with np.errstate(divide="ignore"):  # a zero weight is log 0 = −inf: an output impossible from that row
        lw = np.log(weights.astype(np.float64))  # int64 → float64 rounds to 53 bits: relative 1e-16, fine for logs
    with np.errstate(invalid="ignore"):
        diff = np.abs(lw[i] - lw[j])  # inf where exactly one is 0; nan where both 0 (no constraint)
    diff = np.where(np.isnan(diff), 0.0, diff)
    return float((diff.max(axis=1) / d).max())


@dataclass(frozen=True)
class ExactSampler:
    """A finite channel quantised to integer weights and sampled exactly.

    Attributes
    ----------
    weights : ndarray of int64, shape (n, m)
        Row y sums to 2^bits; the realised channel is weights / 2^bits.
    bits : int
    gamma : float
        Weight of the uniform distribution mixed into the rows before quantising (0: none).
    delivered_epsilon : float or None
        ε of the quantised channel on ``space`` (None when no space was given, or when the check would
        exceed :data:`DELIVERED_EPS_WORK` comparisons).
    requested_epsilon : float or None
    slack : float or None
        delivered − requested (≤ 0 means no loss), None when unknown.
    """

    weights: np.ndarray = field(repr=False)
    bits: int
    gamma: float
    delivered_epsilon: float | None
    requested_epsilon: float | None
    slack: float | None
    _cum: np.ndarray = field(repr=False, default=None)

    @classmethod
    def from_matrix(cls, matrix, *, space=None, epsilon: float | None = None, bits: int = WEIGHT_BITS) -> "ExactSampler":
        p = np.asarray(matrix, dtype=np.float64)
        gamma = mixing_weight(p, bits=bits)
        w = quantise_rows(p, bits=bits, gamma=gamma)
        eps = None
        if space is not None and space.constraint_pairs()[0].size * w.shape[1] <= DELIVERED_EPS_WORK:
            eps = delivered_epsilon(w, space)
        slack = None if eps is None or epsilon is None else eps - float(epsilon)
        return cls(w, bits, gamma, eps, epsilon, slack, np.cumsum(w, axis=1))

    def to_dict(self) -> dict:
        return {"weight_bits": self.bits, "uniform_mixing_weight": self.gamma,
                "delivered_epsilon": self.delivered_epsilon, "requested_epsilon": self.requested_epsilon,
                "epsilon_slack": self.slack}

    def sample(self, secrets, generator: np.random.Generator) -> np.ndarray:
        """One output index per secret index: u uniform in [0, 2^bits) (integers from the generator),
        output = first z with cumulative weight > u. Exact; vectorised per distinct secret."""
        ys = np.asarray(secrets)
        flat = ys.ravel()
        out = np.empty(flat.size, dtype=np.intp)
        if flat.size == 0:
            return out.reshape(ys.shape)
        u = generator.integers(0, 1 << self.bits, size=flat.size, dtype=np.int64)
        order = np.argsort(flat, kind="stable")
        rows, starts = np.unique(flat[order], return_index=True)
        ends = np.append(starts[1:], flat.size)
        for y, a, b in zip(rows, starts, ends):  # one vectorised search per distinct secret
            idx = order[a:b]
            out[idx] = np.searchsorted(self._cum[y], u[idx], side="right")
        return out.reshape(ys.shape)
