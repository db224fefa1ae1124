r"""Percentiles under standard ε-DP on ranks: permute-and-flip (the default) and the exponential mechanism, both
sampled exactly on the value lattice.

References: F. McSherry and K. Talwar, *Mechanism Design via Differential Privacy*, FOCS 2007 (the exponential
mechanism and its utility theorem); A. Smith, *Privacy-Preserving Statistical Estimation with Optimal Convergence
Rates*, STOC 2011 (the quantile by the exponential mechanism on the intervals between the sorted, clamped values:
the method of diffprivlib's ``quantile``); R. McKenna and D. Sheldon, *Permute-and-Flip: A New Mechanism for
Differentially Private Selection*, NeurIPS 2020 (permute-and-flip, never worse than the exponential mechanism in
expected score and up to twice better; its law is report-noisy-max with exponential noise, the selection OpenDP's
quantile uses); Z. Ding, D. Kifer, S. M. Saghaian N. E., T. Steinke, Y. Wang, Y. Xiao and D. Zhang, *The
Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential Noise*, 2021 (arXiv:2105.07260).

**The score.** The values of a selection, clamped to [LO, HI] and in units of the resolution (integers), are
x_1 ≤ … ≤ x_n. An output y is a point of the lattice LO, LO+1, …, HI, scored by how far it is from splitting the
values in the proportions of the quantile q = p/100: with L(y) = #{i : x_i < y} values below it and
G(y) = #{i : x_i > y} above, U(y) = |(D − P)·L(y) − P·G(y)| for q = P/D in lowest terms. Between two values
(L + G = n) this is D·|L(y) − q·n|, the distance of y's rank from the target rank q·n; at a value that several
rows share, the tie is split (L and G exclude it), so the tied value itself scores best when the quantile falls
inside the tie, as in the OpenDP Library's quantile score. One row changed — replaced, or (with
``--where``/``--group-by``) entering or leaving the selection — changes L(y) and G(y) by at most 1 each, in
opposite directions when both change, so U(y) by at most max(D − P, P, D) = D: the score has sensitivity D.
Each point gets the integer weight W(U(y)) ≈ 2^K·e^{−(ε/2)·U/D} of :class:`RankWeights`.

**The exponential mechanism** (:func:`sample_quantile`) releases y with probability W(U(y))/Z, Z = Σ_y W(U(y)):
McSherry–Talwar at ε with a sensitivity-1 rank score, i.e. each interval between consecutive sorted values is
chosen with probability ∝ its length · e^{−ε·|rank − t|/2} and a lattice point uniformly inside (Smith 2011),
with each distinct value a one-point interval of its own.

**Permute-and-flip** (:func:`sample_permute_and_flip`; McKenna and Sheldon 2020): visit the points in
a uniformly random order and release the first y whose coin, of probability p_y = W(U(y))/W* (W* the largest
weight), comes up heads. Its law, for any positive weights (the
same as report-noisy-max with exponential noise: Ding et al. 2021), is P(y) = W_y·∫_0^{1/W*} Π_{s≠y} (1 − W_s·v) dv (:func:`permute_and_flip_law`), which is
also the law of argmin_s U_s/W_s for independent uniforms U_s — the form the sampler draws.
*Privacy, proved on the integer weights:* if every weight of a neighbouring table satisfies
W'_s ≤ c·W_s and W'_y ≥ W_y/c with c = e^{ε/2} (what :class:`RankWeights` proves below), then W'* ≤ c·W* and
(1 − W'_s v) ≥ (1 − c·W_s v) ≥ 0 for v ≤ 1/(c·W*), so
P'(y) ≥ (W_y/c)·∫_0^{1/(c·W*)} Π_{s≠y}(1 − c·W_s v) dv = P(y)/c² = e^{−ε}·P(y) (substitute t = c·v):
ε-DP, with no monotonicity of W needed (McKenna and Sheldon's argument, written for integer weights).
*Accuracy:* the point of weight W* is always accepted, so P(y ∈ B) ≤ Σ_{b ∈ B} W_b/W* for any set B of points —
the same bound the exponential mechanism's Σ_{b ∈ B} W_b/Z ≤ Σ_{b ∈ B} W_b/W* gives, hence the same rank
statement below; in expectation it is never worse than the exponential mechanism (McKenna and Sheldon 2020).

**Exact weights.** No float ``exp`` decides a released value. The weights are integers
W(U) = max(⌈2^K·x̂(U)⌉, W(U_cut)) with K = :data:`WEIGHT_BITS`, x̂(U) = e^{−a·U/D} computed by Python's
``decimal`` (correctly rounded at 34 digits), a = ε/2 − 2^−38, and U_cut the score where 2^K·x(U) reaches
2^G (G = :data:`GUARD_BITS`): beyond it every point has the floor weight W(U_cut). Then, for U < U' ≤ U + D,
W(U)/W(U') ≤ e^{a}·(1 + 3η + 2^{1−G}) ≤ e^{ε/2} (η ≤ 10^−32 the decimal rounding; the ceiling adds at most 1 to
a weight ≥ 2^G; the floor only lowers ratios), W is non-increasing, and so for neighbouring tables
P(y | x)/P(y | x') = W(U)/W(U') · Z'/Z ≤ e^{ε/2}·e^{ε/2} = e^{ε} **exactly**, on the integers the sampler uses
(the normaliser Z = Σ_y W(U(y)) moves by at most the same factor); permute-and-flip is ε-DP by the argument
above. The realised distributions differ from the real-valued mechanisms only by the rounding (relative
2^−40 per weight beyond 2^40) and the floor (points whose score is beyond U_cut, weight at most 2^{G+1−K}
of the best point's).

**Exact sampling.** The exponential mechanism: one uniform integer below Z (exact, from the random source's
62-bit words) located among the intervals' integer masses, then a uniform point inside. Permute-and-flip: the
points of one interval (or floor block) share a weight W_g, so the smallest U_s/W_s over its m_g points is
V_g/W_g with V_g = 1 − R_g^{1/m_g} the least of m_g uniforms (R_g uniform), attained at a uniform point of the
interval, independent of V_g. Each R_g is known to 53 bits, R_g ∈ [k·2^−53, (k + 1)·2^−53); ln(V_g/W_g) is
bounded over that interval in float64 with a margin of 2^−40·(1 + |ln|) (far above the few ulps of numpy's
log and expm1), and the interval whose upper bound is below every other lower bound is the argmin of the real
numbers. When none is (probability about 2^−40 per draw), the contending intervals' R_g get 63 more random bits
at a time and are bounded again with Python's ``decimal`` at growing precision, with the rounding counted,
until one remains: the released point has exactly the law P(y) above, for the integer weights.

**Accuracy.** There is no closed form: the error in *values* depends on how the data spread near the percentile.
What the analysis gives (McSherry–Talwar's utility theorem, re-derived for these integer weights) is a bound in
*ranks*: with probability at least 1 − β the released value's rank is within d_opt + k of the target,
k = (ln(2M/β) + 10^−8)/a with M = HI − LO + 1 lattice points, where d_opt is the smallest rank distance any point
attains (at most ½ unless values are tied at the percentile). The derivation: a point at score U < U_cut has
weight at most 2^K·x(U)·(1 + 2^−39), and a set B of points has probability at most Σ_B W_b/W* under both
mechanisms (the exponential mechanism's Z is at least W*; permute-and-flip, above), so points at least k ranks beyond
d_opt carry at most M·e^{−a·k}·(1 + 2^−39) ≤ β/2; the floor points carry at most M·2^{G+1−K}·e^{a·d_opt}, which
is at most β/2 when M·e^{a·d_opt} ≤ 2^86·β (for β = 0.05 and M ≤ 2^53, when d_opt ≤ 19/a).

**Memory.** The samplers need the selection's distinct values with their counts (not the rows): at most
min(n, M) pairs, 16 bytes each, and Python work on the distinct values within U_cut of the target
(ranks within about 61/a of it); the rest is handled as two blocks of equal weight.
"""

from __future__ import annotations

import bisect
import decimal
import itertools
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

#: Bits of the integer weights: the best point has weight about 2^WEIGHT_BITS.
WEIGHT_BITS = 128

#: Weights below 2^GUARD_BITS are not used: beyond the score where the weight reaches it, every point has
#: that floor weight (the ceiling then changes a weight by at most a relative 2^−GUARD_BITS).
GUARD_BITS = 40

#: Taken off ε/2 to pay for the rounding (decimal, ceiling) in the ratio bound.
SLACK = Fraction(1, 2**38)

_PREC = 34

#: Core intervals whose weights are held at once by the sampler.
_CHUNK = 4096


def _context(rounding=decimal.ROUND_HALF_EVEN) -> decimal.Context:
    return decimal.Context(prec=_PREC, rounding=rounding, Emin=-999999, Emax=999999)


def quantile_fraction(p: float) -> Fraction:
    """The quantile q = p/100 as an exact fraction of the percentile as written (50 → 1/2, 33.3 → 333/1000)."""
    q = Fraction(repr(float(p))) / 100
    if not 0 < q < 1:
        raise ValueError(f"the percentile must lie strictly between 0 and 100, got {p!r}")
    return q


@dataclass(frozen=True)
class RankWeights:
    """The integer weight function W(U) of the module docstring, for one ε and one quantile q = P/D.

    Attributes
    ----------
    epsilon : float
        The ε of the release (ε-DP, proved on these integers).
    a : decimal.Decimal
        ε/2 − 2^−38, rounded down: the exponent rate per unit of rank distance.
    P, D : int
        q = P/D in lowest terms; the score U = |D·r − P·n| has sensitivity D.
    u_cut : int
        Scores at or beyond it get the floor weight.
    floor : int
        W(u_cut).
    """

    epsilon: float
    a: decimal.Decimal
    P: int
    D: int
    u_cut: int
    floor: int
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, epsilon: float, q: Fraction) -> "RankWeights":
        eps = Fraction(float(epsilon))
        if not eps > 2 * SLACK:
            raise ValueError(f"ε = {float(epsilon):g} is too small for the exponential mechanism's exact weights "
                             f"(it needs ε > 2^-37)")
        a_frac = eps / 2 - SLACK
        down = _context(decimal.ROUND_FLOOR)
        a = down.divide(decimal.Decimal(a_frac.numerator), decimal.Decimal(a_frac.denominator))
        P, D = q.numerator, q.denominator
        # U_cut ≤ (K − G)·ln 2·D/a, so that 2^K·x(U) ≥ 2^G up to it (one unit below the computed value: the
        # rounding of ln 2 and of the division cannot push it past the true one)
        ctx = _context()
        bound = ctx.divide(ctx.multiply(ctx.multiply(decimal.Decimal(WEIGHT_BITS - GUARD_BITS), ctx.ln(decimal.Decimal(2))),
                                        decimal.Decimal(D)), a)
        u_cut = max(int(bound.to_integral_value(rounding=decimal.ROUND_FLOOR)) - 1, 0)
        w = cls(float(epsilon), a, P, D, u_cut, 0)
        floor = w._ceil_weight(u_cut)
        return cls(float(epsilon), a, P, D, u_cut, floor)

    def _ceil_weight(self, u: int) -> int:
        ctx = _context()
        x = ctx.exp(ctx.minus(ctx.divide(ctx.multiply(self.a, decimal.Decimal(int(u))), decimal.Decimal(self.D))))
        return int(ctx.multiply(x, decimal.Decimal(2**WEIGHT_BITS)).to_integral_value(rounding=decimal.ROUND_CEILING))

    def weight(self, u: int) -> int:
        """W(U): ⌈2^K·e^{−a·U/D}⌉ below U_cut, the floor W(U_cut) from there on."""
        u = int(u)
        if u >= self.u_cut:
            return self.floor
        w = self._cache.get(u)
        if w is None:
            if len(self._cache) > 1 << 16:  # (held for the groups of one query; bounded)
                self._cache.clear()
            w = self._cache[u] = max(self._ceil_weight(u), self.floor)
        return w

    def scores(self, below: np.ndarray, above: np.ndarray) -> np.ndarray:
        """U = |(D − P)·L − P·G| for L values below and G above (int64; the caller checks D·n < 2^62)."""
        return np.abs((self.D - self.P) * np.asarray(below, dtype=np.int64) - self.P * np.asarray(above, dtype=np.int64))

    def rank_within(self, points: int, beta: float) -> float:
        """k of the accuracy statement: P(|rank − t| > d_opt + k) ≤ β, k = (ln(2M/β) + 10^−8)/a (module
        docstring; M = ``points``)."""
        import math

        return (math.log(2.0 * points / beta) + 1e-8) / float(self.a)


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


def lattice_weights(values, counts, lo: int, hi: int, weights: RankWeights) -> list[int]:
    """The integer weight of every lattice point LO..HI (for small lattices: the exact distribution the sampler
    realises is these weights over their sum)."""
    _check_values(values, counts, lo, hi)
    below, above, starts, lengths = _intervals(values, counts, lo, hi)
    u = weights.scores(below, above)
    out: list[int] = []
    for uk, length in zip(u.tolist(), lengths.tolist()):
        out.extend([weights.weight(uk)] * int(length))
    return out


def _uniform_below(z: int, generator: np.random.Generator) -> int:
    """A uniform integer in [0, z), exactly: bits from 62-bit words of the generator, rejection above z."""
    bits = z.bit_length()
    words = -(-bits // 62)
    while True:
        x = 0
        for w in generator.integers(0, 1 << 62, size=words, dtype=np.int64).tolist():
            x = (x << 62) | int(w)
        x >>= 62 * words - bits
        if x < z:
            return x


def sample_quantile(values, counts, lo: int, hi: int, weights: RankWeights, generator: np.random.Generator) -> int:
    """One lattice point drawn with probability W(U(y))/Z (module docstring), exactly.

    ``values``: the distinct values of the selection in lattice units, sorted, within [lo, hi]; ``counts``: how
    many times each occurs (n = their sum may be 0: every point then has the same score and the draw is uniform).
    """
    _check_values(values, counts, lo, hi)
    below, above, starts, lengths = _intervals(values, counts, lo, hi)
    u = weights.scores(below, above)
    # (D − P)·L − P·G strictly increases along the intervals, so U is V-shaped: those below U_cut are one
    # contiguous run [k0, k1),
    # and the intervals before and after it have the floor weight per point: two blocks
    core = np.flatnonzero(u < weights.u_cut)
    k0, k1 = (int(core[0]), int(core[-1]) + 1) if core.size else (len(u), len(u))
    left, right = int(lengths[:k0].sum()), int(lengths[k1:].sum())
    # pass 1: the mass of each chunk of core intervals (Python integers for a chunk at a time: memory does not
    # grow with the number of distinct values)
    chunks = [(k, min(k + _CHUNK, k1)) for k in range(k0, k1, _CHUNK)]

    def chunk_items(a: int, b: int):
        return [(int(lengths[k]) * w, w, int(starts[k])) for k in range(a, b) if lengths[k] > 0
                for w in (weights.weight(int(u[k])),)]

    masses = [left * weights.floor] + [sum(m for m, _, _ in chunk_items(a, b)) for a, b in chunks] + \
        [right * weights.floor]
    cum = list(itertools.accumulate(masses))
    x = _uniform_below(cum[-1], generator)
    j = bisect.bisect_right(cum, x)
    x -= cum[j - 1] if j else 0
    if j == 0:  # the left block: every point has the floor weight
        return int(lo) + x // weights.floor
    if j == len(masses) - 1:
        return int(starts[k1]) + x // weights.floor
    # pass 2: the chosen chunk's intervals again, then the point inside the interval
    items = chunk_items(*chunks[j - 1])
    inner = list(itertools.accumulate(m for m, _, _ in items))
    i = bisect.bisect_right(inner, x)
    x -= inner[i - 1] if i else 0
    _, w, first = items[i]
    return first + x // w


def permute_and_flip_law(values, counts, lo: int, hi: int, weights: RankWeights) -> list[Fraction]:
    """Permute-and-flip's exact law on the lattice LO..HI, P(y) = (W_y/W*)·∫_0^1 Π_{s≠y} (1 − (W_s/W*)·t) dt
    (module docstring), as fractions; the product is expanded, so this is for small lattices (tests, examples)."""
    w = lattice_weights(values, counts, lo, hi, weights)
    top = max(w)
    p = [Fraction(x, top) for x in w]
    law = []
    for y in range(len(p)):
        poly = [Fraction(1)]  # the coefficients of Π_{s≠y} (1 − p_s·t), lowest degree first
        for s, ps in enumerate(p):
            if s != y:
                poly = [a - ps * b for a, b in zip(poly + [Fraction(0)], [Fraction(0)] + poly)]
        law.append(p[y] * sum(c / (i + 1) for i, c in enumerate(poly)))
    return law


def _runs(values, counts, lo: int, hi: int, weights: RankWeights):
    """The lattice cut into runs of one weight: the floor block left of the core, the core intervals (empty ones
    left out), the floor block right of it. Returns (starts, lengths) as int64 arrays and the integer weights."""
    _check_values(values, counts, lo, hi)
    below, above, starts, lengths = _intervals(values, counts, lo, hi)
    u = weights.scores(below, above)
    core = np.flatnonzero(u < weights.u_cut)  # one contiguous run (sample_quantile)
    k0, k1 = (int(core[0]), int(core[-1]) + 1) if core.size else (len(u), len(u))
    left, right = int(lengths[:k0].sum()), int(lengths[k1:].sum())
    keep = k0 + np.flatnonzero(lengths[k0:k1] > 0)
    first = [int(lo)] if left else []
    last = [int(starts[k1])] if right else []
    run_starts = np.array(first + starts[keep].tolist() + last, dtype=np.int64)
    run_lengths = np.array(([left] if left else []) + lengths[keep].tolist() + ([right] if right else []),
                           dtype=np.int64)
    run_weights = [weights.floor] * bool(left) + [weights.weight(x) for x in u[keep].tolist()] + \
        [weights.floor] * bool(right)
    return run_starts, run_lengths, run_weights


#: Margin of the float64 bounds on ln(V_g/W_g), relative to 1 + |ln(V_g/W_g)| (numpy's log and expm1 are within a
#: few ulps, 2^−52 each).
FLOAT_MARGIN = 2.0**-40


def _least_run(lengths: np.ndarray, w: list[int], generator: np.random.Generator) -> int:
    """The run g holding argmin_s U_s/W_s over the lattice: argmin_g V_g/W_g, V_g = 1 − R_g^{1/m_g} the least of
    the run's m_g uniforms (module docstring, "Exact sampling")."""
    import math

    n = lengths.size
    if n == 1:
        return 0
    k = generator.integers(0, 1 << 53, size=n, dtype=np.int64)  # R_g ∈ [k·2^−53, (k + 1)·2^−53)
    ln_w = np.array([math.log(x) for x in w])
    m = lengths.astype(np.float64)
    with np.errstate(divide="ignore"):
        # ln V(r) = ln(−expm1(ln(r)/m)) decreases in r: the upper bound at the interval's low end
        top = np.log(-np.expm1(np.log(k * 2.0**-53) / m)) - ln_w
        bottom = np.log(-np.expm1(np.log((k + 1) * 2.0**-53) / m)) - ln_w
    top += FLOAT_MARGIN * (1.0 + np.abs(top))
    bottom -= FLOAT_MARGIN * (1.0 + np.abs(bottom))
    best = int(np.argmin(top))
    contenders = np.flatnonzero(bottom <= top[best])
    if contenders.size == 1:
        return best
    return _least_run_exact(contenders, k, lengths, w, generator)


def _least_run_exact(contenders, k, lengths, w, generator) -> int:
    """The float bounds did not separate the contenders: extend their R_g by 63 random bits at a time and bound
    V_g/W_g with ``decimal`` (directed rounding, the error of ln and exp counted) until one is below all others."""
    known = {int(g): int(k[g]) for g in contenders}  # R_g ∈ [known/2^bits, (known + 1)/2^bits)
    bits = 53
    while True:
        for g in known:
            known[g] = (known[g] << 63) | int(generator.integers(0, 1 << 63, dtype=np.int64))
        bits += 63
        bounds = {g: _key_bounds(r, bits, int(lengths[g]), w[g]) for g, r in known.items()}
        best = min(bounds, key=lambda g: bounds[g][1])
        known = {g: r for g, r in known.items() if bounds[g][0] <= bounds[best][1]}
        if len(known) == 1:
            return best


def _key_bounds(r: int, bits: int, m: int, w: int) -> tuple[decimal.Decimal, decimal.Decimal]:
    """Bounds on V/w for V = 1 − R^{1/m}, R ∈ [r/2^bits, (r + 1)/2^bits). At precision p, R's division, ln, the
    division by m and exp are each correctly rounded (relative error ≤ ½·10^{1−p}), so V = 1 − exp(ln(R)/m) is
    within 4·10^{1−p} of the truth (|ln R|/m·e^{ln(R)/m} ≤ 1/e); η = 10^{2−p} is added on each side, and p grows with
    the bits so that η stays far below V ≥ 2^−bits/m."""
    prec = 40 + bits // 3 + m.bit_length() // 3
    exps = dict(Emin=-999999999, Emax=999999999)
    near = decimal.Context(prec=prec, rounding=decimal.ROUND_HALF_EVEN, **exps)
    up = decimal.Context(prec=prec, rounding=decimal.ROUND_CEILING, **exps)
    down = decimal.Context(prec=prec, rounding=decimal.ROUND_FLOOR, **exps)
    eta = decimal.Decimal(10) ** (2 - prec)

    def v(n: int) -> decimal.Decimal:
        if n == 0:
            return decimal.Decimal(1)
        if n >> bits:  # R = 1
            return decimal.Decimal(0)
        ln_r = near.ln(near.divide(decimal.Decimal(n), decimal.Decimal(1 << bits)))
        return near.subtract(decimal.Decimal(1), near.exp(near.divide(ln_r, decimal.Decimal(m))))

    high = up.divide(up.add(v(r), eta), decimal.Decimal(w))
    low = down.divide(max(down.subtract(v(r + 1), eta), decimal.Decimal(0)), decimal.Decimal(w))
    return low, high


def sample_permute_and_flip(values, counts, lo: int, hi: int, weights: RankWeights,
                            generator: np.random.Generator) -> int:
    """One lattice point drawn by permute-and-flip with coins W(U(y))/W* (module docstring), exactly: the run of
    one weight holding argmin_s U_s/W_s, then a uniform point of it. Arguments as :func:`sample_quantile`."""
    starts, lengths, w = _runs(values, counts, lo, hi, weights)
    g = _least_run(lengths, w, generator)
    return int(starts[g]) + int(generator.integers(0, int(lengths[g])))
