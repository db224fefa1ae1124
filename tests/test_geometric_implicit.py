"""The truncated geometric mechanism kept implicit where float64 cannot hold its entries (Chatzikokolakis et al. 2013 Fig 2
(iv), Thm 8): exact log-entries, privacy checked on them, exact sampling, and the optimal mechanism
of count:1000 at ε = 1 (issue 13's target), which a stored matrix cannot certify."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dprivacy as dp
from dprivacy import spaces
from dprivacy.cli import main
from dprivacy.mechanisms.geometric import TruncatedGeometricMechanism, _tg_matrix, truncated_geometric


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), eps=st.floats(0.05, 5.0), seed=st.integers(0, 2**31 - 1), m=st.integers(1, 6))
def test_implicit_rows_equal_the_dense_matrix_times_the_remap(n, eps, seed, m):
    rng = np.random.default_rng(seed)
    k = rng.permutation(n)
    space = dp.MetricSpace(np.abs(k[:, None] - k[None, :]).astype(float), coordinates=k[:, None].astype(float))
    remap = rng.integers(0, m, size=n)  # some guesses may get no output: a zero column
    mech = TruncatedGeometricMechanism(space, epsilon=eps, positions=k, step_epsilon=eps, remap=remap,
                                       outputs=list(range(m)))
    h = _tg_matrix(k, eps)
    r = np.zeros((n, m))
    r[np.arange(n), remap] = 1.0
    expected = h @ r
    np.testing.assert_allclose(mech.matrix, expected, rtol=1e-12, atol=0)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(mech.log_rows(np.arange(n)), np.log(expected), rtol=1e-12, atol=1e-12)
    plain = TruncatedGeometricMechanism(space, epsilon=eps, positions=k, step_epsilon=eps)
    np.testing.assert_allclose(plain.matrix, h, rtol=1e-12, atol=0)
    p = rng.dirichlet(np.ones(n))
    # The hooks (log space, blocks of rows) against the measures on the dense matrix.
    assert dp.utility(mech, p).value == pytest.approx(dp.utility(expected, p).value, rel=1e-12)
    assert dp.min_capacity(mech) == pytest.approx(dp.min_capacity(expected), rel=1e-12, abs=1e-12)
    check = dp.check_privacy(mech)
    assert check.ok and check.smallest_epsilon <= eps * (1 + 1e-9)


def test_truncated_geometric_is_implicit_exactly_where_entries_underflow():
    assert truncated_geometric(spaces.line(500), epsilon=1.0).is_dense  # e^{-499} is a normal float64
    mech = truncated_geometric(spaces.line(1001), epsilon=1.0)
    assert not mech.is_dense
    # The stored float64 rendering has zeros beside positive entries; the log-entries are exact.
    assert (mech.matrix == 0).any()
    assert mech.log_rows(0)[1000] == pytest.approx(-1000.0 - np.log1p(np.exp(-1.0)), rel=1e-15)
    assert not dp.check_privacy(mech.matrix, mech.space, epsilon=1.0).ok
    r = dp.check_privacy(mech)
    assert r.ok and abs(r.smallest_epsilon - 1.0) < 1e-12


def test_implicit_sampler_draws_the_truncated_geometric_distribution():
    space = spaces.line(7)
    mech = TruncatedGeometricMechanism(space, epsilon=0.8, positions=np.arange(7), step_epsilon=0.8)
    assert 0.8 - 1e-9 < mech.delivered_epsilon <= 0.8
    draws = mech.sample_indices(np.full(200_000, 2), rng=11)
    freq = np.bincount(draws, minlength=7) / draws.size
    p = mech.rows(2)
    # Four standard deviations of a binomial proportion: the draws are TG at step s/t, s/t = 0.8 − O(2^-40).
    assert np.all(np.abs(freq - p) <= 4 * np.sqrt(p * (1 - p) / draws.size))


def test_optimal_count_1000_at_epsilon_1_is_certified_on_exact_log_entries():
    rng = np.random.default_rng(5)
    p = rng.random(1001)
    p[rng.random(1001) < 0.3] = 0.0
    p /= p.sum()
    r = dp.optimal_mechanism(spaces.line(1001), p, epsilon=1.0)
    assert r.ok and r.method == "truncated-geometric" and r.implicit is not None
    mech = r.mechanism
    assert not mech.is_dense and dp.check_privacy(mech).ok
    # The value is the implicit mechanism's utility, and Thm 8's channel is the optimum: an LP on a
    # prefix where float64 holds everything agrees (tested in test_optimal); here value = bound.
    assert r.gap == 0.0 and dp.utility(mech, p).value == pytest.approx(r.value, rel=1e-13)
    # The same problem at ε = 0.5 stays dense (ε·d ≤ 500).
    assert dp.optimal_mechanism(spaces.line(1001), p, epsilon=0.5).mechanism.is_dense


def test_cli_design_count_1000_exists_and_is_private(capsys, tmp_path):
    code = main(["design", "count:1000", "--epsilon", "1", "--mechanism", "optimal", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, None) and out["exists"] and out["is_private"] and out["implicit"]
    code = main(["design", "count:1000", "--epsilon", "1", "--mechanism", "optimal", "--save", str(tmp_path / "h.npy")])
    err = capsys.readouterr().err
    assert code == 2 and "not private as stored" in err and err.count("\n") == 1
    assert not (tmp_path / "h.npy").exists()
