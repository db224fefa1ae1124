"""Channels: validation, composition, Bayesian views, sampling (Alvim et al. 2015 §2.1; ElSalamouny et al. 2014 §3.1)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from conftest import priors, stochastic_matrices
from dprivacy.channels import Channel, constant, identity
from dprivacy.measures import posterior_vulnerability

# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "matrix, error, pattern",
    [
        ([[0.5, 0.5], [0.3, 0.6]], ValueError, r"row-stochastic.*row 1 sums to 0\.9"),
        ([[0.5, np.nan], [0.5, 0.5]], ValueError, r"NaN \(first at \[0, 1\]\)"),
        ([[1.1, -0.1], [0.5, 0.5]], ValueError, r"non-negative; entry \[0, 1\] is -0\.1"),
        ([[np.inf, 0.0]], ValueError, r"infinite entry at \[0, 0\]"),
        ([0.5, 0.5], ValueError, r"2-D, got an array of shape \(2,\)"),
        (np.full((2, 2, 2), 0.5), ValueError, r"2-D, got an array of shape \(2, 2, 2\)"),
        (np.zeros((0, 3)), ValueError, r"non-empty"),
        ([["a", "b"]], TypeError, r"array of numbers"),
    ],
)
def test_validation(matrix, error, pattern):
    with pytest.raises(error, match=pattern):
        Channel(matrix)


def test_labels_and_tolerance():
    c = Channel([[1.0, 0.0], [0.5, 0.5]], inputs=["x", "y"], outputs=["a", "b"])
    assert c.inputs == ["x", "y"] and c.outputs == ["a", "b"] and c.shape == (2, 2)
    assert Channel(np.eye(3)).inputs == [0, 1, 2]
    with pytest.raises(ValueError, match="outputs has 3 labels, expected 2"):
        Channel(np.eye(2), outputs=["a", "b", "c"])
    with pytest.raises(ValueError, match="inputs has 1 labels, expected 2"):
        Channel(np.eye(2), inputs=["a"])
    Channel([[0.5, 0.5 + 1e-12]])  # within the default tolerance
    with pytest.raises(ValueError, match="sums to"):
        Channel([[0.5, 0.5 + 1e-6]])
    Channel([[0.5, 0.5 + 1e-6]], atol=1e-5)


def test_matrix_is_read_only_and_caller_array_is_not_frozen():
    a = np.eye(2)
    c = Channel(a)
    assert a.flags.writeable
    with pytest.raises(ValueError):
        c.matrix[0, 0] = 0.5
    np.testing.assert_array_equal(np.asarray(c), a)


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


@st.composite
def chains(draw, k=3):
    dims = draw(st.lists(st.integers(1, 5), min_size=k + 1, max_size=k + 1))
    return [draw(stochastic_matrices(dims[i], dims[i + 1])) for i in range(k)]


@given(chains(3))
def test_cascade_is_associative_and_matrix_product(mats):
    a, b, c = (Channel(m) for m in mats)
    left = (a @ b) @ c
    right = a @ (b @ c)
    np.testing.assert_allclose(left.matrix, right.matrix, atol=1e-14)
    np.testing.assert_allclose(left.matrix, mats[0] @ mats[1] @ mats[2], atol=1e-14)
    np.testing.assert_allclose(left.matrix.sum(axis=1), 1.0, atol=1e-12)
    # with plain arrays on either side
    np.testing.assert_allclose((a @ mats[1]).matrix, (a @ b).matrix)
    rm = mats[0] @ b
    assert isinstance(rm, Channel)
    np.testing.assert_allclose(rm.matrix, (a @ b).matrix)


def test_cascade_errors_and_labels():
    a = Channel(np.eye(2), inputs=["x", "y"])
    b = Channel(np.full((2, 3), 1 / 3), outputs=["p", "q", "r"])
    ab = a @ b
    assert ab.inputs == ["x", "y"] and ab.outputs == ["p", "q", "r"]
    with pytest.raises(ValueError, match="inner dimensions differ"):
        a.cascade(np.full((3, 2), 0.5))
    with pytest.raises(ValueError, match="second channel must be row-stochastic"):
        a.cascade([[0.5, 0.4], [1.0, 0.0]])


@given(st.data())
def test_remap_by_index_array_is_cascade_with_a_zero_one_matrix(data):
    n, m = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6))
    h = Channel(data.draw(stochastic_matrices(n, m)))
    w = data.draw(st.integers(1, 4))
    r = np.array(data.draw(st.lists(st.integers(0, w - 1), min_size=m, max_size=m)))
    rmat = np.zeros((m, w))
    rmat[np.arange(m), r] = 1.0
    got = h.remap(r, n_guesses=w)
    np.testing.assert_allclose(got.matrix, (h @ rmat).matrix, atol=1e-15)
    np.testing.assert_allclose(h.remap(rmat).matrix, got.matrix, atol=1e-15)
    assert h.remap(r).shape == (n, int(r.max()) + 1)


def test_remap_errors():
    h = Channel(np.full((2, 3), 1 / 3))
    with pytest.raises(TypeError, match="integer array"):
        h.remap(np.array([0.0, 1.0, 0.0]))
    with pytest.raises(ValueError, match="2 entries, expected 3"):
        h.remap(np.array([0, 1]))
    with pytest.raises(ValueError, match="0..1"):
        h.remap(np.array([0, 1, 2]), n_guesses=2)
    with pytest.raises(ValueError, match="0..1"):
        h.remap(np.array([0, -1, 1]))


# ---------------------------------------------------------------------------------------------
# Bayesian views
# ---------------------------------------------------------------------------------------------


@st.composite
def channel_and_prior(draw):
    n = draw(st.integers(1, 6))
    return Channel(draw(stochastic_matrices(n, draw(st.integers(1, 6))))), draw(priors(n))


@given(channel_and_prior())
def test_joint_posteriors_and_output_distribution(cp):
    h, p = cp
    j = h.joint(p)
    assert j.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(j.sum(axis=1), p, atol=1e-15)
    np.testing.assert_allclose(h.output_distribution(p), j.sum(axis=0), atol=1e-15)
    outs, post = h.posteriors(p)
    np.testing.assert_array_equal(outs, np.flatnonzero(j.sum(axis=0) > 0))
    np.testing.assert_allclose(post.sum(axis=0), 1.0)
    # Bayes: p(y | z) p(z) = p(y, z)
    np.testing.assert_allclose(post * h.output_distribution(p)[outs], j[:, outs], atol=1e-15)


@given(channel_and_prior())
def test_hyper_outer_sums_to_one_and_averages_back_to_the_prior(cp):
    h, p = cp
    hy = h.hyper(p)
    assert hy.outer.sum() == pytest.approx(1.0)
    assert (hy.outer > 0).all()
    np.testing.assert_allclose(hy.inners.sum(axis=0), 1.0)
    np.testing.assert_allclose(hy.inners @ hy.outer, p, atol=1e-12)
    # inners are distinct (equal posteriors merged)
    k = hy.inners.shape[1]
    for a in range(k):
        for b in range(a + 1, k):
            assert not np.allclose(hy.inners[:, a], hy.inners[:, b], atol=1e-10)
    # posterior Bayes vulnerability is read off the hyper
    assert (hy.outer * hy.inners.max(axis=0)).sum() == pytest.approx(posterior_vulnerability(h, p))


@given(channel_and_prior(), st.data())
def test_hyper_ignores_output_labels_and_split_outputs(cp, data):
    h, p = cp
    m = h.n_outputs
    perm = np.array(data.draw(st.permutations(range(m))))
    # Split output 0 into two outputs with the same posterior: same information released.
    split = np.column_stack([h.matrix[:, perm], 0.5 * h.matrix[:, perm[:1]]])
    split[:, 0] *= 0.5
    a, b = h.hyper(p), Channel(split).hyper(p)

    def as_set(hy):
        return sorted(zip(np.round(hy.outer, 9), map(tuple, np.round(hy.inners.T, 9))))

    assert as_set(a) == as_set(b)


def test_hyper_small_case_by_hand():
    # Uniform prior; outputs 0 and 1 give the same posterior (2/3, 1/3): merged with weight 0.6.
    h = Channel([[0.2, 0.2, 0.6], [0.1, 0.1, 0.8]])
    hy = h.hyper([0.5, 0.5])
    np.testing.assert_allclose(hy.outer, [0.3, 0.7])
    np.testing.assert_allclose(hy.inners, [[2 / 3, 3 / 7], [1 / 3, 4 / 7]])
    hy = identity(3).hyper([0.5, 0.5, 0.0])  # output 2 has probability 0: dropped
    np.testing.assert_allclose(hy.outer, [0.5, 0.5])
    hy = constant(3, 4).hyper([0.2, 0.3, 0.5])  # reveals nothing: one posterior, the prior
    np.testing.assert_allclose(hy.outer, [1.0])
    np.testing.assert_allclose(hy.inners[:, 0], [0.2, 0.3, 0.5])


def test_bayesian_view_errors():
    h = Channel(np.eye(2))
    with pytest.raises(ValueError, match="3 entries, expected 2"):
        h.joint([0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="non-negative; entry 0"):
        h.posteriors([-0.5, 1.5])


# ---------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------


def test_sample_frequencies_match_the_matrix():
    h = np.array([[0.5, 0.3, 0.2, 0.0], [0.1, 0.0, 0.1, 0.8], [0.25, 0.25, 0.25, 0.25]])
    c = Channel(h)
    n_draws = 20_000
    secrets = np.repeat(np.arange(3), n_draws)
    rng = np.random.default_rng(12345)
    rng.shuffle(secrets)  # rows interleaved, as in real use
    out = c.sample(secrets, rng)
    for y in range(3):
        counts = np.bincount(out[secrets == y], minlength=4)
        possible = h[y] > 0
        assert counts[~possible].sum() == 0  # impossible outputs never drawn
        res = stats.chisquare(counts[possible], n_draws * h[y, possible])
        assert res.pvalue > 1e-3, (y, counts)


def test_sample_never_draws_an_impossible_output_at_the_top_of_the_range():
    # Ten 0.1's sum to 1 − 2^−53 in floating point. The sampler draws integers in [0, 2^62): at the very
    # top of the range it must return the last *possible* output (9), never the impossible one (10).
    class Top(np.random.Generator):
        def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
            return np.full(size, (high if high is not None else low) - 1, dtype=dtype)

    h = Channel([[0.1] * 10 + [0.0]])
    assert (h.sample(np.zeros(4, dtype=int), Top(np.random.PCG64(0))) == 9).all()


def test_sample_rng_conventions_and_shapes():
    c = Channel(np.full((3, 5), 0.2))
    s = np.array([[0, 1, 2], [2, 1, 0]])
    a = c.sample(s, 7)
    assert a.shape == s.shape and a.dtype.kind == "i"
    np.testing.assert_array_equal(a, c.sample(s, 7))  # an int seed reproduces
    from dprivacy.sampling import random_source

    np.testing.assert_array_equal(a, c.sample(s, random_source(7).generator))  # the seeded ChaCha20 source
    assert not random_source(7).release and random_source(None).release
    g = np.random.default_rng(3)
    first, second = c.sample(np.zeros(50, int), g), c.sample(np.zeros(50, int), g)
    assert not np.array_equal(first, second)  # the Generator's state advances
    assert c.sample(np.zeros(3, int), None).shape == (3,)
    assert c.sample(np.zeros(0, int), 1).shape == (0,)
    with pytest.raises(TypeError, match="rng"):
        c.sample([0], "seed")
    with pytest.raises(TypeError, match="rng"):
        c.sample([0], True)
    with pytest.raises(TypeError, match="rng"):
        c.sample([0], np.random.RandomState(0))
    with pytest.raises(TypeError, match="integer row indices"):
        c.sample([0.0, 1.0], 0)
    with pytest.raises(ValueError, match="0..2"):
        c.sample([0, 3], 0)


def test_identity_and_constant():
    np.testing.assert_array_equal(identity(3).matrix, np.eye(3))
    np.testing.assert_allclose(constant(2, 4).matrix, 0.25)
    np.testing.assert_array_equal(identity(4).sample(np.array([3, 1, 2]), 0), [3, 1, 2])


def test_hyper_merges_posteriors_that_differ_by_rounding():
    """Two outputs whose posteriors are equal up to one float step on either side of a rounding
    boundary are one inner of the hyper (the review's counterexample)."""
    h = np.array([[0.03920913975347684, 0.23783128683527316, 0.72295957341125],
                  [0.03155515309047058, 0.19140442032077945, 0.7770404265887499]])
    hy = Channel(h).hyper([0.5, 0.5])
    assert len(hy.outer) == 2
    np.testing.assert_allclose(hy.outer.sum(), 1.0)
    np.testing.assert_allclose(hy.inners @ hy.outer, [0.5, 0.5])
