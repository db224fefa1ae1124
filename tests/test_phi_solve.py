"""One certified solve of Φx = b behind three front doors (dprivacy._kernels.phi_solve, _kernels.solve).

ElSalamouny et al. 2014 Prop 8: a tight-constraints mechanism exists iff the uniform prior is ε·d-regular, with
z = |Y|·μ. The library must give this by construction — the same system, the same instructions — on
every path (dense, exact fallback, singular Φ, closed forms, grids), not by two solvers whose tolerances
happen to agree. Also: one description of a singular Φ (ElSalamouny et al. 2013 App. B), one corner test (ElSalamouny et al. 2014
Def 5) for dense spaces and grids, and honest certainty words.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import metric_spaces
from dprivacy import spaces
from dprivacy._kernels import phi_solve
from dprivacy._kernels.closed_form import manhattan_diagonal
from dprivacy._kernels.regularity import regularity_grid
from dprivacy._kernels.solve import tight_constraints_grid
from dprivacy.mechanisms.tight import tight_constraints
from dprivacy.priors import RegularityTester, constraints_matrix, corner_priors, regularity
from dprivacy.spaces import GridSpace, MetricSpace
from dprivacy.threshold import tight_threshold


def sum_space(u: int, v: int) -> MetricSpace:
    x = np.arange(u * v + 1)
    return MetricSpace(np.ceil(np.abs(x[:, None] - x[None, :]) / v), name=f"sum:{u},{v}")


def k44() -> MetricSpace:
    """K_{4,4}: the cube with antipodal edges of ElSalamouny et al. 2013 App. B is this graph; Φ is singular at e^{−ε} = 1/3."""
    return spaces.from_graph(nx.complete_bipartite_graph(4, 4))


def assert_prop8(t, r, n):
    """The tight-constraints result t and the regularity result r of the uniform prior are one decision."""
    assert r.regular == t.exists
    assert r.certainty == t.certainty and r.nullity == t.nullity
    assert r.margin == t.margin or (math.isnan(r.margin) and math.isnan(t.margin))
    if getattr(t, "consistent", True):
        np.testing.assert_array_equal(r.mu, t.z * (1.0 / n))  # z = |Y|·μ, bit for bit


# ---------------------------------------------------------------------------------------------
# Prop 8 by construction
# ---------------------------------------------------------------------------------------------


@settings(max_examples=40)
@given(metric_spaces(min_n=1, max_n=8), st.floats(0.05, 4.0))
def test_prop8_holds_by_construction_on_dense_spaces(space, eps):
    n = space.n
    u = np.full(n, 1.0 / n)
    for method in ("auto", "dense"):
        t = tight_constraints(space, epsilon=eps, method=method)
        r = regularity(space, u, epsilon=eps, method=method)
        assert_prop8(t, r, n)
    # The tester, which never goes through tight_constraints, runs the same kernel on the same system
    # (π / max π is the vector of ones exactly): the same float decision, bit for bit.
    # (Only a one-point space makes the uniform prior a corner, which the tester recognises first.)
    t = tight_constraints(space, epsilon=eps, method="dense")
    r = RegularityTester(space, epsilon=eps).test(u)
    assert r.regular == t.exists and r.nullity == t.nullity
    assert r.certainty == t.certainty or (n == 1 and r.method == "corner")
    if not t.singular and t.certainty != "exact" and n > 1:
        np.testing.assert_array_equal(r.mu, t.z * (1.0 / n))
        assert r.margin == pytest.approx(t.margin, rel=1e-12)  # (two routes, rounded apart by an ulp)


@pytest.mark.parametrize("eps_kind", ["lo", "hi"])
def test_prop8_at_the_ends_of_a_certified_threshold_bracket(eps_kind):
    """Where existence is hardest to decide — at the ends of the threshold bracket — the threshold probe,
    tight-constraints and the regularity of the uniform prior give one answer."""
    sp = sum_space(8, 3)
    th = tight_threshold(sp, tol=1e-6, scan=0)
    lo, hi = th.bracket
    eps = lo if eps_kind == "lo" else hi
    t = tight_constraints(sp, epsilon=eps)
    r = regularity(sp, np.full(sp.n, 1 / sp.n), epsilon=eps)
    assert t.exists == (eps_kind == "hi") and t.decided
    assert_prop8(t, r, sp.n)
    tester = RegularityTester(sp, epsilon=eps).test(np.full(sp.n, 1 / sp.n))
    assert tester.regular == t.exists and tester.margin == t.margin


@pytest.mark.parametrize("metric", ["euclidean", "chebyshev", "manhattan"])
@pytest.mark.parametrize("eps", [0.5, 0.9, 2.0])
def test_prop8_holds_by_construction_on_grids(metric, eps):
    grid = GridSpace(13, 11, metric=metric)
    u = np.full(grid.n, 1.0 / grid.n)
    t = tight_constraints_grid(grid, epsilon=eps)
    r = regularity_grid(grid, u, epsilon=eps)  # the kernel itself, not the front door's routing
    assert r.regular == t.exists and r.certainty == t.certainty and r.margin == t.margin
    np.testing.assert_array_equal(r.mu, t.z * (1.0 / grid.n))
    for method in ("auto", "structured", "dense"):
        assert_prop8(tight_constraints(grid, epsilon=eps, method=method),
                     regularity(grid, u, epsilon=eps, method=method), grid.n)


def test_prop8_on_closed_forms_at_tiny_epsilon():
    """A line and a Manhattan grid have z > 0 in closed form for every ε; at ε = 1e-6 a solve of Φ could
    not decide (κ(Φ) ~ 1/ε²), yet the uniform prior is regular: the regularity front door says so too."""
    for sp in (spaces.line(30), spaces.grid(12, 9, metric="manhattan"), spaces.grid(150, 150, metric="manhattan")):
        t = tight_constraints(sp, epsilon=1e-6)
        r = regularity(sp, np.full(sp.n, 1 / sp.n), epsilon=1e-6)
        assert t.exists and t.certainty == "closed-form"
        assert_prop8(t, r, sp.n)


# ---------------------------------------------------------------------------------------------
# Singular Φ: one description (ElSalamouny et al. 2013 App. B)
# ---------------------------------------------------------------------------------------------


def test_k44_singular_phi_is_described_identically_everywhere():
    sp, eps = k44(), math.log(3)
    u = np.full(8, 1 / 8)
    answers = [tight_constraints(sp, epsilon=eps), tight_constraints(sp, epsilon=eps, method="dense"),
               regularity(sp, u, epsilon=eps), regularity(sp, u, epsilon=eps, method="dense"),
               RegularityTester(sp, epsilon=eps).test(u)]
    assert {a.nullity for a in answers} == {1}
    assert RegularityTester(sp, epsilon=eps).nullity == 1 == phi_solve.PhiFactor(constraints_matrix(sp, epsilon=eps)).nullity
    phrase = phi_solve.describe_singular(1)
    assert phrase in answers[0].reason and phrase in answers[1].reason
    # the singular path is verified numerically, not certified (the closed form is a theorem)
    assert answers[1].certainty == "numerical" and answers[4].certainty == "numerical"
    assert answers[0].certainty == "closed-form"
    assert all(bool(a) for a in answers)
    # every non-negative solution of μΦ = u has Σμ = 3/8 (the Thm 2 bound)
    assert answers[4].mu_sum == pytest.approx(3 / 8) and answers[4].mu_sum_max == pytest.approx(3 / 8)


def test_singular_lp_path_is_not_called_certified():
    sp, eps = k44(), math.log(3)
    t = RegularityTester(sp, epsilon=eps)
    phi = t.phi
    mu0 = np.array([0.05, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3])
    p = mu0 @ phi
    r = t.test(p / p.sum())
    assert r.regular and r.method == "eigh+linprog" and r.certainty == "numerical"
    assert r.certainty not in phi_solve.RIGOROUS


# ---------------------------------------------------------------------------------------------
# Corner priors: one test for dense spaces and grids (ElSalamouny et al. 2014 Def 5)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("w,h,metric", [(5, 5, "euclidean"), (20, 20, "euclidean"), (17, 9, "chebyshev"),
                                        (20, 20, "manhattan")])
def test_corner_priors_are_regular_on_every_path(w, h, metric):
    grid = GridSpace(w, h, metric=metric)
    eps = 1.0
    c = corner_priors(grid, epsilon=eps)
    row_sums = constraints_matrix(grid, epsilon=eps).sum(axis=1)
    for y in (0, w + 1, grid.n // 2, grid.n - 1):
        for method in ("dense", "structured"):
            r = regularity(grid, c[y], epsilon=eps, method=method)
            assert r.regular and r.method == "corner" and r.certainty == "exact", (method, r.reason)
            assert r.mu[y] == pytest.approx(1 / row_sums[y], rel=1e-12) and np.count_nonzero(r.mu) == 1
            assert r.gamma[y] == 1.0 and r.boundary


def test_boundary_priors_are_undecided_not_certified():
    """A mixture of two corners lies on the boundary of the region (μ has n − 2 exact zeros): neither the
    dense tester (n > EXACT_LIMIT, so no rational re-solve) nor the grid solver can decide, and neither
    calls that "certified"."""
    grid = GridSpace(7, 7)
    eps = 1.2
    c = corner_priors(grid, epsilon=eps)
    p = 0.5 * c[3] + 0.5 * c[40]
    for method in ("dense", "structured"):
        r = regularity(grid, p, epsilon=eps, method=method)
        if r.certainty == "undecided":
            assert not r.regular and r.boundary and r.reason.startswith("undecided")
        else:  # rounding put the prior certainly on one side; then the answer is certified and says so
            assert r.certain and r.certainty in phi_solve.RIGOROUS and not r.boundary


# ---------------------------------------------------------------------------------------------
# Front doors on large grids
# ---------------------------------------------------------------------------------------------


def test_large_manhattan_grid_takes_the_closed_form():
    grid = GridSpace(200, 200, metric="manhattan")
    t = tight_constraints(grid, epsilon=1.0)
    assert t.exists and t.method == "closed-form" and t.certainty == "closed-form" and t.nullity == 0
    np.testing.assert_array_equal(t.z, manhattan_diagonal(grid, 1.0))
    assert t.residual < 1e-12 and t.mechanism is not None and t.mechanism.certificate.rigorous
    r = regularity(grid, np.full(grid.n, 1 / grid.n), epsilon=1.0)
    assert r.regular and r.certainty == "closed-form"
    assert tight_threshold(grid).epsilon_star == 0.0


def test_method_arguments_are_checked():
    with pytest.raises(ValueError, match="method"):
        tight_threshold(sum_space(3, 2), method="fast")
    with pytest.raises(ValueError, match="grid"):
        tight_threshold(sum_space(3, 2), method="structured")
    with pytest.raises(ValueError, match="grid"):
        regularity(sum_space(3, 2), np.full(7, 1 / 7), epsilon=1.0, method="structured")


@pytest.mark.parametrize("metric", ["euclidean", "chebyshev"])
def test_threshold_methods_agree(metric):
    grid = GridSpace(9, 8, metric=metric)
    d = tight_threshold(grid, method="dense", tol=1e-4, scan=0)
    s = tight_threshold(grid, method="structured", tol=1e-4, scan=0)
    assert d.certified and s.certified
    assert d.bracket[0] < s.bracket[1] and s.bracket[0] < d.bracket[1]
