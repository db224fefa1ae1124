"""``sum:U,V`` as a matrix-free space (ElSalamouny et al. 2014 §7.1): the SumLineSpace's metric and edges, the front doors'
sum-line path against the dense solvers, the implicit mechanism's measures against its dense rows, and the
command line on a sum far too large for a dense matrix."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dprivacy
from dprivacy import measures
from dprivacy._kernels.dispatch import SUM_LINE_MIN_ANSWERS
from dprivacy._kernels.sum_line import SumLineMechanism, line_max_product
from dprivacy.cli import main
from dprivacy.queries import sum_space
from dprivacy.spaces import MetricSpace, SumLineSpace, _compute_essential_pairs


def _dense(n: int, delta: int) -> np.ndarray:
    x = np.arange(n)
    return np.ceil(np.abs(x[:, None] - x[None, :]) / delta)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), delta=st.integers(1, 9))
def test_the_space_is_the_sum_query_s_graph_metric_with_its_edges_as_essential_pairs(n, delta):
    sp = SumLineSpace(n, delta)
    d = _dense(n, delta)
    assert np.array_equal(sp.distances, d)
    assert np.array_equal(sp.distances_from(np.array([0, n - 1])), d[[0, n - 1]])
    assert np.array_equal(sp.distances_from(n // 2), d[n // 2])
    want = _compute_essential_pairs(d, 0.0)
    got = sp.essential_pairs()
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert not sp.is_extended


def test_a_large_sum_is_never_dense():
    sp = sum_space(30_000, 5)
    assert isinstance(sp, SumLineSpace) and sp.n == 150_001 and sp.delta == 5
    r = dprivacy.tight_constraints(sp, epsilon=2.0)
    assert r.exists and r.certainty == "certified"
    assert sp._distances is None  # the front door did not build the 150,001² matrix
    with pytest.raises(MemoryError, match="matrix-free sum-line path"):
        _ = sp.distances


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 50), delta=st.integers(1, 12), eps=st.floats(0.01, 5.0), seed=st.integers(0, 2**32 - 1),
       zeros=st.floats(0.0, 0.9), integer=st.booleans())
def test_line_max_product_is_the_max_over_every_secret(n, delta, eps, seed, zeros, integer):
    """max_y [a(y) − ε⌈|y − o|/Δ⌉] and its argmax, against the n × n table (ties and −∞ included)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    if integer:
        a = np.round(a)  # ties
    a[rng.random(n) < zeros] = -np.inf
    a[rng.integers(n)] = 0.0  # a prior has a positive entry
    table = a[:, None] - eps * _dense(n, delta)
    want = table.max(axis=0)
    g, arg = line_max_product(a, delta, eps)
    np.testing.assert_allclose(g, want, rtol=0, atol=1e-9 * (1 + eps * n))
    np.testing.assert_allclose(table[arg, np.arange(n)], want, rtol=0, atol=1e-9 * (1 + eps * n))


@settings(max_examples=30, deadline=None)
@given(u=st.integers(46, 120), v=st.integers(2, 6), eps=st.floats(0.2, 4.0), seed=st.integers(0, 2**32 - 1))
def test_front_doors_on_the_sum_line_agree_with_the_dense_solvers(u, v, eps, seed):
    sp = sum_space(u, v)
    assert sp.n > SUM_LINE_MIN_ANSWERS  # the auto path is the sum-line one
    fast = dprivacy.tight_constraints(sp, epsilon=eps)
    dense = dprivacy.tight_constraints(sp, epsilon=eps, method="dense")
    assert hasattr(fast, "delta") and not hasattr(dense, "delta")
    if fast.decided and dense.decided:
        assert fast.exists == dense.exists
    if fast.exists and dense.exists:
        np.testing.assert_allclose(fast.z, dense.z, rtol=1e-8, atol=1e-10)
    prior = np.random.default_rng(seed).dirichlet(np.full(sp.n, 30.0))
    a = dprivacy.regularity(sp, prior, epsilon=eps)
    b = dprivacy.regularity(sp, prior, epsilon=eps, method="dense")
    if a.certain and b.certain:
        assert a.regular == b.regular
    if a.regular and b.regular:
        assert a.mu_sum == pytest.approx(b.mu_sum, rel=1e-8)


@pytest.mark.parametrize("u", [60, pytest.param(150, marks=pytest.mark.slow)])  # 150: ElSalamouny et al. 2014 Fig 6a (the dense
def test_the_threshold_on_the_sum_line_is_the_dense_one(u):  # search on its 751 answers takes 20–50 s: slow)
    sp = sum_space(u, 5)  # 301 answers, above SUM_LINE_MIN_ANSWERS: the sum-line path
    assert isinstance(sp, SumLineSpace)
    fast = dprivacy.tight_threshold(sp)
    dense = dprivacy.tight_threshold(sp, method="dense")
    assert fast.certified and dense.certified
    lo, hi = fast.bracket
    dlo, dhi = dense.bracket
    assert lo < dhi and dlo < hi  # the two certified brackets overlap
    seen = []
    dprivacy.tight_threshold(sp, scan=0, progress=seen.append)
    assert seen and {p.status for p in seen} == {"exists", "absent"}


@settings(max_examples=25, deadline=None)
@given(u=st.integers(1, 30), v=st.integers(1, 6), eps=st.floats(0.9, 4.0), seed=st.integers(0, 2**32 - 1),
       zeros=st.floats(0.0, 0.8))
def test_the_implicit_mechanism_s_measures_equal_its_dense_rows(u, v, eps, seed, zeros):
    n = u * v + 1
    r = dprivacy.tight_constraints(sum_space(u, v), epsilon=eps, method="structured")
    if not r.exists:
        return  # below the threshold: nothing to measure (the existence test is above)
    m = r.mechanism
    assert isinstance(m, SumLineMechanism) and m.certificate.ok
    h = m.rows(np.arange(n))
    rng = np.random.default_rng(seed)
    prior = rng.dirichlet(np.full(n, 0.5))
    prior[rng.random(n) < zeros] = 0.0
    if prior.sum() == 0:
        prior[0] = 1.0
    prior /= prior.sum()
    joint = prior[:, None] * h
    u_ = measures.utility(m, prior)
    assert u_.value == pytest.approx(joint.max(axis=0).sum(), rel=1e-10)
    assert joint[u_.remap, np.arange(n)].sum() == pytest.approx(joint.max(axis=0).sum(), rel=1e-10)
    assert measures.min_capacity(m) == pytest.approx(math.log2(h.max(axis=0).sum()), rel=1e-10)
    assert measures.min_entropy_leakage(m, prior) == pytest.approx(
        math.log2(joint.max(axis=0).sum() / prior.max()), rel=1e-9, abs=1e-12)
    # Prop 6 through the hook, and the dense check of its rows
    assert measures.check_privacy(m).ok
    assert measures.check_privacy(h / h.sum(axis=1, keepdims=True), sum_space(u, v), epsilon=eps * (1 + 1e-9)).ok


def test_sample_indices_draws_each_secret_s_row():
    from scipy import stats

    r = dprivacy.tight_constraints(sum_space(30, 3), epsilon=2.0)
    m = r.mechanism
    secrets = np.array([5] * 30_000 + [60] * 30_000)
    out = m.sample_indices(secrets, rng=7)
    for y in (5, 60):
        draws = out[secrets == y]
        row = m.row(y) / m.row(y).sum()
        keep = row * draws.size >= 5
        obs = np.append(np.bincount(draws, minlength=row.size)[keep], (~keep[draws]).sum())
        exp = np.append(row[keep], row[~keep].sum()) * draws.size
        assert stats.chisquare(obs, exp).pvalue > 1e-4
    with pytest.raises(ValueError, match="0..90"):
        m.sample_indices(np.array([91]), rng=0)


def _cli(capsys, *argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_the_command_line_designs_thresholds_and_tests_priors_on_a_large_sum(capsys, tmp_path):
    code, r, err = _cli(capsys, "design", "sum:30000,5", "--epsilon", "2", "--mechanism", "tight-constraints")
    assert code == 0, err
    assert r["n"] == 150_001 and r["exists"] and r["is_private"] and r["implicit"] and r["certainty"] == "certified"
    # the uniform prior: utility Σz/n and leakage log2 Σz (ElSalamouny et al. 2014 Thm 2, Prop 8), from the same z
    z = dprivacy.tight_constraints(sum_space(30000, 5), epsilon=2.0).z
    assert r["utility"] == pytest.approx(z.sum() / z.size, rel=1e-10)
    assert r["min_entropy_leakage_bits"] == pytest.approx(math.log2(z.sum()), rel=1e-10)
    code, r, err = _cli(capsys, "threshold", "sum:3000,5")
    assert code == 0, err
    assert r["certified"] and 0.96 < r["epsilon_star"] < 0.98  # ε* of Δ = 5 barely moves with n (Fig 6a: 0.968)
    code, r, err = _cli(capsys, "prior", "sum:3000,5", "--epsilon", "2", "--prior", "uniform")
    assert code == 0, err
    assert r["regular"] and r["certainty"] == "certified" and r["utility_bound"] == pytest.approx(r["mu_sum"])
    code, r, err = _cli(capsys, "prior", "sum:3000,5", "--epsilon", "0.5", "--prior", "uniform")
    assert code == 0, err
    assert not r["regular"] and r["certainty"] == "certified" and "no μ ≥ 0 solves" in r["reason"]
    # "don't know" is not "no": an undecided solve says exists: null (it said false)
    code, r, err = _cli(capsys, "design", "sum:1000,5", "--epsilon", "1e-6", "--mechanism", "tight-constraints")
    assert code == 0 and r["certainty"] == "undecided" and r["exists"] is None
    code, _, err = _cli(capsys, "design", "sum:2000000,5", "--epsilon", "2", "--mechanism", "tight-constraints")
    assert code == 2 and err.count("\n") == 1 and "10,000,001 answers" in err
    code, _, err = _cli(capsys, "design", "sum:30000,5", "--epsilon", "2", "--mechanism", "truncated-geometric")
    assert code == 2 and err.count("\n") == 1 and "GiB" in err


def test_where_the_sum_line_certificates_cannot_decide_auto_still_does():
    """Found by a new-user check: sum:1,V (a clique) came back 'undecided' (its Φ is positive definite but not
    its circulant embedding), and sum:4,100's threshold and a Gaussian prior on sum:150,5 at ε = 0.5 were left
    uncertified, where the dense path certifies them. A clique is now solved in closed form (ElSalamouny et al. 2014 Prop 9),
    and an undecided sum-line answer on up to SUM_LINE_DENSE_FALLBACK answers goes to the dense solver."""
    for v in (100, 1_000_000):
        r = dprivacy.tight_constraints(sum_space(1, v), epsilon=1.0)
        assert r.exists and r.certainty == "certified"
        assert r.z[0] == pytest.approx(1 / (1 + v * math.exp(-1.0)), rel=1e-14)
    assert dprivacy.tight_threshold(sum_space(1, 100)).always_exists
    dense = dprivacy.tight_constraints(sum_space(1, 100), epsilon=1.0, method="dense")
    np.testing.assert_allclose(dprivacy.tight_constraints(sum_space(1, 100), epsilon=1.0).z, dense.z, rtol=1e-12)
    th = dprivacy.tight_threshold(sum_space(4, 100))
    assert th.certified and th.bracket[0] < 3.68235 < th.bracket[1] + 1e-9
    sp = sum_space(150, 5)
    x = np.arange(sp.n)
    prior = np.exp(-0.5 * ((x - 375) / 60.0) ** 2)  # the sum-line solve alone leaves it undecided
    prior /= prior.sum()
    a = dprivacy.regularity(sp, prior, epsilon=0.5)
    b = dprivacy.regularity(sp, prior, epsilon=0.5, method="dense")
    assert a.certain and b.certain and a.regular == b.regular


def test_a_finer_tolerance_never_gives_a_wider_bracket():
    """tol 1e-10 gave (0.9389, 0.9681], uncertified, where tol 1e-6 certifies (0.96813319, 0.96813369]: the search
    gave up at the first point it could not decide, keeping the bracket of that moment, and named the midpoint
    as that point. It now steps off such a point further and further, and names the point itself."""
    import re

    sp = sum_space(150, 5)
    coarse = dprivacy.tight_threshold(sp, tol=1e-6, method="structured")
    fine = dprivacy.tight_threshold(sp, tol=1e-10, method="structured")
    assert coarse.certified
    lo, hi = fine.bracket
    assert hi - lo < 1e-9 and coarse.bracket[0] <= lo and hi <= coarse.bracket[1]
    if not fine.certified:
        stuck = float(re.search(r"could not decide at ε = ([0-9.e-]+)", fine.reason).group(1))
        assert lo < stuck < hi


@pytest.mark.slow  # 20–40 s: the dense search on 751 answers (auto's fallback is also tested on 401 answers above)
def test_at_a_tolerance_the_fft_search_cannot_certify_auto_falls_back_to_the_dense_one():
    assert dprivacy.tight_threshold(sum_space(150, 5), tol=1e-10).certified


@pytest.mark.parametrize("w, h, metric", [(1, 7, "euclidean"), (7, 1, "chebyshev"), (1, 300, "euclidean")])
def test_a_one_row_grid_is_a_line(w, h, metric):
    """threshold grid:1x7 gave an uncertified upper bound where line:7 says 'exists for every ε' (ElSalamouny et al. 2014 §6.1)."""
    from dprivacy import spaces

    g = spaces.grid(w, h, metric=metric)
    assert dprivacy.tight_threshold(g).always_exists
    np.testing.assert_allclose(dprivacy.tight_constraints(g, epsilon=0.7).z,
                               dprivacy.tight_constraints(spaces.line(g.n), epsilon=0.7, method="dense").z, rtol=1e-9)
