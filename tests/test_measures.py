"""QIF measures (Alvim et al. 2015 §2.2, §6; ElSalamouny et al. 2014 §3.4-3.5) and the d-privacy check (ElSalamouny et al. 2014 Def 1)."""

import itertools

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import (
    brute_smallest_epsilon,
    floyd_warshall,
    metric_matrices,
    metric_spaces,
    priors,
    stochastic_matrices,
)
from dprivacy import spaces
from dprivacy.channels import Channel, constant, identity
from dprivacy.measures import (
    binary_gain,
    check_prior_privacy,
    check_privacy,
    conditional_min_entropy,
    expected_loss,
    g_vulnerability,
    is_private,
    min_capacity,
    min_entropy,
    min_entropy_leakage,
    multiplicative_distance,
    multiplicative_leakage,
    posterior_vulnerability,
    prior_g_vulnerability,
    prior_vulnerability,
    smallest_epsilon,
    utility,
)
from dprivacy.spaces import MetricSpace


@st.composite
def channel_and_prior(draw, max_n=6, max_m=6, zeros=True):
    n = draw(st.integers(1, max_n))
    h = draw(stochastic_matrices(n, draw(st.integers(1, max_m))))
    return h, draw(priors(n, zeros=zeros))


# ---------------------------------------------------------------------------------------------
# Vulnerability, entropy, leakage
# ---------------------------------------------------------------------------------------------


def test_small_case_by_hand():
    h = np.array([[0.8, 0.2], [0.4, 0.6]])
    u = [0.5, 0.5]
    # V(u, H) = max(.4, .2) + max(.1, .3) = 0.7; V(u) = 0.5
    assert posterior_vulnerability(h, u) == pytest.approx(0.7)
    assert prior_vulnerability(u) == 0.5
    assert min_entropy(u) == pytest.approx(1.0)
    assert conditional_min_entropy(h, u) == pytest.approx(-np.log2(0.7))
    assert multiplicative_leakage(h, u) == pytest.approx(1.4)
    assert min_entropy_leakage(h, u) == pytest.approx(np.log2(1.4))
    assert min_capacity(h) == pytest.approx(np.log2(1.4))  # Σ_z max_y H[y,z] = .8 + .6
    r = utility(h, u)
    assert r.value == pytest.approx(0.7) and list(r.remap) == [0, 1]


def test_identity_and_constant_channels():
    p = np.array([0.5, 0.3, 0.2])
    assert min_entropy_leakage(identity(3), p) == pytest.approx(min_entropy(p))  # reveals everything
    assert min_capacity(identity(3)) == pytest.approx(np.log2(3))
    assert min_entropy_leakage(constant(3, 4), p) == pytest.approx(0.0, abs=1e-12)
    assert min_capacity(constant(3, 4)) == pytest.approx(0.0, abs=1e-12)


@given(channel_and_prior())
def test_utility_with_binary_gain_is_two_to_minus_conditional_min_entropy(hp):
    """Alvim et al. 2015 Prop 24: U(H, π, g_b) = 2^{−H∞(Y|Z)}."""
    h, p = hp
    u = utility(h, p).value
    assert u == pytest.approx(2.0 ** -conditional_min_entropy(h, p), rel=1e-12)
    assert u == pytest.approx(utility(h, p, binary_gain(len(p))).value, rel=1e-12)


@given(channel_and_prior())
def test_leakage_between_zero_and_min_capacity(hp):
    h, p = hp
    leak = min_entropy_leakage(h, p)
    assert -1e-12 <= leak <= min_capacity(h) + 1e-12


@given(st.integers(1, 6).flatmap(lambda n: stochastic_matrices(n)))
def test_min_capacity_is_attained_at_the_uniform_prior(h):
    n = h.shape[0]
    assert min_entropy_leakage(h, np.full(n, 1 / n)) == pytest.approx(min_capacity(h), abs=1e-12)


@given(channel_and_prior())
def test_g_vulnerability_with_identity_gain_is_bayes_vulnerability(hp):
    h, p = hp
    assert g_vulnerability(h, p, np.eye(len(p))) == pytest.approx(posterior_vulnerability(h, p), rel=1e-12)
    assert prior_g_vulnerability(p, np.eye(len(p))) == pytest.approx(prior_vulnerability(p))


@given(channel_and_prior())
def test_expected_loss_of_one_minus_identity_is_one_minus_utility(hp):
    h, p = hp
    n = len(p)
    loss = expected_loss(h, p, 1.0 - np.eye(n))
    assert loss.kind == "loss"
    assert loss.value == pytest.approx(1.0 - utility(h, p).value, abs=1e-12)


@given(st.data())
def test_utility_remap_is_optimal_by_brute_force(data):
    n = data.draw(st.integers(1, 4))
    m = data.draw(st.integers(1, 4))
    w = data.draw(st.integers(1, 3))
    h = data.draw(stochastic_matrices(n, m))
    p = data.draw(priors(n))
    gain = np.array(data.draw(st.lists(st.floats(-2, 2), min_size=n * w, max_size=n * w))).reshape(n, w)
    j = p[:, None] * h
    best = max(sum(j[:, z] @ gain[:, r[z]] for z in range(m)) for r in itertools.product(range(w), repeat=m))
    res = utility(h, p, gain)
    assert res.value == pytest.approx(best, abs=1e-12)
    assert sum(j[:, z] @ gain[:, res.remap[z]] for z in range(m)) == pytest.approx(res.value, abs=1e-12)
    worst = min(sum(j[:, z] @ gain[:, r[z]] for z in range(m)) for r in itertools.product(range(w), repeat=m))
    assert expected_loss(h, p, gain).value == pytest.approx(worst, abs=1e-12)


@given(channel_and_prior(), st.data())
def test_observing_never_lowers_g_vulnerability(hp, data):
    h, p = hp
    w = data.draw(st.integers(1, 3))
    gain = np.array(data.draw(st.lists(st.floats(0, 1), min_size=len(p) * w, max_size=len(p) * w))).reshape(-1, w)
    assert g_vulnerability(h, p, gain) >= prior_g_vulnerability(p, gain) - 1e-12
    # A channel that reveals nothing gives exactly the prior g-vulnerability.
    assert g_vulnerability(constant(len(p), 3), p, gain) == pytest.approx(prior_g_vulnerability(p, gain), abs=1e-12)


def test_measure_input_errors():
    with pytest.raises(ValueError, match="3 entries, expected 2"):
        posterior_vulnerability(np.eye(2), [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="sum to 1"):
        utility(np.eye(2), [0.2, 0.3])
    with pytest.raises(ValueError, match="rows, expected 2"):
        utility(np.eye(2), [0.5, 0.5], np.ones((3, 2)))
    with pytest.raises(ValueError, match="row-stochastic"):
        min_capacity([[0.5, 0.6]])


# ---------------------------------------------------------------------------------------------
# multiplicative distance
# ---------------------------------------------------------------------------------------------


def test_multiplicative_distance_conventions():
    assert multiplicative_distance([0.5, 0.5, 0.0], [0.25, 0.75, 0.0]) == pytest.approx(np.log(2))  # 0/0 → 0
    assert multiplicative_distance([0.5, 0.5], [1.0, 0.0]) == np.inf  # x/0 → ∞
    assert multiplicative_distance([1.0, 0.0], [0.5, 0.5]) == np.inf  # 0/x → ∞ too (|ln 0|)
    assert multiplicative_distance([0.2, 0.8], [0.2, 0.8]) == 0.0
    with pytest.raises(ValueError, match="equal length"):
        multiplicative_distance([0.5, 0.5], [1.0])
    with pytest.raises(ValueError, match="1-D"):
        multiplicative_distance([[1.0]], [[1.0]])


@given(st.integers(1, 6).flatmap(lambda m: stochastic_matrices(3, m)))
def test_multiplicative_distance_is_a_symmetric_extended_metric(h):
    p, q, r = h
    dpq = multiplicative_distance(p, q)
    assert dpq == multiplicative_distance(q, p) >= 0
    assert multiplicative_distance(p, p) == 0.0
    assert multiplicative_distance(p, r) <= dpq + multiplicative_distance(q, r) + 1e-12


# ---------------------------------------------------------------------------------------------
# d-privacy check against a brute-force triple loop
# ---------------------------------------------------------------------------------------------


def _brute_holds(h, d, eps, tol=1e-9):
    n, m = h.shape
    for y in range(n):
        for y2 in range(n):
            if y == y2 or not np.isfinite(d[y, y2]):
                continue
            for z in range(m):
                if h[y, z] > 0 and (h[y2, z] == 0 or np.log(h[y, z] / h[y2, z]) > eps * d[y, y2] + tol):
                    return False
    return True


def _assert_worst_is_consistent(res, h, d):
    y, y2, z = res.worst
    assert h[y, z] >= h[y2, z]
    assert res.distance == d[y, y2]
    if h[y, z] == 0:  # equal rows with a common zero: every ratio is 0 (0/0 constrains nothing)
        assert res.worst_ratio == 0.0 and res.smallest_epsilon == 0.0
    elif h[y2, z] > 0:
        assert res.worst_ratio == pytest.approx(np.log(h[y, z] / h[y2, z]), abs=1e-12)
        assert res.smallest_epsilon == pytest.approx(res.worst_ratio / res.distance, rel=1e-9, abs=1e-12)
    else:
        assert res.worst_ratio == np.inf and res.smallest_epsilon == np.inf


@given(metric_matrices(1, 7, extended=True), st.data())
def test_check_privacy_agrees_with_brute_force(d, data):
    n = d.shape[0]
    h = data.draw(stochastic_matrices(n, data.draw(st.integers(1, 5))))
    eps = data.draw(st.floats(0.0, 3.0))
    brute = brute_smallest_epsilon(h, d)
    assume(not np.isfinite(brute) or abs(eps - brute) > 1e-6)  # away from the tolerance band
    res = check_privacy(h, MetricSpace(d), epsilon=eps)
    assert res.ok == _brute_holds(h, d, eps) == (eps >= brute)
    assert res.smallest_epsilon == pytest.approx(brute, rel=1e-9, abs=1e-12)
    assert is_private(h, MetricSpace(d), epsilon=eps) == res.ok
    assert smallest_epsilon(h, MetricSpace(d)) == res.smallest_epsilon
    if res.worst is not None:
        _assert_worst_is_consistent(res, h, d)


@given(metric_matrices(2, 8, extended=True), st.data())
def test_essential_pairs_give_the_same_smallest_epsilon_as_all_pairs(d, data):
    h = data.draw(stochastic_matrices(d.shape[0], data.draw(st.integers(1, 5))))
    all_pairs = MetricSpace(d)  # no essential pairs known: every finite pair is checked
    shortcut = MetricSpace(d)
    shortcut.essential_pairs()  # computed and cached: now only these are checked
    a, b = check_privacy(h, all_pairs, epsilon=1.0), check_privacy(h, shortcut, epsilon=1.0)
    assert b.smallest_epsilon == pytest.approx(a.smallest_epsilon, rel=1e-8)
    assert a.ok == b.ok or abs(a.smallest_epsilon - 1.0) < 1e-6


@st.composite
def sparse_graph_spaces(draw):
    """Larger graph metrics (12-30 nodes, trees plus a few edges): few essential pairs, so the check
    takes its listed-pairs path rather than the all-pairs sweep."""
    n = draw(st.integers(12, 30))
    w = np.full((n, n), np.inf)
    np.fill_diagonal(w, 0.0)
    edges = [(draw(st.integers(0, k - 1)), k) for k in range(1, n)]
    edges += draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3))
    for a, b in edges:
        if a != b:
            w[a, b] = w[b, a] = 1.0
    return floyd_warshall(w), [(a, b) for a, b in edges if a != b]


@given(sparse_graph_spaces(), st.data())
def test_graph_edges_suffice_on_larger_graphs(de, data):
    """ElSalamouny et al. 2013 Prop 1: on a graph metric the adjacent pairs suffice."""
    d, edges = de
    h = data.draw(stochastic_matrices(d.shape[0], 3, positive=True))
    space = spaces.from_graph(edges, nodes=range(d.shape[0]))
    np.testing.assert_array_equal(space.distances, d)
    res = check_privacy(h, space, epsilon=1.0)
    assert res.pairs_checked < d.shape[0] * (d.shape[0] - 1) / 8  # the edges, not all pairs
    assert res.smallest_epsilon == pytest.approx(brute_smallest_epsilon(h, d), rel=1e-9)
    _assert_worst_is_consistent(res, h, d)


@given(st.sampled_from(["manhattan", "chebyshev", "euclidean"]), st.integers(1, 4), st.integers(1, 4), st.data())
def test_grid_check_without_dense_matrix(metric, w, hgt, data):
    g = spaces.grid(w, hgt, metric=metric)  # fresh: its dense matrix is not built yet
    h = data.draw(stochastic_matrices(g.n, 3, positive=True))
    res = check_privacy(h, g, epsilon=1.0)
    d = spaces.grid(w, hgt, metric=metric).distances
    assert res.smallest_epsilon == pytest.approx(brute_smallest_epsilon(h, d), rel=1e-9)


@given(metric_spaces(2, 6), st.floats(0.1, 5.0), st.data())
def test_scaling_the_metric_scales_the_smallest_epsilon(space, e, data):
    h = data.draw(stochastic_matrices(space.n, 3, positive=True))
    assert smallest_epsilon(h, space.scaled(e)) == pytest.approx(smallest_epsilon(h, space) / e, rel=1e-9)


def test_check_privacy_small_cases():
    s = spaces.line(3)
    h = np.array([[0.9, 0.1], [0.5, 0.5], [0.1, 0.9]])
    res = check_privacy(h, s, epsilon=1.0)
    assert res.smallest_epsilon == pytest.approx(np.log(5)) and res.worst == (1, 0, 1) and not res.ok
    assert res.excess == pytest.approx(np.log(5) - 1.0)
    assert check_privacy(h, s, epsilon=np.log(5)).ok
    # one point: nothing to check
    one = check_privacy([[1.0]], spaces.line(1), epsilon=1.0)
    assert one.ok and one.worst is None and one.smallest_epsilon == 0.0
    # equal rows: 0, and +0.0 rather than −0.0
    eq = check_privacy(np.full((3, 2), 0.5), s, epsilon=1.0)
    assert eq.smallest_epsilon == 0.0 and str(eq.smallest_epsilon) == "0.0"


def test_infinite_distance_pairs_constrain_nothing():
    # Point 0 is at infinite distance from 1 and 2 (extended metric, Chatzikokolakis et al. 2013 §3): the channel may tell
    # it apart freely; rows 1 and 2 are equal, so the channel is private for every ε.
    d = np.array([[0, np.inf, np.inf], [np.inf, 0, 1], [np.inf, 1, 0]])
    h = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    res = check_privacy(h, MetricSpace(d), epsilon=0.5)
    assert res.ok and res.smallest_epsilon == 0.0
    h2 = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    res2 = check_privacy(h2, MetricSpace(d), epsilon=0.5)
    assert not res2.ok and res2.smallest_epsilon == np.inf and res2.worst == (2, 1, 0)
    two = check_privacy(np.eye(2), MetricSpace([[0, np.inf], [np.inf, 0]]), epsilon=1.0)
    assert two.ok and two.worst is None


def test_check_privacy_errors():
    with pytest.raises(ValueError, match="2 rows but the space has 3"):
        check_privacy(np.eye(2), spaces.line(3), epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        check_privacy(np.eye(2), spaces.line(2), epsilon=-1)
    with pytest.raises(TypeError, match="epsilon"):
        check_privacy(np.eye(2), spaces.line(2), epsilon="1")


# ---------------------------------------------------------------------------------------------
# Privacy of priors
# ---------------------------------------------------------------------------------------------


@given(metric_matrices(1, 7, extended=True), st.data())
def test_check_prior_privacy_agrees_with_brute_force(d, data):
    p = data.draw(priors(d.shape[0]))
    res = check_prior_privacy(MetricSpace(d), p, epsilon=1.0)
    assert res.smallest_epsilon == pytest.approx(brute_smallest_epsilon(p[:, None], d), rel=1e-9, abs=1e-12)
    if res.worst is not None:
        assert res.worst[2] == 0


@given(metric_spaces(1, 7), st.floats(0.1, 3.0), st.data())
def test_exponential_prior_is_private(space, e, data):
    # π(y) ∝ exp(−ε d(y0, y)): π(y)/π(y') = e^{ε(d(y0,y') − d(y0,y))} ≤ e^{ε d(y,y')} (triangle inequality).
    y0 = data.draw(st.integers(0, space.n - 1))
    p = np.exp(-e * space.distances[y0])
    p /= p.sum()
    res = check_prior_privacy(space, p, epsilon=e)
    assert res.ok and res.smallest_epsilon <= e * (1 + 1e-9)


def test_prior_with_a_zero_next_to_a_positive_is_not_private():
    res = check_prior_privacy(spaces.line(3), [0.5, 0.5, 0.0], epsilon=10.0)
    assert not res.ok and res.smallest_epsilon == np.inf and res.worst in {(0, 2, 0), (1, 2, 0)}  # ties
    assert check_prior_privacy(spaces.line(3), [0.25, 0.5, 0.25], epsilon=np.log(2)).ok
    assert not check_prior_privacy(spaces.line(3), [0.25, 0.5, 0.25], epsilon=0.69).ok


def test_holds_is_decided_on_every_pair_not_only_the_worst_ratio():
    """The pair with the largest ratio per unit distance can be within tolerance while a farther
    pair with a smaller ratio exceeds ε·d by far: the check must still fail."""
    from dprivacy import Channel, MetricSpace, measures

    tiny = 1e-10
    d = np.array([[0, tiny, 1], [tiny, 0, 1], [1, 1, 0.0]])
    a = 0.3
    b = a * np.exp(2 * tiny)          # pair (0,1): ratio 2 per unit, excess 1e-10 (below tol 1e-9)
    c = a * np.exp(-1.5)              # pair (0,2): ratio 1.5 per unit, excess 0.5
    h = np.array([[a, 1 - a], [b, 1 - b], [c, 1 - c]])
    r = measures.check_privacy(Channel(h), MetricSpace(d), epsilon=1.0)
    assert r.smallest_epsilon == pytest.approx(2.0, rel=1e-4)
    assert not r.ok


def test_check_privacy_log_sees_the_mechanism_where_float64_underflows():
    """On line:1000 at ε = 1 the truncated geometric's far entries e^{-ε|i-j|} underflow to 0, so its
    float64 matrix is not private (0 beside a positive entry); in log space the mechanism is."""
    from dprivacy import spaces, measures

    n, eps = 1000, 1.0
    sp = spaces.line(n)
    x = np.arange(n)
    a = np.exp(-eps)
    logh = -eps * np.abs(x[:, None] - x[None, :]) + np.log((1 - a) / (1 + a))
    logh[:, [0, -1]] -= np.log(1 - a)  # the folded end columns of the truncated geometric
    h = np.exp(logh)
    assert (h == 0).any()
    assert not measures.check_privacy(h / h.sum(axis=1, keepdims=True), sp, epsilon=eps).ok
    r = measures.check_privacy_log(logh, sp, epsilon=eps)
    assert r.ok and r.smallest_epsilon == pytest.approx(eps, rel=1e-12)
    # and it still catches a violation
    bad = logh.copy()
    bad[3, 7] += 0.5
    assert not measures.check_privacy_log(bad, sp, epsilon=eps).ok


@pytest.mark.parametrize("eps", [1e290, 1e299])
def test_check_privacy_log_at_huge_epsilon_is_the_check_scaled(eps):
    """Found open in a stop note: the truncated geometric at ε = 1e299 said exists, not private (smallest ε
    inf): log-entries of −5e299 reached the sentinel that stands for 0. The check is homogeneous in
    (ln H, ε), so it gives the same verdict as at ε = 1, scaled."""
    from dprivacy import measures, spaces

    sp = spaces.line(6)
    x = np.arange(6)
    unit = -np.abs(x[:, None] - x[None, :]).astype(float)  # ln H / ε of the α → 0 limit, up to normalisation
    r = measures.check_privacy_log(eps * unit, sp, epsilon=eps)
    assert r.ok and r.smallest_epsilon == pytest.approx(eps, rel=1e-12) and r.epsilon == eps
    bad = eps * unit
    bad[2, 4] += 0.5 * eps  # a log-ratio of 1.5·ε·d on a pair at distance 1
    rb = measures.check_privacy_log(bad, sp, epsilon=eps)
    assert not rb.ok and rb.smallest_epsilon == pytest.approx(1.5 * eps, rel=1e-12)
    zero = eps * unit
    zero[0, 5] = -np.inf  # 0 beside positive entries: not private at any ε
    assert measures.check_privacy_log(zero, sp, epsilon=eps).smallest_epsilon == np.inf
    from dprivacy import truncated_geometric

    assert measures.check_privacy(truncated_geometric(spaces.line(6), epsilon=eps)).ok


def test_privacy_tolerance_is_relative_to_epsilon_d_with_a_rounding_floor():
    from dprivacy.measures.privacy import LOG_FLOOR_ULPS, PRIVACY_RTOL, rounding_floor

    space = spaces.line(2)
    for eps in (1e-13, 1e-6, 1.0, 30.0):
        # a two-point channel whose log-ratio is exactly 2ε on output 0 up to rounding: private at 2ε,
        # not at 2ε(1 − 1e-6) (relative), whatever the scale
        a, b = 1.0 / (1.0 + np.exp(-2 * eps)), np.exp(-2 * eps) / (1.0 + np.exp(-2 * eps))
        h = np.array([[a, b], [b, a]])
        assert check_privacy(h, space, epsilon=2 * eps).ok
        assert not check_privacy(h, space, epsilon=2 * eps * (1 - 1e-6)).ok or 2 * eps * 1e-6 < rounding_floor(np.log(h))
        r = check_privacy(h, space, epsilon=2 * eps)
        assert r.rtol == PRIVACY_RTOL and r.atol == pytest.approx(LOG_FLOOR_ULPS * 2.0**-52 * max(1.0, -np.log(h).min()))
    # an explicit atol and rtol are honoured and validated
    h = np.array([[0.6, 0.4], [0.4, 0.6]])
    e = np.log(1.5)
    assert not check_privacy(h, space, epsilon=e * 0.9).ok
    assert check_privacy(h, space, epsilon=e * 0.9, rtol=0.2).ok
    assert check_privacy(h, space, epsilon=e * 0.9, atol=0.05).ok
    with pytest.raises(ValueError, match="rtol"):
        check_privacy(h, space, epsilon=e, rtol=-1)


def test_leakage_method_dense_and_structured_agree_on_an_implicit_grid_mechanism():
    import dprivacy as dp
    from dprivacy import spaces as sp
    from dprivacy.measures.leakage import min_capacity, min_entropy_leakage

    res = dp.tight_constraints(sp.grid(18, 18), epsilon=1.0)  # above the structured crossover: implicit
    mech = res.mechanism
    rng = np.random.default_rng(4)
    prior = rng.dirichlet(np.ones(mech.n_inputs))
    a = min_entropy_leakage(mech, prior, method="structured")
    b = min_entropy_leakage(mech, prior, method="dense")
    assert a == pytest.approx(b, rel=1e-9) and min_entropy_leakage(mech, prior) == a
    assert min_capacity(mech, method="structured") == pytest.approx(min_capacity(mech, method="dense"), rel=1e-9)
    with pytest.raises(ValueError, match="no structured algorithm"):
        min_capacity(np.eye(3), method="structured")
    with pytest.raises(ValueError, match="method must be one of"):
        min_entropy_leakage(mech, prior, method="fast")
