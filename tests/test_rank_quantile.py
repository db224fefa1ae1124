"""The percentile under standard ε-DP on ranks: permute-and-flip (McKenna and Sheldon 2020, the default) and the
exponential mechanism (McSherry and Talwar 2007; Smith 2011).

* permute-and-flip's exact law equals its definition (every visiting order of the points, each coin flipped), its
  draws follow that law (chi-square, also with the exact decimal fallback forced), its privacy loss between
  neighbours is at most ε exactly, and its expected score is never worse than the exponential mechanism's;
* the exponential mechanism's outputs follow its distribution P(y) ∝ exp(−ε·|(1 − q)·#{x < y} − q·#{x > y}|/2)
  (the distance of y's rank from the target q·n, ties split), computed here from the definition (chi-square over many draws, with power against ε off by 25% and against ε not halved per group);
* its privacy loss between neighbouring tables (one value replaced, or one row entering or leaving the selection)
  is at most ε, computed exactly on the integer weights the sampler uses (hypothesis);
* the weight function's ratio over one unit of score sensitivity is at most e^{ε/2} across the floor;
* the rank accuracy it states holds empirically; refusals name the bad value.
"""

from __future__ import annotations

import decimal
import math
import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dprivacy.mechanisms.rank_quantile as rq
from dprivacy.mechanisms.rank_quantile import (RankWeights, lattice_weights, permute_and_flip_law, quantile_fraction,
                                               sample_permute_and_flip, sample_quantile)

pytest.importorskip("duckdb")

from dprivacy.data.tables import parse_query, run_query  # noqa: E402


def split_rank_distance(data, y, p: float) -> np.ndarray:
    """|(1 − q)·#{x < y} − q·#{x > y}| for q = p/100: between values, |rank − q·n|; at a tied value, the tie split."""
    x = np.asarray(data, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    q = p / 100
    return np.abs((1 - q) * (x[None, :] < y[:, None]).sum(axis=1) - q * (x[None, :] > y[:, None]).sum(axis=1))


def em_probs(data, lo: int, hi: int, p: float, eps: float) -> np.ndarray:
    """The exponential mechanism from its definition: P(y) ∝ exp(−ε·score(y)/2) on y = lo..hi."""
    x = np.clip(np.asarray(data, dtype=np.int64), lo, hi)
    w = np.exp(-eps * split_rank_distance(x, np.arange(lo, hi + 1), p) / 2)
    return w / w.sum()


def hist(data):
    v, c = np.unique(np.asarray(data, dtype=np.int64), return_counts=True)
    return v, c


def exact_dist(data, lo, hi, weights) -> list[Fraction]:
    v, c = hist(np.clip(data, lo, hi)) if len(data) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    w = lattice_weights(v, c, lo, hi, weights)
    z = sum(w)
    return [Fraction(a, z) for a in w]


def _csv(path, header, rows):
    path.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return str(path)


def test_draws_follow_the_exponential_mechanism():
    data = [2, 3, 3, 7, 8, 8, 8, 11]
    lo, hi, eps = 0, 12, 1.0
    w = RankWeights.build(eps, quantile_fraction(50))
    v, c = hist(data)
    gen = np.random.default_rng(20240601)
    out = np.array([sample_quantile(v, c, lo, hi, w, gen) for _ in range(20000)])
    obs = np.bincount(out - lo, minlength=hi - lo + 1)
    assert stats.chisquare(obs, em_probs(data, lo, hi, 50, eps) * out.size).pvalue > 1e-4
    # power: ε 25% off is rejected
    assert stats.chisquare(obs, em_probs(data, lo, hi, 50, 1.25 * eps) * out.size).pvalue < 1e-4
    # and the integer weights are the definition's, to the rounding
    exact = np.array([float(f) for f in exact_dist(data, lo, hi, w)])
    assert np.allclose(exact, em_probs(data, lo, hi, 50, eps), rtol=1e-9)


def test_grouped_query_draws_each_group_at_half_epsilon(tmp_path):
    """2000 groups with the same five values, median on 0..9 at ε = 2: under d_h each group's draw uses ε/2."""
    vals = [1, 4, 4, 6, 9]
    n = 2000
    t = _csv(tmp_path / "t.csv", "g,v", [(i, x) for i in range(n) for x in vals])
    r = run_query(t, parse_query("percentile:v:50"), epsilon=2.0, bounds=(0, 9), group_by="g", keys=range(n), rng=3,
                  mechanism="exponential")
    assert r.mechanism == "exponential" and r.epsilon_per_answer == 1.0
    out = np.array([a.noisy for a in r.answers], dtype=np.int64)
    obs = np.bincount(out, minlength=10)
    assert stats.chisquare(obs, em_probs(vals, 0, 9, 50, 1.0) * n).pvalue > 1e-4
    assert stats.chisquare(obs, em_probs(vals, 0, 9, 50, 2.0) * n).pvalue < 1e-4  # ε per group instead of ε/2


def test_a_tied_value_at_the_median_is_the_most_likely_answer():
    """Ten rows at 5 among others: the median falls inside the tie, and 5 itself scores best (the tie split)."""
    data = [1, 2, 3] + [5] * 10 + [8, 9, 9]
    w = RankWeights.build(1.0, quantile_fraction(50))
    probs = [float(f) for f in exact_dist(data, 0, 10, w)]
    assert int(np.argmax(probs)) == 5 and probs[5] > 0.5
    assert np.allclose(probs, em_probs(data, 0, 10, 50, 1.0), rtol=1e-9)


def test_the_percentile_and_unit_reach_the_mechanism(tmp_path):
    """percentile 25 on values with a unit of 0.5: the lattice is in half units."""
    vals = [0.5, 1.0, 1.0, 2.5, 3.0, 3.5, 4.0, 4.5]
    n = 1500
    t = _csv(tmp_path / "t.csv", "g,v", [(i, x) for i in range(n) for x in vals])
    r = run_query(t, parse_query("percentile:v:25"), epsilon=4.0, bounds=(0, 5), unit=0.5, group_by="g", keys=range(n),
                  rng=5, mechanism="exponential")
    out = np.rint(np.array([a.noisy for a in r.answers]) / 0.5).astype(np.int64)
    units = [round(x / 0.5) for x in vals]
    assert stats.chisquare(np.bincount(out, minlength=11), em_probs(units, 0, 10, 25, 2.0) * n).pvalue > 1e-4


@st.composite
def neighbours(draw):
    """A small table and a neighbour: one value replaced (n public), or one row entering or leaving the selection."""
    lo, hi = 0, draw(st.integers(1, 7))
    data = draw(st.lists(st.integers(lo - 1, hi + 1), min_size=0, max_size=6))
    kind = draw(st.sampled_from(["replace", "add", "remove"]) if data else st.just("add"))
    other = list(data)
    if kind == "replace":
        other[draw(st.integers(0, len(data) - 1))] = draw(st.integers(lo - 1, hi + 1))
    elif kind == "add":
        other.append(draw(st.integers(lo - 1, hi + 1)))
    else:
        other.pop(draw(st.integers(0, len(data) - 1)))
    p = draw(st.sampled_from([50.0, 25.0, 10.0, 90.0, 33.3, 1.0, 99.5]))
    eps = draw(st.sampled_from([0.1, 0.5, 1.0, 3.0, 20.0, 200.0]))
    return data, other, lo, hi, p, eps


@pytest.mark.parametrize("law", ["exponential", "permute-and-flip"])
@settings(max_examples=300, deadline=None)
@given(case=neighbours())
def test_privacy_loss_between_neighbours_is_at_most_epsilon_exactly(law, case):
    data, other, lo, hi, p, eps = case
    w = RankWeights.build(eps, quantile_fraction(p))
    dist = exact_dist if law == "exponential" else pf_dist
    a, b = dist(data, lo, hi, w), dist(other, lo, hi, w)
    bound = decimal.Context(prec=50).exp(decimal.Decimal(eps))
    worst = max(max(x / y, y / x) for x, y in zip(a, b))  # every point has positive probability
    assert decimal.Decimal(worst.numerator) / decimal.Decimal(worst.denominator) <= bound


@pytest.mark.parametrize("eps, p", [(0.1, 50.0), (1.0, 33.3), (7.0, 99.5), (300.0, 50.0)])
def test_weights_change_by_at_most_half_epsilon_per_unit_of_score(eps, p):
    """W(U)/W(U') ≤ e^{ε/2} for U < U' ≤ U + D, including across the floor at U_cut, and W is non-increasing."""
    w = RankWeights.build(eps, quantile_fraction(p))
    lim = decimal.Context(prec=50).exp(decimal.Decimal(eps) / 2)
    us = sorted({0, 1, w.D - 1, w.D, w.D + 1, *range(max(w.u_cut - 3 * w.D, 0), w.u_cut + 2 * w.D, max(w.D // 7, 1))})
    for u in us:
        for v in (u + 1, u + w.D):
            assert w.weight(u) >= w.weight(v)
            assert decimal.Decimal(w.weight(u)) / decimal.Decimal(w.weight(v)) <= lim
    assert w.weight(w.u_cut + 10**9) == w.floor >= 2**40


@pytest.mark.parametrize("draw", [sample_quantile, sample_permute_and_flip])
def test_stated_rank_accuracy_holds(draw):
    """No ties: with probability ≥ 95% the released value's rank is within ½ + k of the target (the same statement
    for both mechanisms)."""
    data = list(range(0, 400, 2))  # 200 distinct values on 0..400
    lo, hi, eps = 0, 400, 0.5
    w = RankWeights.build(eps, quantile_fraction(50))
    v, c = hist(data)
    gen = np.random.default_rng(7)
    out = np.array([draw(v, c, lo, hi, w, gen) for _ in range(4000)])
    k = w.rank_within(hi - lo + 1, 0.05)
    assert (split_rank_distance(data, out, 50) > 0.5 + k).mean() <= 0.05
    assert k == pytest.approx((math.log(2 * 401 / 0.05) + 1e-8) / (0.25 - 2**-38))


def test_empty_selection_is_a_uniform_draw_not_a_refusal(tmp_path):
    t = _csv(tmp_path / "t.csv", "g,v", [("A", 1), ("A", 2), ("B", 3)])
    for mechanism in ("auto", "exponential"):
        r = run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 4), where="g = 'C'", rng=0,
                      mechanism=mechanism)
        assert 0 <= r.answers[0].noisy <= 4 and "uniform draw" in r.theorem
    w = RankWeights.build(1.0, quantile_fraction(50))
    assert len(set(exact_dist([], 0, 4, w))) == 1
    assert set(permute_and_flip_law([], [], 0, 4, w)) == {Fraction(1, 5)}


def test_the_output_says_which_mechanism_and_why(tmp_path):
    t = _csv(tmp_path / "t.csv", "v", [(x,) for x in (3, 5, 8)])
    r = run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), rng=0)
    assert r.mechanism == "permute-and-flip" and "McKenna and Sheldon 2020" in r.theorem and "Δ is HI − LO" in r.theorem
    assert "permute-and-flip's law" in r.sampler
    e = run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), rng=0, mechanism="exponential")
    assert e.mechanism == "exponential" and "Smith 2011" in e.theorem and "integer masses" in e.sampler
    for res in (r, e):
        a = res.answers[0]
        assert math.isnan(a.expected_abs_error) and a.within_ranks > 0 and "in ranks" in res.accuracy
        assert res.to_dict()["answers"][0]["expected_abs_error"] is None  # strict JSON
    # a value metric keeps the truncated geometric (universally optimal there)
    assert run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), privacy="d1", rng=0).mechanism == \
        "truncated-geometric"
    assert run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), rng=0,
                     mechanism="truncated-geometric").mechanism == "truncated-geometric"


def test_refusals(tmp_path, monkeypatch):
    t = _csv(tmp_path / "t.csv", "g,v", [("A", 1), ("B", 3)])
    for mechanism in ("exponential", "permute-and-flip"):
        with pytest.raises(ValueError, match=f"--mechanism {mechanism} selects on ranks, for a percentile under --privacy "
                                             "standard; sum:v under standard"):
            run_query(t, parse_query("sum:v"), epsilon=1.0, bounds=(0, 4), mechanism=mechanism)
    with pytest.raises(ValueError, match="--mechanism exponential .* under d1"):
        run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 4), privacy="d1", mechanism="exponential")
    with pytest.raises(ValueError, match=r"too small .* ε > 2\^-37"):
        RankWeights.build(2.0**-39, quantile_fraction(50))
    with pytest.raises(ValueError, match="strictly between 0 and 100"):
        quantile_fraction(100.0)
    # the values collected are bounded by public figures: min(N, groups × lattice points)
    import dprivacy.data.table_models as tp

    monkeypatch.setattr(tp, "MAX_COLLECTED", 4)
    six = _csv(tmp_path / "six.csv", "g,v", [("A", 1), ("B", 3)] * 3)
    with pytest.raises(ValueError, match=r"min\(N, groups × lattice points\) = 5 here, over the 4 allowed"):
        run_query(six, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 4))
    assert run_query(six, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 2), rng=0).answers  # 3: within
    with pytest.raises(ValueError, match=r"= 6 here, over the 4 allowed"):  # 2 groups × 5 points, but N = 6
        run_query(six, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 4), group_by="g", keys=["A", "B"])


def test_collection_refusal_does_not_depend_on_the_values(tmp_path, monkeypatch):
    """Two tables of the same size, one with all values distinct and one with all equal: the same verdict."""
    import dprivacy.data.table_models as tp

    monkeypatch.setattr(tp, "MAX_COLLECTED", 50)
    same = _csv(tmp_path / "a.csv", "v", [(1,)] * 60)
    distinct = _csv(tmp_path / "b.csv", "v", [(i,) for i in range(60)])
    for path in (same, distinct):
        with pytest.raises(ValueError, match="= 60 here, over the 50 allowed"):
            run_query(path, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 100))
        assert run_query(path, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 40), rng=0).answers


# ---- permute-and-flip (McKenna and Sheldon 2020) ----

def pf_dist(data, lo, hi, weights) -> list[Fraction]:
    v, c = hist(np.clip(data, lo, hi)) if len(data) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return permute_and_flip_law(v, c, lo, hi, weights)


def pf_by_definition(data, lo, hi, p, eps) -> np.ndarray:
    """Permute-and-flip from its definition, in floats: every visiting order of the points, equally likely; the first
    point whose coin, of probability exp(−ε·(score − best score)/2), comes up heads is released."""
    import itertools

    y = np.arange(lo, hi + 1)
    s = split_rank_distance(np.clip(np.asarray(data, dtype=np.int64), lo, hi), y, p)
    coin = np.exp(-eps * (s - s.min()) / 2)
    out = np.zeros(y.size)
    orders = list(itertools.permutations(range(y.size)))
    for order in orders:
        tails = 1.0
        for i in order:
            out[i] += tails * coin[i] / len(orders)
            tails *= 1 - coin[i]
    return out


@pytest.mark.parametrize("data, lo, hi, p, eps", [([1, 4, 4, 6], 0, 6, 50.0, 1.0), ([0, 2, 2, 2, 5], 0, 5, 25.0, 3.0),
                                                  ([], 0, 4, 50.0, 1.0), ([3, 3], 0, 5, 90.0, 0.2)])
def test_the_law_of_permute_and_flip_is_its_definition(data, lo, hi, p, eps):
    w = RankWeights.build(eps, quantile_fraction(p))
    law = pf_dist(data, lo, hi, w)
    assert sum(law) == 1
    assert np.allclose([float(x) for x in law], pf_by_definition(data, lo, hi, p, eps), rtol=1e-9)


def _draws(data, lo, hi, w, n, seed):
    v, c = hist(data)
    gen = np.random.default_rng(seed)
    out = np.array([sample_permute_and_flip(v, c, lo, hi, w, gen) for _ in range(n)])
    return np.bincount(out - lo, minlength=hi - lo + 1)


def test_draws_follow_permute_and_flip():
    data = [2, 3, 3, 7, 8, 8, 8, 11]
    lo, hi, eps = 0, 12, 2.0  # (at ε = 2 the two laws' chi-square distance over 20,000 draws is about 176)
    w = RankWeights.build(eps, quantile_fraction(50))
    n = 20000
    obs = _draws(data, lo, hi, w, n, 20240602)
    law = np.array([float(x) for x in pf_dist(data, lo, hi, w)])
    assert stats.chisquare(obs, law * n).pvalue > 1e-4
    # power: the exponential mechanism's law, and permute-and-flip at ε 25% off, are rejected
    assert stats.chisquare(obs, em_probs(data, lo, hi, 50, eps) * n).pvalue < 1e-4
    off = np.array([float(x) for x in pf_dist(data, lo, hi, RankWeights.build(1.25 * eps, quantile_fraction(50)))])
    assert stats.chisquare(obs, off * n).pvalue < 1e-4


def test_the_exact_fallback_draws_the_same_law(monkeypatch):
    """With a float margin so wide that no draw is decided in float64, every draw goes through the decimal bounds
    with more random bits; the law is unchanged."""
    calls = []
    exact = rq._least_run_exact
    monkeypatch.setattr(rq, "FLOAT_MARGIN", 1.0)
    monkeypatch.setattr(rq, "_least_run_exact", lambda *a: calls.append(1) or exact(*a))
    data = [1, 4, 4, 6, 9, 9]
    lo, hi = 0, 10
    w = RankWeights.build(2.0, quantile_fraction(50))
    n = 2000
    obs = _draws(data, lo, hi, w, n, 11)
    assert len(calls) == n
    law = np.array([float(x) for x in pf_dist(data, lo, hi, w)])
    assert stats.chisquare(obs, law * n).pvalue > 1e-4


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**70), st.integers(0, 3), st.integers(1, 2**62), st.integers(1, 2**128))
def test_the_decimal_bounds_hold_the_least_of_m_uniforms_over_the_weight(r, extra, m, w):
    """For R ∈ [r/2^bits, (r + 1)/2^bits): low ≤ (1 − R^{1/m})/w ≤ high, against 120-digit decimal arithmetic."""
    bits = 71 + 63 * extra
    low, high = rq._key_bounds(r, bits, m, w)
    ctx = decimal.Context(prec=120 + bits // 3 + m.bit_length() // 3, Emin=-10**9, Emax=10**9)

    def v(n):
        if n == 0:
            return decimal.Decimal(1)
        x = ctx.divide(decimal.Decimal(n), decimal.Decimal(1 << bits))
        return ctx.subtract(1, ctx.exp(ctx.divide(ctx.ln(x), m)))

    with decimal.localcontext(ctx):
        assert low <= v(r + 1) / w and v(r) / w <= high
        # and they are tight: wider than the truth by about 2η/w, η = 10^(2 − p) at the sampler's precision p
        p = 40 + bits // 3 + m.bit_length() // 3
        assert high - low <= (v(r) - v(r + 1)) / w + 3 * decimal.Decimal(10) ** (2 - p) / w


@settings(max_examples=150, deadline=None)
@given(neighbours())
def test_permute_and_flip_expected_score_is_never_worse_than_the_exponential_mechanism(case):
    """McKenna and Sheldon 2020: on the same score, E[score] under permute-and-flip ≤ under the exponential mechanism
    (here on the integer weights both samplers use, exactly)."""
    data, _, lo, hi, p, eps = case
    w = RankWeights.build(eps, quantile_fraction(p))
    v, c = hist(np.clip(data, lo, hi)) if data else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    from dprivacy.mechanisms.rank_quantile import _intervals

    below, above, _, lengths = _intervals(v, c, lo, hi)
    score = np.repeat(w.scores(below, above), lengths).tolist()
    em = exact_dist(data, lo, hi, w)
    pf = pf_dist(data, lo, hi, w)
    assert sum(x * s for x, s in zip(pf, score)) <= sum(x * s for x, s in zip(em, score))


def test_permute_and_flip_handles_floor_blocks_and_wide_lattices():
    """ε = 0.1 on a lattice of 10^6 points with 3000 values: the points beyond U_cut form two floor blocks; the
    runs tile the lattice, and the draws stay near the target rank."""
    gen = np.random.default_rng(3)
    data = np.sort(gen.integers(0, 10**6, 3000))
    v, c = hist(data)
    lo, hi = -10**5, 10**6 + 10**5
    w = RankWeights.build(0.1, quantile_fraction(50))
    starts, lengths, weights = rq._runs(v, c, lo, hi, w)
    assert lengths.sum() == hi - lo + 1 and weights[0] == weights[-1] == w.floor
    assert np.all(starts[1:] == starts[:-1] + lengths[:-1])
    out = np.array([sample_permute_and_flip(v, c, lo, hi, w, gen) for _ in range(1000)])
    assert lo <= out.min() and out.max() <= hi
    rank_err = np.abs((data[None, :] < out[:, None]).sum(axis=1) - 1500)
    assert np.median(rank_err) < 40  # the law's median rank error is about 7 at ε = 0.1 (≈ 0.7/a ranks)


def test_a_query_answers_by_permute_and_flip_at_half_epsilon_per_group(tmp_path):
    vals = [1, 4, 4, 6, 9]
    n = 2000
    t = _csv(tmp_path / "t.csv", "g,v", [(i, x) for i in range(n) for x in vals])
    r = run_query(t, parse_query("percentile:v:50"), epsilon=2.0, bounds=(0, 9), group_by="g", keys=range(n), rng=4)
    assert r.mechanism == "permute-and-flip" and r.epsilon_per_answer == 1.0
    obs = np.bincount(np.array([a.noisy for a in r.answers], dtype=np.int64), minlength=10)
    half = [float(x) for x in pf_dist(vals, 0, 9, RankWeights.build(1.0, quantile_fraction(50)))]
    full = [float(x) for x in pf_dist(vals, 0, 9, RankWeights.build(2.0, quantile_fraction(50)))]
    assert stats.chisquare(obs, np.array(half) * n).pvalue > 1e-4
    assert stats.chisquare(obs, np.array(full) * n).pvalue < 1e-4
