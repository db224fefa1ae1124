"""The percentile under standard ε-DP by a selection on ranks: permute-and-flip (McKenna and Sheldon 2020, the
default) and the exponential mechanism (McSherry and Talwar 2007; Smith 2011), with the score the distance from the
target q·n to the plotting positions of y's rows (the i-th smallest at i − ½), or to y's position L between them.

* the score has sensitivity 1 between neighbouring tables (one value replaced, or one row entering or leaving);
* each mechanism's law (computed to 80 digits) equals its definition — for permute-and-flip every visiting order
  of the points with their coins — and its draws follow that law (chi-square, with power against ε off by 25%,
  against the other mechanism, and with the exact decimal path forced);
* the privacy loss between neighbours is at most ε, and permute-and-flip's expected score is never worse than the
  exponential mechanism's (hypothesis);
* ties at the percentile, huge ε and wide lattices are answered near the percentile (no weight is floored: a
  review found both mechanisms uniform over LO..HI there when the weights were rounded integers with a floor);
* the rank accuracy each states holds; the output names the mechanism; refusals name the bad value.
"""

from __future__ import annotations

import decimal
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dprivacy.mechanisms.rank_quantile as rq
from dprivacy.mechanisms.rank_quantile import (RankWeights, exponential_law, permute_and_flip_law, quantile_fraction,
                                               sample_permute_and_flip, sample_quantile)

pytest.importorskip("duckdb")

from dprivacy.data.tables import parse_query, run_query  # noqa: E402

DRAW = {"exponential": sample_quantile, "permute-and-flip": sample_permute_and_flip}
LAW = {"exponential": exponential_law, "permute-and-flip": permute_and_flip_law}


def rank_distance(data, y, p: float) -> np.ndarray:
    """From the definition: the rows sorted, the i-th smallest at position i − ½; a point y held by rows is at the
    positions of its rows, one held by none at the position between its neighbours (#{x < y}); the distance from
    the target q·n (q = p/100) to their span."""
    x = np.sort(np.asarray(data, dtype=np.int64))
    y = np.asarray(y, dtype=np.int64)
    q, n = p / 100, x.size
    pos = np.arange(n) + 0.5
    out = []
    for v in y.tolist():
        mine = pos[x == v]
        out.append(max(0.0, mine[0] - q * n, q * n - mine[-1]) if mine.size else abs(float((x < v).sum()) - q * n))
    return np.array(out, dtype=float)


def em_probs(data, lo: int, hi: int, p: float, eps: float) -> np.ndarray:
    """The exponential mechanism from its definition: P(y) ∝ exp(−ε·distance(y)/2) on y = lo..hi."""
    x = np.clip(np.asarray(data, dtype=np.int64), lo, hi)
    w = np.exp(-eps * rank_distance(x, np.arange(lo, hi + 1), p) / 2)
    return w / w.sum()


def pf_by_definition(data, lo, hi, p, eps) -> np.ndarray:
    """Permute-and-flip from its definition, in floats: every visiting order of the points, equally likely; the first
    point whose coin, of probability exp(−ε·(distance − least distance)/2), comes up heads is released."""
    y = np.arange(lo, hi + 1)
    s = rank_distance(np.clip(np.asarray(data, dtype=np.int64), lo, hi), y, p)
    coin = np.exp(-eps * (s - s.min()) / 2)
    out = np.zeros(y.size)
    orders = list(itertools.permutations(range(y.size)))
    for order in orders:
        tails = 1.0
        for i in order:
            out[i] += tails * coin[i] / len(orders)
            tails *= 1 - coin[i]
    return out


def hist(data):
    v, c = np.unique(np.asarray(data, dtype=np.int64), return_counts=True)
    return v, c


def law(kind, data, lo, hi, weights) -> np.ndarray:
    v, c = hist(np.clip(data, lo, hi)) if len(data) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return LAW[kind](v, c, lo, hi, weights)


def as_floats(x) -> np.ndarray:
    return np.array([float(e) for e in x])


def draws(kind, data, lo, hi, w, n, seed) -> np.ndarray:
    v, c = hist(data)
    gen = np.random.default_rng(seed)
    out = np.array([DRAW[kind](v, c, lo, hi, w, gen) for _ in range(n)])
    return np.bincount(out - lo, minlength=hi - lo + 1)


def _csv(path, header, rows):
    path.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return str(path)


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
def test_the_score_has_sensitivity_one(case):
    """|U(y) − U'(y)| ≤ 2D at every point, 2D·(the distance in ranks): the integer scores the samplers use."""
    data, other, lo, hi, p, _ = case
    w = RankWeights.build(1.0, quantile_fraction(p))
    ys = np.arange(lo, hi + 1)
    scores = []
    for d in (data, other):
        x = np.clip(np.asarray(d, dtype=np.int64), lo, hi)
        below = (x[None, :] < ys[:, None]).sum(axis=1)
        above = (x[None, :] > ys[:, None]).sum(axis=1)
        u = w.scores(below, above, x.size)
        assert np.allclose(u, 2 * w.D * rank_distance(x, ys, p))
        scores.append(u)
    assert np.abs(scores[0] - scores[1]).max() <= 2 * w.D


@pytest.mark.parametrize("data, lo, hi, p, eps", [([1, 4, 4, 6], 0, 6, 50.0, 1.0), ([0, 2, 2, 2, 5], 0, 5, 25.0, 3.0),
                                                  ([], 0, 4, 50.0, 1.0), ([3, 3], 0, 5, 90.0, 0.2)])
def test_each_law_is_its_definition(data, lo, hi, p, eps):
    w = RankWeights.build(eps, quantile_fraction(p))
    pf, em = law("permute-and-flip", data, lo, hi, w), law("exponential", data, lo, hi, w)
    with decimal.localcontext(decimal.Context(prec=100)):
        assert abs(sum(pf) - 1) < decimal.Decimal("1e-70") and abs(sum(em) - 1) < decimal.Decimal("1e-70")
    assert np.allclose(as_floats(pf), pf_by_definition(data, lo, hi, p, eps), rtol=1e-9)
    assert np.allclose(as_floats(em), em_probs(data, lo, hi, p, eps), rtol=1e-12)


@pytest.mark.parametrize("kind, other", [("permute-and-flip", "exponential"), ("exponential", "permute-and-flip")])
def test_draws_follow_the_law(kind, other):
    data = [2, 3, 3, 7, 8, 8, 8, 11]
    lo, hi, eps = 0, 12, 2.0  # (at ε = 2 the two laws' chi-square distance over 20,000 draws is about 150)
    w = RankWeights.build(eps, quantile_fraction(50))
    n = 20000
    obs = draws(kind, data, lo, hi, w, n, 20240602)
    assert stats.chisquare(obs, as_floats(law(kind, data, lo, hi, w)) * n).pvalue > 1e-4
    # power: the other mechanism's law, and this one at ε 25% off, are rejected
    assert stats.chisquare(obs, as_floats(law(other, data, lo, hi, w)) * n).pvalue < 1e-4
    off = RankWeights.build(1.25 * eps, quantile_fraction(50))
    assert stats.chisquare(obs, as_floats(law(kind, data, lo, hi, off)) * n).pvalue < 1e-4


@pytest.mark.parametrize("kind", ["permute-and-flip", "exponential"])
def test_the_exact_decimal_path_draws_the_same_law(kind, monkeypatch):
    """With a float margin so wide that no draw is decided in float64, every draw goes through the decimal bounds
    with more random bits; the law is unchanged."""
    calls = []
    exact = rq._least_run_exact
    monkeypatch.setattr(rq, "FLOAT_MARGIN", 1.0)
    monkeypatch.setattr(rq, "_least_run_exact", lambda *a: calls.append(1) or exact(*a))
    data = [1, 4, 4, 6, 9, 9]
    lo, hi = 0, 10
    w = RankWeights.build(2.0, quantile_fraction(50))
    n = 1500
    obs = draws(kind, data, lo, hi, w, n, 11)
    assert len(calls) == n
    assert stats.chisquare(obs, as_floats(law(kind, data, lo, hi, w)) * n).pvalue > 1e-4


@pytest.mark.parametrize("pf", [True, False])
@settings(max_examples=150, deadline=None)
@given(r=st.integers(0, 2**300), extra=st.integers(0, 3), m=st.integers(1, 2**62), du=st.integers(0, 10**6),
       near_one=st.booleans())
def test_the_decimal_bounds_hold_the_key(pf, r, extra, m, du, near_one):
    """For R ∈ [r/2^bits, (r + 1)/2^bits) at the bit counts the sampler uses (116, 179, …): low ≤ ln V + a·du/D ≤
    high against 150 more digits, V the least of m uniforms or of m exponentials; R near 1 included."""
    bits = 116 + 63 * extra
    r = (1 << bits) - 1 - r % (1 << 40) if near_one else r % (1 << bits)
    w = RankWeights.build(0.7, quantile_fraction(25))
    low, high = rq._log_key_bounds(r, bits, m, du, w, pf)
    ctx = decimal.Context(prec=150 + bits // 3 + m.bit_length() // 3, Emin=-10**9, Emax=10**9)

    def ln_key(x):
        if x == 0:
            return decimal.Decimal("Infinity") if not pf else ctx.divide(w.a.numerator * du, w.a.denominator * w.per_rank)
        ln_r = ctx.ln(ctx.divide(x, 1 << bits))
        v = ctx.subtract(1, ctx.exp(ctx.divide(ln_r, m))) if pf else ctx.divide(ctx.minus(ln_r), m)
        return ctx.add(ctx.ln(v), ctx.divide(w.a.numerator * du, w.a.denominator * w.per_rank))

    assert low <= ln_key(r + 1) and ln_key(r) <= high


@pytest.mark.parametrize("kind", ["exponential", "permute-and-flip"])
@settings(max_examples=200, deadline=None)
@given(case=neighbours())
def test_privacy_loss_between_neighbours_is_at_most_epsilon(kind, case):
    """Computed to 80 digits: max P(y)/P'(y) ≤ e^ε (up to 10^-60)."""
    data, other, lo, hi, p, eps = case
    w = RankWeights.build(eps, quantile_fraction(p))
    a, b = law(kind, data, lo, hi, w), law(kind, other, lo, hi, w)
    ctx = decimal.Context(prec=80)
    worst = max(max(ctx.divide(x, y), ctx.divide(y, x)) for x, y in zip(a, b))
    assert worst <= ctx.exp(decimal.Decimal(eps)) * (1 + decimal.Decimal(10) ** -60)


@settings(max_examples=150, deadline=None)
@given(neighbours())
def test_permute_and_flip_expected_score_is_never_worse_than_the_exponential_mechanism(case):
    """McKenna and Sheldon 2020: on the same score, E[score] under permute-and-flip ≤ under the exponential
    mechanism."""
    data, _, lo, hi, p, eps = case
    w = RankWeights.build(eps, quantile_fraction(p))
    s = rank_distance(np.clip(np.asarray(data, dtype=np.int64), lo, hi), np.arange(lo, hi + 1), p)
    pf, em = as_floats(law("permute-and-flip", data, lo, hi, w)), as_floats(law("exponential", data, lo, hi, w))
    assert pf @ s <= em @ s * (1 + 1e-12) + 1e-300


@pytest.mark.parametrize("kind", ["permute-and-flip", "exponential"])
def test_a_tie_covering_the_percentile_is_released(kind):
    """A 0/1 column with 70% zeros, bounds 0..100: the median is 0 and its tie covers the target rank, so 0 scores 0
    and every other point at least 200 ranks: 0 is released (uniform over 0..100 when weights were floored)."""
    w = RankWeights.build(1.0, quantile_fraction(50))
    gen = np.random.default_rng(5)
    out = [DRAW[kind](np.array([0, 1]), np.array([700, 300]), 0, 100, w, gen) for _ in range(300)]
    assert set(out) == {0}
    # ten rows at 5 among others: 5 is the most likely answer (the old split score preferred 6..7)
    data = [1, 2, 3] + [5] * 10 + [8, 9, 9]
    probs = as_floats(law(kind, data, 0, 10, w))
    assert int(np.argmax(probs)) == 5 and probs[5] > 0.5


@pytest.mark.parametrize("kind", ["permute-and-flip", "exponential"])
@pytest.mark.parametrize("eps", [123.0, 1e4])
def test_a_huge_epsilon_releases_the_percentile(kind, eps):
    gen = np.random.default_rng(6)
    data = np.sort(gen.integers(0, 1000, 101))
    v, c = hist(data)
    w = RankWeights.build(eps, quantile_fraction(50))
    assert {DRAW[kind](v, c, 0, 1000, w, gen) for _ in range(200)} == {int(np.median(data))}


@pytest.mark.parametrize("kind", ["permute-and-flip", "exponential"])
def test_a_wide_lattice_is_drawn_near_the_percentile(kind):
    """ε = 0.1 on 1.2·10^6 points with 3000 values, and ε = 50 on 2^52 points: the stated rank bound holds."""
    gen = np.random.default_rng(3)
    for eps, lo, hi in ((0.1, -10**5, 10**6 + 10**5), (50.0, 0, 2**52)):
        data = np.sort(gen.integers(0, 10**6, 3000))
        v, c = hist(data)
        w = RankWeights.build(eps, quantile_fraction(50))
        out = np.array([DRAW[kind](v, c, lo, hi, w, gen) for _ in range(400)])
        assert lo <= out.min() and out.max() <= hi
        k = w.rank_within(hi - lo + 1, 0.05)
        assert (rank_distance(data, out, 50) > k).mean() <= 0.1


@pytest.mark.parametrize("kind", ["permute-and-flip", "exponential"])
def test_stated_rank_accuracy_holds(kind):
    """No ties: with probability ≥ 95% the released value's position is within ½ + ln(M/β)/(ε/2) of the target."""
    data = list(range(0, 400, 2))  # 200 distinct values on 0..400
    lo, hi, eps = 0, 400, 0.5
    w = RankWeights.build(eps, quantile_fraction(50))
    v, c = hist(data)
    gen = np.random.default_rng(7)
    out = np.array([DRAW[kind](v, c, lo, hi, w, gen) for _ in range(3000)])
    k = w.rank_within(hi - lo + 1, 0.05)
    assert k == pytest.approx(0.5 + math.log(401 / 0.05) / 0.25)
    assert (rank_distance(data, out, 50) > k).mean() <= 0.05
    # and the bound is a bound, not the typical error: most releases are within a few ranks
    assert np.median(rank_distance(data, out, 50)) < k / 4


@pytest.mark.parametrize("mechanism, kind", [("auto", "permute-and-flip"), ("exponential", "exponential")])
def test_a_grouped_query_draws_each_group_at_half_epsilon(tmp_path, mechanism, kind):
    """2000 groups with the same five values, median on 0..9 at ε = 2: under d_h each group's draw uses ε/2."""
    vals = [1, 4, 4, 6, 9]
    n = 2000
    t = _csv(tmp_path / "t.csv", "g,v", [(i, x) for i in range(n) for x in vals])
    r = run_query(t, parse_query("percentile:v:50"), epsilon=2.0, bounds=(0, 9), group_by="g", keys=range(n), rng=3,
                  mechanism=mechanism)
    assert r.mechanism == kind and r.epsilon_per_answer == 1.0
    obs = np.bincount(np.array([a.noisy for a in r.answers], dtype=np.int64), minlength=10)
    half = as_floats(law(kind, vals, 0, 9, RankWeights.build(1.0, quantile_fraction(50))))
    full = as_floats(law(kind, vals, 0, 9, RankWeights.build(2.0, quantile_fraction(50))))
    assert stats.chisquare(obs, half * n).pvalue > 1e-4
    assert stats.chisquare(obs, full * n).pvalue < 1e-4  # ε per group instead of ε/2


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


def test_empty_selection_is_a_uniform_draw_not_a_refusal(tmp_path):
    t = _csv(tmp_path / "t.csv", "g,v", [("A", 1), ("A", 2), ("B", 3)])
    for mechanism in ("auto", "exponential"):
        r = run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 4), where="g = 'C'", rng=0,
                      mechanism=mechanism)
        assert 0 <= r.answers[0].noisy <= 4 and "uniform draw" in r.theorem
    w = RankWeights.build(1.0, quantile_fraction(50))
    for kind in LAW:
        assert np.allclose(as_floats(law(kind, [], 0, 4, w)), 0.2)


def test_the_output_says_which_mechanism_and_why(tmp_path):
    t = _csv(tmp_path / "t.csv", "v", [(x,) for x in (3, 5, 8)])
    r = run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), rng=0)
    assert r.mechanism == "permute-and-flip" and "McKenna and Sheldon 2020" in r.theorem and "Δ is HI − LO" in r.theorem
    assert "uniforms" in r.sampler
    e = run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 10), rng=0, mechanism="exponential")
    assert e.mechanism == "exponential" and "Smith 2011" in e.theorem and "exponentials" in e.sampler
    for res in (r, e):
        a = res.answers[0]
        assert math.isnan(a.expected_abs_error) and a.within_ranks > 0 and "in ranks" in res.accuracy.lower()
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
                                             "standard; for sum:v under standard use --mechanism auto"):
            run_query(t, parse_query("sum:v"), epsilon=1.0, bounds=(0, 4), mechanism=mechanism)
    with pytest.raises(ValueError, match="--mechanism exponential .* under d1"):
        run_query(t, parse_query("percentile:v:50"), epsilon=1.0, bounds=(0, 4), privacy="d1", mechanism="exponential")
    with pytest.raises(ValueError, match="positive finite number, got nan"):
        RankWeights.build(float("nan"), quantile_fraction(50))
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
