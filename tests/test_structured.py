"""Tests for dprivacy._kernels: the FFT operator, the certified CG solver, the grid threshold, the
implicit tight-constraints mechanism (utility, leakage, privacy) and its exact sampler.

Every structured result is compared with an independent dense computation on small grids (≤ 30×30):
Φ built here from coordinates with numpy, z from np.linalg.solve, utility and leakage from
dprivacy.measures on the dense channel.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from dprivacy import measures
from dprivacy.mechanisms.geometric import truncated_geometric
from dprivacy.mechanisms.tight import TightConstraintsResult, tight_constraints
from dprivacy.spaces import GridSpace, line
from dprivacy._kernels.closed_form import manhattan_diagonal
from dprivacy._kernels.implicit import ImplicitTightMechanism
from dprivacy._kernels.maxplus import max_convolution
from dprivacy._kernels.operator import GridConstraintsOperator
from dprivacy._kernels.solve import GridTightResult, tight_constraints_grid
from dprivacy._kernels.spectrum import eigenvalue_lower_bound, symbol_lower_bound
from dprivacy._kernels.threshold import tight_threshold_grid
from dprivacy.threshold import tight_threshold

METRICS = ("euclidean", "manhattan", "chebyshev")


def dense_phi(w: int, h: int, metric: str, step: float, eps: float) -> np.ndarray:
    """Φ from cell coordinates, independently of GridSpace.distances."""
    r, c = np.divmod(np.arange(w * h), w)
    dx = np.abs(c[:, None] - c[None, :]).astype(float)
    dy = np.abs(r[:, None] - r[None, :]).astype(float)
    d = {"euclidean": np.sqrt(dx**2 + dy**2), "manhattan": dx + dy, "chebyshev": np.maximum(dx, dy)}[metric]
    return np.exp(-eps * step * d)


grids = st.tuples(
    st.integers(1, 12), st.integers(1, 12), st.sampled_from(METRICS),
    st.floats(0.2, 3.0), st.floats(0.05, 3.0),
)


# ---------------------------------------------------------------------------------------------
# The operator
# ---------------------------------------------------------------------------------------------


@settings(max_examples=40)
@given(grids, st.integers(0, 2**32 - 1))
def test_fft_matvec_equals_dense(g, seed):
    w, h, metric, step, eps = g
    grid = GridSpace(w, h, metric=metric, step=step)
    op = GridConstraintsOperator(grid, eps)
    x = np.random.default_rng(seed).standard_normal(grid.n)
    ref = dense_phi(w, h, metric, step, eps) @ x
    assert np.abs(op.matvec(x) - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
    # Batched and (H, W)-shaped inputs give the same numbers.
    xb = np.stack([x, 2 * x])
    assert np.allclose(op.matvec(xb)[1], 2 * ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))
    assert np.allclose(op.matvec(x.reshape(h, w)).ravel(), ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))


def test_operator_rejects_bad_input():
    grid = GridSpace(4, 3)
    op = GridConstraintsOperator(grid, 1.0)
    with pytest.raises(ValueError, match="expected"):
        op.matvec(np.ones(11))
    with pytest.raises(TypeError, match="GridSpace"):
        GridConstraintsOperator(line(5), 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        GridConstraintsOperator(grid, -1.0)
    with pytest.raises(ValueError, match="preconditioner"):
        op.preconditioner("jacobi")


@settings(max_examples=30)
@given(grids)
def test_eigenvalue_bound_is_below_lambda_min(g):
    w, h, metric, step, eps = g
    grid = GridSpace(w, h, metric=metric, step=step)
    b = eigenvalue_lower_bound(GridConstraintsOperator(grid, eps))
    lam = np.linalg.eigvalsh(dense_phi(w, h, metric, step, eps))[0]
    assert b.positive_definite  # all three metrics have a positive symbol
    assert b.value <= lam * (1 + 1e-12)
    # The symbol bound alone is valid for every grid size as well.
    assert b.symbol <= lam * (1 + 1e-12)


@pytest.mark.parametrize("a", [0.05, 0.3, 1.0, 4.0])
def test_symbol_bounds_are_nearly_sharp(a):
    # Manhattan: inf of the symbol is tanh²(a/2); a long 1-D KMS matrix approaches it.
    assert symbol_lower_bound("manhattan", a) == pytest.approx(math.tanh(a / 2) ** 2)
    q = math.exp(-a)
    t = q ** np.abs(np.subtract.outer(np.arange(400), np.arange(400)))
    lam1 = np.linalg.eigvalsh(t)[0]
    assert math.tanh(a / 2) <= lam1 <= math.tanh(a / 2) * 1.05
    # Euclidean: below the Poisson sum at ω = (π, π) (many aliases), and within 15 % of it.
    m = 2 * np.pi * np.arange(-300, 301) + np.pi
    poisson = (2 * np.pi * a / (a * a + m[:, None] ** 2 + m[None, :] ** 2) ** 1.5).sum()
    lb = symbol_lower_bound("euclidean", a)
    assert 0.85 * poisson <= lb <= poisson


# ---------------------------------------------------------------------------------------------
# The solver
# ---------------------------------------------------------------------------------------------


@settings(max_examples=30)
@given(grids)
def test_structured_z_equals_dense_solve(g):
    w, h, metric, step, eps = g
    grid = GridSpace(w, h, metric=metric, step=step)
    res = tight_constraints_grid(grid, epsilon=eps, tol=1e-13)
    z = np.linalg.solve(dense_phi(w, h, metric, step, eps), np.ones(grid.n))
    assert np.abs(res.z - z).max() <= 1e-8
    # The certificate's error bound is an actual bound.
    assert np.abs(res.z - z).max() <= res.error_bound
    if res.decided:
        assert res.exists == bool((z >= 0).all())


@settings(max_examples=25)
@given(grids)
def test_existence_agrees_with_dense_path(g):
    w, h, metric, step, eps = g
    grid = GridSpace(w, h, metric=metric, step=step)
    res = tight_constraints_grid(grid, epsilon=eps)
    dense = tight_constraints(grid, epsilon=eps, method="dense")
    if res.decided and dense.decided:
        assert res.exists == dense.exists
        assert res.negative[0].tolist() == dense.negative[0].tolist()


def test_result_field_names_match_dense_result():
    dense_fields = set(TightConstraintsResult.__dataclass_fields__)
    ours = set(GridTightResult.__dataclass_fields__)
    shared = {"exists", "epsilon", "z", "negative", "reason", "residual", "condition", "error_bound",
              "margin", "certainty", "singular", "nullity", "method"}
    assert shared <= dense_fields and shared <= ours
    res = tight_constraints_grid(GridSpace(6, 5), epsilon=1.0)
    assert res.decided and res.exists and res.min_z == res.z.min()
    ch = res.channel
    dense = tight_constraints(GridSpace(6, 5), epsilon=1.0, method="dense")
    assert np.allclose(ch.matrix, dense.channel.matrix, rtol=0, atol=1e-10)


@pytest.mark.parametrize("w,h,step,eps", [(30, 30, 1.0, 0.4), (17, 23, 0.5, 1.3), (25, 1, 2.0, 0.1)])
def test_manhattan_closed_form(w, h, step, eps):
    grid = GridSpace(w, h, metric="manhattan", step=step)
    z = manhattan_diagonal(grid, eps)
    assert (z > 0).all()
    if grid.n <= 900:
        assert np.abs(dense_phi(w, h, "manhattan", step, eps) @ z - 1).max() < 1e-12
    res = tight_constraints_grid(grid, epsilon=eps, tol=1e-13)
    assert res.exists and res.certainty == "certified"
    assert np.abs(res.z - z).max() < 1e-9


@pytest.mark.parametrize("metric", METRICS)
def test_line_grid_is_the_truncated_geometric(metric):
    # A W×1 grid is a line; its tight-constraints mechanism is the truncated geometric (ElSalamouny et al. 2014 §6.1).
    grid = GridSpace(12, 1, metric=metric, step=0.7)
    res = tight_constraints_grid(grid, epsilon=0.9, tol=1e-13)
    tg = truncated_geometric(line(12, step=0.7), epsilon=0.9)
    assert res.exists
    assert np.abs(res.mechanism.channel.matrix - tg.matrix).max() < 1e-12


def test_minres_gives_the_same_answer():
    grid = GridSpace(14, 9, metric="chebyshev", step=1.0)
    a = tight_constraints_grid(grid, epsilon=0.8, tol=1e-12)
    b = tight_constraints_grid(grid, epsilon=0.8, tol=1e-12, method="minres")
    assert b.method == "minres" and a.method == "cg"
    assert np.abs(a.z - b.z).max() < 1e-8
    assert a.exists == b.exists and a.decided and b.decided


@pytest.mark.parametrize("pre", ["none", "embedding", "circulant"])
def test_preconditioners_agree(pre):
    grid = GridSpace(20, 13, metric="euclidean", step=1.0)
    z = np.linalg.solve(dense_phi(20, 13, "euclidean", 1.0, 0.5), np.ones(grid.n))
    res = tight_constraints_grid(grid, epsilon=0.5, tol=1e-12, preconditioner=pre)
    assert res.preconditioner == pre
    assert np.abs(res.z - z).max() < 1e-8


def test_starved_solver_is_undecided_not_wrong():
    grid = GridSpace(20, 20, metric="euclidean")
    res = tight_constraints_grid(grid, epsilon=0.3, max_iter=1, refine=False, x0=np.zeros(grid.n))
    assert not res.converged
    assert res.certainty == "undecided" and not res.exists and "undecided" in res.reason


def test_refinement_decides_near_the_threshold():
    # Just above the Euclidean threshold min z is tiny; the solver tightens the residual until the
    # sign is certain.
    grid = GridSpace(10, 10, metric="euclidean")
    dense = tight_constraints(grid, epsilon=0.6654, method="dense")
    res = tight_constraints_grid(grid, epsilon=0.6654, tol=1e-3)
    assert dense.decided and res.decided
    assert res.exists == dense.exists
    assert res.error_bound < abs(res.min_z)


def test_solver_rejects_bad_input():
    grid = GridSpace(5, 4)
    with pytest.raises(ValueError, match="method"):
        tight_constraints_grid(grid, epsilon=1.0, method="lu")
    with pytest.raises(ValueError, match="x0"):
        tight_constraints_grid(grid, epsilon=1.0, x0=np.ones(3))
    with pytest.raises(TypeError, match="GridSpace"):
        tight_constraints_grid(line(4), epsilon=1.0)
    with pytest.raises(ValueError, match="max_iter"):
        tight_constraints_grid(grid, epsilon=1.0, max_iter=0)


def test_progress_is_reported():
    seen = []
    tight_constraints_grid(GridSpace(9, 8), epsilon=0.7, progress=lambda k, r: seen.append((k, r)))
    assert seen and [k for k, _ in seen] == list(range(1, len(seen) + 1))
    assert seen[-1][1] <= 1e-10


# ---------------------------------------------------------------------------------------------
# Threshold
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric,w,h", [("euclidean", 9, 7), ("chebyshev", 8, 8)])
def test_threshold_matches_dense(metric, w, h):
    grid = GridSpace(w, h, metric=metric)
    a = tight_threshold_grid(grid, scan=2)
    b = tight_threshold(grid, scan=0)
    assert a.certified and b.certified
    (lo, hi), (dlo, dhi) = a.bracket, b.bracket
    assert lo < dhi and dlo < hi  # the two brackets overlap
    assert a.monotone_checked.ok
    # Independent check of the bracket ends with the dense solve.
    assert (np.linalg.solve(dense_phi(w, h, metric, 1.0, lo), np.ones(grid.n)) < 0).any()
    assert (np.linalg.solve(dense_phi(w, h, metric, 1.0, hi), np.ones(grid.n)) >= 0).all()


def test_threshold_manhattan_always_exists():
    """The closed form (ε* = 0) is written once, in the front door; the grid search itself, asked
    explicitly, finds existence everywhere and no certified lower end."""
    grid = GridSpace(40, 30, metric="manhattan")
    r = tight_threshold(grid)
    assert r.always_exists and r.epsilon_star == 0.0 and r.certified and r.solves == 0
    s = tight_threshold(grid, method="structured", scan=2)
    assert not s.certified and s.bracket[0] is None and s.monotone_checked.ok


def test_threshold_rejects_bad_bracket():
    grid = GridSpace(8, 8)
    with pytest.raises(ValueError, match="lo"):
        tight_threshold_grid(grid, lo=2.0, hi=3.0)
    with pytest.raises(ValueError, match="hi"):
        tight_threshold_grid(grid, lo=0.1, hi=0.2)


# ---------------------------------------------------------------------------------------------
# Max-convolution, utility and leakage of the implicit mechanism
# ---------------------------------------------------------------------------------------------


@st.composite
def priors_on(draw, n):
    kind = draw(st.sampled_from(["dirichlet", "sparse", "spiky"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if kind == "dirichlet":
        p = rng.dirichlet(np.full(n, 0.5))
    elif kind == "sparse":
        p = rng.random(n) * (rng.random(n) < 0.3)
        p[rng.integers(n)] += 0.1
    else:
        p = np.exp(rng.uniform(-30, 0, n))
    return p / p.sum()


@settings(max_examples=40)
@given(grids, st.data())
def test_max_convolution_is_brute_force(g, data):
    w, h, metric, step, eps = g
    grid = GridSpace(w, h, metric=metric, step=step)
    p = data.draw(priors_on(grid.n))
    m, arg = max_convolution(grid, p, eps)
    j = p[:, None] * dense_phi(w, h, metric, step, eps)
    ref = j.max(axis=0)
    assert np.allclose(m, ref, rtol=1e-12, atol=0)
    assert np.allclose(j[arg, np.arange(grid.n)], ref, rtol=1e-12, atol=0)


@settings(max_examples=25)
@given(st.integers(3, 12), st.integers(3, 12), st.sampled_from(METRICS), st.floats(1.2, 3.0), st.data())
def test_implicit_utility_and_leakage_equal_dense_measures(w, h, metric, eps, data):
    grid = GridSpace(w, h, metric=metric)
    res = tight_constraints_grid(grid, epsilon=eps, tol=1e-13)
    # The mechanism need not exist at ε ≥ 1.2 on small grids (3×3 Chebyshev: ε* ≈ 1.4436; 3×4: ≈ 1.279):
    # the identities below are about mechanisms that exist, so that is the precondition.
    assert res.decided
    assume(res.exists)
    mech = res.mechanism
    ch = mech.channel
    p = data.draw(priors_on(grid.n))
    u = measures.utility(mech, p)
    ref = measures.utility(ch, p)
    assert u.value == pytest.approx(ref.value, rel=1e-12)
    assert measures.utility(ch.remap(u.remap, n_guesses=grid.n), p, gain=np.eye(grid.n)).value >= ref.value * (1 - 1e-12)
    assert measures.min_entropy_leakage(mech, p) == pytest.approx(measures.min_entropy_leakage(ch, p), rel=1e-10, abs=1e-12)
    uni = np.full(grid.n, 1.0 / grid.n)
    assert measures.utility(mech, uni).value == pytest.approx(measures.utility(ch, uni).value, rel=1e-12)
    assert measures.min_entropy_leakage(mech, uni) == pytest.approx(measures.min_entropy_leakage(ch, uni), rel=1e-10, abs=1e-12)
    assert measures.min_capacity(mech) == pytest.approx(math.log2(res.z.sum()))
    assert measures.min_capacity(mech) == pytest.approx(measures.min_capacity(ch), rel=1e-10)


def test_utility_of_a_regular_prior_is_sum_mu():
    # ElSalamouny et al. 2014 Thm 2 / Thm 4: for π = μΦ with μ ≥ 0 the tight-constraints mechanism (identity remap)
    # attains U = Σμ; the optimal remap cannot do better.
    grid = GridSpace(15, 11, metric="euclidean")
    eps = 1.0
    phi = dense_phi(15, 11, "euclidean", 1.0, eps)
    mu = np.random.default_rng(5).random(grid.n)
    mu /= (mu @ phi).sum()
    pi = mu @ phi
    mech = tight_constraints_grid(grid, epsilon=eps, tol=1e-13).mechanism
    u = measures.utility(mech, pi)
    assert u.value == pytest.approx(mu.sum(), rel=1e-10)
    assert u.value == pytest.approx(float(pi @ mech.z), rel=1e-10)  # identity remap: π·diag(H)


def test_identity_remap_is_not_optimal_for_a_point_mass():
    grid = GridSpace(7, 6, metric="chebyshev")
    mech = tight_constraints_grid(grid, epsilon=2.0).mechanism
    pi = np.zeros(grid.n)
    pi[10] = 1.0
    u = measures.utility(mech, pi)
    assert u.value == pytest.approx(mech.rows(10).sum(), rel=1e-12)  # always guess the known secret
    assert (u.remap == 10).all()
    assert u.value > mech.z[10] + 0.5  # the identity remap would give z_10


def test_implicit_rejects_negative_z():
    grid = GridSpace(10, 10, metric="euclidean")
    res = tight_constraints_grid(grid, epsilon=0.3)
    assert res.decided and not res.exists and res.mechanism is None and res.channel is None
    with pytest.raises(ValueError, match="negative"):
        ImplicitTightMechanism(grid, res.z, epsilon=0.3)


def test_implicit_checks_that_z_solves_the_system():
    grid = GridSpace(9, 7, metric="manhattan")
    z = manhattan_diagonal(grid, 0.8)
    mech = ImplicitTightMechanism(grid, z, epsilon=0.8)  # no certificate: Φz = 1 is verified
    assert np.allclose(mech.rows(np.arange(grid.n)).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="does not solve"):
        ImplicitTightMechanism(grid, z, epsilon=0.9)
    with pytest.raises(ValueError, match="entries"):
        ImplicitTightMechanism(grid, z[:-1], epsilon=0.8)
    with pytest.raises(ValueError, match="prior"):
        max_convolution(grid, np.full(grid.n, 1.0), 0.8)


@pytest.mark.parametrize("metric", METRICS)
def test_privacy_certificate(metric):
    grid = GridSpace(16, 12, metric=metric, step=0.5)
    res = tight_constraints_grid(grid, epsilon=3.0)
    cert = res.mechanism.spot_check(rows=12, rng=0)
    assert cert.ok and res.mechanism.certificate.ok and res.mechanism.certificate.basis == "theorem"
    # Tight constraints: every pair attains ratio e^{ε d} at the output z = y', so the smallest ε
    # for which the rows are private is ε itself.
    assert cert.result.smallest_epsilon == pytest.approx(3.0, rel=1e-9)
    assert cert.result.pairs_checked == 12 * 11 // 2
    assert measures.check_privacy(res.mechanism).smallest_epsilon == 3.0
    rows = res.mechanism.rows(cert.rows)
    assert np.allclose(rows, res.channel.matrix[cert.rows], rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------


def _chisquare_p(samples: np.ndarray, probs: np.ndarray) -> float:
    """Pearson chi-square p-value, pooling the cells with expected count < 5 into one bin."""
    n = samples.size
    counts = np.bincount(samples, minlength=probs.size)
    expected = probs / probs.sum() * n
    keep = expected >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


ALPHA = 1e-6


@pytest.mark.parametrize("metric", METRICS)
def test_sampler_matches_rows(metric):
    grid = GridSpace(25, 20, metric=metric)
    eps = 1.5
    mech = tight_constraints_grid(grid, epsilon=eps, tol=1e-13).mechanism
    rng = np.random.default_rng(2024)
    for y in (0, 24, 260, 499):  # corners, interior
        s = mech.sample(np.full(60_000, y), rng=rng)
        assert _chisquare_p(s, mech.rows(y)) > ALPHA
    # Mixed secrets in one call keep their own rows.
    ys = np.repeat([3, 311], 40_000)
    s = mech.sample(ys.reshape(2, -1), rng=rng).ravel()
    assert _chisquare_p(s[:40_000], mech.rows(3)) > ALPHA and _chisquare_p(s[40_000:], mech.rows(311)) > ALPHA


def test_sampler_power_against_a_misscaled_mechanism():
    grid = GridSpace(25, 20, metric="euclidean")
    exact = tight_constraints_grid(grid, epsilon=1.5, tol=1e-13).mechanism
    wrong = tight_constraints_grid(grid, epsilon=1.8, tol=1e-13).mechanism  # 1.2 ε
    rng = np.random.default_rng(7)
    for y in (0, 260):
        s = wrong.sample(np.full(60_000, y), rng=rng)
        assert _chisquare_p(s, exact.rows(y)) < ALPHA


def test_sampler_rejects_bad_secrets():
    mech = tight_constraints_grid(GridSpace(5, 5), epsilon=2.0).mechanism
    with pytest.raises(ValueError, match="0..24"):
        mech.sample(np.array([25]), rng=0)
    with pytest.raises(TypeError, match="integer"):
        mech.sample(np.array([1.5]), rng=0)
    a = mech.sample(np.arange(25), rng=3)
    b = mech.sample(np.arange(25), rng=3)
    assert (a == b).all()  # same seed, same draws
