"""Chatzikokolakis et al. 2013 §3, Thm 3 (hiding functions) and Thm 4 (neighbourhoods), file Chatzikokolakis et al. 2013."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import exponential_channel, metric_spaces, priors, stochastic_matrices
from dprivacy import spaces
from dprivacy.channels import Channel
from dprivacy.measures import check_privacy, smallest_epsilon
from dprivacy.measures.characterizations import (
    check_hiding,
    check_neighbourhood,
    hiding_distance,
    neighbourhood_diameter,
    swap,
)


@st.composite
def private_setups(draw, extended=False, max_n=6):
    """(space, exponential channel, prior, ε) with the channel checked ε·d-private."""
    space = draw(metric_spaces(1, max_n, extended=extended))
    eps = draw(st.floats(0.1, 2.0))
    h = exponential_channel(space.distances, eps / 2)  # 2·(ε/2)·d-private, see conftest
    prior = draw(priors(space.n))
    return space, h, prior, eps


def _hidings(n):
    return st.lists(st.integers(0, n - 1), min_size=n, max_size=n).map(lambda v: np.array(v))


def _neighbourhoods(n):
    return st.lists(st.integers(0, n - 1), min_size=1, max_size=n)


# ---------------------------------------------------------------------------------------------
# Exact small cases, computed by hand
# ---------------------------------------------------------------------------------------------


def test_hiding_two_secrets_by_hand():
    # Uniform prior, φ swaps the two secrets. Output 0: σ1 = (.8, .4)/1.2 = (2/3, 1/3),
    # σ2 = (.4, .8)/1.2, so d_P = ln 2. Output 1: σ1 = (.2, .6)/.8, σ2 = (.6, .2)/.8, d_P = ln 3.
    h = np.array([[0.8, 0.2], [0.4, 0.6]])
    r = check_hiding(h, spaces.line(2), [0.5, 0.5], swap(2, 0, 1), epsilon=np.log(3))
    assert r.value == pytest.approx(np.log(3))
    assert r.worst_event == (1,)
    np.testing.assert_allclose(r.posterior, [0.25, 0.75])
    np.testing.assert_allclose(r.hidden_posterior, [0.75, 0.25])
    assert r.hiding_distance == 1.0 and r.bound == pytest.approx(2 * np.log(3))
    assert r.ok and r.events_compared == 2
    # smallest ε of this channel on line:2 is ln 3 (output 1: .6/.2)
    assert smallest_epsilon(h, spaces.line(2)) == pytest.approx(np.log(3))


def test_neighbourhood_by_hand():
    # line:3, N = {0, 1}, prior (.5, .25, .25): π|N = (2/3, 1/3).
    # Output 1: σ|N ∝ (.5·.2, .25·.6) = (.1, .15) → (.4, .6); |ln .6/(1/3)| = ln 1.8 is the worst.
    h = np.array([[0.8, 0.2], [0.4, 0.6], [0.1, 0.9]])
    r = check_neighbourhood(h, spaces.line(3), [0.5, 0.25, 0.25], [1, 0, 1], epsilon=1.0)
    np.testing.assert_array_equal(r.neighbourhood, [0, 1])
    np.testing.assert_allclose(r.prior_restricted, [2 / 3, 1 / 3])
    np.testing.assert_allclose(r.posterior_restricted, [0.4, 0.6])
    assert r.value == pytest.approx(np.log(1.8))
    assert r.worst_event == (1,) and r.worst_secret == 1
    assert r.diameter == 1.0 and r.bound == 1.0 and r.ok


def test_hiding_distance_and_diameter():
    s = spaces.line(5, step=2.0)
    assert hiding_distance(s, np.arange(5)) == 0.0
    assert hiding_distance(s, np.array([4, 1, 2, 3, 4])) == 8.0
    assert neighbourhood_diameter(s, [1, 3, 2]) == 4.0
    assert neighbourhood_diameter(s, np.array([True, False, False, False, True])) == 8.0
    g = spaces.grid(3, 3, metric="manhattan")
    assert neighbourhood_diameter(g, [0, 8]) == 4.0
    assert hiding_distance(g, swap(9, 0, 5)) == 3.0


def test_identity_hiding_and_singleton_neighbourhood_give_zero():
    h = np.array([[0.7, 0.3, 0.0], [0.1, 0.1, 0.8]])
    s = spaces.line(2)
    r = check_hiding(h, s, [0.3, 0.7], np.arange(2), epsilon=1.0)
    assert r.value == 0.0 and r.bound == 0.0 and r.ok
    r = check_neighbourhood(h, s, [0.3, 0.7], [1], epsilon=1.0)
    assert r.value == 0.0 and r.bound == 0.0 and r.ok


def test_neighbourhood_of_zero_prior_mass_has_a_reason():
    r = check_neighbourhood(np.eye(3), spaces.line(3), [1.0, 0.0, 0.0], [1, 2], epsilon=1.0)
    assert r.events_compared == 0 and r.reason is not None and "probability 0" in r.reason


def test_extended_metric_gives_infinite_bounds():
    # Two components: a mechanism may tell them apart completely (Chatzikokolakis et al. 2013 §3).
    s = spaces.from_graph([(0, 1), (2, 3)])
    h = np.array([[0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 0.5, 0.5]])
    assert check_privacy(h, s, epsilon=0.1).ok
    r = check_hiding(h, s, np.full(4, 0.25), swap(4, 0, 2), epsilon=0.1)
    assert r.bound == np.inf and r.value == np.inf and r.ok
    r = check_neighbourhood(h, s, np.full(4, 0.25), [0, 2], epsilon=0.1)
    assert r.bound == np.inf and r.ok


def test_bad_input():
    h = np.eye(3)
    s = spaces.line(3)
    p = np.full(3, 1 / 3)
    with pytest.raises(ValueError, match="length 3"):
        check_hiding(h, s, p, np.array([0, 1]), epsilon=1.0)
    with pytest.raises(ValueError, match="0..2"):
        check_hiding(h, s, p, np.array([0, 1, 3]), epsilon=1.0)
    with pytest.raises(TypeError, match="integer"):
        check_hiding(h, s, p, np.array([0.0, 1.0, 2.0]), epsilon=1.0)
    with pytest.raises(ValueError, match="empty"):
        check_neighbourhood(h, s, p, [], epsilon=1.0)
    with pytest.raises(ValueError, match="0..2"):
        check_neighbourhood(h, s, p, [5], epsilon=1.0)
    with pytest.raises(ValueError, match="2 rows"):
        check_hiding(np.eye(2), s, [0.5, 0.5], np.arange(2), epsilon=1.0)
    with pytest.raises(ValueError, match="events"):
        check_hiding(h, s, p, np.arange(3), events="some", epsilon=1.0)
    with pytest.raises(ValueError, match="outside"):
        check_hiding(h, s, p, np.arange(3), events=[[0, 7]], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        check_neighbourhood(h, s, p, [0], epsilon=-1.0)
    with pytest.raises(ValueError, match="secret index"):
        swap(3, 0, 3)


def test_explicit_events_match_all():
    h = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.1, 0.6, 0.3]])
    p = np.array([0.2, 0.5, 0.3])
    s = spaces.line(3)
    phi = np.array([2, 0, 1])
    every = [[z for z in range(3) if code >> z & 1] for code in range(1, 8)]
    mask = np.array([[bool(code >> z & 1) for z in range(3)] for code in range(1, 8)])
    a = check_hiding(h, s, p, phi, events="all", epsilon=1.0)
    b = check_hiding(h, s, p, phi, events=every, epsilon=1.0)
    c = check_hiding(h, s, p, phi, events=mask, epsilon=1.0)
    assert a.value == b.value == c.value and a.worst_event == b.worst_event == c.worst_event
    assert a.events_compared == 7


# ---------------------------------------------------------------------------------------------
# The theorems' bounds hold for private channels
# ---------------------------------------------------------------------------------------------


@given(private_setups(extended=True), st.data())
def test_thm3_bound_holds_for_exponential_channels(setup, data):
    space, h, prior, eps = setup
    assert check_privacy(h, space, epsilon=eps).ok
    phi = data.draw(_hidings(space.n))
    for events in (None, "all"):
        r = check_hiding(h, space, prior, phi, epsilon=eps, events=events)
        assert r.value <= r.bound + 1e-9, (r.value, r.bound, events)
        assert r.ok
        assert r.hiding_distance == max(space.distances[x, phi[x]] for x in range(space.n))


@given(private_setups(extended=True), st.data())
def test_thm4_bound_holds_for_exponential_channels(setup, data):
    space, h, prior, eps = setup
    assert check_privacy(h, space, epsilon=eps).ok
    nb = data.draw(_neighbourhoods(space.n))
    r = check_neighbourhood(h, space, prior, nb, epsilon=eps)
    assert r.value <= r.bound + 1e-9 and r.ok
    assert r.diameter == space.distances[np.ix_(nb, nb)].max()


@given(metric_spaces(2, 6), st.data())
def test_bounds_hold_at_each_channels_smallest_epsilon(space, data):
    # Any channel with full support is ε*·d-private for ε* = its smallest ε.
    h = data.draw(stochastic_matrices(space.n, data.draw(st.integers(2, 5)), positive=True))
    eps = smallest_epsilon(h, space)
    assume(eps > 1e-6)
    prior = data.draw(priors(space.n))
    r3 = check_hiding(h, space, prior, data.draw(_hidings(space.n)), epsilon=eps, events="all")
    r4 = check_neighbourhood(h, space, prior, data.draw(_neighbourhoods(space.n)), epsilon=eps)
    assert r3.ok and r4.ok, (r3, r4)


@given(metric_spaces(1, 6), st.data())
def test_neighbourhood_single_outputs_give_the_supremum_over_events(space, data):
    # Mediant inequality (module notes): no set of outputs beats the best single output.
    h = data.draw(stochastic_matrices(space.n, data.draw(st.integers(1, 5))))
    prior = data.draw(priors(space.n))
    nb = data.draw(_neighbourhoods(space.n))
    a = check_neighbourhood(h, space, prior, nb, epsilon=1.0)
    b = check_neighbourhood(h, space, prior, nb, events="all", epsilon=1.0)
    assert b.value == pytest.approx(a.value, rel=1e-9, abs=1e-12)


@given(metric_spaces(1, 6), st.data())
def test_all_events_never_below_single_outputs_for_hiding(space, data):
    h = data.draw(stochastic_matrices(space.n, data.draw(st.integers(1, 5))))
    prior = data.draw(priors(space.n))
    phi = data.draw(_hidings(space.n))
    a = check_hiding(h, space, prior, phi, epsilon=1.0)
    b = check_hiding(h, space, prior, phi, events="all", epsilon=1.0)
    assert b.value >= a.value


# ---------------------------------------------------------------------------------------------
# Teeth: non-private channels exceed the bounds (the converses of Thms 3 and 4)
# ---------------------------------------------------------------------------------------------


def test_non_private_channel_exceeds_both_bounds():
    # line:3 with ε = 0.5: the worst pair is rows 1 and 0 on output 1, ln(.5/.1) = ln 5 > 0.5.
    h = np.array([[0.9, 0.1], [0.5, 0.5], [0.1, 0.9]])
    s = spaces.line(3)
    priv = check_privacy(h, s, epsilon=0.5)
    assert not priv.ok and priv.worst == (1, 0, 1)
    y, y2, z = priv.worst
    # A prior almost sure of y2, not quite: seeing z makes y much likelier with than without the swap.
    prior = np.zeros(3)
    prior[y], prior[y2] = 1e-6, 1 - 1e-6
    r3 = check_hiding(h, s, prior, swap(3, y, y2), epsilon=0.5)
    assert r3.bound == pytest.approx(1.0) and not r3.ok
    assert r3.value == pytest.approx(2 * np.log(5), rel=1e-4)  # → 2 ln(H[y,z]/H[y',z]) as p → 0
    r4 = check_neighbourhood(h, s, prior, [y, y2], epsilon=0.5)
    assert r4.bound == pytest.approx(0.5) and not r4.ok
    assert r4.value == pytest.approx(np.log(5), rel=1e-4)  # → ln(H[y,z]/H[y',z]) as p → 0


@given(metric_spaces(2, 6), st.data())
def test_converse_non_private_channels_exceed_both_bounds(space, data):
    """Chatzikokolakis et al. 2013 Thms 3 and 4, converse direction: a channel that is not ε·d-private violates both
    bounds for the swap / pair neighbourhood of its worst pair and a prior concentrated near y'."""
    h = data.draw(stochastic_matrices(space.n, data.draw(st.integers(2, 5)), positive=True))
    star = check_privacy(h, space, epsilon=0.0)
    assume(star.smallest_epsilon > 1e-3)
    eps = star.smallest_epsilon / data.draw(st.floats(1.5, 4.0))
    assert not check_privacy(h, space, epsilon=eps).ok
    y, y2, z = star.worst
    ratio = h[y, z] / h[y2, z]  # = e^{ε* d(y, y')} > e^{ε d(y, y')}
    prior = np.zeros(space.n)
    prior[y] = 1e-8 / ratio  # small enough that the limit p → 0 is nearly reached
    prior[y2] = 1 - prior[y]
    r3 = check_hiding(h, space, prior, swap(space.n, y, y2), epsilon=eps)
    r4 = check_neighbourhood(h, space, prior, [y, y2], epsilon=eps)
    assert not r3.ok and not r4.ok, (r3, r4)


def test_infinite_ratio_violates_both():
    # Output 1 is impossible from secret 1 but possible from its neighbour 0.
    h = np.array([[0.5, 0.5], [1.0, 0.0]])
    s = spaces.line(2)
    r3 = check_hiding(h, s, [0.5, 0.5], swap(2, 0, 1), epsilon=1.0)
    assert r3.value == np.inf and not r3.ok
    r4 = check_neighbourhood(h, s, [0.5, 0.5], [0, 1], epsilon=1.0)
    assert r4.value == np.inf and not r4.ok


def test_channel_object_and_grid_space():
    g = spaces.grid(3, 2, metric="chebyshev")
    h = Channel(exponential_channel(g.distances, 0.4))
    assert check_privacy(h, g, epsilon=0.8).ok
    p = np.arange(1, 7) / 21
    assert check_hiding(h, g, p, np.array([5, 4, 3, 2, 1, 0]), epsilon=0.8).ok
    assert check_neighbourhood(h, g, p, [0, 1, 3, 4], epsilon=0.8).ok
