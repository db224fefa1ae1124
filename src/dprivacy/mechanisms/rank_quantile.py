r"""Percentiles under standard ε-DP by a selection on ranks: permute-and-flip (the default) and the exponential
mechanism, each sampled exactly on the value lattice.

References: F. McSherry and K. Talwar, *Mechanism Design via Differential Privacy*, FOCS 2007 (the exponential
mechanism and its utility theorem); A. Smith, *Privacy-Preserving Statistical Estimation with Optimal Convergence
Rates*, STOC 2011 (the quantile by the exponential mechanism on the intervals between the sorted, clamped values:
the method of diffprivlib's ``quantile``); R. McKenna and D. Sheldon, *Permute-and-Flip: A New Mechanism for
Differentially Private Selection*, NeurIPS 2020 (permute-and-flip, never worse than the exponential mechanism in
expected score and up to twice better); Z. Ding, D. Kifer, S. M. Saghaian N. E., T. Steinke, Y. Wang, Y. Xiao and
D. Zhang, *The Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential Noise*, 2021
(arXiv:2105.07260; the selection OpenDP 0.16's quantile uses).

**The score.** The values of a selection, clamped to [LO, HI] and in units of the resolution (integers), are
x_(1) ≤ … ≤ x_(n). Ranks are placed as Hazen's plotting positions: the i-th smallest value sits at position
i − ½ of the interval [0, n], so that the target of the quantile q = p/100 is the position q·n. A point y of the
lattice LO, LO+1, …, HI with L(y) = #{i : x_i < y} values below it and G(y) = #{i : x_i > y} above occupies the
positions L + ½ … n − G − ½ of its own rows when some rows hold y (a range when several share it), and the
position L between its neighbours when none does. Its score is the distance from q·n to the span of those
positions, in units
of 1/(2D) for q = P/D in lowest terms, with v(y) = 1 when a row holds y and 0 otherwise:

    U(y) = max(0, D·(2L(y) + v(y)) − 2P·n, D·(2G(y) + v(y)) − 2(D − P)·n).

Between two values this is 2D·|L(y) − q·n| (Smith 2011's rank distance); a value held by one row is scored by the
distance to its own position (for the median, as OpenDP's quantile score does); a value whose rows' positions
cover the target scores 0 (OpenDP's score measures a tie from one point inside it — its middle for the median —
and can prefer the empty points beside a large tie to the percentile inside it). The target always lies within ½ of some point's positions, so the best score
is at most D (half a rank; 0 when the selection is empty). *Sensitivity 2D (one rank):* one row replaced (n fixed)
moves L by ΔL and v by Δv with 2ΔL + Δv ∈ [−2, 2] (a row leaving y for below adds 1 to L and may take v from 1 to
0; from below to y takes 1 from L and may set v), and likewise G, so each term moves by at most 2D; one row
entering the selection (with ``--where`` or ``--group-by``) raises n by 1 and L (or G, or v) by at most 1: the
first term moves by D·(2ΔL + Δv) − 2P ∈ [−2P, 2D − 2P], the second by D·(2ΔG + Δv) − 2(D − P) ∈
[−2(D − P), 2P]; leaving is the reverse. A maximum of terms that each move by at most 2D moves by at most 2D.

**The mechanisms.** With the rate a = ε/2 (exactly, as a fraction of the float ε) each point has the weight
W(y) = exp(−a·(U(y) − U_min)/(2D)), a real number whose ratio to the weight of the same point for a neighbouring
table is within e^{±ε/2} (the shift by U_min, common to all points, cancels in both laws).

* *The exponential mechanism* (:func:`sample_quantile`) releases y with probability W(y)/Z, Z = Σ_y W(y)
  (McSherry–Talwar at ε with a sensitivity-1 score; with Smith 2011's intervals, each chosen with probability ∝
  its length · e^{−ε·distance/2} and a lattice point uniformly inside). ε-DP: W(y)/W'(y) ≤ e^{ε/2} and
  Z'/Z ≤ e^{ε/2}.
* *Permute-and-flip* (:func:`sample_permute_and_flip`; McKenna and Sheldon 2020) visits the points in a uniformly
  random order and releases the first whose coin, of probability W(y)/W* (W* the largest weight), comes up heads.
  Its law, for any positive weights, is P(y) = W(y)·∫_0^{1/W*} Π_{s≠y} (1 − W(s)·v) dv
  (:func:`permute_and_flip_law`). ε-DP: if W'(s) ≤ c·W(s) for all s and W'(y) ≥ W(y)/c with c = e^{ε/2}, then
  W'* ≤ c·W* and 1 − W'(s)·v ≥ 1 − c·W(s)·v ≥ 0 for v ≤ 1/(c·W*), so
  P'(y) ≥ (W(y)/c)·∫_0^{1/(c·W*)} Π_{s≠y}(1 − c·W(s)·v) dv = P(y)/c² = e^{−ε}·P(y) (substitute t = c·v).

**Exact sampling: a race.** Both laws are races among independent random keys, one per point, the least of which
is released: permute-and-flip's is argmin_s U_s/W(s) for uniforms U_s (P(U_y/W(y) ∈ dv, every other key > v) is the
integrand above: report-noisy-max with exponential noise, Ding et al. 2021), the exponential mechanism's
argmin_s E_s/W(s) for standard exponentials E_s (the exponential race: P(y) = W(y)/Z). The points of one interval
between values share a weight, so an interval of m points is one key: the least of its m uniforms is
V = 1 − R^{1/m}, of its m exponentials V = −ln(R)/m (R uniform), reached at a uniform point of the interval,
independent of V. The keys compare as ln V + a·(U − U_min)/(2D). R is known to 53 random bits,
R ∈ [k·2^−53, (k + 1)·2^−53), over which V is decreasing; the two ends are bounded in float64 with a margin of
2^−40·(1 + |x|) (far above the few ulps of numpy's log, expm1 and products), and the interval whose upper bound is
below every other lower bound holds the least key of the real numbers. When none is (probability about 2^−33 for
each close competitor), the contenders' R get 63 more random bits at a time and are bounded again with Python's
``decimal`` at growing precision, every rounding counted, until one remains: the released point has exactly the
law above, with the real weights — no weight is rounded, floored or truncated, so the tails far from the target
keep their exact (tiny) probabilities and a tie covering the target, or a huge ε, changes nothing.

**Accuracy.** There is no closed form: the error in *values* depends on how the data spread near the percentile.
In ranks: a set B of points has probability at most Σ_B W(b)/W* under both mechanisms (the exponential
mechanism's Z is at least W*; under permute-and-flip a point is released only if its own coin, of probability
W(b)/W*, comes up heads), and the M = HI − LO + 1 points whose score exceeds the best by at least k ranks carry at
most M·e^{−a·k}: with probability at least 1 − β the released value's positions are within ½ + k of the target
q·n, k = ln(M/β)/a (the best score is at most half a rank).

**Cost.** The samplers need the selection's distinct values with their counts (not the rows): at most min(n, M)
pairs, and one pass of numpy over the intervals between them, :data:`_CHUNK` at a time (memory does not grow with
the number of distinct values beyond the intervals' own arrays).
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: Margin of the float64 bounds on a key's logarithm, relative to 1 + |ln key| (numpy's log, expm1 and the products
#: are within a few ulps, 2^−52 each).
FLOAT_MARGIN = 2.0**-40

#: Intervals whose keys are computed at once.
_CHUNK = 1 << 18


def quantile_fraction(p: float) -> Fraction:
    """The quantile q = p/100 as an exact fraction of the percentile as written (50 → 1/2, 33.3 → 333/1000)."""
    q = Fraction(repr(float(p))) / 100
    if not 0 < q < 1:
        raise ValueError(f"the percentile must lie strictly between 0 and 100, got {p!r}")
    return q


@dataclass(frozen=True)
class RankWeights:
    """The score U(y) (in units of 1/(2D) of a rank) and the weights W(y) = exp(−a·(U(y) − U_min)/(2D)) of the module
    docstring, for one ε and one quantile q = P/D.

    Attributes
    ----------
    epsilon : float
        The ε of the release.
    a : Fraction
        ε/2 exactly: the rate per unit of rank distance.
    P, D : int
        q = P/D in lowest terms; the score has sensitivity 2D (one rank).
    """

    epsilon: float
    a: Fraction
    P: int
    D: int

    @classmethod
    def build(cls, epsilon: float, q: Fraction) -> "RankWeights":
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise ValueError(f"ε must be a positive finite number, got {epsilon!r}")
        return cls(float(epsilon), Fraction(float(epsilon)) / 2, q.numerator, q.denominator)

    @property
    def per_rank(self) -> int:
        """Units of the score in one rank: 2D."""
        return 2 * self.D

    def scores(self, below: np.ndarray, above: np.ndarray, n: int) -> np.ndarray:
        """U = max(0, D·(2L + v) − 2P·n, D·(2G + v) − 2(D − P)·n) for L values below and G above, n in all, v = 1 where
        a row holds the point (L + G < n) (int64; the caller checks 4·D·n < 2^62)."""
        below = np.asarray(below, dtype=np.int64)
        above = np.asarray(above, dtype=np.int64)
        n = int(n)
        held = (below + above < n).astype(np.int64)
        return np.maximum(np.maximum(self.D * (2 * below + held) - 2 * self.P * n,
                                     self.D * (2 * above + held) - 2 * (self.D - self.P) * n), 0)

    def rank_within(self, points: int, beta: float) -> float:
        """The accuracy statement's bound: P(the released value's positions are farther than ½ + k from q·n) ≤ β,
        k = ln(M/β)/a with M = ``points``; returns ½ + k (rounded up in the last digits)."""
        return 0.5 + math.log(points / beta) / float(self.a) * (1 + 1e-12)


def _intervals(values: np.ndarray, counts: np.ndarray, lo: int, hi: int):
    """The lattice LO..HI cut where the score changes: (below, above, starts, lengths) of the 2m + 1 intervals
    [LO, x_1), {x_1}, (x_1, x_2), {x_2}, …, {x_m}, (x_m, HI] of the m distinct sorted values x (within [LO, HI]);
    the gaps may be empty. ``below``/``above``: how many values lie below/above every point of the interval."""
    v = np.asarray(values, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)
    m = v.size
    cum = np.concatenate([[0], np.cumsum(c)])  # values up to and including x_i: cum[i + 1]
    n = int(cum[-1])
    below = np.empty(2 * m + 1, dtype=np.int64)
    above = np.empty(2 * m + 1, dtype=np.int64)
    starts = np.empty(2 * m + 1, dtype=np.int64)
    ends = np.empty(2 * m + 1, dtype=np.int64)
    below[0::2], above[0::2] = cum, n - cum  # the gaps: before x_1, between, after x_m
    below[1::2], above[1::2] = cum[:-1], n - cum[1:]  # the values themselves: their own rows in neither
    starts[0::2] = np.concatenate([[lo], v + 1])
    ends[0::2] = np.concatenate([v - 1, [hi]])
    starts[1::2] = ends[1::2] = v
    return below, above, starts, ends - starts + 1


def _check_values(values, counts, lo: int, hi: int) -> None:
    v = np.asarray(values)
    c = np.asarray(counts)
    if v.shape != c.shape or v.ndim != 1:
        raise ValueError("values and counts must be 1-D arrays of equal length")
    if v.size and (np.any(np.diff(v) <= 0) or v[0] < lo or v[-1] > hi or np.any(c <= 0)):
        raise ValueError("values must be distinct, sorted, within [LO, HI], each with a positive count")
    if hi < lo:
        raise ValueError(f"LO ≤ HI is needed, got {lo}, {hi}")


def _runs(values, counts, lo: int, hi: int, weights: RankWeights):
    """The non-empty intervals: (starts, lengths, U − U_min) as int64 arrays."""
    _check_values(values, counts, lo, hi)
    below, above, starts, lengths = _intervals(values, counts, lo, hi)
    u = weights.scores(below, above, int(np.sum(counts)))
    keep = lengths > 0
    u = u[keep]
    return starts[keep], lengths[keep], u - u.min()


def lattice_scores(values, counts, lo: int, hi: int, weights: RankWeights) -> np.ndarray:
    """U(y) − U_min of every lattice point LO..HI (small lattices: tests, examples)."""
    _, lengths, du = _runs(values, counts, lo, hi, weights)
    return np.repeat(du, lengths)


def _weights_decimal(du: np.ndarray, weights: RankWeights, prec: int):
    """W(y) = exp(−a·(U(y) − U_min)/(2D)) to ``prec`` digits, and the context."""
    ctx = decimal.Context(prec=prec, Emin=-10**9, Emax=10**9)
    a = ctx.divide(decimal.Decimal(weights.a.numerator), decimal.Decimal(weights.a.denominator * weights.per_rank))
    return ctx, [ctx.exp(ctx.minus(ctx.multiply(a, decimal.Decimal(int(u))))) for u in du.tolist()]


def exponential_law(values, counts, lo: int, hi: int, weights: RankWeights, prec: int = 80) -> list[decimal.Decimal]:
    """The exponential mechanism's law W(y)/Z on LO..HI, to ``prec`` digits (small lattices: tests, examples)."""
    ctx, w = _weights_decimal(lattice_scores(values, counts, lo, hi, weights), weights, prec)
    with decimal.localcontext(ctx):
        z = sum(w, decimal.Decimal(0))
    return [ctx.divide(x, z) for x in w]


def permute_and_flip_law(values, counts, lo: int, hi: int, weights: RankWeights,
                         prec: int = 80) -> list[decimal.Decimal]:
    """Permute-and-flip's law P(y) = W(y)·∫_0^1 Π_{s≠y} (1 − W(s)·t) dt on LO..HI (W* = 1: the weights relative to the
    best), to about ``prec``
    digits: the product is expanded at M more digits (its integral is at least 1/M, so the expansion loses fewer);
    for small lattices (tests, examples)."""
    du = lattice_scores(values, counts, lo, hi, weights)
    ctx, w = _weights_decimal(du, weights, prec + du.size)
    law = []
    with decimal.localcontext(ctx):
        for y in range(len(w)):
            poly = [decimal.Decimal(1)]  # the coefficients of Π_{s≠y} (1 − W(s)·t), lowest degree first
            for s, ws in enumerate(w):
                if s != y:
                    poly = [c - ws * b for c, b in zip(poly + [decimal.Decimal(0)], [decimal.Decimal(0)] + poly)]
            law.append(w[y] * sum((c / (i + 1) for i, c in enumerate(poly)), decimal.Decimal(0)))
    return law


def _float_log_key(r: np.ndarray, m: np.ndarray, pf: bool) -> np.ndarray:
    """ln V(r) in float64: V = 1 − r^{1/m} (the least of m uniforms) or −ln(r)/m (of m exponentials), decreasing."""
    with np.errstate(divide="ignore"):
        if pf:
            return np.log(-np.expm1(np.log(r) / m))
        return np.log(-np.log(r)) - np.log(m)


def _least_run(lengths: np.ndarray, du: np.ndarray, weights: RankWeights, pf: bool,
               generator: np.random.Generator) -> int:
    """The run holding the least key (module docstring, "Exact sampling"): float64 bounds a chunk at a time, the
    runs that the bounds do not exclude kept, and :func:`_least_run_exact` when more than one remains."""
    rate = float(weights.a) / weights.per_rank
    best_top = np.inf
    kept_index, kept_k, kept_bottom = [], [], []
    for c0 in range(0, lengths.size, _CHUNK):
        m = lengths[c0:c0 + _CHUNK].astype(np.float64)
        k = generator.integers(0, 1 << 53, size=m.size, dtype=np.int64)  # R ∈ [k·2^−53, (k + 1)·2^−53)
        t = du[c0:c0 + _CHUNK].astype(np.float64) * rate
        top = _float_log_key(k * 2.0**-53, m, pf) + t
        bottom = _float_log_key((k + 1) * 2.0**-53, m, pf) + t
        with np.errstate(invalid="ignore"):  # (±inf stay ±inf)
            top = top + FLOAT_MARGIN * (1.0 + np.abs(top))
            bottom = bottom - FLOAT_MARGIN * (1.0 + np.abs(bottom))
        best_top = min(best_top, float(top.min()))
        near = np.flatnonzero(bottom <= best_top)
        kept_index.append(c0 + near)
        kept_k.append(k[near])
        kept_bottom.append(bottom[near])
    index, k, bottom = (np.concatenate(x) for x in (kept_index, kept_k, kept_bottom))
    near = bottom <= best_top  # (the runs kept before the best top fell)
    index, k = index[near], k[near]
    if index.size == 1:
        return int(index[0])
    return _least_run_exact(index, k, lengths, du, weights, pf, generator)


def _least_run_exact(index, k, lengths, du, weights: RankWeights, pf: bool, generator) -> int:
    """The float bounds left several contenders: extend their R by 63 random bits at a time and bound their keys with
    ``decimal`` until one is below all others (the true least is never dropped: a run goes only when its lower bound
    exceeds another's upper bound)."""
    known = {int(g): int(x) for g, x in zip(index, k)}  # R ∈ [known/2^bits, (known + 1)/2^bits)
    bits = 53
    while True:
        for g in known:
            known[g] = (known[g] << 63) | int(generator.integers(0, 1 << 63, dtype=np.int64))
        bits += 63
        bounds = {g: _log_key_bounds(r, bits, int(lengths[g]), int(du[g]), weights, pf) for g, r in known.items()}
        best = min(bounds, key=lambda g: bounds[g][1])
        known = {g: r for g, r in known.items() if bounds[g][0] <= bounds[best][1]}
        if len(known) == 1:
            return best


def _log_key_bounds(r: int, bits: int, m: int, du: int, weights: RankWeights, pf: bool):
    """Bounds on ln V + a·du/(2D) for R ∈ [r/2^bits, (r + 1)/2^bits). At precision p the division r/2^bits, ln, the
    division by m and exp are each correctly rounded (relative error ≤ ½·10^{1−p}): V is within 4·10^{1−p} of the
    truth for the uniforms (|ln R|/m·e^{ln(R)/m} ≤ 1/e) and within 10^{1−p}·(2 + 2·bits)/m for the exponentials
    (|ln R| < bits), both below η = 10^{3−p}·(bits + 1); p grows with the bits and m so that η stays far below
    V ≥ 2^−bits/m. The logarithm and a·du/(2D) are then rounded outwards."""
    prec = 40 + bits // 3 + m.bit_length() // 3
    exps = dict(Emin=-10**9, Emax=10**9)
    near = decimal.Context(prec=prec, rounding=decimal.ROUND_HALF_EVEN, **exps)
    up = decimal.Context(prec=prec, rounding=decimal.ROUND_CEILING, **exps)
    down = decimal.Context(prec=prec, rounding=decimal.ROUND_FLOOR, **exps)
    D = decimal.Decimal
    eta = D(10) ** (3 - prec) * (bits + 1)

    def v(x: int) -> decimal.Decimal:
        if x == 0:
            return D(1) if pf else D("Infinity")
        if x >> bits:  # R = 1
            return D(0)
        ln_r = near.ln(near.divide(D(x), D(1 << bits)))
        if pf:
            return near.subtract(D(1), near.exp(near.divide(ln_r, D(m))))
        return near.divide(near.minus(ln_r), D(m))

    def ln_outward(x: decimal.Decimal, ctx, sign: int) -> decimal.Decimal:
        if x <= 0:
            return D("-Infinity")
        if x.is_infinite():
            return x
        y = near.ln(x)  # within half an ulp: widened by one ulp of |y| (or of 1)
        return ctx.add(y, sign * max(abs(y), D(1)) * D(10) ** (1 - prec))

    rate_num, rate_den = weights.a.numerator * du, weights.a.denominator * weights.per_rank
    high = up.add(ln_outward(up.add(v(r), eta), up, +1), up.divide(D(rate_num), D(rate_den)))
    low = down.add(ln_outward(down.subtract(v(r + 1), eta), down, -1), down.divide(D(rate_num), D(rate_den)))
    return low, high


def _draw(values, counts, lo: int, hi: int, weights: RankWeights, generator: np.random.Generator, pf: bool) -> int:
    starts, lengths, du = _runs(values, counts, lo, hi, weights)
    g = _least_run(lengths, du, weights, pf, generator)
    return int(starts[g]) + int(generator.integers(0, int(lengths[g])))


def sample_quantile(values, counts, lo: int, hi: int, weights: RankWeights, generator: np.random.Generator) -> int:
    """One lattice point drawn by the exponential mechanism, P(y) = W(y)/Z (module docstring), exactly.

    ``values``: the distinct values of the selection in lattice units, sorted, within [lo, hi]; ``counts``: how
    many times each occurs (n = their sum may be 0: every point then has the same score and the draw is uniform).
    """
    return _draw(values, counts, lo, hi, weights, generator, pf=False)


def sample_permute_and_flip(values, counts, lo: int, hi: int, weights: RankWeights,
                            generator: np.random.Generator) -> int:
    """One lattice point drawn by permute-and-flip with coins W(y)/W* (module docstring), exactly. Arguments as
    :func:`sample_quantile`."""
    return _draw(values, counts, lo, hi, weights, generator, pf=True)
