"""Exact discrete Laplace sampling in integer arithmetic (CKS 2020, Algorithms 1–2).

The laws are checked by chi-square tests with fixed seeds (deterministic given the seed) that also
show power: the same sample rejects a law with ε 5% off.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dprivacy.sampling.discrete import (
    DENOMINATOR_BITS,
    bernoulli_exp,
    discrete_laplace,
    geometric_parameters,
    two_sided_geometric,
)


@pytest.mark.parametrize("num, den", [(0, 1), (1, 1), (1, 3), (2, 7), (5, 5), (123456789, 1 << 40)])
def test_bernoulli_exp_has_mean_exp_minus_gamma(num, den):
    g = np.random.default_rng(num + den)
    n = 400_000
    x = bernoulli_exp(np.full(n, num, dtype=np.uint64), den, g)
    p = math.exp(-num / den)
    # 5 standard deviations (a fixed seed: the test is deterministic)
    assert abs(x.mean() - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12
    if num == 0:
        assert x.all()  # exp(0) = 1 exactly: the first Bernoulli(0) is always 0, at k = 1 (odd)


def _law(ratio, support):
    a = math.exp(-ratio)
    p = (1 - a) / (1 + a) * a ** np.abs(support)
    return np.append(p, 1 - p.sum())


@pytest.mark.parametrize("s, t", [(1, 1), (7, 10), (3, 1), (1, 4)])
def test_discrete_laplace_law_and_power(s, t):
    g = np.random.default_rng(s * 31 + t)
    z = discrete_laplace(300_000, s, t, g)
    assert z.dtype == np.int64
    support = np.arange(-10, 11)
    obs = np.append(np.array([(z == k).sum() for k in support]), (np.abs(z) > 10).sum())
    assert stats.chisquare(obs, _law(s / t, support) * z.size).pvalue > 1e-6
    assert stats.chisquare(obs, _law(1.05 * s / t, support) * z.size).pvalue < 1e-6


def test_discrete_laplace_is_symmetric_and_zero_is_not_double_counted():
    z = discrete_laplace(400_000, 1, 2, np.random.default_rng(5))
    a = math.exp(-0.5)
    p0 = (1 - a) / (1 + a)
    assert abs((z == 0).mean() - p0) <= 5 * math.sqrt(p0 * (1 - p0) / z.size)
    assert abs((z > 0).mean() - (z < 0).mean()) <= 5 * math.sqrt(0.5 / z.size)


@given(st.floats(1e-3, 50.0), st.floats(1e-2, 1e4))
@settings(max_examples=60)
def test_rational_is_rounded_down_and_close(eps, sensitivity):
    p = geometric_parameters(eps, sensitivity)
    exact = Fraction(eps) / Fraction(sensitivity)
    assert p.t == 1 << DENOMINATOR_BITS
    assert Fraction(p.s, p.t) <= exact < Fraction(p.s + 1, p.t)
    # never more private-sounding than asked: the delivered ε is at most ε, and within Δ·2^-40 of it
    assert p.delivered_epsilon <= eps * (1 + 1e-15)
    assert eps - p.delivered_epsilon <= sensitivity * 2.0**-DENOMINATOR_BITS + 4e-16 * eps
    assert p.alpha == pytest.approx(math.exp(-p.s / p.t), rel=1e-15)


@pytest.mark.parametrize("eps, sens", [(0.0, 1.0), (-1.0, 1.0), (float("nan"), 1.0), (1.0, 0.0), (1.0, float("inf"))])
def test_bad_parameters_are_named(eps, sens):
    with pytest.raises(ValueError, match="epsilon|sensitivity"):
        two_sided_geometric(3, eps, sens, np.random.default_rng(0))


def test_tiny_ratio_is_refused_not_rounded_to_zero():
    with pytest.raises(ValueError, match="below 2\\^-40"):
        geometric_parameters(1e-9, 1e6)


def test_an_epsilon_beyond_the_samplers_integers_is_refused_with_the_limit():
    """ε = 1e8 on a count ended in 'Python int too large to convert to C long'; the limit is named."""
    from dprivacy.sampling.discrete import geometric_parameters

    assert geometric_parameters(4e6, 1.0).s > 0
    with pytest.raises(ValueError, match=r"ε/Δ = 1e\+08 is above 4,194,304"):
        geometric_parameters(1e8, 1.0)
