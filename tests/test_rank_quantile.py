"""The percentile under standard ε-DP by the exponential mechanism on ranks (McSherry and Talwar 2007; Smith 2011).

* its outputs follow the exponential mechanism's distribution P(y) ∝ exp(−ε·|(1 − q)·#{x < y} − q·#{x > y}|/2)
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

from dprivacy.mechanisms.rank_quantile import (RankWeights, lattice_weights, quantile_fraction, sample_quantile)

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
    r = run_query(t, parse_query("percentile:v:50"), epsilon=2.0, bounds=(0, 9), group_by="g", keys=range(n), rng=3)
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
                  rng=5)
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


@settings(max_examples=300, deadline=None)
@given(neighbours())
def test_privacy_loss_between_neighbours_is_at_most_epsilon_exactly(case):
    data, other, lo, hi, p, eps = case
    w = RankWeights.build(eps, quantile_fraction(p))
    a, b = exact_dist(data, lo, hi, w), exact_dist(other, lo, hi, w)
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


def test_stated_rank_accuracy_holds():
    """No ties: with probability ≥ 95% the released value's rank is within ½ + k of the target."""
    data = list(range(0, 400, 2))  # 200 distinct values on 0..400
    lo, hi, eps = 0, 400, 0.5
    w = RankWeights.build(eps, quantile_fraction(50))
    v, c = hist(data)
    gen = np.random.default_rng(7)
    out = np.array([sample_quantile(v, c, lo, hi, w, gen) for _ in range(4000)])
    k = w.rank_within(hi - lo + 1, 0.05)
    assert (split_rank_distance(data, out, 50) > 0.5 + k).mean() <= 0.05
    assert k == pytest.approx((math.log(2 * 401 / 0.05) + 1e-8) / (0.25 - 2**-38))


def test_empty_selection_is_a_uniform_draw_not_a_refusal(tmp_path):
    t = _csv(tmp_path / "t.csv", "g,v", [("A", 1), ("A", 2), ("B", 3)])
    r = run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 4), where="g = 'C'", rng=0)
    assert r.mechanism == "exponential" and 0 <= r.answers[0].noisy <= 4
    assert "uniform draw" in r.theorem
    w = RankWeights.build(1.0, quantile_fraction(50))
    assert len(set(exact_dist([], 0, 4, w))) == 1


def test_the_output_says_which_mechanism_and_why(tmp_path):
    t = _csv(tmp_path / "t.csv", "v", [(x,) for x in (3, 5, 8)])
    r = run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), rng=0)
    assert r.mechanism == "exponential" and "Smith 2011" in r.theorem and "Δ is HI − LO" in r.theorem
    a = r.answers[0]
    assert math.isnan(a.expected_abs_error) and a.within_ranks > 0 and "in ranks" in r.accuracy
    assert r.to_dict()["answers"][0]["expected_abs_error"] is None  # strict JSON
    # a value metric keeps the truncated geometric (universally optimal there)
    assert run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), privacy="d1", rng=0).mechanism == \
        "truncated-geometric"
    assert run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), rng=0,
                     mechanism="truncated-geometric").mechanism == "truncated-geometric"


def test_refusals(tmp_path, monkeypatch):
    t = _csv(tmp_path / "t.csv", "g,v", [("A", 1), ("B", 3)])
    with pytest.raises(ValueError, match="--mechanism exponential .* percentile under --privacy standard"):
        run_query(t, parse_query("sum:v"), epsilon=1.0, bounds=(0, 4), mechanism="exponential")
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
