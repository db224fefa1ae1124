"""The exact discrete planar Laplace (dprivacy.sampling.planar) and the default planar_laplace_sample.

* Every fast float64 decision agrees with the exact one (Decimal) on words placed next to the
  thresholds, and the forced Decimal fallback gives the same output for the same random words.
* The law: lattice pmf and radial law (chi-square, KS), each with a power check.
* Privacy as released: Mironov's reachability test and a stochastic privacy-loss tester, both failing
  on the old float sampler (negative control, ``planar_controls``) and passing on the new one; the
  tester also refutes a sampler drawing at twice the ε it claims (power).
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dprivacy.mechanisms.planar_laplace import planar_laplace_lattice, planar_laplace_sample
from dprivacy.sampling import random_source
from dprivacy.sampling.keyed import KeyedStream
from dprivacy.sampling.planar import (
    GUARD,
    LatticeLaplace,
    _accept_fast,
    _geometric_fast,
    default_lattice,
)

from planar_controls import float_reachable, loss_lower_bound, textbook_planar_laplace


# -- exact decisions ----------------------------------------------------------------------------------


def _exp_exact(x: Fraction) -> Fraction:
    ctx = Context(prec=60)
    return Fraction(ctx.exp(Decimal(-x.numerator) / Decimal(x.denominator)))


@pytest.mark.parametrize("beta", [1 / 32, 0.0221, 0.17677669513200073, 0.70710678])
@pytest.mark.parametrize("bits", [32, 52])
def test_fast_geometric_decisions_are_never_wrong_next_to_the_bin_edges(beta, bits):
    """Prefixes of U (``bits`` bits, as the sampler uses) within a few units of 2^bits·e^{−βm} (the bin
    edges, where a float error would flip M) are either undecided or decided as the exact comparison says."""
    b = Fraction(beta)
    vs, truth, far = [], [], []
    for m in list(range(0, 40)) + [200, 600]:
        edge = _exp_exact(b * m) * (1 << bits)  # U ≤ e^{−βm} ⇔ M ≥ m
        if edge < 2**12:
            continue
        base = math.floor(edge)
        for d in list(range(-3, 4)) + [-(1 << 8), 1 << 8, -(1 << (bits - 20)), 1 << (bits - 20)]:
            v = base + d
            if not 0 < v < (1 << bits):
                continue
            vs.append(v)
            far.append(abs(d) == 1 << (bits - 20))
            # U ∈ [v, v+1)/2^bits entirely ≤ edge ⇒ M ≥ m; entirely > edge ⇒ M < m; else undetermined
            truth.append(m if v + 1 <= edge else (m - 1 if v > edge else None))
    got, dec = _geometric_fast(np.array(vs, dtype=np.float64) * 2.0**-bits, beta, bits)
    for g, d, t, v in zip(got, dec, truth, vs):
        if t is None:
            assert not d, v  # an edge inside the prefix's interval can never be decided
        elif d:
            lo = _exp_exact(b * (g + 1)) * (1 << bits)
            hi = _exp_exact(b * g) * (1 << bits)
            assert lo < v and v + 1 <= hi  # decided: the prefix's whole interval lies in bin g
    assert dec[np.array(far)].mean() > 0.9  # prefixes far from the edges (a relative 2^-20) are decided


def test_fast_acceptance_decisions_are_never_wrong_next_to_the_threshold():
    rng = np.random.default_rng(0)
    gammas = np.concatenate([rng.exponential(1.0, 300), [1e-12, 1e-6, 0.5, 30.0, 700.0, 745.0, 800.0]])
    us, gs, truth = [], [], []
    for gm in gammas:
        p = _exp_exact(Fraction(float(gm))) * (1 << 64)
        base = math.floor(p)
        for d in (-(1 << 20), -5, -1, 0, 1, 5, 1 << 20):
            u = base + d
            if not 0 <= u < (1 << 64):
                continue
            us.append(u)
            gs.append(float(gm))
            truth.append(True if u + 1 <= p else (False if u >= p else None))
    u = np.array(us, dtype=np.uint64)
    acc, dec = _accept_fast(u, np.array(gs), np.zeros(len(us), dtype=bool))
    for a, d, t in zip(acc, dec, truth):
        if t is None:
            assert not d
        elif d:
            assert a == t
    # γ = 0 exactly (z = 0) always accepts
    acc0, dec0 = _accept_fast(np.array([2**64 - 1], dtype=np.uint64), np.array([0.0]), np.array([True]))
    assert acc0[0] and dec0[0]


def test_float_gamma_is_within_the_guard_of_the_exact_value():
    """γ computed as the sampler does (three non-negative terms) against Decimal, on offsets from the
    sampler's range and on the diagonal (where ‖z‖₂ − ‖z‖₁/√2 vanishes)."""
    spec = LatticeLaplace.build(1e-3, 2.0**-22)
    rng = np.random.default_rng(1)
    n = spec.block
    m = rng.integers(0, 3000, size=(2000, 2))
    j = rng.integers(0, n, size=(2000, 2))
    m[:50, 1], j[:50, 1] = m[:50, 0], j[:50, 0]  # diagonal
    a1, a2 = m[:, 0] * n + j[:, 0], m[:, 1] * n + j[:, 1]
    f1, f2 = a1.astype(float), a2.astype(float)
    g = float(Fraction(spec.rate) / Fraction(Decimal(2).sqrt(Context(prec=60))) - Fraction(spec.proposal))
    den = np.hypot(f1, f2) + (f1 + f2) / math.sqrt(2)
    gam = 0.5 * spec.rate * (f1 - f2) ** 2 / den + g * (f1 + f2) + spec.proposal * (j[:, 0] + j[:, 1])
    ctx = Context(prec=60)
    for i in range(0, 2000, 7):
        exact = ctx.subtract(ctx.multiply(Decimal(spec.rate), ctx.sqrt(Decimal(int(a1[i]) ** 2 + int(a2[i]) ** 2))),
                             ctx.multiply(Decimal(spec.proposal), Decimal(n * int(m[i, 0] + m[i, 1]))))
        e = float(exact)
        assert e >= 0
        assert abs(gam[i] - e) <= 2.0**-45 * (1 + e), (i, gam[i], e)


def test_forced_fallback_gives_the_same_draws_for_the_same_words():
    """Keyed streams give each record its words; fallback words come from a separate counter space. So
    the Decimal path (forced for every decision) must reproduce the fast path record for record."""
    for eps, lam in ((1.0, 2.0**-20), (0.7, 0.5), (3.0, 1.0)):
        spec = LatticeLaplace.build(eps, lam)
        keys = np.arange(400, dtype=np.uint64) * np.uint64(977) + np.uint64(5)
        st: dict = {}
        fast = spec.offsets(keys.size, KeyedStream(3, keys))
        slow = spec.offsets(keys.size, KeyedStream(3, keys), force_fallback=True, stats=st)
        assert st["fallback_geometric"] > 0 and st["fallback_accept"] > 0
        assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])


def test_keyed_offsets_do_not_depend_on_the_batch_the_chunks_or_the_threads():
    from dprivacy.sampling.planar import CHUNK, _sample, _words_of

    spec = LatticeLaplace.build(1e-3, 2.0**-22)
    keys = np.arange(2 * CHUNK + 5000, dtype=np.uint64) * np.uint64(2654435761)
    whole = _sample(spec, keys.size, _words_of(KeyedStream(8, keys)))  # one pass, no chunks
    for threads in (1, 2):
        s = KeyedStream(8, keys)
        z = spec.offsets(keys.size, s, threads=threads)
        assert np.array_equal(z[0], whole[0]) and np.array_equal(z[1], whole[1])
    part = spec.offsets(700, KeyedStream(8, keys[1000:1700]))
    assert np.array_equal(whole[0][1000:1700], part[0]) and np.array_equal(whole[1][1000:1700], part[1])


# -- the law ----------------------------------------------------------------------------------------------


def _lattice_pmf(rate: float, radius: int):
    """P(z) ∝ e^{−rate‖z‖} on the box |z_i| ≤ radius (mass outside below e^{−rate·radius}·…)."""
    ax = np.arange(-radius, radius + 1)
    r = np.hypot(ax[:, None], ax[None, :])
    w = np.exp(-rate * r)
    return ax, w / w.sum()


@pytest.mark.parametrize("rate", [0.9, 0.3, 0.05, 0.02])
def test_lattice_pmf_and_power(rate):
    """Chi-square of the draws against the exact lattice pmf (binned into blocks of the box), and the
    same counts reject the pmf at 1.05·rate (power). 0.02 uses blocks of 2^k steps (k > 0)."""
    spec = LatticeLaplace.from_rate(rate)
    assert (spec.block_bits > 0) == (rate < 0.04)
    n = 300_000
    z1, z2 = spec.offsets(n, random_source(11).generator)
    radius = int(math.ceil(32 / rate))
    bins = max(1, radius // 12)

    def binned(rt):
        ax, p = _lattice_pmf(rt, radius)
        b = (ax + radius) // bins
        nb = b.max() + 1
        out = np.zeros((nb, nb))
        np.add.at(out, (b[:, None].repeat(len(ax), 1), b[None, :].repeat(len(ax), 0)), p)
        return out.ravel()

    inside = (np.abs(z1) <= radius) & (np.abs(z2) <= radius)
    assert inside.all()
    cnt = np.bincount((((z1 + radius) // bins) * (((2 * radius) // bins) + 1) + (z2 + radius) // bins), minlength=binned(rate).size)

    def pval(p):
        e = p * n
        big = e >= 5
        obs, ex = np.r_[cnt[big], cnt[~big].sum()], np.r_[e[big], e[~big].sum()]
        keep = ex > 0
        return stats.chisquare(obs[keep], ex[keep] * obs[keep].sum() / ex[keep].sum()).pvalue

    assert pval(binned(rate)) > 1e-4
    assert pval(binned(1.05 * rate)) < 1e-4
    if rate >= 0.3:  # the exact probability of 0, with a 5-sigma band
        _, p = _lattice_pmf(rate, radius)
        p0 = p[radius, radius]
        assert abs((( z1 == 0) & (z2 == 0)).mean() - p0) <= 5 * math.sqrt(p0 * (1 - p0) / n)


def test_default_sampler_radial_law_and_angle_with_power():
    eps = 1.7
    centre = np.array([3.0, -2.0])
    out = planar_laplace_sample(np.tile(centre, (60_000, 1)), epsilon=eps, rng=12345)
    lam = default_lattice(eps)
    assert np.all(out / lam == np.round(out / lam))  # on the lattice
    d = out - np.round(centre / lam) * lam
    r = np.hypot(d[:, 0], d[:, 1])
    cdf = lambda e: (lambda t: 1 - (1 + e * t) * np.exp(-e * t))  # noqa: E731
    assert stats.kstest(r, cdf(eps)).pvalue > 1e-4
    assert stats.kstest(r, cdf(1.03 * eps)).pvalue < 1e-4  # power: a 3% mis-scaled ε is rejected
    theta = np.mod(np.arctan2(d[:, 1], d[:, 0]), 2 * np.pi)
    assert stats.kstest(theta, stats.uniform(0, 2 * np.pi).cdf).pvalue > 1e-4
    assert stats.kstest(np.mod(theta * 1.02, 2 * np.pi), stats.uniform(0, 2 * np.pi).cdf).pvalue < 1e-4


def test_sampler_validates_and_states_its_lattice():
    with pytest.raises(ValueError, match="power of two"):
        LatticeLaplace.build(1.0, 0.3)
    with pytest.raises(ValueError, match="outside"):
        LatticeLaplace.build(1.0, 2.0**-60)
    spec = planar_laplace_lattice(2.0)
    assert spec.lattice == 2.0**-21 and spec.to_dict()["delivered_epsilon_on_lattice"] == 2.0
    a = planar_laplace_sample([[0.1, 0.2], [5.0, -1.0]], epsilon=1.0, rng=4)
    b = planar_laplace_sample([[0.1, 0.2], [5.0, -1.0]], epsilon=1.0, rng=4)
    assert a.shape == (2, 2) and np.array_equal(a, b)
    assert planar_laplace_sample([1.0, 2.0], epsilon=1.0, rng=3).shape == (2,)
    assert random_source(None).release  # the default source is the secure one


# -- privacy as released: Mironov's reachability ------------------------------------------------------------


def test_float_sampler_outputs_are_mostly_impossible_from_the_neighbour():
    """Negative control (the old default): of 300 outputs drawn at (1, 0) with ε = 1, the search finds
    the true input's uniforms for all of them but only a few percent can be produced from (0, 0)."""
    y = textbook_planar_laplace(np.tile([1.0, 0.0], (300, 1)), epsilon=1.0, generator=random_source(1).generator)
    assert float_reachable(y, [1.0, 0.0], epsilon=1.0).all()
    frac = float_reachable(y, [0.0, 0.0], epsilon=1.0).mean()
    assert frac < 0.2, frac


class _Scripted:
    """A word source replaying given words (one record), for the reachability construction."""

    def __init__(self, words):
        self.words = list(words)

    def main(self, idx, count=1):
        out = np.array([[self.words.pop(0)] for _ in range(count)], dtype=np.uint64)
        return out, [-1] * count

    def extend(self, record, call, k):
        return 0


def _words_for(spec: LatticeLaplace, w1: int, w2: int) -> list[int]:
    """Words that make the sampler propose and accept the offset (w1, w2) in one round: the two 32-bit
    prefixes of U inside bins M₁, M₂; J₁, J₂ and the signs; an acceptance uniform below 2^-52."""
    n, kb, beta = spec.block, spec.block_bits, Fraction(spec.beta)
    u = [int(_exp_exact(beta * (abs(w) // n) + beta / 2) * (1 << 32)) for w in (w1, w2)]
    j1, j2 = abs(w1) % n, abs(w2) % n
    return [(u[0] << 32) | u[1], j1 | (j2 << kb) | (int(w1 < 0) << 62) | (int(w2 < 0) << 63), 0]


def test_default_sampler_outputs_are_all_reachable_from_the_neighbour():
    """Every output drawn at (1, 0) lies on the lattice, and for each one the words that make the sampler
    produce it from (0, 0) are exhibited and replayed: the sampler outputs exactly that point (so it has
    positive probability from the neighbour too)."""
    eps = 1.0
    spec = planar_laplace_lattice(eps)
    lam = spec.lattice
    y = planar_laplace_sample(np.tile([1.0, 0.0], (300, 1)), epsilon=eps, rng=2)
    steps = y / lam
    assert np.all(steps == np.round(steps))
    assert 2 * spec.block_bits + 2 <= 64
    for s1, s2 in steps.astype(np.int64)[:300]:
        z = spec.offsets(1, _Scripted(_words_for(spec, int(s1), int(s2))))
        assert (int(z[0][0]), int(z[1][0])) == (int(s1), int(s2))


# -- privacy as released: the stochastic privacy-loss tester -----------------------------------------------


def test_stochastic_tester_refutes_the_float_sampler():
    """Feature of an output: whether it can be produced from x' = (0, 0) (post-processing that an
    observer who knows both candidates can compute). From x = (1, 0) most outputs cannot; from x' all
    can: the lower confidence bound on the privacy loss exceeds ε = 1 (the loss is in fact infinite)."""
    g = random_source(5).generator
    a = textbook_planar_laplace(np.tile([1.0, 0.0], (300, 1)), epsilon=1.0, generator=g)
    b = textbook_planar_laplace(np.tile([0.0, 0.0], (300, 1)), epsilon=1.0, generator=g)
    fa = float_reachable(a, [0.0, 0.0], epsilon=1.0)
    fb = float_reachable(b, [0.0, 0.0], epsilon=1.0)
    assert fb.all()
    assert loss_lower_bound(fa, fb) > 1.0


@pytest.mark.parametrize("broken", [False, True])
def test_stochastic_tester_passes_the_lattice_sampler_and_has_power(broken):
    """Features: the output's cell of side 1/2 and whether it is a lattice point reachable from x'
    (always, for this sampler). Neighbours at distance 1 and ε = 1: the lower confidence bound on the
    loss stays within ε; a sampler drawing at 2ε while claiming ε is refuted by the same test."""
    eps = 1.0
    draw_eps = 2 * eps if broken else eps
    lam = default_lattice(eps)
    n = 200_000
    a = planar_laplace_sample(np.tile([1.0, 0.0], (n, 1)), epsilon=draw_eps, lattice=lam, rng=6)
    b = planar_laplace_sample(np.tile([0.0, 0.0], (n, 1)), epsilon=draw_eps, lattice=lam, rng=7)

    def feature(y):
        on_lattice = np.all(y / lam == np.round(y / lam), axis=1)
        cell = np.clip(np.floor(y * 2), -6, 6)
        return np.column_stack([cell, on_lattice])

    assert feature(a)[:, 2].all() and feature(b)[:, 2].all()
    lower = loss_lower_bound(feature(a), feature(b))
    assert (lower > eps) if broken else (lower <= eps), lower
