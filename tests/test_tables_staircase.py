"""The staircase noise of a sum or an average under standard ε-DP (Geng and Viswanath 2016): its law, its privacy
loss computed exactly on small tables, the exact sampler's draws, the accuracy `dprivacy query` states for it, and
its gain over the two-sided geometric."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("duckdb")

from dprivacy.data.table_staircase import (  # noqa: E402
    best_r, expected_abs, pmf, staircase_accuracy, staircase_parameters, staircase_rows, tail)
from dprivacy.data.tables import parse_query, run_query, truncated_geometric_rows  # noqa: E402
from dprivacy.sampling.discrete import staircase  # noqa: E402
from test_tables_privacy import _cli, _csv  # noqa: E402


# -- the law ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("delta, r, eps", [(1, 1, 1.0), (2, 1, 0.5), (5, 3, 1.0), (10, 4, 2.0), (7, 7, 0.3)])
def test_the_pmf_sums_to_one_and_its_mean_error_is_the_closed_form(delta, r, eps):
    b = math.exp(-eps)
    k = np.arange(-delta * 400, delta * 400 + 1)
    p = pmf(delta, r, b, k)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert (np.abs(k) * p).sum() == pytest.approx(float(expected_abs(delta, r, b)), rel=1e-10)
    m = np.arange(-3 * delta, 3 * delta + 1)
    assert tail(delta, r, b, m) == pytest.approx(np.array([p[k >= v].sum() for v in m]), abs=1e-12)


def test_delta_one_is_the_two_sided_geometric():
    b = math.exp(-0.7)
    k = np.arange(-30, 31)
    assert pmf(1, 1, b, k) == pytest.approx((1 - b) / (1 + b) * b ** np.abs(k), rel=1e-12)


# -- the privacy loss, exactly ---------------------------------------------------------------------------------

def _exact_tail(delta: int, r: int, b: Fraction, m: int) -> Fraction:
    """P(K ≥ m) in rationals: pmf(k + Δ) = b·pmf(k) for k ≥ 0, so Σ_{k ≥ m} = Σ_{m ≤ k < m + Δ} / (1 − b) for m ≥ 0."""
    if m <= 0:
        return 1 - _exact_tail(delta, r, b, 1 - m)
    return sum(pmf(delta, r, b, range(m, m + delta))) / (1 - b)


def _exact_channel(delta, r, b, lo, hi, answers) -> dict:
    """{true answer: [P(o | a) for o in lo..hi]} of the staircase noise cut at lo and hi, in rationals."""
    out = {}
    for a in sorted(set(answers)):
        row = pmf(delta, r, b, [o - a for o in range(lo, hi + 1)])
        row[0] = _exact_tail(delta, r, b, a - lo)
        row[-1] = _exact_tail(delta, r, b, hi - a)
        assert sum(row) == 1
        out[a] = row
    return out


def _worst_ratio(channel: dict, pairs) -> Fraction:
    return max(max(p / q for p, q in zip(channel[a], channel[a2])) for a, a2 in pairs)


@pytest.mark.parametrize("b", [Fraction(1, 3), Fraction(3, 5), Fraction(1, 50)])
def test_the_block_structure_holds_exactly(b):
    for delta, r in ((4, 1), (4, 3), (5, 5)):
        k = list(range(0, 5 * delta))
        p, p_next = pmf(delta, r, b, k), pmf(delta, r, b, [v + delta for v in k])
        assert all(q == b * v for v, q in zip(p, p_next))
        assert pmf(delta, r, b, [-v for v in k]) == p
        assert all(x >= y for x, y in zip(p, p[1:]))  # non-increasing in |k|


@pytest.mark.parametrize("b", [Fraction(1, 3), Fraction(3, 5), Fraction(1, 50)])
def test_the_released_sum_is_eps_dp_exactly_on_every_pair_of_neighbouring_tables(b):
    """3 rows with values in LO..HI, one row replaced (N public): the worst ratio of the probabilities of any release
    between neighbouring tables is e^ε = 1/b exactly, for every r (so for the r that auto picks)."""
    for lo_v, hi_v in ((0, 3), (-1, 2)):
        n, delta = 3, hi_v - lo_v
        tables = list(itertools.product(range(lo_v, hi_v + 1), repeat=n))
        pairs = {(sum(t), sum(t[:i] + (v,) + t[i + 1:])) for t in tables for i in range(n) for v in range(lo_v, hi_v + 1)}
        for r in range(1, delta + 1):
            ch = _exact_channel(delta, r, b, n * lo_v, n * hi_v, [sum(t) for t in tables])
            assert _worst_ratio(ch, pairs) == 1 / b
            # the module's float channel is this one
            fl = staircase_rows(delta, r, float(b), n * lo_v, n * hi_v, answers=sorted(ch))
            assert fl == pytest.approx(np.array([[float(x) for x in ch[a]] for a in sorted(ch)]), abs=1e-12)


def test_the_selected_sum_is_eps_dp_exactly_when_rows_enter_and_leave():
    """Rows (flag, value), the sum of the values with flag = 1, values in 1..3: a row entering or leaving the
    selection moves the sum by up to 3 = max(HI − LO, |LO|, |HI|), the Δ query uses, more than HI − LO = 2; the range
    is min(0, N·LO)..max(0, N·HI)."""
    b = Fraction(2, 5)
    lo_v, hi_v, n = 1, 3, 2
    rows = [(f, v) for f in (0, 1) for v in range(lo_v, hi_v + 1)]
    tables = list(itertools.product(rows, repeat=n))
    f = lambda t: sum(v for fl, v in t if fl)  # noqa: E731
    pairs = {(f(t), f(t[:i] + (x,) + t[i + 1:])) for t in tables for i in range(n) for x in rows}
    assert max(abs(a - a2) for a, a2 in pairs) == 3
    lo, hi = min(0, n * lo_v), max(0, n * hi_v)
    for r in (1, 2, 3):
        assert _worst_ratio(_exact_channel(3, r, b, lo, hi, [f(t) for t in tables]), pairs) == 1 / b
    # the staircase built for Δ = HI − LO = 2 is not ε-DP here: the check has teeth
    assert _worst_ratio(_exact_channel(2, 2, b, lo, hi, [f(t) for t in tables]), pairs) > 1 / b


def test_what_query_releases_is_the_private_channel(tmp_path):
    """run_query's staircase (Δ, r, b) on a 2-row table: every pair of neighbouring tables within e^ε (floating-point
    channel from the release's own parameters)."""
    t = _csv(tmp_path / "t.csv", "v", [1, 2])
    eps = 0.9
    r = run_query(t, parse_query("sum:v"), epsilon=eps, bounds=(0, 4), rng=0)
    st = r.staircase
    assert r.mechanism == "staircase" and st["delta"] == 4 and st["b"] == pytest.approx(math.exp(-eps), rel=1e-11)
    lo, hi = r.answer_range
    h = staircase_rows(st["delta"], st["r"], st["b"], lo, hi)
    worst = max((h[a - lo] / h[a2 - lo]).max() for a in range(lo, hi + 1) for a2 in range(lo, hi + 1) if abs(a - a2) <= 4)
    assert worst == pytest.approx(math.exp(eps), rel=1e-9) and worst <= math.exp(eps) * (1 + 1e-9)


# -- the sampler -----------------------------------------------------------------------------------------------

def test_the_exact_sampler_draws_the_staircase_law():
    st = staircase_parameters(1.0, 10)
    x = staircase(100_000, st.delta, st.r, st.s, st.t, np.random.default_rng(7))
    support = np.arange(-40, 41)
    obs = np.append([(x == k).sum() for k in support], (np.abs(x) > 40).sum())

    def expected(p):
        return np.append(p, 1 - p.sum()) * x.size

    assert stats.chisquare(obs, expected(pmf(10, st.r, st.b, support))).pvalue > 1e-4
    # power: the two-sided geometric at the same ε/Δ, or the staircase one step off in r, are rejected
    a = math.exp(-1.0 / 10)
    assert stats.chisquare(obs, expected((1 - a) / (1 + a) * a ** np.abs(support))).pvalue < 1e-4
    assert stats.chisquare(obs, expected(pmf(10, st.r + 2, st.b, support))).pvalue < 1e-4


def test_an_epsilon_so_large_that_e_to_the_minus_epsilon_underflows(tmp_path):
    """ε_a = 10⁴ on Δ = 20: b = e^{−ε_a} is 0.0 in floating point; the release is exact (no noise but with probability
    below e^{−10⁴}) and its stated accuracy 0."""
    st = staircase_parameters(1e4, 20)
    assert st.b == 0.0 and st.expected_abs == 0.0 and staircase_accuracy(st, 0, 200) == (0.0, 0)
    assert (staircase(50, st.delta, st.r, st.s, st.t, np.random.default_rng(0)) == 0).all()
    t = _csv(tmp_path / "t.csv", "v", [1, 2, 3])
    r = run_query(t, parse_query("sum:v"), epsilon=1e4, bounds=(0, 20), rng=1)
    assert r.answers[0].noisy == 6 and r.answers[0].expected_abs_error == 0.0


def test_the_sampler_takes_a_large_epsilon_and_huge_blocks():
    st = staircase_parameters(7.5, 64)  # s/t > 1: Bernoulli(e^{−s/t}) as a product of draws
    x = staircase(20_000, st.delta, st.r, st.s, st.t, np.random.default_rng(1))
    assert np.abs(x).mean() == pytest.approx(st.expected_abs, rel=0.1)
    big = 2**61
    y = staircase(2000, big, big // 3, 1, 8, np.random.default_rng(2))  # blocks of 2^61: G·Δ + J beyond 63 bits
    assert y.dtype == object and max(abs(int(v)) for v in y) >= big and all(isinstance(v, int) for v in y)


# -- the accuracy query states ---------------------------------------------------------------------------------

@pytest.mark.parametrize("delta, eps, lo, hi", [(3, 1.0, 0, 9), (5, 2.0, -4, 6), (4, 0.5, 0, 3), (6, 1.0, 0, 40)])
def test_the_stated_accuracy_is_the_worst_case_of_the_channel(delta, eps, lo, hi):
    st = staircase_parameters(eps, delta, force=True)
    h = staircase_rows(st.delta, st.r, st.b, lo, hi)
    a = np.arange(lo, hi + 1)
    err = np.abs(a[None, :] - a[:, None])
    mean, t = staircase_accuracy(st, lo, hi)
    assert mean == pytest.approx((h * err).sum(axis=1).max(), rel=1e-10)
    beyond = np.array([(h * (err > s)).sum(axis=1).max() for s in range(hi - lo + 1)])
    assert t == int(np.flatnonzero(beyond <= 0.05 + 1e-12)[0])


def _sd_abs(st) -> float:
    k = np.arange(-st.delta * 300, st.delta * 300 + 1)
    p = pmf(st.delta, st.r, st.b, k)
    return math.sqrt((k * k * p).sum() - (np.abs(k) * p).sum() ** 2)


def test_auto_sum_uses_the_staircase_and_states_its_empirical_error(tmp_path):
    n = 3000
    t = _csv(tmp_path / "t.csv", "g,v", [(i, 3) for i in range(n)])
    r = run_query(t, parse_query("sum:v"), epsilon=4.0, bounds=(-10, 10), group_by="g", rng=5, keys=range(n))
    assert r.mechanism == "staircase" and "Geng and Viswanath 2016" in r.theorem
    st = staircase_parameters(r.epsilon_per_answer, r.sensitivity)
    assert r.staircase["r"] == st.r and r.delivered_epsilon <= 4.0
    err = np.abs(np.array([a.noisy for a in r.answers]) - 3)
    stated = r.answers[0].expected_abs_error
    assert stated == pytest.approx(st.expected_abs, rel=1e-9)  # the range is wide: the middle is unclamped
    assert err.mean() == pytest.approx(stated, abs=4 * _sd_abs(st) / math.sqrt(n))
    assert (err > r.answers[0].within).mean() <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / n)


def test_grouped_sum_at_the_lower_clamp_follows_the_staircase_channel(tmp_path):
    """Groups with no selected row have the true sum 0, the lower end of the range 0..N·HI."""
    n = 3000
    t = _csv(tmp_path / "t.csv", "g,flag,v", [(i, 0, 5) for i in range(n)])
    r = run_query(t, parse_query("sum:v"), epsilon=2.0, bounds=(0, 5), where="flag = 1", group_by="g", rng=3, keys=range(n))
    assert r.mechanism == "staircase" and r.sensitivity == 5 and r.epsilon_per_answer == 1.0
    out = np.array([a.noisy for a in r.answers])
    st = r.staircase

    def chi2(row):
        probs = np.append(row[:12], row[12:].sum())
        obs = np.append([(out == s).sum() for s in range(12)], (out >= 12).sum())
        return stats.chisquare(obs, probs * n).pvalue

    assert chi2(staircase_rows(5, st["r"], st["b"], 0, 5 * n, answers=[0])[0]) > 1e-4
    assert chi2(truncated_geometric_rows(math.exp(-1.0 / 5), 0, 5 * n, answers=[0])[0]) < 1e-4  # power
    assert chi2(staircase_rows(5, st["r"], math.exp(-2.0), 0, 5 * n, answers=[0])[0]) < 1e-4  # ε per group


# -- the gain over the geometric -------------------------------------------------------------------------------

def test_the_staircase_error_against_the_geometric():
    """Δ = 500 (bounds −10..40 at --unit 0.1): E|K| tends to Δ·e^{ε/2}/(e^ε − 1) against the geometric's ≈ Δ/ε."""
    for eps, ratio in ((1.0, math.exp(0.5) / (math.e - 1)), (2.0, 2 * math.e / (math.e ** 2 - 1))):
        st = staircase_parameters(eps, 500)
        a = math.exp(-eps / 500)
        geo = 2 * a / (1 - a * a)
        assert st.expected_abs / geo == pytest.approx(ratio, abs=2e-3)
    assert staircase_parameters(1.0, 1) is None  # Δ = 1: the same law as the geometric
    assert staircase_parameters(1000.0, 500) is None  # the r the sampler allows loses to the geometric: auto keeps it
    for delta in (2, 3, 10, 97, 500, 10**6):
        for eps in (0.01, 0.1, 0.5, 1.0, 3.0, 8.0, 30.0):
            st = staircase_parameters(eps, delta)
            a = math.exp(-eps / delta)
            assert st is None or st.expected_abs < 2 * a / (1 - a * a)


def test_the_chosen_r_minimises_the_expected_error():
    for delta in (2, 7, 50, 333):
        for eps in (0.05, 0.7, 2.0, 6.0, 12.0):
            b, x = math.exp(-eps), -math.expm1(-eps)
            r = best_r(delta, b, x)
            allowed = [q for q in range(1, delta + 1) if (q + (delta - q) * b) / delta >= 1 / 64 - 1e-15]
            errs = expected_abs(delta, np.array(allowed, dtype=float), b, x)
            assert r in allowed and float(expected_abs(delta, r, b, x)) == pytest.approx(errs.min(), rel=1e-12)


def test_sum_and_mean_of_a_table_state_the_smaller_error(tmp_path):
    """Bounds −10..40 at --unit 0.1, ε = 1: the sum's and the mean's stated error are 0.96× the geometric's."""
    vals = [round(-10 + 0.1 * (i % 501), 1) for i in range(1461)]
    t = _csv(tmp_path / "w.csv", "t", vals)
    for q in ("sum:t", "avg:t"):
        s = run_query(t, parse_query(q), epsilon=1.0, bounds=(-10.0, 40.0), unit=0.1, rng=1)
        g = run_query(t, parse_query(q), epsilon=1.0, bounds=(-10.0, 40.0), unit=0.1, rng=1, mechanism="truncated-geometric")
        assert s.mechanism == "staircase" and g.mechanism == "truncated-geometric"
        ratio = s.answers[0].expected_abs_error / g.answers[0].expected_abs_error
        assert ratio == pytest.approx(math.exp(0.5) / (math.e - 1), abs=2e-3)
    # the release mode's cryptographic source draws it too
    r = run_query(t, parse_query("avg:t"), epsilon=1.0, bounds=(-10.0, 40.0), unit=0.1)
    assert r.random_source["release"] and r.mechanism == "staircase"


def test_staircase_by_name_only_where_it_applies(tmp_path):
    t = _csv(tmp_path / "t.csv", "v,g", [(1, "a"), (2, "b")])
    for kw in (dict(q="count"), dict(q="percentile:v:50", bounds=(0, 4)), dict(q="sum:v", bounds=(0, 4), privacy="d1")):
        q = kw.pop("q")
        with pytest.raises(ValueError, match="--mechanism staircase is for sum and avg under --privacy standard"):
            run_query(t, parse_query(q), epsilon=1.0, mechanism="staircase", **kw)
    # under the value metrics auto keeps the truncated geometric (a shift by d units must cost ε·d/Δ there)
    assert run_query(t, parse_query("sum:v"), epsilon=1.0, bounds=(0, 4), privacy="normalized-d1", rng=0).mechanism == \
        "truncated-geometric"
    # by name at Δ = 1 too, where it is the geometric's law
    r = run_query(t, parse_query("sum:v"), epsilon=1.0, bounds=(0, 1), mechanism="staircase", rng=0)
    assert r.mechanism == "staircase" and r.staircase["r"] == 1
    p = _cli("query", t, "--query", "avg:v", "--bounds", "0,4", "--epsilon", "1", "--seed", "3", "--json")
    j = json.loads(p.stdout)
    assert p.returncode == 0 and j["mechanism"] == "staircase" and j["staircase"]["delta"] == 4
