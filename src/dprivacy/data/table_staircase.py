r"""The staircase mechanism for a sum or an average under standard ε-DP (Geng and Viswanath 2016).

Under ``standard`` (one row replaced, N public) a sum's integer answer moves by at most Δ between neighbouring
tables (Δ = HI − LO, or max(HI − LO, |LO|, |HI|) with a selection), and nothing more is asked of the noise: a
shift by one unit must be as protected as a shift by Δ, no more. The two-sided geometric with ratio e^{−ε/Δ}
protects a shift by d units at ε·d/Δ — the normalized-d1 guarantee, stronger than ε-DP asks for d < Δ — and pays
for it in accuracy. Geng and Viswanath (2016, "The optimal noise-adding mechanism in differential privacy", IEEE
Trans. Inf. Theory 62(2):925–951) show that among noise-adding ε-DP mechanisms for a query of sensitivity Δ a
*staircase* noise minimises E|K|, for real and (their discrete setting) integer answers; on the integers it is,
for b = e^{−ε} and an integer r in 1..Δ,

    P(K = k) = a·b^g      if |k| = g·Δ + j with 0 ≤ j < r,
    P(K = k) = a·b^{g+1}  if |k| = g·Δ + j with r ≤ j < Δ,      a = (1 − b)/(2r + 2(Δ − r)·b − (1 − b)).

**Privacy** (for every r, proved on the pmf): P is symmetric and non-increasing in |k|, and P(m + Δ) = b·P(m)
for m ≥ 0 (the block structure). If |k − k'| ≤ Δ then |k'| ≤ |k| + Δ, so P(k') ≥ P(|k| + Δ) = b·P(k): the
ratio P(k)/P(k') never exceeds 1/b = e^ε. Answers of neighbouring tables differ by d with |d| ≤ Δ, so
P(answer + K = o)/P(answer' + K = o) = P(o − answer)/P(o − answer') ≤ e^ε, and clamping to the public answer
range is post-processing (Dwork and Roth 2014, Prop 2.1). The sampler uses ε rounded down to a multiple of
2^−40 (:func:`~dprivacy.sampling.discrete.geometric_parameters`), so the release is ε-DP at that ε or below.

**Accuracy.** E|K| = 2a·(Δ·C·b/(1 − b)² + D/(1 − b)) with C = r + (Δ − r)·b and D = r(r − 1)/2 +
b·(Δ(Δ − 1) − r(r − 1))/2, a ratio of a quadratic and a linear function of r whose minimum over the integers is
found from the root of its derivative. For Δ large it tends to Δ·e^{ε/2}/(e^ε − 1), the optimal ℓ1 cost of the
continuous staircase (Geng and Viswanath 2016), against Δ/ε for the geometric: 0.96× at ε = 1, 0.85× at ε = 2, 0.41× at ε = 5 (and 1.00× as ε → 0).
``auto`` uses it for a sum or an average under ``standard`` where its E|K| is below the geometric's, and only
with r large enough that the sampler keeps at least one draw in :data:`MAX_ROUNDS` (at ε_a above about 8 the best
r would make it loop for long; r is then raised, and beyond some ε the geometric wins again and is used).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The staircase's r is at least the smallest for which a round of its sampler keeps a draw with probability
#: ≥ 1/MAX_ROUNDS (the expected rounds per draw are at most MAX_ROUNDS).
MAX_ROUNDS = 64


def _one_minus(b: float) -> float:
    """1 − b to full relative precision (b = e^{−ε} may be near 1, or underflow to 0 at a very large ε)."""
    return -math.expm1(math.log(b)) if b > 0.5 else 1.0 - b


@dataclass(frozen=True)
class Staircase:
    """The staircase noise of an answer: Δ and r in steps of the answer grid, b = e^{−s/t} with s/t ≤ ε_a."""

    delta: int
    r: int
    s: int
    t: int
    b: float
    #: s/t: the ε the noise delivers for shifts up to Δ (≤ the ε asked, rounded down to a multiple of 2^−40)
    delivered_epsilon: float
    #: E|K| of the unclamped noise
    expected_abs: float


def expected_abs(delta: int, r, b: float, one_minus_b: float | None = None):
    """E|K| of the staircase noise (``r`` a number or an array), in closed form (module docstring)."""
    x = _one_minus(b) if one_minus_b is None else one_minus_b
    r = np.asarray(r, dtype=float)
    c = r + (delta - r) * b
    d = r * (r - 1) / 2 + b * (delta * (delta - 1.0) - r * (r - 1)) / 2
    a = x / (2 * r * x + 2 * delta * b - x)
    return 2 * a * (delta * c * b / (x * x) + d / x)


def best_r(delta: int, b: float, one_minus_b: float) -> int:
    """The integer r in [r_min, Δ] with the smallest E|K|, r_min the smallest r whose sampler rounds keep a draw
    with probability ≥ 1/:data:`MAX_ROUNDS`. E|K|(r) = (x r² + F r + G)/(2x r + F), x = 1 − b, F = 2Δb − x,
    G = 2Δ²b²/x + bΔ(Δ − 1); its derivative vanishes where 2(xr)² + 2F·(xr) + F² − 2xG = 0."""
    x = one_minus_b
    r_min = 1
    if b < 1.0 / MAX_ROUNDS:  # (r + (Δ − r)b)/Δ ≥ 1/MAX_ROUNDS
        r_min = max(1, min(delta, math.ceil(delta * (1.0 / MAX_ROUNDS - b) / x)))
    f = 2 * delta * b - x
    g = 2 * delta * delta * b * b / x + b * delta * (delta - 1.0)
    disc = 4 * x * g - f * f
    cands = {r_min, delta}
    if disc >= 0:
        u = (-f + math.sqrt(disc)) / 2
        for c in (math.floor(u / x), math.ceil(u / x)):
            cands.update({c - 1, c, c + 1})
    cands = np.array(sorted(c for c in cands if r_min <= c <= delta), dtype=float)
    err = expected_abs(delta, cands, b, x)
    return int(cands[int(np.argmin(err))])


def staircase_parameters(eps_answer: float, delta: float, *, force: bool = False) -> Staircase | None:
    """The staircase noise for an answer of sensitivity ``delta`` (grid steps) at ε_a; None where the two-sided
    geometric with ratio e^{−ε_a/Δ} has an E|K| at most the staircase's (Δ = 1, where the two coincide, or ε_a so
    large that the r the sampler allows loses), unless ``force``."""
    from ..sampling.discrete import geometric_parameters

    d = int(delta)
    if d != delta or d < 1:
        raise ValueError(f"the staircase needs a whole number of grid steps as Δ, got {delta!r}")
    if d == 1 and not force:
        return None
    try:
        p = geometric_parameters(eps_answer, 1.0)
        g = geometric_parameters(eps_answer, float(d))
    except ValueError:
        if force:
            raise
        return None
    ratio = p.s / p.t
    b, x = math.exp(-ratio), -math.expm1(-ratio)
    r = best_r(d, b, x)
    e = float(expected_abs(d, r, b, x))
    alpha = g.alpha
    geo = 2 * alpha / ((1 - alpha) * (1 + alpha)) if alpha > 0 else 0.0
    if not force and not e < geo:
        return None
    return Staircase(d, r, p.s, p.t, b, p.delivered_epsilon, e)


def pmf(delta: int, r: int, b, k) -> np.ndarray | list:
    """P(K = k) of the staircase noise for integers ``k``; ``b`` a float (numpy, vectorized) or a
    :class:`fractions.Fraction` (exact, a list)."""
    from fractions import Fraction

    if isinstance(b, Fraction):
        a = (1 - b) / (2 * r + 2 * (delta - r) * b - (1 - b))
        return [a * b ** (abs(int(v)) // delta + (0 if abs(int(v)) % delta < r else 1)) for v in k]
    m = np.abs(np.asarray(k, dtype=np.int64))
    x = _one_minus(b)
    a = x / (2 * r + 2 * (delta - r) * b - x)
    return a * np.power(b, (m // delta + (m % delta >= r)).astype(float))


def tail(delta: int, r: int, b: float, m) -> np.ndarray:
    """P(K ≥ m) of the staircase noise for integers ``m`` (vectorized): for m = gΔ + j0 ≥ 1 it is
    a·b^g·(Σ_{j0 ≤ j < Δ} c_j + b·W), c_j = 1 (j < r) or b, W = (r + (Δ − r)·b)/(1 − b); for m ≤ 0,
    1 − P(K ≥ 1 − m) (K is symmetric)."""
    m = np.asarray(m, dtype=np.int64)
    x = _one_minus(b)
    a = x / (2 * r + 2 * (delta - r) * b - x)
    w = (r + (delta - r) * b) / x
    pos = np.where(m >= 1, m, 1 - m)
    g, j0 = np.divmod(pos, delta)
    up = a * np.power(b, g.astype(float)) * (np.maximum(r - j0, 0) + b * (delta - np.maximum(j0, r)) + b * w)
    return np.where(m >= 1, up, 1.0 - up)


def staircase_rows(delta: int, r: int, b: float, lo: int, hi: int, answers=None) -> np.ndarray:
    """P(o | a) of the staircase noise clamped to lo..hi (rows a, columns o), as released by ``dprivacy query``:
    the noise's pmf inside, P(K ≤ lo − a) and P(K ≥ hi − a) at the ends. ``answers``: only these rows (default
    every answer lo..hi)."""
    o = np.arange(lo, hi + 1)
    a = o if answers is None else np.asarray(answers, dtype=np.int64).reshape(-1)
    if hi == lo:
        return np.ones((a.size, 1))
    p = pmf(delta, r, b, (o[None, :] - a[:, None]).ravel()).reshape(a.size, o.size)
    p[:, 0] = tail(delta, r, b, a - lo)
    p[:, -1] = tail(delta, r, b, hi - a)
    return p


def _excess(st: Staircase, m: int, x: float) -> float:
    """E[(K − m)⁺] for m ≥ 0: b^g·E[(K − j0)⁺] for m = gΔ + j0 (the block structure)."""
    d, r, b = st.delta, st.r, st.b
    a = x / (2 * r + 2 * (d - r) * b - x)
    g, j0 = divmod(m, d)
    if g and b ** g == 0.0:
        return 0.0
    c = r + (d - r) * b
    s = d * c * b / (x * x) + (r * (r - 1) / 2 + b * (d * (d - 1.0) - r * (r - 1)) / 2) / x  # Σ k·w(k)
    w = c / x
    head = j0 * (j0 + 1) / 2 - (x * (j0 - r) * (j0 - r + 1) / 2 if j0 >= r else 0.0)  # Σ_{k ≤ j0} (j0 − k)·w(k)
    return a * b ** g * (s - j0 * w + head)


def staircase_accuracy(st: Staircase, lo: int, hi: int, *, confidence: float = 0.95) -> tuple[float, int]:
    """(the largest E|error| over the true answers lo..hi, the smallest t with P(|error| > t) ≤ 1 − confidence for
    every true answer) of the staircase noise clamped to [lo, hi], exactly (up to floating point).

    Clamped, the error of a true answer a is E|K| − E[(K − (hi − a))⁺] − E[(K − (a − lo))⁺] (K symmetric). The
    excess m ↦ E[(K − m)⁺] is convex (its decrements P(K > m) do not increase), so their sum is smallest, and the
    error largest, in the middle of the range. P(|error| > t) = P(K > t) times the number of sides with more than t
    answers of room, largest when both have room."""
    w = int(hi - lo)
    if w <= 0:
        return 0.0, 0
    x = -math.expm1(-st.s / st.t)
    mid = w // 2
    mean = max(0.0, st.expected_abs - _excess(st, w - mid, x) - _excess(st, mid, x))
    delta = 1.0 - confidence

    def worst(t: int) -> float:
        sides = 2 if w >= 2 * (t + 1) else (1 if w >= t + 1 else 0)
        return sides * float(tail(st.delta, st.r, st.b, t + 1))

    from .table_accuracy import smallest_within

    t_hi = st.delta
    while worst(t_hi) > delta:
        t_hi *= 2
    return mean, smallest_within(worst, delta, t_hi)


def staircase_note(st: Staircase, eps_answer: float, delta: float) -> str:
    """The sentence of the release's theorem on its staircase noise."""
    a = math.exp(-eps_answer / delta)
    geo = 2 * a / ((1 - a) * (1 + a))
    return (f"the noise is the staircase of Geng and Viswanath 2016 (P(K = k) falls by e^(−ε_a) every Δ = {st.delta:g} "
            f"steps, flat over the first r = {st.r} of each block): a shift of the answer by up to Δ changes each "
            f"release's probability by at most e^(ε_a), which is what ε-DP asks here, and its E|K| = {st.expected_abs:.6g} "
            f"steps is " + (f"{st.expected_abs / geo:.3f}× " if geo > 0 else "to be compared with ")
            + f"the two-sided geometric's ({geo:.6g}), which also protects small shifts d at ε_a·d/Δ; the staircase "
            "minimises E|K| among noise-adding ε-DP mechanisms (Geng and Viswanath 2016), it is not universally optimal")
