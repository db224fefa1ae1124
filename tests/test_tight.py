"""Tests for the tight-constraints mechanism (ElSalamouny et al. 2014 §6) and the threshold ε* (ElSalamouny et al. 2014 §7.1)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from dprivacy.priors import constraints_matrix
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dprivacy import spaces
from dprivacy.channels import Channel
from dprivacy.queries import count_space
from dprivacy.measures import check_privacy
from dprivacy._kernels.phi_solve import solve_phi as _solve_phi
from dprivacy.mechanisms.tight import (
    TightConstraintsResult,
    ball_size_symmetric_tight,
    tight_constraints,
)
from dprivacy.spaces import MetricSpace
from dprivacy.threshold import tight_threshold


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def sum_space(u: int, v: int) -> MetricSpace:
    """Answers 0..uv of a sum query; adjacent iff |i − j| ≤ v, so d = ceil(|i − j| / v) (ElSalamouny et al. 2014 §7.1)."""
    x = np.arange(u * v + 1)
    d = np.ceil(np.abs(x[:, None] - x[None, :]) / v)
    i, j = np.nonzero(np.triu(d == 1))
    return MetricSpace(d, name=f"sum:{u},{v}", essential_pairs=(i, j))


def uniform_is_regular(phi: np.ndarray) -> bool:
    """ElSalamouny et al. 2014 Def 4 for the uniform prior, as an LP: is there μ ≥ 0 with μΦ = u?"""
    n = phi.shape[0]
    lp = linprog(np.zeros(n), A_eq=phi.T, b_eq=np.full(n, 1.0 / n), bounds=[(0, None)] * n, method="highs")
    assert lp.status in (0, 2), lp.message
    return lp.status == 0


def truncated_geometric(n: int, eps: float) -> np.ndarray:
    """H[i, j] = c_j α^{|i−j|}, α = e^{−ε}, c_j = 1/(1+α) at the two ends and (1−α)/(1+α) inside."""
    a = math.exp(-eps)
    c = np.full(n, (1 - a) / (1 + a))
    c[0] = c[-1] = 1 / (1 + a)
    if n == 1:
        c[0] = 1.0
    x = np.arange(n)
    return a ** np.abs(x[:, None] - x[None, :]) * c[None, :]


def cube_with_antipodes() -> MetricSpace:
    """ElSalamouny et al. 2013 App. B, Fig. 7: the 3-cube plus an edge between antipodal vertices."""
    g = nx.hypercube_graph(3)
    for u in list(g.nodes):
        g.add_edge(u, tuple(1 - b for b in u))
    return spaces.from_graph(g, nodes=sorted(g.nodes))


def assert_tight_mechanism(res: TightConstraintsResult, space: MetricSpace, eps: float) -> None:
    """What every existing tight-constraints mechanism must satisfy (ElSalamouny et al. 2014 Def 6, Props 6–7)."""
    assert res.exists and res.channel is not None
    h = res.channel.matrix
    phi = constraints_matrix(space, epsilon=eps)
    assert (h >= 0).all()
    np.testing.assert_allclose(h.sum(axis=1), 1.0, atol=1e-10)
    np.testing.assert_allclose(np.diag(h), res.z, rtol=1e-13, atol=0)
    np.testing.assert_allclose(phi @ np.diag(h), 1.0, atol=1e-10)  # Prop 7
    np.testing.assert_allclose(h, phi * res.z[None, :], rtol=1e-13, atol=0)  # Def 6
    priv = check_privacy(res.channel, space, epsilon=eps)  # Prop 6
    assert priv.ok
    assert priv.smallest_epsilon <= eps * (1 + 1e-9)
    Channel(h)  # a valid stochastic matrix


# ---------------------------------------------------------------------------------------------
# known mechanisms
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 8])
@pytest.mark.parametrize("eps", [0.05, 0.7, 2.5])
def test_line_is_truncated_geometric(n, eps):
    """ElSalamouny et al. 2014 §6.1: on a line (counting query) the tight-constraints mechanism is the truncated geometric."""
    sp = spaces.line(n)
    res = tight_constraints(sp, epsilon=eps)
    assert res.exists and res.decided
    np.testing.assert_allclose(res.channel.matrix, truncated_geometric(n, eps), rtol=1e-12, atol=1e-15)
    assert_tight_mechanism(res, sp, eps)


@pytest.mark.parametrize("n", [2, 3, 6])
@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("method", ["auto", "dense", "closed-form"])
def test_clique_is_randomized_response(n, eps, method):
    """A clique is ball-size symmetric; Prop 9 gives randomized response e^ε/(e^ε+n−1) on the diagonal."""
    sp = spaces.clique(n)
    res = tight_constraints(sp, epsilon=eps, method=method)
    ee = math.exp(eps)
    expected = np.where(np.eye(n, dtype=bool), ee, 1.0) / (ee + n - 1)
    np.testing.assert_allclose(res.channel.matrix, expected, rtol=1e-12)
    assert_tight_mechanism(res, sp, eps)
    # the closed form examines Φ with the same factorization as the dense solve and the regularity tester
    assert res.singular is False and res.nullity == 0
    if method != "dense":
        assert res.certainty == "closed-form"


@pytest.mark.parametrize("make", [lambda: spaces.ring(7), lambda: spaces.hamming(2, 3), cube_with_antipodes])
@pytest.mark.parametrize("eps", [0.3, 1.3])
def test_closed_form_matches_solve_on_symmetric_spaces(make, eps):
    """Prop 9's constant z = 1/Σ_r n_r e^{−εr} solves Φz = 1, so it agrees with the general solve."""
    sp = make()
    closed = ball_size_symmetric_tight(sp, epsilon=eps)
    solved = tight_constraints(sp, epsilon=eps, method="dense")
    row = sp.distances[0]
    np.testing.assert_allclose(closed.z, 1.0 / np.exp(-eps * row).sum(), rtol=1e-14)
    np.testing.assert_allclose(solved.z, closed.z, rtol=1e-10)
    assert_tight_mechanism(closed, sp, eps)


def test_closed_form_refuses_non_symmetric_space():
    with pytest.raises(ValueError, match="not ball-size symmetric"):
        ball_size_symmetric_tight(spaces.line(4), epsilon=1.0)


# ---------------------------------------------------------------------------------------------
# existence and non-existence
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, eps",
    [
        (lambda: spaces.grid(4, 3), 0.1),
        (lambda: spaces.grid(4, 3), 0.5),
        (lambda: sum_space(6, 3), 0.3),
        (lambda: spaces.grid(3, 3, metric="chebyshev"), 0.5),
    ],
)
def test_non_existence_reports_negative_entries(make, eps):
    sp = make()
    res = tight_constraints(sp, epsilon=eps)
    assert not res.exists and res.decided and res.channel is None
    idx, vals = res.negative
    assert idx.size > 0
    assert (vals < 0).all()
    np.testing.assert_array_equal(vals, res.z[idx])
    assert set(np.flatnonzero(res.z < 0)) == set(idx.tolist())
    assert res.margin < -1
    assert "does not exist" in res.reason
    phi = constraints_matrix(sp, epsilon=eps)
    np.testing.assert_allclose(phi @ res.z, 1.0, atol=1e-10)  # z is the solution, just not ≥ 0
    assert not uniform_is_regular(phi)  # Prop 8, by an independent LP


@pytest.mark.parametrize(
    "make, eps",
    [
        (lambda: spaces.grid(4, 3), 1.0),
        (lambda: sum_space(6, 3), 1.0),
        (lambda: spaces.grid(3, 3, metric="chebyshev"), 2.0),
        (lambda: spaces.grid(4, 4, metric="manhattan"), 0.2),
    ],
)
def test_existence_and_privacy(make, eps):
    sp = make()
    res = tight_constraints(sp, epsilon=eps)
    assert res.exists and res.certainty in ("certified", "closed-form") and res.margin > 1
    assert res.negative[0].size == 0
    assert_tight_mechanism(res, sp, eps)
    assert uniform_is_regular(constraints_matrix(sp, epsilon=eps))  # Prop 8


def test_uniform_prior_regularity_certificate():
    """Prop 8's proof: μ = z / n satisfies μΦ = u, μ ≥ 0."""
    sp = sum_space(5, 2)
    res = tight_constraints(sp, epsilon=1.5)
    assert res.exists
    mu = res.z / sp.n
    np.testing.assert_allclose(mu @ constraints_matrix(sp, epsilon=1.5), np.full(sp.n, 1 / sp.n), atol=1e-12)


def test_exact_method_agrees_with_truncated_geometric():
    res = tight_constraints(spaces.line(6), epsilon=0.4, method="exact")
    assert res.certainty == "exact" and res.error_bound == 0.0
    np.testing.assert_allclose(res.channel.matrix, truncated_geometric(6, 0.4), rtol=1e-14)


# ---------------------------------------------------------------------------------------------
# singular Φ (ElSalamouny et al. 2013 App. B)
# ---------------------------------------------------------------------------------------------


def test_appendix_b_singular_phi():
    """At e^{−ε} = 1/3 the rows satisfy c0+c2+c4+c6 = c1+c3+c5+c7 (parity classes), so Φ is singular;
    Φz = 1 is still consistent and z = 3/8·1 (Prop 9: 1/(1 + 4/3 + 3/9)) is a non-negative solution."""
    sp = cube_with_antipodes()
    eps = math.log(3)
    phi = constraints_matrix(sp, epsilon=eps)
    parity = np.array([(-1) ** sum(v) for v in sp.labels], dtype=float)
    np.testing.assert_allclose(phi @ parity, 0.0, atol=1e-14)  # the paper's dependence relation
    res = tight_constraints(sp, epsilon=eps, method="dense")
    assert res.singular is True and res.nullity == 1
    assert res.exists and res.method == "eigh+linprog"
    assert (res.z >= 0).all()
    np.testing.assert_allclose(phi @ res.z, 1.0, atol=1e-12)
    assert_tight_mechanism(res, sp, eps)
    # the auto path uses Prop 9 and describes Φ as the dense solve does (one factorization, one nullity)
    auto = tight_constraints(sp, epsilon=eps)
    assert auto.certainty == "closed-form" and auto.nullity == 1 and auto.singular is True
    np.testing.assert_allclose(auto.z, 3 / 8, rtol=1e-14)
    # away from α = 1/3 the same Φ is invertible
    other = tight_constraints(sp, epsilon=2.0, method="dense")
    assert other.singular is False and other.nullity == 0


def test_singular_inconsistent_system():
    """Φ = [[1, .5], [.5, .25]] has kernel (1, −2) and 1 is not in its column space: no solution."""
    sol = _solve_phi(np.array([[1.0, 0.5], [0.5, 0.25]]))
    assert sol.status == "inconsistent" and sol.nullity == 1 and sol.singular


def test_singular_consistent_with_non_negative_solutions():
    """Solutions (t, 1 − t, 1): non-negative for t in [0, 1]; a one-dimensional solution set."""
    phi = np.array([[1.0, 1, 0], [1, 1, 0], [0, 0, 1]])
    sol = _solve_phi(phi)
    assert sol.status == "exists" and sol.nullity == 1
    assert (sol.x >= 0).all()
    np.testing.assert_allclose(phi @ sol.x, 1.0, atol=1e-12)


def test_singular_consistent_but_every_solution_negative():
    """z1 + 2s = 1 and 2z1 + 3s = 1 with s = z2 + z3 force z1 = −1: no non-negative solution."""
    phi = np.array([[1.0, 2, 2], [2, 3, 3], [2, 3, 3]])
    sol = _solve_phi(phi)
    assert sol.status == "absent" and sol.nullity == 1
    assert sol.x[0] == pytest.approx(-1.0)


# ---------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------


def test_bad_input():
    sp = spaces.line(3)
    with pytest.raises(ValueError, match="epsilon"):
        tight_constraints(sp, epsilon=-1.0)
    with pytest.raises(TypeError, match="MetricSpace"):
        tight_constraints(np.zeros((3, 3)), epsilon=1.0)
    with pytest.raises(ValueError, match="method"):
        tight_constraints(sp, epsilon=1.0, method="magic")
    with pytest.raises(ValueError, match="exact"):
        tight_constraints(spaces.line(50), epsilon=1.0, method="exact")


# ---------------------------------------------------------------------------------------------
# property-based: random graph metrics and Euclidean point sets
# ---------------------------------------------------------------------------------------------


@st.composite
def graph_spaces(draw):
    n = draw(st.integers(2, 8))
    order = draw(st.permutations(range(n)))
    edges = [(order[k], order[draw(st.integers(0, k - 1))]) for k in range(1, n)]  # a random tree
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=10))
    edges += [(a, b) for a, b in extra if a != b]
    return spaces.from_graph(edges, nodes=list(range(n)))


@st.composite
def point_spaces(draw):
    n = draw(st.integers(2, 7))
    pts = draw(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=n, max_size=n, unique=True))
    p = np.array(pts, dtype=float)
    return spaces.from_matrix(np.hypot(*(p[:, None, :] - p[None, :, :]).transpose(2, 0, 1)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sp=st.one_of(graph_spaces(), point_spaces()), eps=st.floats(0.05, 3.0))
def test_random_spaces(sp, eps):
    res = tight_constraints(sp, epsilon=eps, method="dense")
    assume(res.decided)
    phi = constraints_matrix(sp, epsilon=eps)
    if res.exists:
        assert_tight_mechanism(res, sp, eps)
    else:
        assert res.channel is None
        if not res.singular:
            assert res.negative[0].size > 0 and (res.negative[1] < 0).all()
    if not res.singular:
        exact = tight_constraints(sp, epsilon=eps, method="exact")
        assert exact.exists == res.exists
        np.testing.assert_allclose(exact.z, res.z, rtol=1e-9, atol=1e-12)
    # Prop 8 against an independent LP, unless min z is so close to 0 that the LP's tolerance decides
    if abs(res.min_z) > 1e-6:
        assert uniform_is_regular(phi) == res.exists


# ---------------------------------------------------------------------------------------------
# threshold ε*
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda: sum_space(8, 3), lambda: spaces.grid(4, 4), lambda: spaces.grid(5, 3, metric="chebyshev")])
def test_threshold_bracket_is_certified(make):
    sp = make()
    tol = 1e-4
    r = tight_threshold(sp, tol=tol, scan=8)
    assert r.certified and not r.always_exists
    lo, hi = r.bracket
    assert 0 < hi - lo <= tol and r.epsilon_star == hi
    at_lo = tight_constraints(sp, epsilon=lo, method="dense")
    at_hi = tight_constraints(sp, epsilon=hi, method="dense")
    assert not at_lo.exists and at_lo.decided
    assert at_hi.exists and at_hi.decided
    assert r.solves == len(r.probes) > 0
    # every scanned ε above hi that is not listed as a failure is one where the mechanism exists
    mono = r.monotone_checked
    # (8 per factor 3 above hi, up to where Φ is diagonally dominant and existence is certain)
    assert mono.epsilons.size >= 8 and (mono.epsilons > hi).all()
    failed = {e for e, _ in mono.failures} | set(mono.undecided)
    for e in mono.epsilons[::3]:
        assert tight_constraints(sp, epsilon=float(e), method="dense").exists == (float(e) not in failed)


def test_threshold_agrees_with_a_scan_at_001_steps():
    """The paper's procedure (smallest ε on a 0.01 grid with existence) against the bracket."""
    sp = sum_space(8, 3)
    r = tight_threshold(sp, tol=1e-4, scan=0)
    grid = np.round(np.arange(0.30, 1.01, 0.01), 2)
    exists = [tight_constraints(sp, epsilon=float(e)).exists for e in grid]
    first = grid[exists.index(True)]
    assert first - 0.01 < r.epsilon_star <= first + 1e-12
    assert all(exists[exists.index(True):])  # existence persists above, on this space


def test_threshold_symmetric_space_needs_no_solve():
    r = tight_threshold(spaces.ring(8))
    assert r.always_exists and r.epsilon_star == 0.0 and r.solves == 0 and r.bracket is None


def test_threshold_line_has_no_lower_end():
    """The truncated geometric is tight-constraints for every ε (ElSalamouny et al. 2014 §6.1): the closed form says
    ε* = 0; the bracketing search on a line whose metric is not recognised as a path finds no certified lo."""
    r = tight_threshold(spaces.line(10), scan=4)
    assert r.certified and r.epsilon_star == 0.0 and r.always_exists
    # the same line without coordinates is recognised from its metric; searched densely, no lower end is found
    anon = spaces.from_matrix(spaces.line(10).distances)
    assert tight_threshold(anon, scan=4).always_exists
    r = tight_threshold(anon, scan=4, method="dense")
    assert not r.certified and r.bracket[0] is None
    assert tight_constraints(anon, epsilon=r.epsilon_star).exists


def test_threshold_bad_bracket():
    sp = sum_space(8, 3)
    with pytest.raises(ValueError, match="lo=2"):
        tight_threshold(sp, lo=2.0)
    with pytest.raises(ValueError, match="hi=0.1"):
        tight_threshold(sp, hi=0.1)
    with pytest.raises(ValueError, match="below"):
        tight_threshold(sp, lo=1.0, hi=0.5)
    r = tight_threshold(sp, lo=0.3, hi=1.0, tol=1e-3, scan=0)
    assert r.certified and 0.3 <= r.bracket[0] < r.bracket[1] <= 1.0


@pytest.mark.parametrize("make", [lambda: spaces.line(9), lambda: spaces.line(6, step=2.5),
                                  lambda: spaces.grid(5, 4, metric="manhattan"), lambda: spaces.grid(3, 6, metric="manhattan", step=0.5)])
@pytest.mark.parametrize("eps", [0.05, 0.7, 3.0])
def test_closed_forms_for_lines_and_manhattan_grids_solve_phi(make, eps):
    """The Kac–Murdock–Szegő closed form (line) and its Kronecker product (Manhattan grid) solve Φz = 1
    with z > 0, agree with the dense certified solve, and give the truncated geometric on a line."""
    sp = make()
    res = tight_constraints(sp, epsilon=eps)
    assert res.method == "closed-form" and res.exists and (res.z > 0).all()
    phi = constraints_matrix(sp, epsilon=eps)
    assert np.abs(phi @ res.z - 1).max() < 1e-13
    dense = tight_constraints(sp, epsilon=eps, method="dense")
    assert dense.exists and np.allclose(dense.z, res.z, rtol=1e-9, atol=1e-12)
    if sp.coordinates.shape[1] == 1:
        from dprivacy.mechanisms.geometric import truncated_geometric

        assert np.abs(res.mechanism.matrix - truncated_geometric(sp, epsilon=eps).matrix).max() < 1e-14


@pytest.mark.parametrize("make", [lambda: spaces.line(30), lambda: count_space(50), lambda: spaces.grid(12, 7, metric="manhattan")])
def test_threshold_is_zero_on_lines_and_manhattan_grids(make):
    from dprivacy.threshold import tight_threshold

    sp = make()
    r = tight_threshold(sp)
    assert r.epsilon_star == 0.0 and r.always_exists and r.certified
    # and the mechanism exists at a tiny ε, where a dense solve of Φz = 1 is hopeless (κ(Φ) ~ 1/ε^2)
    assert tight_constraints(sp, epsilon=1e-6).exists


def test_above_the_inverse_limit_a_decision_is_only_verified_numerically(monkeypatch):
    """ElSalamouny et al. 2014 Prop 7 decided with LAPACK's condition estimate is not certified: above INVERSE_LIMIT
    points the result says "estimated" and the mechanism's certificate is not rigorous."""
    import dprivacy._kernels.phi_solve as phi_solve
    import dprivacy.mechanisms.tight as tight
    from dprivacy import spaces

    sp = spaces.from_matrix(np.abs(np.subtract.outer(np.arange(7.0), np.arange(7.0))) ** 0.5)
    exact = tight.tight_constraints(sp, epsilon=1.3, method="dense")
    assert exact.certainty == "certified" and exact.mechanism.certificate.rigorous
    monkeypatch.setattr(phi_solve, "INVERSE_LIMIT", 3)
    est = tight.tight_constraints(sp, epsilon=1.3, method="dense")
    assert est.exists == exact.exists and est.certainty == "estimated" and "verified numerically" in est.reason
    assert not est.mechanism.certificate.rigorous


def test_regularity_beyond_the_exact_inverse_norm_is_estimated(monkeypatch):
    import dprivacy._kernels.phi_solve as phi_solve
    import dprivacy.priors as priors
    from dprivacy import spaces

    sp = spaces.line(6)
    p = np.linspace(1, 2, 6)
    p /= p.sum()
    assert priors.regularity(sp, p, epsilon=1.0).certainty == "certified"
    monkeypatch.setattr(phi_solve, "INVERSE_LIMIT", 3)  # one limit for every caller of the shared solve
    assert priors.regularity(sp, p, epsilon=1.0, method="dense").certainty == "estimated"
    assert priors.regularity(sp, np.full(6, 1 / 6), epsilon=1.0, method="dense").certainty == "estimated"


# ---------------------------------------------------------------------------------------------
# a mechanism whose float64 matrix underflows is kept in log space
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("space", [count_space(1000), spaces.ring(1600), spaces.clique(40, distance=800.0)],
                         ids=["count:1000", "ring:1600", "clique:40 at distance 800"])
def test_the_mechanism_of_an_underflowing_channel_is_private_as_held(space):
    # ε·d reaches 800–999: e^{−εd} underflows to 0 beside positive entries, so the stored float64 matrix
    # fails the check although the mechanism is private (the certificate said ok, the check said no)
    r = tight_constraints(space, epsilon=1.0)
    assert r.exists
    assert not check_privacy(r.channel, space, epsilon=1.0).ok
    m = r.mechanism
    assert not m.is_dense and m.certificate.ok
    check = check_privacy(m, space, epsilon=1.0)
    assert check.ok and check.smallest_epsilon == pytest.approx(1.0, abs=1e-9)
    # the log-entries are exact where the float ones are 0: log H[y, w] = −ε d(y, w) + log z_w
    lg = m.log_rows(np.array([0]))[0]
    far = int(np.argmax(space.distances[0]))
    assert np.isfinite(lg[far]) and lg[far] == pytest.approx(-space.distances[0, far] + math.log(r.z[far]), rel=1e-14)
    # measures agree with the dense matrix (the underflowed entries are below any prior's weight)
    prior = np.random.default_rng(3).dirichlet(np.ones(space.n))
    from dprivacy import min_entropy_leakage, utility

    assert utility(m, prior).value == pytest.approx(utility(r.channel, prior).value, rel=1e-12)
    assert min_entropy_leakage(m, prior) == pytest.approx(min_entropy_leakage(r.channel, prior), rel=1e-12)
    # sampling: the quantised rows mix in the uniform distribution, which keeps privacy (mediant inequality)
    s = m.exact_sampler
    assert s.gamma > 0 and s.delivered_epsilon <= 1.0 + 1e-9


def test_a_channel_that_does_not_underflow_stays_dense():
    m = tight_constraints(spaces.ring(30), epsilon=1.0).mechanism
    assert m.is_dense and check_privacy(m.channel, spaces.ring(30), epsilon=1.0).ok


@pytest.mark.parametrize("step", [1e-10, 1e-3, 1e6])
def test_answers_do_not_depend_on_the_unit_of_distance(step):
    """Found by a review: distances were compared within 1e-9·max(d, 1), so every distance of grid:3x3:step=1e-10
    was 'equal': the grid passed for ball-size symmetric, threshold said 'exists for every ε' (ε* is 8.78e9) and
    design returned a 'certified' closed form whose rows summed to 0.48–0.60. Scaling d by s scales ε by 1/s."""
    base = spaces.grid(3, 3)
    scaled = spaces.grid(3, 3, step=step)
    for eps in (0.5, 1.0, 3.0):
        a, b = tight_constraints(base, epsilon=eps), tight_constraints(scaled, epsilon=eps / step)
        assert a.exists == b.exists and a.certainty == b.certainty
        np.testing.assert_allclose(a.z, b.z, rtol=1e-9)
    ta, tb = tight_threshold(base), tight_threshold(scaled)
    assert tb.epsilon_star == pytest.approx(ta.epsilon_star / step, rel=1e-3)
    from dprivacy.graphs import distance_counts

    assert not distance_counts(scaled).symmetric


def test_tiny_distances_that_break_the_metric_axioms_are_refused():
    with pytest.raises(ValueError, match="symmetric"):
        MetricSpace(np.array([[0.0, 1e-10], [2e-10, 0.0]]))
    d = np.array([[0, 1e-10, 3e-10], [1e-10, 0, 1e-10], [3e-10, 1e-10, 0]])  # 3e-10 > 1e-10 + 1e-10
    assert not MetricSpace(d, validate=False).check_triangle().ok


def test_a_tolerance_below_the_float_spacing_ends_at_adjacent_floats():
    """Found by a review: threshold --tol 1e-16 on grid:3x3 (ε* ≈ 0.88, float spacing 1.1e-16) never ended."""
    r = tight_threshold(spaces.grid(3, 3), tol=1e-16)
    lo, hi = r.bracket
    assert np.nextafter(lo, np.inf) == hi and not r.certified and "adjacent floats" in r.reason


def test_a_path_read_from_a_file_is_recognised_as_a_line(tmp_path):
    """Found by a review: `threshold graph:path.txt` and a matrix file of line:3 gave no ε* where line:3 says the
    mechanism exists for every ε (the closed form was only tried on spaces with coordinates)."""
    d = np.abs(np.subtract.outer(np.arange(5.0), np.arange(5.0)))[np.ix_([3, 0, 4, 1, 2], [3, 0, 4, 1, 2])]
    space = MetricSpace(d)  # a line, its points shuffled, no coordinates
    r = tight_constraints(space, epsilon=1.0)
    assert r.certainty == "closed-form" and r.exists
    np.testing.assert_allclose(r.z, tight_constraints(spaces.line(5), epsilon=1.0).z[[3, 0, 4, 1, 2]], rtol=1e-12)
    assert tight_threshold(space).always_exists
    assert not tight_threshold(spaces.ring(7)).epsilon_star  # a cycle is no line: ball-size symmetric, exists always


def test_the_threshold_search_reaches_below_the_smallest_distance_scale():
    """Found by a review: a 3×3 grid with a twin of its centre at 1e-6 (ε* about 1) was searched down to
    (1/1e-6)/512 = 1953 only, and got no ε*."""
    c = np.array([[i % 3, i // 3] for i in range(9)] + [[1 + 1e-6, 1]], dtype=float)
    space = MetricSpace(np.sqrt(((c[:, None, :] - c[None, :, :]) ** 2).sum(-1)))
    r = tight_threshold(space)
    lo, hi = r.bracket
    assert r.certified and hi < 10
    assert not tight_constraints(space, epsilon=lo).exists and tight_constraints(space, epsilon=hi).exists


def test_threshold_is_above_a_gap_of_non_existence_that_a_short_scan_missed(tmp_path):
    """Found by a review: on a 7-node graph the mechanism exists at ε = 0.001-0.003 and 0.9 but not at 0.6-0.8;
    the threshold said ε* ≤ 0.00098 because its scan only covered (hi, 3·hi]. The scan now reaches the ε where
    Φ is diagonally dominant (existence certain beyond), and ε* is bracketed above the last failure."""
    from dprivacy.cli.specs import parse_space
    from dprivacy.threshold import _dominance_epsilon

    (tmp_path / "g2.txt").write_text("0 3\n0 4\n0 6\n1 2\n1 3\n1 4\n2 3\n2 4\n2 6\n3 5\n4 5\n5 6\n")
    sp = parse_space(f"graph:{tmp_path / 'g2.txt'}")
    for e, exists in ((0.002, True), (0.7, False), (0.9, True)):
        assert tight_constraints(sp, epsilon=e, method="dense").exists is exists
    r = tight_threshold(sp, tol=1e-4)
    lo, hi = r.bracket
    assert 0.8 < lo < hi <= lo + 1e-4 < 0.9 and "NOT monotone" in r.reason
    assert not tight_constraints(sp, epsilon=lo, method="dense").exists
    # above the dominance ε existence is certain: spot-check it
    top = _dominance_epsilon(sp.distances)
    for e in np.geomspace(top, 100 * top, 7):
        assert tight_constraints(sp, epsilon=float(e), method="dense").exists


@pytest.mark.parametrize("eps", [1e-14, 1e-100, 1e-300])
def test_a_phi_that_is_all_ones_to_working_precision_leaves_existence_undecided(eps):
    """Found by a review: on grid:3x3 non-existence is certified at ε = 1e-12 (z[4] = −0.256), but from 1e-14 on Φ
    is 11ᵀ to working precision and the linear program on its null space returned the constant channel as an
    existing mechanism ("numerical"), although z tends to D⁻¹1/(1ᵀD⁻¹1), negative at the centre, as ε → 0."""
    g = spaces.grid(3, 3)
    r = tight_constraints(g, epsilon=eps, method="dense")
    assert not r.exists and r.certainty == "undecided" and not r.decided
    w = np.linalg.solve(g.distances, np.ones(9))
    assert (w / w.sum()).min() < 0 and "whose smallest entry is" in r.reason and "negative" in r.reason
    assert tight_constraints(g, epsilon=1e-12, method="dense").decided  # where float64 still decides, it does
