r"""The exact discrete planar Laplace on a lattice: no floating-point value decides a draw.

**The law.** On the lattice ΛZ² the discrete planar Laplace centred at 0 gives the offset ΛZ the probability

.. math:: P(Z = z) = e^{-a' \|z\|_2} / N, \qquad a' = \varepsilon\Lambda,\quad N = \sum_{w \in \mathbb Z^2} e^{-a'\|w\|_2}.

Centred at a lattice point x, P(x + ΛZ = y) = e^{−ε‖y − x‖}/N with N independent of x (translation
invariance), so for lattice points x, x' and every y: P(y | x) ≤ e^{ε‖x − x'‖} P(y | x') — exactly
ε·d₂-private (Chatzikokolakis et al. 2013 §6.2's planar Laplace with the Lebesgue measure replaced by counting measure on
the lattice). Every lattice point has positive probability from every lattice input, so no output
singles out an input (Mironov, CCS 2012). ε is the float the caller gives and Λ a power of two, so
a' = ε·Λ is an exact dyadic rational: the delivered ε is ε itself, with no rounding.

**The sampler** (rejection from a product of two one-sided geometrics in blocks):

1. proposal rate a = the largest double ≤ a'·(1 − 2⁻³⁰)/√2 (so a·‖z‖₁ ≤ a'‖z‖₂ for every z);
   block size n = 2^k with β = a·n ≤ 1/32 (k = 0 when a > 1/32);
2. per coordinate, |z_i| = n·M_i + J_i with M_i geometric of ratio e^{−β}
   (P(M ≥ m) = e^{−βm}, drawn by inversion of a uniform U: M = ⌊−ln U / β⌋), J_i uniform on
   {0, …, n−1} (k bits of a word), and a sign bit s_i; the proposal has weight e^{−β(M₁ + M₂)} =
   e^{−a·n(M₁+M₂)} on each of the 2^{[z₁≠0]+[z₂≠0]} sign patterns;
3. reject if a zero coordinate has sign bit 1 (zero is not counted twice, as in CKS 2020 Alg. 2);
   accept with probability e^{−γ}, γ = a'‖z‖₂ − a·n(M₁ + M₂) ≥ 0. The accepted z then has
   probability ∝ e^{−a'‖z‖₂}, exactly. Acceptance ≈ π(1 − e^{−β})²/(4β²)·(…) ≈ 0.77.

**Exact decisions.** Both random decisions compare a uniform real U with an irrational number
(U ≤ e^{−βm} for the geometric, U < e^{−γ} for the acceptance). U is generated lazily: its first bits
come from the random source (32 bits of a word for each geometric, 52 for the acceptance), so U lies in
an interval [V, V + 2^-b). The comparison is first made in float64 with a rigorous error bound
(:data:`GUARD` = 2⁻⁴⁰ relative on logarithms, exponentials and the arithmetic, where IEEE double and
numpy's exp/log err by a few 2⁻⁵³); it is **decided** only when the whole interval of U lies on one
side of the whole error interval of the threshold (exact comparisons of doubles on the 2^-b grid).
The rare undecided draws (below 10⁻⁶ of them) go to a fallback that computes the threshold with
:mod:`decimal` at increasing precision (correctly rounded ln, exp, sqrt; error bound 10^{3−P}) and
extends U by further 64-bit words until the comparison is decided. Every decision therefore equals the
comparison of an exactly uniform real U with the exact threshold: the draws follow the law above
exactly (given uniform random words), and the fallback is tested by forcing it (``force_fallback``),
which must give the same output for the same words.

The work is vectorised over all pending proposals; only undecided draws run Python code. The random
words come from a numpy Generator (the release source) or, in keyed research mode, from a
:class:`~dprivacy.sampling.keyed.KeyedStream`, whose draw j of a record depends on its key and j only:
every round draws the same number of words for every pending record, and fallback words come from a
separate counter space, so the output does not depend on how records are batched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Context, Decimal
from fractions import Fraction

import numpy as np

#: Relative error bound used for every float64 decision (true errors are a few 2^-53).
GUARD = 2.0**-40
#: Target block parameter: β = a·2^k ≤ BLOCK_BETA.
BLOCK_BETA = 1.0 / 32.0
#: The smallest a' = ε·Λ accepted (a finer lattice could overflow 64-bit offsets with probability
#: e^{-2^11}; it also means a noise of more than 2^50 lattice steps, which no use needs).
MIN_RATE = 2.0**-50
#: Largest a' = ε·Λ accepted: coarser lattices make almost every draw 0 (the release is then close to
#: the true lattice point) and the rejection slow.
MAX_RATE = 64.0

_TWO64 = 2.0**64
#: Parts of a parallel draw have at least this many offsets.
PARALLEL_MIN_PART = 1 << 15
#: Offsets drawn per pass of the rejection loop (arrays of 512 KiB: in cache, below the mmap threshold).
CHUNK = 1 << 16
_LN2_64 = 64.0 * math.log(2.0)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_MAX_ROUNDS = 10_000


@dataclass(frozen=True)
class LatticeLaplace:
    """Parameters of the exact discrete planar Laplace on ΛZ² (see the module notes).

    Attributes
    ----------
    epsilon : float
        ε per unit of length (the caller's float, delivered exactly).
    lattice : float
        Λ, a power of two (units of length).
    rate : float
        a' = ε·Λ (exact).
    proposal : float
        a ≤ a'/√2, the proposal's rate per lattice step.
    block_bits : int
        k: blocks of n = 2^k lattice steps.
    """

    epsilon: float
    lattice: float
    rate: float
    proposal: float
    block_bits: int

    @classmethod
    def build(cls, epsilon: float, lattice: float) -> "LatticeLaplace":
        """ε per unit length on the lattice of step Λ (a power of two): a' = ε·Λ exactly."""
        from .._validate import check_epsilon

        e = check_epsilon(epsilon)
        lam = check_epsilon(lattice, name="lattice")
        if math.frexp(lam)[0] != 0.5:
            raise ValueError(f"the lattice step must be a power of two (exact in binary), got {lam!r}")
        exact = Fraction(e) * Fraction(lam)
        rate = float(exact)
        if Fraction(rate) != exact or not (MIN_RATE <= rate <= MAX_RATE):
            raise ValueError(f"ε·Λ = {float(exact):.3g} is outside [2^-50, 64]: choose a lattice step Λ between "
                             f"{MIN_RATE / e:.3g} and {MAX_RATE / e:.3g} for ε = {e:g}")
        return cls.from_rate(rate, epsilon=e, lattice=lam)

    @classmethod
    def from_rate(cls, rate: float, *, epsilon: float | None = None, lattice: float = 1.0) -> "LatticeLaplace":
        """The law P(z) ∝ e^{−a'‖z‖₂} on Z² for a' = ``rate`` (a double, used exactly); ``epsilon`` and
        ``lattice`` only describe it (ε = a'/Λ by default)."""
        rate = float(rate)
        if not (MIN_RATE <= rate <= MAX_RATE):
            raise ValueError(f"the rate per lattice step a' = {rate:.3g} is outside [2^-50, 64]")
        # a = the largest double ≤ a'(1 − 2^-30)/√2: a lower bound of a'/√2 by a margin, exactly known.
        a = _float_down(Fraction(rate) * (1 - Fraction(1, 1 << 30)) * _inv_sqrt2_lower())
        k = 0
        while a * 2.0 ** (k + 1) <= BLOCK_BETA:
            k += 1
        if k > 62:
            raise ValueError(f"a' = {rate:.3g} is too small for 64-bit blocks")
        return cls(rate / lattice if epsilon is None else float(epsilon), float(lattice), rate, a, k)

    @property
    def block(self) -> int:
        return 1 << self.block_bits

    @property
    def beta(self) -> float:
        """β = a·2^k, the rate of the block geometric (exact)."""
        return self.proposal * float(self.block)

    def to_dict(self) -> dict:
        return {"law": "discrete planar Laplace on the lattice ΛZ², P(z) ∝ exp(−ε‖z‖₂)",
                "lattice_step": self.lattice, "epsilon": self.epsilon, "delivered_epsilon_on_lattice": self.epsilon,
                "sampler": "rejection from a product of block geometrics; every decision compares a lazily extended "
                           "uniform with the exact threshold (float64 with a 2^-40 error bound, Decimal fallback)",
                "block_bits": self.block_bits}

    def offsets(self, size: int, rng, *, force_fallback: bool = False, stats: dict | None = None,
                threads: int = 1, consume=None) -> tuple[np.ndarray, np.ndarray] | None:
        """``size`` independent offsets (z₁, z₂) ∈ Z² (int64 arrays, lattice steps) of the discrete planar
        Laplace with P(z) ∝ e^{−ε Λ ‖z‖₂}. ``rng``: a numpy Generator, a KeyedStream (one offset per
        record) or a word source (tests).

        Large draws are made in chunks of :data:`CHUNK` (the arrays stay in cache and below the
        allocator's mmap threshold). ``threads`` > 1 splits them into that many parts drawn in parallel
        (numpy releases the GIL): a Generator gives each part its own generator keyed by words drawn from it
        (:func:`~dprivacy.sampling.source.child_generator`: release mode stays cryptographic, seeded mode reproducible), a KeyedStream
        each part its own records (the output is the same as with one thread). ``consume(a, b, z₁, z₂)``:
        if given, each chunk [a, b) is handed to it (in its thread) instead of being returned."""
        draw = self.prepare(size, rng, threads=threads)
        returned = consume is None
        if consume is None:
            z1 = np.empty(draw.size, dtype=np.int64)
            z2 = np.empty(draw.size, dtype=np.int64)

            def consume(a, b, x1, x2):
                z1[a:b], z2[a:b] = x1, x2
        draw.run(consume, stats=stats, parallel=True, force_fallback=force_fallback)
        return (z1, z2) if returned else None

    def prepare(self, size: int, rng, *, threads: int = 1) -> "PreparedDraw":
        """The draw of :meth:`offsets` split into its parts, with every word taken from ``rng`` itself taken now:
        the part generators' keys (a Generator split into ``threads`` parts). Running the returned draw later, in
        any thread, gives the offsets :meth:`offsets` gives now, unless its ``ordered`` is set (a single part drawn
        from ``rng`` itself, or a word source): that one must run before ``rng`` is used again."""
        from .keyed import KeyedStream

        size = int(size)
        if not _splittable(rng):
            return PreparedDraw(self, size, [(rng, 0, size)], keyed=False, ordered=True)
        threads = max(1, min(int(threads), size // PARALLEL_MIN_PART))
        keyed = isinstance(rng, KeyedStream)
        bounds = np.linspace(0, size, threads + 1).astype(int)
        sources = [rng] if threads == 1 else [_part_source(rng, bounds[t], bounds[t + 1]) for t in range(threads)]
        parts = [(sources[t], int(bounds[t]), int(bounds[t + 1])) for t in range(threads)]
        return PreparedDraw(self, size, parts, keyed=keyed, ordered=threads == 1 and not keyed, stream=rng if keyed else None)


class PreparedDraw:
    """The parts of a draw of offsets whose random words are fixed (:meth:`LatticeLaplace.prepare`)."""

    def __init__(self, spec: LatticeLaplace, size: int, parts: list, *, keyed: bool, ordered: bool, stream=None):
        self.spec, self.size, self.parts, self.keyed, self.ordered, self.stream = spec, size, parts, keyed, ordered, stream

    def run(self, consume, *, stats: dict | None = None, parallel: bool = True, force_fallback: bool = False) -> None:
        """``consume(a, b, z₁, z₂)`` for each chunk [a, b) of the offsets (in the part's thread). ``parallel``: the
        parts on threads of their own; else one after the other in the calling thread (the same offsets)."""
        spec, keyed = self.spec, self.keyed
        if not _splittable(self.parts[0][0]):  # a word source (tests): one part, returned whole
            consume(0, self.size, *_sample(spec, self.size, _words_of(self.parts[0][0]), force_fallback=force_fallback,
                                           stats=stats))
            return
        calls = [self.stream.calls] if keyed else []
        counts: list = [{} for _ in self.parts]

        def run(t):
            src, a, b = self.parts[t]
            for c0 in range(a, b, CHUNK):
                c1 = min(c0 + CHUNK, b)
                part = _part_source(self.stream, c0, c1) if keyed else src
                consume(c0, c1, *_sample(spec, c1 - c0, _words_of(part), force_fallback=force_fallback,
                                         stats=counts[t]))
                if keyed:
                    calls.append(part.calls)

        if len(self.parts) == 1 or not parallel:
            for t in range(len(self.parts)):
                run(t)
        else:
            from .._threads import thread_pool

            list(thread_pool("planar", len(self.parts)).map(run, range(len(self.parts))))
        if keyed:  # as one call on the whole batch: the stream advances by the longest record's draws
            self.stream.calls = max(calls)
        if stats is not None:
            for c in counts:
                for k, v in c.items():
                    stats[k] = stats.get(k, 0) + v


def _inv_sqrt2_lower() -> Fraction:
    """A rational just below 1/√2 (from a 40-digit Decimal square root, rounded down)."""
    ctx = Context(prec=40, rounding=ROUND_FLOOR)
    return Fraction(ctx.divide(Decimal(1), ctx.sqrt(Decimal(2)))) - Fraction(1, 10**38)


def _float_down(x: Fraction) -> float:
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, 0.0)
    return f


# -- random words ---------------------------------------------------------------------------------


def _splittable(rng) -> bool:
    from .keyed import KeyedStream

    return isinstance(rng, (KeyedStream, np.random.Generator))


def _part_source(rng, a: int, b: int):
    """The source of part [a, b) of a parallel draw (see :meth:`LatticeLaplace.offsets`)."""
    from .keyed import KeyedStream

    if isinstance(rng, KeyedStream):
        part = KeyedStream.__new__(KeyedStream)
        part.key, part.keys, part.n, part.calls = rng.key, rng.keys[a:b], b - a, rng.calls
        return part
    from .source import child_generator

    return child_generator(rng)



class _GeneratorWords:
    """64-bit words from a numpy Generator (release or seeded mode)."""

    def __init__(self, gen):
        self.gen = gen

    def main(self, idx: np.ndarray, count: int = 1) -> tuple[np.ndarray, list]:
        """``count`` words for each of the records ``idx``: (array (count, len(idx)), their call numbers)."""
        w = self.gen.integers(0, 1 << 64, size=(count, idx.size), dtype=np.uint64, endpoint=False)
        return w, [-1] * count

    def extend(self, record: int, call: int, k: int) -> int:
        return int(self.gen.integers(0, 1 << 64, dtype=np.uint64, endpoint=False))


class _KeyedWords:
    """Draw j of each pending record from a KeyedStream; fallback words from a separate counter space."""

    def __init__(self, stream):
        self.stream = stream

    def main(self, idx: np.ndarray, count: int = 1) -> tuple[np.ndarray, list]:
        calls = []
        out = np.empty((count, idx.size), dtype=np.uint64)
        for c in range(count):
            calls.append(self.stream.calls)
            out[c] = self.stream.words_at(idx)
        return out, calls

    def extend(self, record: int, call: int, k: int) -> int:
        return self.stream.extension_word(record, call, k)


def _words_of(rng):
    from .keyed import KeyedStream

    if isinstance(rng, KeyedStream):
        return _KeyedWords(rng)
    if hasattr(rng, "main") and hasattr(rng, "extend"):
        return rng
    return _GeneratorWords(rng)


# -- exact decisions ------------------------------------------------------------------------------

_ONE_BITS = np.uint64(0x3FF0000000000000)
_S12 = np.uint64(12)
_ULP52 = 2.0**-52


def _unit52(u: np.ndarray) -> np.ndarray:
    """The top 52 bits of each word as a double V·2^-52 in [0, 1), exactly (U ∈ [V, V + 2^-52))."""
    return ((u >> _S12) | _ONE_BITS).view(np.float64) - 1.0


def _geometric_fast(v: np.ndarray, beta: float, bits: int = 52) -> tuple[np.ndarray, np.ndarray]:
    """M = ⌊−ln U/β⌋ for U in [V, V + 2^-bits) (``v`` = V as exact doubles on the 2^-bits grid):
    (M, decided). Decided iff the whole interval of −ln U, widened by the float error bound, lies in one
    bin [βM, β(M+1))."""
    inv_beta = 1.0 / beta
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        L = -np.log(v)  # −ln V: the upper end of −ln U (inf for V = 0: undecided)
        # the interval of −ln U is (L − 2^-bits/V, L]; float errors of the log and of x = L/β are below
        # GUARD·(1 + L) in −ln U
        tol = (GUARD * (1.0 + L) + 2.0**-bits / v) * inv_beta
        x = L * inv_beta
        m = np.floor(x)
        frac = x - m  # exact
        decided = (frac >= tol) & (frac <= 1.0 - tol) & (v > 0.0)
    m[~decided] = 0.0
    return m.astype(np.int64), decided


def _accept_fast(u: np.ndarray, gamma: np.ndarray, one: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """U < e^{−γ} for U in [V, V + 2^-52) (V the top 52 bits of u): (accept, decided); ``one``: γ = 0
    exactly (accept). The float p = e^{−γ̂} is within a relative GUARD·(1 + γ) of e^{−γ}."""
    v = _unit52(u)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        p = np.exp(-gamma)
        slack = p * (GUARD * (1.0 + gamma))
        acc = one | (v + _ULP52 <= p - slack)  # V + 2^-52 exact; then U < V + 2^-52 ≤ p_lo ≤ e^{−γ}
        rej = ~one & (v >= p + slack + 2.0**-1000)  # U ≥ V ≥ p_hi ≥ e^{−γ}
    return acc, acc | rej


def _ctx(prec: int) -> Context:
    return Context(prec=prec, Emin=-10**8, Emax=10**8)


def _geometric_exact(words, record: int, call: int, u: int, beta: float, bits: int = 64, slot: int = 0) -> int:
    """The fallback of :func:`_geometric_fast`: M = ⌊−ln U/β⌋ decided in Decimal, U extended lazily
    (U ∈ [k/2^b, (k+1)/2^b) with k = ``u`` its first b = ``bits`` bits; extension words from ``slot``)."""
    k, prec, ext = int(u), 50, 0
    b = Fraction(beta)
    while True:
        if k > 0:
            ctx = _ctx(prec)
            scale = Decimal(1 << bits)  # exact (Decimal of an int)
            hi = ctx.minus(ctx.ln(ctx.divide(Decimal(k), scale)))  # −ln of the interval's lower end: the larger
            lo = ctx.minus(ctx.ln(ctx.divide(Decimal(k + 1), scale)))
            err = Fraction(1, 10 ** (prec - 3)) * (1 + abs(Fraction(hi)))
            lo_f, hi_f = Fraction(lo) - err, Fraction(hi) + err
            c = max(0, math.floor(lo_f / b))
            if b * c <= lo_f and hi_f < b * (c + 1):
                return c
        k = (k << 64) | words.extend(record, call, ext + (slot << 20))
        ext += 1
        bits += 64
        prec += 25


def _gamma_exact(ctx: Context, z1: int, z2: int, m_sum: int, spec: LatticeLaplace) -> tuple[Decimal, Fraction]:
    """γ = a'‖z‖₂ − a·n·(M₁ + M₂) in Decimal and an absolute error bound."""
    r = ctx.sqrt(Decimal(z1 * z1 + z2 * z2))
    t1 = ctx.multiply(Decimal(spec.rate), r)
    t2 = ctx.multiply(Decimal(spec.proposal), Decimal(spec.block * m_sum))
    g = ctx.subtract(t1, t2)
    # each of sqrt, the two products and the difference is correctly rounded to ctx.prec digits
    err = Fraction(1, 10 ** (ctx.prec - 3)) * (1 + abs(Fraction(t1)) + abs(Fraction(t2)))
    return g, err


def _accept_exact(words, record: int, call: int, u: int, z1: int, z2: int, m_sum: int, spec: LatticeLaplace) -> bool:
    """The fallback of :func:`_accept_fast`: U < e^{−γ} decided in Decimal, U extended lazily."""
    if z1 == 0 and z2 == 0:
        return True
    k, bits, prec, ext = int(u), 64, 50, 0
    while True:
        ctx = _ctx(prec)
        g, err = _gamma_exact(ctx, z1, z2, m_sum, spec)
        p = ctx.exp(ctx.minus(g))
        rel = Fraction(1, 10 ** (prec - 3))
        pf = Fraction(p)
        # |γ − g| ≤ err ⇒ e^{−γ} ∈ p·e^{±err}·(1 ± rel); e^{err} ≤ 1 + 2·err for err ≤ 1.
        p_lo = pf * (1 - 2 * err) * (1 - rel)
        p_hi = pf * (1 + 2 * err) * (1 + rel)
        if Fraction(k + 1, 1 << bits) <= p_lo:
            return True
        if Fraction(k, 1 << bits) >= p_hi:
            return False
        k = (k << 64) | words.extend(record, call, ext)
        ext += 1
        bits += 64
        prec += 25


# -- the sampler ----------------------------------------------------------------------------------


def _sample(spec: LatticeLaplace, size: int, words, *, force_fallback: bool = False, stats: dict | None = None):
    """The rejection loop of the module notes. Words per proposal: one for both geometrics (32 bits each,
    the high half for M₁), one for J₁, J₂ and the two signs (two when 2k + 2 > 64), one for the
    acceptance (its top 52 bits); every round draws them for every pending proposal."""
    z1 = np.zeros(size, dtype=np.int64)
    z2 = np.zeros(size, dtype=np.int64)
    pending = np.arange(size)
    kb = spec.block_bits
    n = spec.block
    beta = spec.beta
    a, ap = spec.proposal, spec.rate
    g = float(Fraction(ap) * _inv_sqrt2_lower() - Fraction(a))  # a'/√2 − a > 0 to full relative precision
    packed = 2 * kb + 2 <= 64
    nwords = 3 if packed else 4
    mask = np.uint64((1 << kb) - 1)
    lo32 = np.uint64(0xFFFFFFFF)
    s32, s62, s63, ukb = np.uint64(32), np.uint64(62), np.uint64(63), np.uint64(kb)
    one_u = np.uint64(1)
    limit = (1 << 62) // n
    half_ap = 0.5 * ap
    count = {"rounds": 0, "proposals": 0, "fallback_geometric": 0, "fallback_accept": 0}
    for _ in range(_MAX_ROUNDS):
        m = pending.size
        if m == 0:
            break
        count["rounds"] += 1
        count["proposals"] += m
        # A fixed number of words per round for every pending record (keyed streams stay aligned).
        w, calls = words.main(pending, nwords)
        w0 = w[0]
        v1 = (w0 >> s32).astype(np.float64) * 2.0**-32  # exact: 32-bit integers
        v2 = (w0 & lo32).astype(np.float64) * 2.0**-32
        if packed:
            w3 = w[1]
            j1 = (w3 & mask).view(np.int64)
            j2 = ((w3 >> ukb) & mask).view(np.int64)
            s1 = ((w3 >> s62) & one_u).astype(bool)
            s2 = (w3 >> s63).astype(bool)
        else:
            j1 = (w[1] & mask).view(np.int64)
            j2 = (w[2] & mask).view(np.int64)
            s1 = (w[1] >> s63).astype(bool)
            s2 = (w[2] >> s63).astype(bool)
        w_acc, acc_call = w[nwords - 1], calls[nwords - 1]
        m1, d1 = _geometric_fast(v1, beta, 32)
        m2, d2 = _geometric_fast(v2, beta, 32)
        if force_fallback:
            d1[:] = False
            d2[:] = False
        for arr, dec, shift, slot in ((m1, d1, s32, 0), (m2, d2, np.uint64(0), 1)):
            for i in np.flatnonzero(~dec):
                u32 = int((w0[i] >> shift) & lo32)
                arr[i] = _geometric_exact(words, int(pending[i]), calls[0], u32, beta, bits=32, slot=slot)
                count["fallback_geometric"] += 1
        if int(max(m1.max(initial=0), m2.max(initial=0))) >= limit:
            raise OverflowError("discrete planar Laplace: an offset beyond 2^62 lattice steps (probability below e^-2000)")
        a1 = m1 * n
        a1 += j1
        a2 = m2 * n
        a2 += j2
        zero1, zero2 = a1 == 0, a2 == 0
        zero_bad = (zero1 & s1) | (zero2 & s2)
        one = zero1 & zero2
        # γ = a'(‖z‖₂ − ‖z‖₁/√2) + (a'/√2 − a)‖z‖₁ + a(J₁ + J₂): three non-negative terms, each with a
        # relative float error of a few 2^-53 (no cancellation: ‖z‖₂ − ‖z‖₁/√2 = (|z₁| − |z₂|)²/2 / (‖z‖₂ + ‖z‖₁/√2)).
        f1, f2 = a1.astype(np.float64), a2.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            l1 = f1 + f2
            den = np.sqrt(f1 * f1 + f2 * f2)
            den += l1 * _INV_SQRT2
            diff = f1 - f2
            diff *= diff
            diff *= half_ap
            diff /= den
            gamma = l1
            gamma *= g
            gamma += diff
            gamma += a * (j1 + j2).astype(np.float64)
        gamma[one] = 0.0
        acc, dec = _accept_fast(w_acc, gamma, one)
        if force_fallback:
            dec = one.copy()
        for i in np.flatnonzero(~dec & ~zero_bad):
            acc[i] = _accept_exact(words, int(pending[i]), acc_call, int(w_acc[i]), int(a1[i]), int(a2[i]),
                                   int(m1[i] + m2[i]), spec)
            count["fallback_accept"] += 1
        ok = acc & ~zero_bad
        if m == size and count["rounds"] == 1:  # the first round: every record pending, in order
            np.copyto(z1, np.where(s1, -a1, a1), where=ok)
            np.copyto(z2, np.where(s2, -a2, a2), where=ok)
        else:
            idx = pending[ok]
            z1[idx] = np.where(s1[ok], -a1[ok], a1[ok])
            z2[idx] = np.where(s2[ok], -a2[ok], a2[ok])
        pending = pending[~ok]
    else:
        raise RuntimeError(f"discrete planar Laplace: rejection did not finish in {_MAX_ROUNDS} rounds")
    if stats is not None:
        for k, v in count.items():
            stats[k] = stats.get(k, 0) + v
    return z1, z2


def default_lattice(epsilon: float, bits: int = 20) -> float:
    """Λ = the power of two nearest below 2^-bits/ε (noise of scale 1/ε spans about 2^bits steps)."""
    return 2.0 ** math.floor(math.log2(2.0**-bits / float(epsilon)))
