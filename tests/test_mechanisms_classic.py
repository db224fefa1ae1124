"""Classic noise mechanisms as channels: truncated geometric, exponential, randomized response, Laplace,
and the maximal-leakage mechanism of Alvim et al. 2015 Prop 16.

Expected values come from the papers (matrices and utilities printed in Alvim et al. 2015 Tables 1 and 2, the
matrix of Example 17 / Fig. 9, the λ(z) of Chatzikokolakis et al. 2013 Fig 2 (iv)) or from independent derivations (the
geometric distribution on ℤ clamped to the ends, Laplace CDF differences from scipy, Kronecker powers).
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from dprivacy import measures, spaces
from dprivacy._validate import uniform_prior
from dprivacy.mechanisms import exponential
from dprivacy.mechanisms.geometric import line_epsilon, truncated_geometric
from dprivacy.mechanisms.laplace import laplace_channel, laplace_sample
from dprivacy.mechanisms.maximal_leakage import maximal_leakage_mechanism
from dprivacy.mechanisms import randomized_response

LN2 = math.log(2.0)
EPS = st.floats(min_value=0.05, max_value=4.0, allow_nan=False)
SMALL = settings(max_examples=30, deadline=None)


def _assert_stochastic(ch):
    h = ch.matrix
    assert (h >= 0).all()
    np.testing.assert_allclose(h.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def _sum_query_space(u: int, v: int) -> spaces.MetricSpace:
    """Answers 0..u·v of a sum query (values 0..v): adjacent iff |i−j| ≤ v, so d = ⌈|i−j|/v⌉."""
    x = np.arange(u * v + 1, dtype=float)
    d = np.ceil(np.abs(x[:, None] - x[None, :]) / v)
    return spaces.MetricSpace(d, coordinates=x, name=f"sum:{u},{v}")


def _clique_on_line(n: int) -> spaces.MetricSpace:
    """A clique whose points are laid out on 0..n−1 (Alvim et al. 2015 Example 30)."""
    return spaces.MetricSpace(1.0 - np.eye(n), coordinates=np.arange(n, dtype=float), name=f"clique-on-line:{n}")


# ---------------------------------------------------------------------------------------------
# Truncated geometric
# ---------------------------------------------------------------------------------------------

# Alvim et al. 2015 Table 2(a): truncated 1/2-geometric mechanism, counting query with 5 voters, ε = ln 2.
TABLE2_M1 = [
    [F(2, 3), F(1, 6), F(1, 12), F(1, 24), F(1, 48), F(1, 48)],
    [F(1, 3), F(1, 3), F(1, 6), F(1, 12), F(1, 24), F(1, 24)],
    [F(1, 6), F(1, 6), F(1, 3), F(1, 6), F(1, 12), F(1, 12)],
    [F(1, 12), F(1, 12), F(1, 6), F(1, 3), F(1, 6), F(1, 6)],
    [F(1, 24), F(1, 24), F(1, 12), F(1, 6), F(1, 3), F(1, 3)],
    [F(1, 48), F(1, 48), F(1, 24), F(1, 12), F(1, 6), F(2, 3)],
]

# Alvim et al. 2015 Table 1(a): "adapted truncated geometric" on a clique of 6 cities laid out on a line,
# ε = ln 2, printed to 3 decimals.
TABLE1_M1 = [
    [0.534, 0.060, 0.053, 0.046, 0.040, 0.267],
    [0.465, 0.069, 0.060, 0.053, 0.046, 0.307],
    [0.405, 0.060, 0.069, 0.060, 0.053, 0.353],
    [0.353, 0.053, 0.060, 0.069, 0.060, 0.405],
    [0.307, 0.046, 0.053, 0.060, 0.069, 0.465],
    [0.267, 0.040, 0.046, 0.053, 0.060, 0.534],
]


def test_table2_truncated_geometric_matrix_and_utility():
    ch = truncated_geometric(6, epsilon=LN2)
    expected = np.array([[float(q) for q in row] for row in TABLE2_M1])
    np.testing.assert_allclose(ch.matrix, expected, rtol=0, atol=1e-15)
    assert ch.inputs == ch.outputs == list(range(6))
    # Alvim et al. 2015 §6.2: utility 4/9 for the uniform prior.
    assert measures.utility(ch, uniform_prior(6)).value == pytest.approx(4 / 9, abs=1e-14)


def test_table2_printed_fractions_are_stochastic():
    # Guards the transcription above: every printed row sums to exactly 1.
    assert all(sum(row) == 1 for row in TABLE2_M1)


def test_table1_adapted_truncated_geometric_on_clique():
    space = _clique_on_line(6)
    # ε' = ε·min d/|Δx| = ln2 / 5 per step: "α^5 = 2".
    assert line_epsilon(space, epsilon=LN2) == pytest.approx(LN2 / 5, rel=1e-14)
    ch = truncated_geometric(space, epsilon=LN2)
    # Printed to 3 decimals: agree within one unit of the last printed digit.
    np.testing.assert_allclose(ch.matrix, TABLE1_M1, rtol=0, atol=1e-3)
    # Alvim et al. 2015 Example 30: U(M1) = 0.2243 (uniform) and 0.2415 for p = (1/10, 1/5, 1/5, 1/5, 1/5, 1/10).
    assert measures.utility(ch, uniform_prior(6)).value == pytest.approx(0.2243, abs=5e-5)
    p = np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.1])
    assert measures.utility(ch, p).value == pytest.approx(0.2415, abs=5e-5)
    r = measures.check_privacy(ch, space, epsilon=LN2)
    assert r.ok and r.smallest_epsilon == pytest.approx(LN2, abs=1e-9)


@SMALL
@given(n=st.integers(1, 12), eps=EPS)
def test_truncated_geometric_on_line_is_tight(n, eps):
    space = spaces.line(n)
    ch = truncated_geometric(space, epsilon=eps)
    _assert_stochastic(ch)
    r = measures.check_privacy(ch, space, epsilon=eps)
    assert r.ok
    if n >= 2:
        assert r.smallest_epsilon == pytest.approx(eps, abs=1e-9)
    assert ch.inputs == ch.outputs == space.labels


@SMALL
@given(k=st.integers(1, 9), q=st.floats(0.1, 3.0), eps=EPS)
def test_truncated_geometric_matches_seed002_fig2_iv(k, q, eps):
    # TG_ε on q[0..k]: D(y)(z) = λ(z) e^{−ε|y−z|}, λ = e^{qε}/(e^{qε}+1) at the ends and
    # (e^{qε}−1)/(e^{qε}+1) inside (Chatzikokolakis et al. 2013 Fig 2 (iv)).
    space = spaces.line(k + 1, step=q)
    y = q * np.arange(k + 1)
    lam = np.full(k + 1, (math.exp(q * eps) - 1) / (math.exp(q * eps) + 1))
    lam[[0, k]] = math.exp(q * eps) / (math.exp(q * eps) + 1)
    expected = lam[None, :] * np.exp(-eps * np.abs(y[:, None] - y[None, :]))
    np.testing.assert_allclose(truncated_geometric(space, epsilon=eps).matrix, expected, rtol=1e-12, atol=1e-300)


@SMALL
@given(n=st.integers(2, 8), eps=st.floats(0.3, 4.0))
def test_truncated_geometric_is_the_clamped_two_sided_geometric(n, eps):
    # Ghosh et al.: report y + K, K two-sided geometric on ℤ, then clamp to [0, n−1].
    alpha = math.exp(-eps)
    margin = 200  # neglected tail mass ≤ α^200 ≤ e^{−60}
    ks = np.arange(-margin, n + margin)
    expected = np.zeros((n, n))
    for y in range(n):
        pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(ks - y)
        np.add.at(expected[y], np.clip(ks, 0, n - 1), pmf)
    np.testing.assert_allclose(truncated_geometric(n, epsilon=eps).matrix, expected, rtol=1e-12, atol=1e-15)


@SMALL
@given(u=st.integers(1, 4), v=st.integers(1, 4), eps=EPS)
def test_truncated_geometric_on_sum_query_uses_eps_over_v(u, v, eps):
    space = _sum_query_space(u, v)
    n = u * v + 1
    assert line_epsilon(space, epsilon=eps) == pytest.approx(eps / v, rel=1e-12)
    ch = truncated_geometric(space, epsilon=eps)
    np.testing.assert_allclose(ch.matrix, truncated_geometric(n, epsilon=eps / v).matrix, rtol=1e-13, atol=0)
    r = measures.check_privacy(ch, space, epsilon=eps)
    assert r.ok and r.smallest_epsilon == pytest.approx(eps, abs=1e-9)


@SMALL
@given(data=st.data(), n=st.integers(2, 9), eps=EPS)
def test_truncated_geometric_follows_the_points_order(data, n, eps):
    perm = np.array(data.draw(st.permutations(range(n))))
    base = spaces.line(n)
    shuffled = spaces.MetricSpace(base.distances[np.ix_(perm, perm)], coordinates=perm.astype(float), labels=[f"p{i}" for i in perm])
    ch = truncated_geometric(shuffled, epsilon=eps)
    ref = truncated_geometric(base, epsilon=eps).matrix
    np.testing.assert_allclose(ch.matrix, ref[np.ix_(perm, perm)], rtol=1e-14, atol=0)
    assert ch.outputs == [f"p{i}" for i in perm]


def test_truncated_geometric_on_two_points_is_binary_randomized_response():
    for eps in (0.1, 1.0, 3.0):
        np.testing.assert_allclose(truncated_geometric(2, epsilon=eps).matrix, randomized_response(2, epsilon=eps).matrix, rtol=1e-14)


def test_truncated_geometric_extremes():
    assert truncated_geometric(1, epsilon=1.0).matrix.tolist() == [[1.0]]
    np.testing.assert_array_equal(truncated_geometric(4, epsilon=1e4).matrix, np.eye(4))
    tiny = truncated_geometric(5, epsilon=1e-9)  # nearly no information: rows nearly equal, still exact sums
    _assert_stochastic(tiny)
    assert measures.smallest_epsilon(tiny, spaces.line(5)) == pytest.approx(1e-9, rel=1e-6)


@pytest.mark.parametrize("bad", [-1.0, 0.0, float("nan"), float("inf")])
def test_truncated_geometric_rejects_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        truncated_geometric(5, epsilon=bad)


def test_truncated_geometric_rejects_spaces_off_a_line():
    with pytest.raises(ValueError, match="line"):
        truncated_geometric(spaces.ring(5), epsilon=1.0)  # no coordinates
    with pytest.raises(ValueError, match="1-D coordinates"):
        truncated_geometric(spaces.grid(3, 3), epsilon=1.0)
    uneven = spaces.MetricSpace(np.abs(np.subtract.outer([0.0, 1.0, 3.0], [0.0, 1.0, 3.0])), coordinates=[0.0, 1.0, 3.0])
    with pytest.raises(ValueError, match="equally spaced"):
        truncated_geometric(uneven, epsilon=1.0)
    with pytest.raises(TypeError, match="MetricSpace"):
        truncated_geometric("line:5", epsilon=1.0)
    with pytest.raises(TypeError, match="epsilon"):
        truncated_geometric(5, epsilon="1")


# ---------------------------------------------------------------------------------------------
# Exponential mechanism
# ---------------------------------------------------------------------------------------------

# Alvim et al. 2015 Table 2(b): eq. (17) on the ring of 6 answers at ε = ln 2 (the paper labels row 4 as "8").
TABLE2_M2 = [[F(k, 21) for k in row] for row in (
    (8, 4, 2, 1, 2, 4), (4, 8, 4, 2, 1, 2), (2, 4, 8, 4, 2, 1),
    (1, 2, 4, 8, 4, 2), (2, 1, 2, 4, 8, 4), (4, 2, 1, 2, 4, 8),
)]


def _random_space(draw_seed: int, n: int, kind: str) -> spaces.MetricSpace:
    rng = np.random.default_rng(draw_seed)
    if kind == "plane":
        pts = rng.uniform(0, 3, size=(n, 2))
        d = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1))
        return spaces.MetricSpace(d)
    if kind == "graph":
        edges = [(i, i + 1) for i in range(n - 1)] + [tuple(rng.choice(n, 2, replace=False)) for _ in range(n)]
        return spaces.from_graph([(int(a), int(b)) for a, b in edges], nodes=range(n))
    # extended: two components at infinite distance
    half = max(1, n // 2)
    edges = [(i, i + 1) for i in range(half - 1)] + [(i, i + 1) for i in range(half, n - 1)]
    return spaces.from_graph(edges, nodes=range(n))


@SMALL
@given(seed=st.integers(0, 2**31), n=st.integers(2, 10), kind=st.sampled_from(["plane", "graph", "extended"]), eps=EPS)
def test_exponential_is_private_on_any_metric(seed, n, kind, eps):
    space = _random_space(seed, n, kind)
    ch = exponential(space, epsilon=eps)
    _assert_stochastic(ch)
    assert measures.check_privacy(ch, space, epsilon=eps).ok
    # Within a row, odds between two outputs are e^{−ε(d(y,z) − d(y,z'))/2} (finite distances).
    h, d = ch.matrix, space.distances
    y = 0
    fin = np.flatnonzero(np.isfinite(d[y]))
    np.testing.assert_allclose(h[y, fin] / h[y, y], np.exp(-eps * d[y, fin] / 2), rtol=1e-12)
    assert (h[np.isinf(d)] == 0).all()


def test_exponential_on_ring_is_table2_m2():
    space = spaces.ring(6)
    ch = exponential(space, epsilon=2 * LN2)  # McSherry–Talwar's ε/2: eq. (17) at ln 2
    expected = np.array([[float(q) for q in row] for row in TABLE2_M2])
    np.testing.assert_allclose(ch.matrix, expected, rtol=0, atol=1e-15)
    assert measures.utility(ch, uniform_prior(6)).value == pytest.approx(8 / 21, abs=1e-14)
    # Equal normalizers on a vertex-transitive space: (ε/2)·d-private, tightly.
    assert measures.smallest_epsilon(ch, space) == pytest.approx(LN2, abs=1e-9)


@SMALL
@given(k=st.integers(1, 8), eps=EPS)
def test_exponential_on_clique_at_double_eps_is_randomized_response(k, eps):
    np.testing.assert_allclose(exponential(spaces.clique(k), epsilon=2 * eps).matrix, randomized_response(k, epsilon=eps).matrix, rtol=1e-13)


def test_exponential_validates():
    with pytest.raises(TypeError, match="MetricSpace"):
        exponential(5, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        exponential(spaces.line(3), epsilon=-0.5)


# ---------------------------------------------------------------------------------------------
# Randomized response
# ---------------------------------------------------------------------------------------------


def test_randomized_response_table1_m2():
    # Alvim et al. 2015 Table 1(b): 6 cities, ε = ln 2: 2/7 on the diagonal, 1/7 elsewhere; U = 0.2857 = 2/7.
    ch = randomized_response(6, epsilon=LN2)
    expected = np.full((6, 6), 1 / 7) + np.eye(6) / 7
    np.testing.assert_allclose(ch.matrix, expected, rtol=0, atol=1e-15)
    assert measures.utility(ch, uniform_prior(6)).value == pytest.approx(2 / 7, abs=1e-14)
    p = np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.1])
    assert measures.utility(ch, p).value == pytest.approx(0.2857, abs=5e-5)


@SMALL
@given(k=st.integers(2, 12), delta=st.floats(0.2, 5.0), eps=EPS)
def test_randomized_response_is_tight_on_cliques(k, delta, eps):
    space = spaces.clique(k, distance=delta)
    ch = randomized_response(space, epsilon=eps)
    _assert_stochastic(ch)
    # On clique(k) (δ = 1) the diagonal is e^ε/(k−1+e^ε).
    base = randomized_response(k, epsilon=eps).matrix
    assert base[0, 0] == pytest.approx(math.exp(eps) / (k - 1 + math.exp(eps)), rel=1e-13)
    assert base[0, 1] == pytest.approx(1 / (k - 1 + math.exp(eps)), rel=1e-13)
    r = measures.check_privacy(ch, space, epsilon=eps)
    assert r.ok and r.smallest_epsilon == pytest.approx(eps, abs=1e-9)


@SMALL
@given(seed=st.integers(0, 2**31), n=st.integers(2, 9), kind=st.sampled_from(["plane", "graph", "extended"]), eps=EPS)
def test_randomized_response_is_private_on_any_metric(seed, n, kind, eps):
    space = _random_space(seed, n, kind)
    ch = randomized_response(space, epsilon=eps)
    _assert_stochastic(ch)
    r = measures.check_privacy(ch, space, epsilon=eps)
    assert r.ok
    if np.isfinite(space.distances[~np.eye(n, dtype=bool)]).any():
        assert r.smallest_epsilon == pytest.approx(eps, abs=1e-9)  # the closest pair is tight
    else:  # no two points at finite distance: nothing to hide, the identity
        np.testing.assert_array_equal(ch.matrix, np.eye(n))
    assert ch.inputs == space.labels


def test_randomized_response_edge_cases():
    assert randomized_response(1, epsilon=1.0).matrix.tolist() == [[1.0]]
    np.testing.assert_array_equal(randomized_response(3, epsilon=1e4).matrix, np.eye(3))
    with pytest.raises(TypeError, match="int k"):
        randomized_response(2.5, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        randomized_response(3, epsilon=-1.0)
    with pytest.raises(ValueError, match="n"):
        randomized_response(0, epsilon=1.0)


# ---------------------------------------------------------------------------------------------
# Laplace
# ---------------------------------------------------------------------------------------------


def _coords_space(x, metric="abs"):
    x = np.asarray(x, dtype=float)
    dx = np.abs(x[:, None] - x[None, :])
    d = dx if metric == "abs" else np.sqrt(dx)  # the square root of a metric is a metric
    return spaces.MetricSpace(d, coordinates=x)


@SMALL
@given(seed=st.integers(0, 2**31), n=st.integers(2, 10), metric=st.sampled_from(["abs", "sqrt"]), eps=EPS)
def test_laplace_channel_masses_are_cdf_differences(seed, n, metric, eps):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.uniform(0.2, 2.0, size=n))
    rng.shuffle(x)  # points in any order, unevenly spaced
    space = _coords_space(x, metric)
    ch = laplace_channel(space, epsilon=eps)
    _assert_stochastic(ch)
    rate = line_epsilon(space, epsilon=eps)
    if metric == "abs":
        assert rate == pytest.approx(eps, rel=1e-12)
    xs = np.sort(x)
    edges = np.concatenate([[-np.inf], (xs[:-1] + xs[1:]) / 2, [np.inf]])
    for i in range(n):
        cdf = scipy.stats.laplace(loc=x[i], scale=1 / rate).cdf(edges)
        masses = np.diff(cdf)  # in sorted order
        col = np.searchsorted(xs, x)  # column of point k sits at sorted position col[k]
        np.testing.assert_allclose(ch.matrix[i], masses[col], rtol=1e-9, atol=1e-13)
    assert measures.check_privacy(ch, space, epsilon=eps).ok


@SMALL
@given(n=st.integers(1, 12), eps=EPS)
def test_laplace_channel_on_line_is_private(n, eps):
    space = spaces.line(n)
    ch = laplace_channel(space, epsilon=eps)
    _assert_stochastic(ch)
    r = measures.check_privacy(ch, space, epsilon=eps)
    assert r.ok and r.smallest_epsilon <= eps + 1e-9


def test_laplace_channel_far_tails_keep_precision():
    # Rows far from an end cell: masses around e^{-60} must stay positive and relatively exact.
    ch = laplace_channel(spaces.line(31), epsilon=2.0)
    expected = 0.5 * math.exp(-2.0 * 29.5)  # mass of the left tail cell (−∞, 0.5] seen from x = 30
    assert ch.matrix[30, 0] == pytest.approx(expected, rel=1e-12)
    assert measures.check_privacy(ch, spaces.line(31), epsilon=2.0).ok


def test_laplace_channel_rejects_spaces_off_a_line():
    with pytest.raises(ValueError, match="1-D coordinates"):
        laplace_channel(spaces.grid(2, 2), epsilon=1.0)
    with pytest.raises(ValueError, match="line"):
        laplace_channel(spaces.clique(3), epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_channel(spaces.line(3), epsilon=0.0)


def test_laplace_sample_mean_and_variance():
    eps, sens = 0.5, 2.0
    b = sens / eps
    n = 200_000
    z = laplace_sample(np.full(n, 3.0), epsilon=eps, sensitivity=sens, rng=12345)
    assert z.shape == (n,)
    se_mean = math.sqrt(2) * b / math.sqrt(n)
    assert abs(z.mean() - 3.0) < 5 * se_mean
    # Var = 2b²; the sample variance of a Laplace has relative s.e. √(5/n) ≈ 0.5%.
    assert z.var() == pytest.approx(2 * b * b, rel=0.03)
    # Median absolute deviation of a Laplace is b·ln 2.
    assert np.median(np.abs(z - 3.0)) == pytest.approx(b * LN2, rel=0.03)


def test_laplace_sample_agrees_with_the_channel():
    space, eps, n = spaces.line(5), 0.7, 100_000
    z = laplace_sample(np.full(n, 1.0), epsilon=eps, rng=7)
    cells = np.clip(np.rint(z), 0, 4).astype(int)  # nearest point = Voronoi cell
    freq = np.bincount(cells, minlength=5) / n
    np.testing.assert_allclose(freq, laplace_channel(space, epsilon=eps).matrix[1], atol=0.008)


def test_laplace_sample_shapes_seeds_and_validation():
    a = laplace_sample([[0.0, 1.0], [2.0, 3.0]], epsilon=1.0, rng=3)
    b = laplace_sample([[0.0, 1.0], [2.0, 3.0]], epsilon=1.0, rng=3)
    assert a.shape == (2, 2) and np.array_equal(a, b)
    assert isinstance(laplace_sample(1.0, epsilon=1.0, rng=0), float)
    with pytest.raises(ValueError, match="sensitivity"):
        laplace_sample([1.0], epsilon=1.0, sensitivity=-1.0)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_sample([1.0], epsilon=-1.0)
    with pytest.raises(ValueError, match="finite"):
        laplace_sample([np.nan], epsilon=1.0)
    with pytest.raises(TypeError, match="rng"):
        laplace_sample([1.0], epsilon=1.0, rng="seed")


# ---------------------------------------------------------------------------------------------
# Maximal-leakage mechanism (Alvim et al. 2015 Prop 16, Example 17)
# ---------------------------------------------------------------------------------------------

# Alvim et al. 2015 Fig. 9(a): Hamming distances between the datasets of Example 17, in the paper's order.
FIG9_ORDER = ["aa", "ab", "ac", "ba", "ca", "bb", "bc", "cb", "cc"]
FIG9_DIST = [
    [0, 1, 1, 1, 1, 2, 2, 2, 2],
    [1, 0, 1, 2, 2, 1, 2, 1, 2],
    [1, 1, 0, 2, 2, 2, 1, 2, 1],
    [1, 2, 2, 0, 1, 1, 2, 1, 2],
    [1, 2, 2, 1, 0, 2, 2, 1, 1],
    [2, 1, 2, 1, 2, 0, 1, 1, 2],
    [2, 2, 1, 1, 2, 1, 0, 2, 1],
    [2, 1, 2, 2, 1, 1, 2, 0, 1],
    [2, 2, 1, 2, 1, 2, 1, 1, 0],
]


def _in_fig9_order(ch):
    names = ["".join("abc"[c] for c in lab) for lab in ch.inputs]
    idx = [names.index(s) for s in FIG9_ORDER]
    return ch.matrix[np.ix_(idx, idx)]


def _fig9_distances() -> np.ndarray:
    """Fig. 9(a) with its one misprint repaired from the table itself.

    The printed table is symmetric except in row "ba", where the entries under "bc" and "cb" are
    swapped (printed 2 and 1; "ba" and "bc" differ only in Bob's value, so their distance is 1). The
    symmetric counterparts in rows "bc" and "cb" are printed correctly; we take those.
    """
    d = np.array(FIG9_DIST)
    asym = np.argwhere(d != d.T)
    ba, bc, cb = (FIG9_ORDER.index(s) for s in ("ba", "bc", "cb"))
    assert sorted(map(tuple, asym.tolist())) == sorted([(ba, bc), (ba, cb), (bc, ba), (cb, ba)])
    d[ba, bc], d[ba, cb] = d[bc, ba], d[cb, ba]
    return d


def test_example17_matrix_at_ln2_exactly():
    # ε = ln 2: max^M = e^{2ε}/(2+e^ε)^2 = 4/16 = 1/4, entry "d" = max^M / e^{εd} = (1/4)·2^{−d}.
    ch = maximal_leakage_mechanism(2, 3, epsilon=LN2)
    expected = [[F(1, 4) / 2 ** int(d) for d in row] for row in _fig9_distances()]
    assert all(sum(row) == 1 for row in expected)
    np.testing.assert_allclose(_in_fig9_order(ch), np.array(expected, dtype=float), rtol=0, atol=1e-16)
    # The repaired table is the Hamming distance it illustrates.
    hd = [[sum(a != b for a, b in zip(s, t)) for t in FIG9_ORDER] for s in FIG9_ORDER]
    np.testing.assert_array_equal(_fig9_distances(), hd)


@pytest.mark.parametrize("eps", [0.1, 0.9, 2.5])
def test_example17_matrix_formula(eps):
    ch = maximal_leakage_mechanism(2, 3, epsilon=eps)
    top = math.exp(2 * eps) / (2 + math.exp(eps)) ** 2
    expected = top / np.exp(eps * _fig9_distances().astype(float))
    np.testing.assert_allclose(_in_fig9_order(ch), expected, rtol=1e-13)
    # Leakage for the uniform prior equals Bnd(2, 3, ε) = 2 log2(3e^ε/(2+e^ε)).
    bnd = 2 * math.log2(3 * math.exp(eps) / (2 + math.exp(eps)))
    assert measures.min_entropy_leakage(ch, uniform_prior(9)) == pytest.approx(bnd, abs=1e-12)


@SMALL
@given(u=st.integers(1, 3), v=st.integers(2, 4), eps=EPS)
def test_maximal_leakage_mechanism_attains_bnd_and_is_tight(u, v, eps):
    ch = maximal_leakage_mechanism(u, v, epsilon=eps)
    _assert_stochastic(ch)
    space = spaces.hamming(u, v)
    assert ch.inputs == space.labels
    bnd = u * math.log2(v * math.exp(eps) / (v - 1 + math.exp(eps)))
    assert measures.min_entropy_leakage(ch, uniform_prior(v**u)) == pytest.approx(bnd, abs=1e-10)
    r = measures.check_privacy(ch, space, epsilon=eps)
    assert r.ok and r.smallest_epsilon == pytest.approx(eps, abs=1e-9)
    # Each individual randomized independently: the u-fold Kronecker power of v-ary randomized response.
    rr = randomized_response(v, epsilon=eps).matrix
    kron = np.ones((1, 1))
    for _ in range(u):
        kron = np.kron(kron, rr)
    np.testing.assert_allclose(ch.matrix, kron, rtol=1e-12)
    # And the exponential mechanism at 2ε (equal normalizers on a Hamming graph).
    np.testing.assert_allclose(ch.matrix, exponential(space, epsilon=2 * eps).matrix, rtol=1e-12)


def test_maximal_leakage_mechanism_validates():
    with pytest.raises(ValueError, match="v"):
        maximal_leakage_mechanism(2, 1, epsilon=1.0)
    with pytest.raises(ValueError, match="u"):
        maximal_leakage_mechanism(0, 3, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        maximal_leakage_mechanism(2, 3, epsilon=-1.0)


def test_laplace_sample_default_is_on_a_fixed_lattice_and_exactly_private():
    # Mironov's test: every output of the default sampler is a multiple of Λ = Δ·2^-20 whatever the input,
    # so outputs drawn at x are possible at a neighbour x' (the textbook float sampler fails this,
    # tests/test_sampling_snapping.py). And the law is ε-private exactly: per lattice step the ratio is
    # e^{-r} with r·(Δ/Λ + 1) ≤ ε (rounded inputs differ by at most Δ + Λ).
    from dprivacy.mechanisms.laplace import LATTICE_BITS
    from dprivacy.sampling.discrete import geometric_parameters

    eps, sens = 0.8, 3.0
    lam = sens * 2.0**-LATTICE_BITS
    for x in (0.0, 1.0, math.pi, -1234.5678):
        z = laplace_sample(np.full(20_000, x), epsilon=eps, sensitivity=sens, rng=11)
        assert np.array_equal(z / lam, np.rint(z / lam))
    p = geometric_parameters(eps, float(2**LATTICE_BITS + 1))
    assert p.s / p.t * (2**LATTICE_BITS + 1) <= eps
    # Kolmogorov–Smirnov against Laplace(Δ/ε) with power: a scale 3% off is rejected on the same sample.
    z = laplace_sample(np.zeros(200_000), epsilon=eps, sensitivity=sens, rng=5)
    assert scipy.stats.kstest(z, scipy.stats.laplace(scale=sens / eps).cdf).pvalue > 1e-4
    assert scipy.stats.kstest(z, scipy.stats.laplace(scale=1.03 * sens / eps).cdf).pvalue < 1e-6
    with pytest.raises(ValueError, match="method"):
        laplace_sample([1.0], epsilon=1.0, method="float")


def test_package_names_are_stable_functions_not_submodules():
    """Issue 9: ``dprivacy.mechanisms.exponential`` was the function on first access and the submodule
    after (a submodule of the same name replaced it). Every exported name is the same object on every
    access and after importing every submodule, and no submodule shares an exported name."""
    import importlib
    import pkgutil

    import dprivacy
    import dprivacy.mechanisms as mech

    first = {name: getattr(mech, name) for name in mech.__all__}
    for info in pkgutil.iter_modules(mech.__path__):
        importlib.import_module(f"dprivacy.mechanisms.{info.name}")
        assert info.name not in mech.__all__, info.name
    for name, obj in first.items():
        assert getattr(mech, name) is obj, name
        assert not isinstance(obj, type(mech)), name
    from dprivacy.mechanisms import exponential, randomized_response, truncated_geometric

    assert callable(exponential) and callable(randomized_response) and callable(truncated_geometric)
    assert dprivacy.exponential is exponential and dprivacy.randomized_response is randomized_response
    assert not hasattr(mech, "geometric") or not callable(getattr(mech, "geometric"))


def test_the_exponential_mechanism_whose_entries_underflow_is_kept_by_its_log_entries():
    # ring:1600 at ε = 2: e^{−εd/2} reaches e^{−800}, 0 in float64 beside positive entries
    from dprivacy import check_privacy, min_capacity, spaces
    from dprivacy.mechanisms import exponential

    space = spaces.ring(1600)
    m = exponential(space, epsilon=2.0)
    assert not m.is_dense
    assert not check_privacy(m.channel, space, epsilon=2.0).ok  # the float64 matrix, as it would be stored
    check = check_privacy(m, space, epsilon=2.0)
    # a ring's rows share one normaliser: the mechanism is (ε/2)·d-private (Alvim et al. 2015 eq. 17)
    assert check.ok and check.smallest_epsilon == pytest.approx(1.0, abs=1e-9)
    lg = m.log_rows(np.array([0]))[0]
    assert np.isfinite(lg).all() and np.exp(lg).sum() == pytest.approx(1.0, abs=1e-12)
    # capacity: log2 Σ_z max_y K[y, z]; every column's max is its diagonal, the same on a ring
    assert min_capacity(m) == pytest.approx(np.log2(1600 * np.exp(lg[0])), rel=1e-12)
    s = m.exact_sampler
    assert s.gamma > 0 and s.delivered_epsilon <= 2.0 + 1e-9
    # a ring small enough for float64 stays dense, with the same entries
    small = exponential(spaces.ring(60), epsilon=2.0)
    assert small.is_dense and check_privacy(small.channel, spaces.ring(60), epsilon=2.0).ok


@pytest.mark.parametrize("build", [
    lambda: (spaces.line(1000), __import__("dprivacy").laplace_channel(spaces.line(1000), epsilon=1.0), 1.0),
    lambda: (spaces.clique(4), __import__("dprivacy").randomized_response(spaces.clique(4), epsilon=800.0), 800.0),
    lambda: (spaces.ring(1600), __import__("dprivacy").symmetric_mechanism(spaces.ring(1600), epsilon=1.0).mechanism, 1.0),
], ids=["laplace count:1000", "randomized-response at ε 800", "symmetric ring:1600"])
def test_mechanisms_whose_float64_entries_underflow_are_private_as_held(build):
    """Found by a review: design said exists true, is_private false for these (e^(−εd) below 1e-308 stored as 0)."""
    from dprivacy import check_privacy

    space, m, eps = build()
    assert not m.is_dense
    assert check_privacy(m, space, epsilon=eps).ok
    assert np.exp(m.log_rows(np.arange(space.n))).sum(axis=1) == pytest.approx(np.ones(space.n), abs=1e-12)
    assert m.exact_sampler.delivered_epsilon <= eps * (1 + 1e-9)
