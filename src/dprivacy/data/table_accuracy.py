"""Accuracy of the truncated geometric answers of :mod:`dprivacy.data.tables`, exact: the expected |error| and
the (α, δ)-usefulness of the (truncated) two-sided geometric noise, the channel's rows, and the Bayes remap of
``--mechanism optimal`` with its worst-case accuracy and its prior."""

from __future__ import annotations

import math

import numpy as np

def geometric_accuracy(alpha: float, *, confidence: float = 0.95) -> tuple[float, int]:
    """(E|K|, t) for the two-sided geometric K with ratio α: E|K| = 2α/(1−α²) and the smallest t with
    P(|K| > t) = 2α^{t+1}/(1+α) ≤ 1 − confidence."""
    if alpha <= 0:
        return 0.0, 0
    mean = 2 * alpha / (1 - alpha * alpha)
    delta = 1.0 - confidence
    t = max(0, math.ceil(math.log(delta * (1 + alpha) / 2) / math.log(alpha) - 1))
    return mean, int(t)


def truncated_geometric_error(alpha: float, lo: int, hi: int, a: int) -> float:
    """E|TG(a) − a| exactly, for the truncated geometric on lo..hi (Chatzikokolakis et al. 2013 Fig 2 (iv)):
    α/((1−α)(1+α))·(2 − α^{hi−a} − α^{a−lo}) (the noise beyond an end is cut at that end)."""
    if alpha <= 0 or hi <= lo:
        return 0.0
    one_minus = -math.expm1(math.log(alpha))
    return alpha / (one_minus * (1 + alpha)) * (2 - alpha ** (hi - a) - alpha ** (a - lo))


def truncated_geometric_accuracy(alpha: float, lo: int, hi: int, *, confidence: float = 0.95) -> tuple[float, int]:
    """(max over a in lo..hi of E|TG(a) − a|, the smallest t with P(|TG(a) − a| > t) ≤ 1 − confidence for every a).

    The expected error is largest in the middle of the range; P(|TG(a) − a| > t) = α^{t+1}/(1+α) times the
    number of sides with more than t answers of room, largest when both have room."""
    w = int(hi - lo)
    if alpha <= 0 or w <= 0:
        return 0.0, 0
    mid = lo + w // 2
    mean = truncated_geometric_error(alpha, lo, hi, mid)
    delta = 1.0 - confidence

    def worst(t: int) -> float:
        sides = 2 if w >= 2 * (t + 1) else (1 if w >= t + 1 else 0)
        return sides * alpha ** (t + 1) / (1 + alpha)

    return mean, smallest_within(worst, delta, geometric_accuracy(alpha, confidence=confidence)[1])


def smallest_within(worst, delta: float, t_hi: int) -> int:
    """The smallest integer t ≥ 0 with worst(t) ≤ δ, ``worst`` non-increasing and worst(t_hi) ≤ δ (bisection)."""
    t_lo = 0
    while t_lo < t_hi:
        m = (t_lo + t_hi) // 2
        if worst(m) <= delta:
            t_hi = m
        else:
            t_lo = m + 1
    return int(t_lo)


def truncated_geometric_rows(alpha: float, lo: int, hi: int, answers=None) -> np.ndarray:
    """P(o | a) of the truncated geometric on the answers lo..hi (rows a, columns o): the two-sided
    geometric with ratio α clamped to [lo, hi] (Chatzikokolakis et al. 2013 Fig 2 (iv)). ``answers``: only these rows
    (default every answer lo..hi)."""
    o = np.arange(lo, hi + 1)
    a = o if answers is None else np.asarray(answers, dtype=np.int64).reshape(-1)
    k = np.abs(o[None, :] - a[:, None]).astype(float)
    p = (1 - alpha) / (1 + alpha) * alpha ** k
    p[:, 0] = alpha ** (a - lo) / (1 + alpha)
    p[:, -1] = alpha ** (hi - a) / (1 + alpha)
    if hi == lo:
        p[:, :] = 1.0
    return p


def bayes_remap_abs(rows: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, float]:
    """For each output o the answer minimising the expected |error| under the posterior ∝ π(a) P(o|a)
    (a weighted median), and the expected |error| of the remapped mechanism under π."""
    joint = prior[:, None] * rows  # [a, o]
    cum = np.cumsum(joint, axis=0)
    half = 0.5 * cum[-1]
    remap = np.argmax(cum >= half[None, :], axis=0)  # first a where the posterior mass reaches 1/2
    n = rows.shape[0]
    err = np.abs(remap[None, :] - np.arange(n)[:, None])
    return remap, float((joint * err).sum())


def remap_accuracy(rows: np.ndarray, remap: np.ndarray, *, confidence: float = 0.95) -> tuple[float, int, np.ndarray]:
    """Worst case over the true answers of the remapped mechanism a → o → remap[o] (indices 0..n−1):
    (max_a E|remap(o) − a|, the smallest t with P(|remap(o) − a| > t) ≤ 1 − confidence for every a, the
    expected |error| of each a). Exact from the channel (no prior involved)."""
    n = rows.shape[0]
    err = np.abs(remap[None, :].astype(np.int64) - np.arange(n, dtype=np.int64)[:, None])
    per_a = (rows * err).sum(axis=1)
    hist = np.bincount((np.arange(n, dtype=np.int64)[:, None] * n + err).ravel(), weights=rows.ravel(),
                       minlength=n * n).reshape(n, n)  # [a, |error|]
    tail = rows.sum(axis=1)[:, None] - np.cumsum(hist, axis=1)  # P(|error| > t)
    ok = np.flatnonzero(tail.max(axis=0) <= (1.0 - confidence) + 1e-12)
    return float(per_a.max()), int(ok[0]) if ok.size else n, per_a


def _answer_prior(prior, size: int, lo: int, hi: int):
    """(π, note): the prior on the answers lo..hi from ``"uniform"``, an array, or a .npy/.csv/.txt file of ``size``
    weights, and the sentence saying how its weights were normalised (None when they summed to 1)."""
    if prior is None:
        raise ValueError("--mechanism optimal needs --prior: 'uniform' or a file of weights on the answers "
                         f"{lo}..{hi} ({size} values)")
    from ..spaces import read_prior

    # (the one reader of --prior: n weights in one row or one column, normalised)
    return read_prior(prior, size, name="--prior" if isinstance(prior, str) else "prior", per=f"one per answer {lo}..{hi}")
