"""Regular priors (ElSalamouny et al. 2014 §4; ElSalamouny et al. 2013 App. B): Φ, corner priors, the regularity test, sampling."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import metric_spaces
from dprivacy import spaces
from dprivacy.measures import check_prior_privacy
from dprivacy.priors import (
    RegularityTester,
    constraints_matrix,
    corner_priors,
    probability_bounds,
    regularity,
    sample_regular_priors,
)

epsilons = st.floats(0.2, 3.0)


# ---------------------------------------------------------------------------------------------
# Φ and the corner priors (ElSalamouny et al. 2014 Def 3, Def 5)
# ---------------------------------------------------------------------------------------------


def test_constraints_matrix_is_exp_minus_eps_d():
    s = spaces.line(4)
    phi = constraints_matrix(s, epsilon=0.7)
    i, j = np.indices((4, 4))
    np.testing.assert_allclose(phi, np.exp(-0.7 * np.abs(i - j)), rtol=1e-15)


def test_extended_metric_gives_zero_constraints():
    s = spaces.from_graph([(0, 1), (2, 3)])
    phi = constraints_matrix(s, epsilon=1.0)
    assert phi[0, 2] == 0.0 and phi[0, 1] == pytest.approx(math.exp(-1))


@given(metric_spaces(min_n=1, max_n=7), epsilons)
def test_corner_priors_are_regular_with_unit_mu(space, eps):
    # ElSalamouny et al. 2014 Def 5: c^y = μΦ with μ = e_y / Σ_y' φ_yy'; its γ is e_y and c^y_y is Prop 2's upper bound.
    c = corner_priors(space, epsilon=eps)
    phi = np.exp(-eps * space.distances)
    n = space.n
    np.testing.assert_allclose(c.sum(axis=1), 1.0, rtol=1e-12)
    _, upper = probability_bounds(space, epsilon=eps)
    np.testing.assert_allclose(np.diag(c), upper, rtol=1e-12)
    assert np.all(np.diag(c)[:, None] >= c - 1e-15)
    t = RegularityTester(space, epsilon=eps)
    if t.nullity:
        return  # μ not unique: covered by the ElSalamouny et al. 2013 App. B tests
    # A corner lies on the boundary of the region (μ has exact zeros): whether the *rounded* corner is
    # inside or outside is a matter of rounding. The float solve of the shared kernel has an error bound
    # that covers its actual error against the exact solution for the float Φ̃ and the float corner
    # (rational arithmetic)...
    from dprivacy._kernels.phi_solve import PhiFactor

    expect = np.eye(n) / phi.sum(axis=1)[:, None]
    fac = PhiFactor(t.phi)
    x, bounds, _, _ = fac.solve_many(c.T)
    exact = np.stack([fac.exact(c[y]).x for y in range(n)], axis=1)  # each entry within u of the rational one
    assert np.all(np.abs(x - exact) <= bounds + 1.2e-16 * np.abs(exact))
    # ... but the tester recognises a corner, in a batch as one by one, and reports it regular with its
    # exact certificate
    batch = t.test_many(c)
    assert batch.regular.all()
    np.testing.assert_array_equal(batch.mu, expect)
    for y in range(n):
        r = t.test(c[y])
        assert r.ok and r.regular and r.reason.startswith("regular")
        if n > 1:
            assert r.method == "corner" and r.boundary
            np.testing.assert_array_equal(r.mu, expect[y])
            np.testing.assert_array_equal(r.gamma, np.eye(n)[y])
    if n > 1:  # a prior near a corner but not on it is decided by the solve, not called a corner
        near = (1 - 1e-6) * c[0] + 1e-6 * np.full(n, 1.0 / n)
        assert t.test(near).method != "corner"


# ---------------------------------------------------------------------------------------------
# Exact small cases
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5, 9])
@pytest.mark.parametrize("eps", [0.05, 0.5, 2.0])
def test_uniform_prior_on_a_clique(n, eps):
    # Φ = (1 − α) I + α J with α = e^{−ε}: μ = u / (1 + (n − 1) α), regular for every ε > 0.
    a = math.exp(-eps)
    r = regularity(spaces.clique(n), np.full(n, 1.0 / n), epsilon=eps)
    assert r.regular and r.certain and r.unique
    np.testing.assert_allclose(r.mu, 1.0 / (n * (1 + (n - 1) * a)), rtol=1e-12)
    assert r.mu_sum == pytest.approx(1.0 / (1 + (n - 1) * a), rel=1e-12)
    np.testing.assert_allclose(r.gamma, 1.0 / n, rtol=1e-12)
    assert r.residual < 1e-15 and r.reason.startswith("regular")


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.7, 0.9])
def test_two_points_exact(eps, p):
    # Φ = [[1, α], [α, 1]]: μ = (p − α(1−p), (1−p) − αp) / (1 − α²); regular iff α/(1+α) ≤ p ≤ 1/(1+α).
    a = math.exp(-eps)
    mu = np.array([p - a * (1 - p), (1 - p) - a * p]) / (1 - a * a)
    r = regularity(spaces.line(2), [p, 1 - p], epsilon=eps)
    np.testing.assert_allclose(r.mu, mu, rtol=1e-12, atol=1e-15)
    expect = a / (1 + a) <= p <= 1 / (1 + a)
    assert r.regular == expect and r.certain
    if not expect:
        k = int(np.argmin(mu))
        assert list(r.negative) == [k]
        assert r.negative_values[0] == pytest.approx(mu[k], rel=1e-12)
        assert f"μ[{k}]" in r.reason


def test_point_mass_is_not_regular():
    # Prop 2: regular priors have full support.
    s = spaces.line(6)
    r = regularity(s, np.eye(6)[2], epsilon=1.0)
    assert not r.regular and r.certain
    assert r.negative.size > 0 and np.all(r.negative_values < 0)
    assert np.all(r.mu[r.negative] == r.negative_values)
    assert "negative" in r.reason


@pytest.mark.parametrize("eps", [0.01, 0.2, 1.0, 3.0])
def test_uniform_prior_on_a_line_of_three(eps):
    # Φ^{-1} of the geometric kernel is tridiagonal: (1/(1−α²)) [[1, −α, 0], [−α, 1+α², −α], [0, −α, 1]],
    # so μ = (1/3)(1 − α, (1 − α)², 1 − α)/(1 − α²) ≥ 0: regular for every ε (the truncated
    # geometric mechanism exists, ElSalamouny et al. 2014 Prop 8).
    a = math.exp(-eps)
    mu = np.array([1 - a, (1 - a) ** 2, 1 - a]) / (3 * (1 - a * a))
    r = regularity(spaces.line(3), np.full(3, 1 / 3), epsilon=eps)
    np.testing.assert_allclose(r.mu, mu, rtol=1e-10)
    assert r.regular and r.certain


# ---------------------------------------------------------------------------------------------
# Identities on random regular priors (ElSalamouny et al. 2014 Props 1–3)
# ---------------------------------------------------------------------------------------------


@settings(max_examples=30)
@given(metric_spaces(min_n=2, max_n=7), epsilons, st.integers(0, 2**32 - 1))
def test_sampled_priors_are_regular_and_satisfy_props_1_to_3(space, eps, seed):
    pri, gam = sample_regular_priors(space, epsilon=eps, size=5, rng=seed, return_gamma=True)
    assert pri.shape == (5, space.n)
    np.testing.assert_allclose(pri.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(gam.sum(axis=1), 1.0, atol=1e-12)
    d = space.distances
    lower, upper = probability_bounds(space, epsilon=eps)
    # Prop 2 computed independently here, from the definition
    with np.errstate(over="ignore"):
        lo2 = 1 / np.exp(eps * d).sum(axis=1)
    up2 = 1 / np.exp(-eps * d).sum(axis=1)
    np.testing.assert_allclose(lower, lo2)
    np.testing.assert_allclose(upper, up2)
    t = RegularityTester(space, epsilon=eps)
    for p, g in zip(pri, gam):
        # Prop 1: π_y ≤ e^{ε d(y,y')} π_y'
        assert check_prior_privacy(space, p, epsilon=eps).ok
        # Prop 2
        assert np.all(p >= lower * (1 - 1e-9)) and np.all(p <= upper * (1 + 1e-9))
        r = t.test(p)
        assert r.regular
        # Prop 3: Σγ = 1 and γ-form = μ-form of the Thm 2 bound
        assert r.gamma.sum() == pytest.approx(1.0, abs=1e-8)
        assert (r.gamma / t.row_sums).sum() == pytest.approx(r.mu_sum, rel=1e-12)
        np.testing.assert_allclose(r.mu @ t.phi, p, atol=1e-10)
        if r.unique and t.rcond > 1e-6:
            # the coefficients that built the prior are recovered
            np.testing.assert_allclose(r.gamma, g, atol=1e-7)


@settings(max_examples=25)
@given(metric_spaces(min_n=2, max_n=7), epsilons, st.integers(0, 2**32 - 1))
def test_batch_agrees_with_single_tests(space, eps, seed):
    t = RegularityTester(space, epsilon=eps)
    rng = np.random.default_rng(seed)
    pri = np.vstack([sample_regular_priors(space, epsilon=eps, size=3, rng=rng), rng.dirichlet(np.ones(space.n), size=3)])
    batch = t.test_many(pri)
    for k, p in enumerate(pri):
        r = t.test(p)
        assert r.regular == batch.regular[k] and r.boundary == batch.boundary[k]
        if r.unique:
            # both solves carry the same certified error bound; they may differ by up to twice it
            np.testing.assert_allclose(r.mu, batch.mu[k], rtol=0, atol=2 * max(r.error_bound, batch.error_bound[k]))


@settings(max_examples=30)
@given(metric_spaces(min_n=2, max_n=7), epsilons, st.integers(0, 2**32 - 1))
def test_not_regular_when_mu_has_negative_entries(space, eps, seed):
    # Build π = μΦ from a μ with a clearly negative entry; when Φ is invertible that μ is the only
    # solution, so π is not regular, and the result says which entry is negative and by how much.
    t = RegularityTester(space, epsilon=eps)
    if t.nullity or t.rcond < 1e-8:
        return
    rng = np.random.default_rng(seed)
    n = space.n
    mu = rng.uniform(0.5, 1.0, n)
    k = int(rng.integers(n))
    mu[k] = -0.05
    p = mu @ t.phi
    if (p <= 0).any():
        return
    scale = p.sum()
    r = t.test(p / scale)
    assert not r.regular and r.certain
    assert k in set(r.negative.tolist())
    assert r.mu[k] == pytest.approx(-0.05 / scale, rel=1e-6)
    assert r.reason and f"μ[{k}]" in r.reason


# ---------------------------------------------------------------------------------------------
# ElSalamouny et al. 2013 Appendix B: a singular Φ
# ---------------------------------------------------------------------------------------------


def _appendix_b_space():
    """The cube 2^3 plus an edge between each pair of antipodal nodes (ElSalamouny et al. 2013 Fig 7), nodes in
    Gray-code order so that consecutive nodes are adjacent in the cube."""
    g = nx.hypercube_graph(3)
    for a in list(g.nodes):
        g.add_edge(a, tuple(1 - x for x in a))
    gray = [0, 1, 3, 2, 6, 7, 5, 4]
    nodes = [tuple(int(c) for c in format(k, "03b")) for k in gray]
    return spaces.from_graph(g, nodes=nodes)


def test_appendix_b_graph_and_dependence():
    s = _appendix_b_space()
    d = s.distances
    assert d.max() == 2  # "in the resulting graph the maximal distance is 2"
    phi = constraints_matrix(s, epsilon=math.log(3))  # α = 1/3
    # c_0 + c_2 + c_4 + c_6 = c_1 + c_3 + c_5 + c_7: one side is 1 + 3α², the other 4α, at every position
    np.testing.assert_allclose(phi[0::2].sum(axis=0), phi[1::2].sum(axis=0), atol=1e-15)
    assert set(np.round(phi[0::2].sum(axis=0), 12)) | set(np.round(phi[1::2].sum(axis=0), 12)) == {round(4 / 3, 12)}


@pytest.mark.parametrize("alpha", [0.01, 0.1, 1 / 8, 1 / 7, 0.2, 0.3, 1 / 3 - 1e-3, 1 / 3 + 1e-3, 0.5, 0.9])
def test_appendix_b_spectrum(alpha):
    # Φ = I + α A + α² (distance-2 matrix): the graph is K_{4,4}, so the eigenvalues are
    # (1+α)(1+3α) (once), (1−α)(1−3α) (once) and 1−α² (six times): Φ is invertible for every
    # α ∈ (0, 1) except 1/3 — in particular for α ≤ 1/7 as ElSalamouny et al. 2013 App. B states.
    s = _appendix_b_space()
    phi = constraints_matrix(s, epsilon=-math.log(alpha))
    lam = np.sort(np.linalg.eigvalsh(phi))
    expect = np.sort([(1 + alpha) * (1 + 3 * alpha), (1 - alpha) * (1 - 3 * alpha)] + [1 - alpha**2] * 6)
    np.testing.assert_allclose(lam, expect, atol=1e-12)
    t = RegularityTester(s, epsilon=-math.log(alpha))
    assert t.nullity == 0 and t.method != "eigh+linprog"


def test_appendix_b_singular_uniform_prior():
    s = _appendix_b_space()
    t = RegularityTester(s, epsilon=math.log(3))
    assert t.nullity == 1 and t.method == "eigh+linprog"
    r = t.test(np.full(8, 1 / 8))
    # μ = u / S + t·(±1 on the two sides), S = 1 + 4/3 + 3/9 = 8/3; every solution has Σμ = 3/8.
    assert r.regular and not r.unique and r.consistent
    assert r.mu_sum == pytest.approx(3 / 8, abs=1e-9)
    assert r.mu_sum_max == pytest.approx(3 / 8, abs=1e-9)
    assert r.residual < 1e-9 and np.all(r.mu >= -1e-9)
    assert r.gamma.sum() == pytest.approx(1.0, abs=1e-9)


def test_appendix_b_lp_decides_nonunique_solutions():
    s = _appendix_b_space()
    t = RegularityTester(s, epsilon=math.log(3))
    phi = t.phi
    # μ0 has a negative entry but μ0 + 0.05·(+1 on even, −1 on odd nodes) ≥ 0 solves the same system.
    mu0 = np.array([-0.05, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3])
    p = mu0 @ phi
    r = t.test(p / p.sum())
    assert r.regular and r.margin > 1
    np.testing.assert_allclose(r.mu @ phi, p / p.sum(), atol=1e-9)
    # Here the best any solution can do is min μ = −0.015 (at t = 0.035), in the unnormalized scale.
    mu1 = np.array([-0.05, 0.02, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3])
    p1 = mu1 @ phi
    r1 = t.test(p1 / p1.sum())
    assert not r1.regular and r1.certain and r1.consistent
    assert r1.mu.min() * p1.sum() == pytest.approx(-0.015, abs=1e-8)
    assert set(r1.negative.tolist()) == {0, 1}
    assert "non-negative" in r1.reason


def test_appendix_b_inconsistent_prior():
    s = _appendix_b_space()
    t = RegularityTester(s, epsilon=math.log(3))
    p = np.array([0.2, 0.05] * 4)  # a component along the null vector (+1 even, −1 odd)
    r = t.test(p)
    assert not r.regular and not r.consistent and r.certain
    assert np.isnan(r.mu).all() and "no solution" in r.reason


def test_nearly_singular_is_unique_with_honest_error():
    # α = 1/3 + 1e-9: Φ is invertible (λ_min ≈ −2e-9), μ unique; the error bound reflects cond(Φ).
    s = _appendix_b_space()
    t = RegularityTester(s, epsilon=-math.log(1 / 3 + 1e-9))
    assert t.nullity == 0 and t.rcond < 1e-8
    r = t.test(np.full(8, 1 / 8))
    assert r.regular and r.certain and r.unique
    assert r.error_bound > 1e-10  # far above the well-conditioned 1e-16 level
    # a prior with a component along the near-null vector needs a huge, mixed-sign μ
    r2 = t.test(np.array([0.2, 0.05] * 4))
    assert not r2.regular and r2.certain and np.abs(r2.mu).max() > 1e6


# ---------------------------------------------------------------------------------------------
# Sampling and input checking
# ---------------------------------------------------------------------------------------------


def test_sampling_is_reproducible_and_shaped():
    s = spaces.ring(5)
    a = sample_regular_priors(s, epsilon=1.0, size=4, rng=7)
    b = sample_regular_priors(s, epsilon=1.0, size=4, rng=7)
    np.testing.assert_array_equal(a, b)
    one = sample_regular_priors(s, epsilon=1.0, rng=1)
    assert one.shape == (5,)
    # concentration → ∞ concentrates γ at the barycentre of the corners
    far = sample_regular_priors(s, epsilon=1.0, size=3, rng=2, concentration=1e6)
    np.testing.assert_allclose(far, corner_priors(s, epsilon=1.0).mean(axis=0)[None, :].repeat(3, 0), atol=1e-3)


def test_bad_inputs():
    s = spaces.line(3)
    with pytest.raises(ValueError, match="expected 3"):
        regularity(s, [0.5, 0.5], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        regularity(s, [1 / 3] * 3, epsilon=0.0)
    with pytest.raises(ValueError, match="sum to 1"):
        regularity(s, [0.5, 0.5, 0.5], epsilon=1.0)
    with pytest.raises(TypeError, match="MetricSpace"):
        regularity(np.zeros((3, 3)), [1 / 3] * 3, epsilon=1.0)
    with pytest.raises(ValueError, match="columns"):
        RegularityTester(s, epsilon=1.0).test_many(np.full((2, 4), 0.25))
    with pytest.raises(ValueError, match="row 1"):
        RegularityTester(s, epsilon=1.0).test_many([[1 / 3] * 3, [0.5, 0.5, 0.5]])
    with pytest.raises(ValueError, match="size"):
        sample_regular_priors(s, epsilon=1.0, size=-1)


def test_entries_of_mu_at_rounding_level_are_not_listed_as_negative():
    """π = e_0 on line:6 at ε = 1: μ = Φ⁻¹e_0 is (1.157, −0.425, 0, 0, 0, 0) exactly (Φ⁻¹ is tridiagonal),
    but the stored Φ gave μ[5] = −2e-18, which the reason listed beside μ[1] as a negative entry."""
    r = regularity(spaces.line(6), np.array([1.0, 0, 0, 0, 0, 0]), epsilon=1.0)
    assert not r.regular and "1 negative entry of μ: μ[1] = -0.425459" in r.reason and "μ[5]" not in r.reason


def test_a_regular_prior_s_reason_says_certified_only_when_it_is():
    """A singular Φ's numerical answer said 'regular (certified)' beside certainty 'numerical'."""
    from dprivacy.priors import RegularityResult

    mu = np.array([0.2, 0.3])
    common = dict(regular=True, mu=mu, gamma=mu, mu_sum=0.5, mu_sum_max=0.5, mu_sum_error=0.0, residual=0.0,
                  error_bound=1e-12, margin=9.4e7, method="singular", rcond=1.0, nullity=1, consistent=True)
    assert RegularityResult(certainty="numerical", **common).reason.startswith("regular (verified numerically, not a proof")
    assert RegularityResult(certainty="certified", **common).reason.startswith("regular (certified)")
