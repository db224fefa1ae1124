"""Tests for dprivacy.mechanisms.optimal: the optimal ε·d-private mechanism by linear programming.

Expected values come from the papers (Alvim et al. 2015 Tables 1 and 2), from closed forms of the theory
(ElSalamouny et al. 2014 Thm 2 / Thm 4: Σμ for d-regular priors when a tight-constraints mechanism exists; Chatzikokolakis et al. 2013
Thm 10: the truncated geometric mechanism is optimal on a line for monotone losses), or from a short
derivation written next to the assertion. None was produced by the code under test.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from dprivacy.priors import constraints_matrix
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

from dprivacy import spaces
from dprivacy.channels import Channel
from dprivacy.measures import check_privacy, expected_loss, prior_vulnerability, utility
from dprivacy.mechanisms.optimal import (
    OptimalResult,
    privacy_constraints,
    private_lift,
)
from dprivacy.mechanisms.optimal import optimal_mechanism as _optimal_mechanism


def optimal_mechanism(*args, **kwargs):
    """The linear program itself: these tests check the LP against the theory, so the shortcut that
    ``method="auto"`` takes on a line (Chatzikokolakis et al. 2013 Thm 8, tested in test_lp_engine.py) is not used."""
    kwargs.setdefault("method", "full")
    return _optimal_mechanism(*args, **kwargs)

LN2 = math.log(2.0)
#: HiGHS solves to a feasibility/optimality tolerance of about 1e-7; compare LP values with this.
LP_TOL = 1e-7


# ---------------------------------------------------------------------------------------------
# Helpers built from the papers' formulas (independent of the module under test)
# ---------------------------------------------------------------------------------------------


def tight_constraints(space, eps):
    """ElSalamouny et al. 2014 Def 6 / Prop 7: H = Φ diag(z) with Φ z = 1; returns (H, z)."""
    phi = constraints_matrix(space, epsilon=eps)
    z = np.linalg.solve(phi, np.ones(space.n))
    return phi * z[None, :], z


def corner_mixture(space, eps, gamma):
    """ElSalamouny et al. 2014 Prop 3: π = Σ γ_y c^y with corner priors c^y = Φ_y / Σ_y' φ_yy'; returns (π, μ) where
    μ_y = γ_y / Σ_y' φ_yy' satisfies μΦ = π, μ ≥ 0."""
    phi = constraints_matrix(space, epsilon=eps)
    rows = phi.sum(axis=1)
    corners = phi / rows[:, None]
    pi = gamma @ corners
    return pi / pi.sum(), gamma / rows / pi.sum()


def truncated_geometric(n, eps, step=1.0):
    """TG_ε on q[0..k] (Chatzikokolakis et al. 2013 Fig. 2 (iv)): H[y, z] = λ(z) e^{−ε q |y−z|}, with
    λ = e^{qε}/(e^{qε}+1) at the two ends and (e^{qε}−1)/(e^{qε}+1) inside."""
    a = math.exp(-eps * step)
    lam = np.full(n, (1 - a) / (1 + a))
    lam[[0, -1]] = 1 / (1 + a)
    idx = np.arange(n)
    return lam[None, :] * a ** np.abs(idx[:, None] - idx[None, :])


@st.composite
def random_metric(draw, n_min=2, n_max=6, allow_infinite=True):
    """Shortest-path metric of a random weighted graph with small integer weights (so that many pairs
    are implied through a third point); disconnected graphs give an extended metric (d = ∞)."""
    n = draw(st.integers(n_min, n_max))
    w = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            w[i, j] = w[j, i] = draw(st.sampled_from([0, 1, 1, 2, 3, 5]))
    d = csgraph.shortest_path(w, directed=False)
    if not allow_infinite:
        assume(np.isfinite(d).all())
    return spaces.from_matrix(d)


def dirichlet(draw, n):
    g = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=n, max_size=n)))
    return g / g.sum()


# ---------------------------------------------------------------------------------------------
# Exact cases from the papers
# ---------------------------------------------------------------------------------------------


def test_seed001_table1_clique6_ln2_uniform_is_two_sevenths():
    # Alvim et al. 2015 Example 30 / Table 1 (b): clique of 6 answers, ε = ln 2, U(M2) = 2/7 is optimal for the
    # uniform prior (Thm 27/28: 1 / Σ_d n_d e^{−εd} = 1 / (1 + 5/2)).
    r = optimal_mechanism(spaces.clique(6), np.full(6, 1 / 6), epsilon=LN2)
    assert r.solved and r.status == 0
    assert r.value == pytest.approx(2 / 7, abs=1e-9)
    assert r.objective == pytest.approx(2 / 7, abs=1e-9)
    assert r.private and r.smallest_epsilon <= LN2 + 1e-9


def test_seed001_table2_ring6_ln2_uniform_is_eight_21sts():
    # Alvim et al. 2015 Example 31 / Table 2 (b): ring of 6, ε = ln 2, 1 / (1 + 2/2 + 2/4 + 1/8) = 8/21.
    r = optimal_mechanism(spaces.ring(6), np.full(6, 1 / 6), epsilon=LN2)
    assert r.value == pytest.approx(8 / 21, abs=1e-9)


def test_seed001_table2_line6_ln2_uniform_is_four_ninths():
    # Alvim et al. 2015 Example 31 / Table 2 (a): on the line the truncated 1/2-geometric mechanism is optimal
    # ([17]), utility 4/9 for the uniform prior.
    r = optimal_mechanism(spaces.line(6), np.full(6, 1 / 6), epsilon=LN2)
    assert r.value == pytest.approx(4 / 9, abs=1e-9)


def test_seed001_example30_nonuniform_prior_lp_beats_m2():
    # Alvim et al. 2015 Example 30: for p(A) = p(F) = 1/10, p(B..E) = 1/5 the paper reports U(M2) = 0.2857 (M2 is
    # the tight-constraints mechanism of the clique). This prior is not regular (μ = πΦ⁻¹ has negative
    # entries), so M2 need not be optimal. Upper bound by hand: with x_w = H[w, w], privacy gives
    # H[y, w] ≥ x_w / 2, so each row y yields x_y + (1/2) Σ_{w≠y} x_w ≤ 1. Summing over the four middle
    # rows: 2.5 X_M + 2 X_E ≤ 4 (X_M, X_E: sums of x over middle and end points), and
    # U = 0.2 X_M + 0.1 X_E ≤ 0.08 · 4 = 0.32, attained by X_M = 1.6, X_E = 0 (never answer A or F).
    prior = np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.1])
    space = spaces.clique(6)
    m2, _ = tight_constraints(space, LN2)
    assert utility(m2, prior).value == pytest.approx(2 / 7, abs=1e-12)  # the paper's 0.2857
    r = optimal_mechanism(space, prior, epsilon=LN2)
    assert r.value == pytest.approx(0.32, abs=1e-9)
    assert r.value > utility(m2, prior).value + 0.03


# ---------------------------------------------------------------------------------------------
# ElSalamouny et al. 2014 Thm 2 / Thm 4: Σμ on the region of regular priors
# ---------------------------------------------------------------------------------------------

SPACES_WITH_TC = [
    spaces.line(5),
    spaces.ring(7),
    spaces.clique(5),
    spaces.grid(3, 3, metric="manhattan"),
    spaces.hamming(2, 3),
]


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(0, len(SPACES_WITH_TC) - 1),
    eps=st.sampled_from([0.5, LN2, 1.0, 2.0]),
    data=st.data(),
)
def test_regular_prior_lp_equals_sum_mu(k, eps, data):
    # ElSalamouny et al. 2014 Thm 2 bounds the utility of every ε·d-private mechanism by Σμ (μΦ = π, μ ≥ 0); Thm 4: a
    # tight-constraints mechanism (which exists iff the uniform prior is regular, Prop 8) attains it for
    # every regular prior. So the LP optimum is exactly Σμ.
    space = SPACES_WITH_TC[k]
    _, z = tight_constraints(space, eps)
    assume((z >= 0).all())
    pi, mu = corner_mixture(space, eps, dirichlet(data.draw, space.n))
    r = optimal_mechanism(space, pi, epsilon=eps)
    assert r.solved
    assert r.value == pytest.approx(mu.sum(), abs=LP_TOL)
    assert r.value <= mu.sum() + LP_TOL


def test_uniform_prior_lp_equals_sum_mu_on_the_grid():
    # ElSalamouny et al. 2014 Cor 3 / Thm 4 for the uniform prior on grid:4x4:manhattan at ε = 1 (the uniform prior is
    # regular there: the grid's Φ is the Kronecker product of two lines').
    space = spaces.grid(4, 4, metric="manhattan")
    u = np.full(16, 1 / 16)
    mu = np.linalg.solve(constraints_matrix(space, epsilon=1.0), u)
    assert (mu > 0).all()
    r = optimal_mechanism(space, u, epsilon=1.0)
    assert r.value == pytest.approx(mu.sum(), abs=LP_TOL)
    tc, _ = tight_constraints(space, 1.0)
    assert utility(tc, u).value == pytest.approx(r.value, abs=LP_TOL)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(space=random_metric(n_min=2, n_max=6, allow_infinite=False), eps=st.sampled_from([0.3, 1.0, 2.5]), data=st.data())
def test_thm2_bound_on_random_metrics(space, eps, data):
    # ElSalamouny et al. 2014 Thm 2 holds on every metric (a tight-constraints mechanism need not exist): the LP optimum
    # never exceeds Σμ for a regular prior, and is never below the prior vulnerability (the constant
    # channel is private) nor below the utility of the tight-constraints mechanism when it exists.
    pi, mu = corner_mixture(space, eps, dirichlet(data.draw, space.n))
    r = optimal_mechanism(space, pi, epsilon=eps)
    assert r.solved
    assert r.value <= mu.sum() + LP_TOL
    assert r.value >= prior_vulnerability(pi) - LP_TOL
    tc, z = tight_constraints(space, eps)
    if (z >= 0).all():
        assert r.value == pytest.approx(mu.sum(), abs=LP_TOL)


@settings(max_examples=25, deadline=None)
@given(space=random_metric(n_min=2, n_max=6, allow_infinite=False), eps=st.sampled_from([0.4, 1.0, 3.0]))
def test_uniform_prior_matches_the_library_tight_constraints_mechanism(space, eps):
    # ElSalamouny et al. 2014 Cor 3: when a tight-constraints mechanism exists it is optimal for the uniform prior.
    # Cross-checks the LP against dprivacy.mechanisms.tight (another module, built independently).
    tight = pytest.importorskip("dprivacy.mechanisms.tight")
    tc = tight.tight_constraints(space, epsilon=eps)
    assume(tc.exists)
    u = np.full(space.n, 1 / space.n)
    r = optimal_mechanism(space, u, epsilon=eps)
    assert r.value == pytest.approx(utility(tc.channel, u).value, abs=LP_TOL)


def test_prior_outside_region_lp_strictly_beats_tight_constraints_on_ring():
    # A corner-like prior on ring:6 at ε = ln 2, biased to point 0 beyond the region (μ has a negative
    # entry): the tight-constraints mechanism (optimal for regular priors) is not optimal here.
    space = spaces.ring(6)
    prior = np.array([0.5, 0.1, 0.1, 0.1, 0.1, 0.1])
    mu = np.linalg.solve(constraints_matrix(space, epsilon=LN2), prior)
    assert (mu < 0).any()
    tc, _ = tight_constraints(space, LN2)
    r = optimal_mechanism(space, prior, epsilon=LN2)
    assert r.value > utility(tc, prior).value + 1e-3


def test_prior_outside_region_on_line_tg_stays_optimal_and_exceeds_sum_mu():
    # On a line the tight-constraints mechanism is the truncated geometric one (ElSalamouny et al. 2014 §6.1), which is
    # optimal for *every* prior (Chatzikokolakis et al. 2013 Thm 8/10; the binary loss is monotone). For a prior outside the
    # region μ has negative entries and Σμ is no bound (Lemma 1: U = Σμ − μ·s with μ·s < 0 possible).
    space = spaces.line(6)
    prior = np.array([0.5, 0.1, 0.1, 0.1, 0.1, 0.1])
    mu = np.linalg.solve(constraints_matrix(space, epsilon=LN2), prior)
    assert (mu < 0).any()
    r = optimal_mechanism(space, prior, epsilon=LN2)
    assert r.value == pytest.approx(utility(truncated_geometric(6, LN2), prior).value, abs=LP_TOL)
    assert r.value > mu.sum() + 1e-3


# ---------------------------------------------------------------------------------------------
# Loss version: Chatzikokolakis et al. 2013 Thm 10 (truncated geometric universally optimal on a line)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, eps, step", [(6, LN2, 1.0), (8, 0.5, 1.0), (7, 1.0, 0.5)])
@pytest.mark.parametrize("loss_kind", ["distance", "squared", "binary"])
def test_loss_on_line_equals_truncated_geometric(n, eps, step, loss_kind):
    # Chatzikokolakis et al. 2013 Thm 10 (f the identity on q[0..k], uniformly 1-sensitive): TG_ε remapped optimally is
    # optimal for every prior and every loss monotone in |y − w|.
    space = spaces.line(n, step=step)
    d = space.distances
    loss = {"distance": d, "squared": d**2, "binary": 1.0 - np.eye(n)}[loss_kind]
    tg = truncated_geometric(n, eps, step)
    assert check_privacy(tg, space, epsilon=eps).ok
    rng = np.random.default_rng(7)
    priors = [np.full(n, 1 / n), rng.dirichlet(np.ones(n)), rng.dirichlet(np.full(n, 0.3))]
    for prior in priors:
        r = optimal_mechanism(space, prior, epsilon=eps, loss=loss)
        assert r.solved and r.kind == "loss"
        assert r.value == pytest.approx(expected_loss(tg, prior, loss).value, abs=LP_TOL)
        assert r.objective == pytest.approx(r.value, abs=LP_TOL)


def test_loss_and_negated_gain_agree():
    # Minimizing Σ π l H is maximizing Σ π (−l) H.
    space = spaces.ring(5)
    prior = np.array([0.3, 0.1, 0.2, 0.25, 0.15])
    lo = optimal_mechanism(space, prior, epsilon=0.8, loss=space.distances)
    ga = optimal_mechanism(space, prior, epsilon=0.8, gain=-space.distances)
    assert lo.value == pytest.approx(-ga.value, abs=LP_TOL)


# ---------------------------------------------------------------------------------------------
# Essential pairs vs all pairs (ElSalamouny et al. 2013 Prop 1)
# ---------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(space=random_metric(), eps=st.sampled_from([0.2, 0.7, 1.5]), data=st.data())
def test_essential_pairs_lp_equals_all_pairs_lp(space, eps, data):
    n = space.n
    note(f"distances = {space.distances.tolist()}")
    prior = dirichlet(data.draw, n)
    use_gain = data.draw(st.booleans())
    gain = None
    if use_gain:
        k = data.draw(st.integers(1, n + 1))
        gain = np.array(data.draw(st.lists(st.floats(-1, 1), min_size=n * k, max_size=n * k))).reshape(n, k)
    ess = optimal_mechanism(space, prior, epsilon=eps, gain=gain)
    full = optimal_mechanism(space, prior, epsilon=eps, gain=gain, pairs="all")
    assert ess.solved and full.solved
    assert ess.value == pytest.approx(full.value, abs=LP_TOL)
    assert full.pairs == "all" and ess.pairs == "essential"
    finite_pairs = int(np.isfinite(space.distances[np.triu_indices(n, 1)]).sum())
    assert full.n_pairs == finite_pairs
    assert ess.n_pairs <= full.n_pairs
    # The essential-pairs optimum is private on *all* pairs, not only on those written in the LP.
    everything = spaces.from_matrix(space.distances)  # no essential pairs known: the check sees all
    assert check_privacy(ess.channel, everything, epsilon=eps).ok


def test_graph_metric_uses_edges_only():
    g = nx.petersen_graph()
    space = spaces.from_graph(g)
    r = optimal_mechanism(space, np.full(10, 0.1), epsilon=1.0)
    assert r.n_pairs == g.number_of_edges() == 15
    assert r.n_variables == 100
    assert r.n_constraints == 10 + 2 * 15 * 10
    # The Petersen graph is distance-regular: Alvim et al. 2015 Thm 27/28 value 1 / Σ_d n_d e^{−εd}.
    assert r.value == pytest.approx(1 / (1 + 3 * math.exp(-1) + 6 * math.exp(-2)), abs=LP_TOL)


def test_privacy_constraints_matrix_matches_definition():
    # Every row of the sparse matrix is e^{−εd(a,b)} H[a,w] − H[b,w] for an ordered essential pair (a, b)
    # and a column w; compare with a dense matrix written entry by entry from the definition.
    space = spaces.from_graph([(0, 1), (1, 2), (1, 3)])
    eps, m = 0.7, 3
    A, n_pairs = privacy_constraints(space, epsilon=eps, n_outputs=m)
    assert n_pairs == 3
    expected = []
    for a, b in [(0, 1), (1, 2), (1, 3), (1, 0), (2, 1), (3, 1)]:
        for w in range(m):
            row = np.zeros(space.n * m)
            row[a * m + w] += math.exp(-eps * space.distances[a, b])
            row[b * m + w] -= 1.0
            expected.append(row)
    got = A.toarray()
    assert got.shape == (len(expected), space.n * m)
    assert sorted(map(tuple, got)) == sorted(map(tuple, np.array(expected)))


# ---------------------------------------------------------------------------------------------
# General gains, remap absorption, special spaces
# ---------------------------------------------------------------------------------------------


def test_remap_absorption_value_equals_objective_for_general_gain():
    # The LP optimizes over H : Y → W with guess = output; the optimal remap of its optimum cannot do
    # better (the cascade would be a feasible point), and no private mechanism with any remap does better.
    rng = np.random.default_rng(3)
    space = spaces.ring(6)
    prior = rng.dirichlet(np.ones(6))
    gain = rng.uniform(-1, 2, size=(6, 4))
    r = optimal_mechanism(space, prior, epsilon=0.9, gain=gain, outputs=list("abcd"))
    assert r.channel.outputs == list("abcd") and r.channel.shape == (6, 4)
    assert r.value == pytest.approx(r.objective, abs=LP_TOL)
    for eps_mech in [0.9, 0.5]:  # other private mechanisms, remapped optimally
        tc, _ = tight_constraints(space, eps_mech)
        assert utility(tc, prior, gain).value <= r.value + LP_TOL


def test_single_guess_gives_the_prior_expectation():
    # One guess: nothing to learn, the value is Σ_y π_y g[y, 0].
    prior = np.array([0.2, 0.5, 0.3])
    gain = np.array([[1.0], [-2.0], [4.0]])
    r = optimal_mechanism(spaces.line(3), prior, epsilon=1.0, gain=gain)
    assert r.value == pytest.approx(prior @ gain[:, 0], abs=1e-12)
    assert r.channel.shape == (3, 1)


def test_epsilon_zero_gives_prior_vulnerability():
    # 0·d-privacy forces equal rows: the best guess ignores the output.
    prior = np.array([0.1, 0.6, 0.3])
    r = optimal_mechanism(spaces.line(3), prior, epsilon=0.0)
    assert r.value == pytest.approx(0.6, abs=LP_TOL)
    assert np.allclose(r.channel.matrix, r.channel.matrix[0], atol=1e-9)


def test_extended_metric_components_are_independent():
    # Two disconnected lines of 3 (d = ∞ between them, Chatzikokolakis et al. 2013 §3): outputs may tell the components apart,
    # so with the uniform prior the value is that of one line:3 with its uniform prior.
    space = spaces.from_graph([(0, 1), (1, 2), (3, 4), (4, 5)])
    assert space.is_extended
    r = optimal_mechanism(space, np.full(6, 1 / 6), epsilon=1.0)
    one = optimal_mechanism(spaces.line(3), np.full(3, 1 / 3), epsilon=1.0)
    assert r.value == pytest.approx(one.value, abs=LP_TOL)
    assert one.value == pytest.approx(utility(truncated_geometric(3, 1.0), np.full(3, 1 / 3)).value, abs=LP_TOL)


def test_result_bookkeeping_and_channel_validity():
    space = spaces.grid(3, 3, metric="chebyshev")
    prior = np.random.default_rng(0).dirichlet(np.ones(9))
    r = optimal_mechanism(space, prior, epsilon=1.2)
    assert isinstance(r, OptimalResult) and bool(r)
    Channel(r.channel.matrix)  # validated: non-negative, rows sum to 1
    assert r.channel.inputs == space.labels
    assert r.n_pairs == 2 * 3 * 2 + 2 * 2 * 2  # horizontal + vertical + two diagonals
    assert r.n_variables == 81 and r.n_constraints == 9 + 2 * r.n_pairs * 9
    assert r.row_sum_error < 1e-6 and r.clipped >= 0 and r.repair_mass >= 0
    assert r.private and r.smallest_epsilon <= 1.2 + 1e-9
    assert r.seconds >= 0 and r.build_seconds >= 0
    assert utility(r.channel, prior).remap.tolist() == r.remap.tolist()


def test_private_lift_is_smallest_private_majorant():
    space = spaces.line(4)
    eps = 1.0
    h = np.array([[1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    lifted = private_lift(h, space, epsilon=eps)
    assert (lifted >= h).all()
    e = math.exp(-1.0)
    # Column 0: Ĥ[b, 0] = max_a e^{−|a−b|} H[a, 0] over a ∈ {0, 1} (the only non-zero entries).
    assert lifted[:, 0] == pytest.approx([1.0, max(0.5, e), max(e**2, 0.5 * e), max(e**3, 0.5 * e**2)], rel=1e-14)
    # Every column satisfies Ĥ[a, w] ≤ e^{ε d(a, b)} Ĥ[b, w] for all a, b (not only adjacent ones).
    bound = np.exp(eps * space.distances)[:, :, None] * lifted[None, :, :]
    assert (lifted[:, None, :] <= bound * (1 + 1e-15)).all()
    # Renormalizing rows changes each log-ratio by at most ln(max row sum / min row sum).
    sums = lifted.sum(axis=1)
    normalized = lifted / sums[:, None]
    r = check_privacy(normalized, space, epsilon=eps)
    assert not r.ok  # this H is far from private, so the row sums differ a lot
    assert r.smallest_epsilon <= eps + math.log(sums.max() / sums.min()) + 1e-12
    # A private matrix is its own lift.
    tg = truncated_geometric(4, eps)
    assert np.allclose(private_lift(tg, space, epsilon=eps), tg, rtol=1e-14, atol=0)


@settings(max_examples=60, deadline=None)
@given(w=st.integers(1, 7), hgt=st.integers(1, 7), m=st.integers(1, 5), eps=st.floats(0.0, 3.0),
       step=st.sampled_from([1.0, 0.5, 2.5]), seed=st.integers(0, 2**32 - 1))
def test_private_lift_on_a_manhattan_grid_equals_the_max_times_product(w, hgt, m, eps, step, seed):
    """The separable scans (O(n·m)) give the definition's max_a e^{−εd(a,b)} H[a, w] (O(n²·m))."""
    space = spaces.grid(w, hgt, metric="manhattan", step=step)
    rng = np.random.default_rng(seed)
    h = rng.random((space.n, m)) * (rng.random((space.n, m)) < 0.6)  # zeros included
    ref = (np.exp(-eps * space.distances)[:, :, None] * h[None, :, :]).max(axis=1)
    out = private_lift(h, space, epsilon=eps)
    assert np.allclose(out, ref, rtol=1e-13, atol=0)
    assert ((out == 0) == (ref == 0)).all()


# ---------------------------------------------------------------------------------------------
# Failures and bad input
# ---------------------------------------------------------------------------------------------


def test_solver_failure_is_a_result_not_an_exception():
    r = optimal_mechanism(spaces.clique(6), np.full(6, 1 / 6), epsilon=LN2, method="full", solver="highs-ds",
                          options={"maxiter": 1, "presolve": False})
    assert not r.solved and not r
    assert r.status == 1 and "limit" in r.solver_message.lower()
    assert r.channel is None and math.isnan(r.value) and r.remap is None
    assert r.n_variables == 36


def test_a_numerical_failure_of_the_full_lp_is_solved_by_decomposition_and_says_so(monkeypatch):
    from scipy.optimize import OptimizeResult

    from dprivacy.mechanisms import lp_solve
    from dprivacy.mechanisms import optimal as mod

    def failing(c, **kwargs):
        return OptimizeResult(x=None, fun=None, status=4, message="HiGHS Status 4: Solve error", success=False)

    space = spaces.grid(3, 3)
    prior = np.array([0.3, 0.0, 0.1, 0.05, 0.2, 0.0, 0.15, 0.1, 0.1])
    ref = optimal_mechanism(space, prior, epsilon=0.7, loss=space.distances, method="full")
    monkeypatch.setattr(lp_solve, "linprog", failing)
    r = mod.optimal_mechanism(space, prior, epsilon=0.7, loss=space.distances, method="full")
    assert r.solved and r.private and r.method == "dantzig-wolfe"
    assert r.solver_message.startswith("the full LP failed: HiGHS Status 4: Solve error; solved by Dantzig")
    assert r.value == pytest.approx(ref.value, rel=1e-7)
    assert r.bound <= ref.value + 1e-9 <= r.value + 2e-9  # a loss: bound ≤ OPT ≤ value


def _fake_linprog(x):
    from scipy.optimize import OptimizeResult

    def fake(c, **kwargs):
        return OptimizeResult(x=np.asarray(x, dtype=float).ravel(), fun=float(c @ np.ravel(x)), status=0,
                              message="fake optimal", success=True)

    return fake


def test_tiny_negative_entries_are_clipped_and_recorded(monkeypatch):
    from dprivacy.mechanisms import lp_solve
    from dprivacy.mechanisms import optimal as mod

    # A private channel on line:3 whose last column is tiny (1e−12 scale), as an LP vertex can have:
    # columns TG0, TG1 + (1 − s)·TG2, s·TG2 (sums of private columns are private). The solver's
    # rounding turns the smallest entry of the tiny column into −1e−13.
    tg = truncated_geometric(3, 1.0)
    s = 1e-12 / tg[2, 2]
    h = np.column_stack([tg[:, 0], tg[:, 1] + (1 - s) * tg[:, 2], s * tg[:, 2]])
    assert check_privacy(h, spaces.line(3), epsilon=1.0).ok
    noisy = h.copy()
    noisy[0, 2] = -1e-13
    monkeypatch.setattr(lp_solve, "linprog", _fake_linprog(noisy))
    r = mod.optimal_mechanism(spaces.line(3), np.full(3, 1 / 3), epsilon=1.0, method="full")
    assert r.solved
    assert r.min_entry == -1e-13
    assert r.clipped == pytest.approx(1e-13)
    assert r.row_sum_error == pytest.approx(1e-13 + h[0, 2], rel=1e-6)
    # The clipped zero sits next to a positive entry: infinite log-ratio before the repair ...
    assert r.raw_smallest_epsilon == math.inf
    # ... the lift puts e^{−1}·H[1, 2] back there, recorded as repair mass, and the channel is private.
    assert r.repair_mass == pytest.approx(math.exp(-1) * h[1, 2], rel=1e-6)
    assert r.private and r.smallest_epsilon <= 1.0 + 1e-9
    assert np.allclose(r.channel.matrix, h, atol=1e-12)


@pytest.mark.parametrize(
    "entry, row_shift, reason",
    [(-1e-6, 0.0, "below"), (0.0, 1e-4, "sums to 1 only within")],
)
def test_implausible_solver_output_is_rejected(monkeypatch, entry, row_shift, reason):
    from dprivacy.mechanisms import lp_solve
    from dprivacy.mechanisms import optimal as mod

    h = truncated_geometric(3, 1.0)
    h[1, 0] = entry if entry else h[1, 0]
    h[1, 1] += row_shift
    monkeypatch.setattr(lp_solve, "linprog", _fake_linprog(h))
    r = mod.optimal_mechanism(spaces.line(3), np.full(3, 1 / 3), epsilon=1.0, method="full")
    assert not r.solved and r.status == -1 and reason in r.solver_message and r.channel is None


def test_repair_off_returns_the_solver_channel():
    space = spaces.ring(5)
    prior = np.array([0.4, 0.1, 0.2, 0.2, 0.1])
    a = optimal_mechanism(space, prior, epsilon=1.0, repair=False)
    assert a.repair_mass == 0.0 and a.raw_smallest_epsilon == a.smallest_epsilon
    b = optimal_mechanism(space, prior, epsilon=1.0)
    assert b.value == pytest.approx(a.value, abs=LP_TOL)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(prior=[0.5, 0.5]), ValueError, "expected 3"),
        (dict(prior=[0.5, 0.6, -0.1]), ValueError, "non-negative"),
        (dict(epsilon=-1.0), ValueError, "epsilon"),
        (dict(epsilon=float("nan")), ValueError, "finite"),
        (dict(epsilon="1"), TypeError, "epsilon"),
        (dict(gain=np.eye(3), loss=np.eye(3)), ValueError, "either gain or loss"),
        (dict(gain=np.eye(2)), ValueError, "gain has 2 rows"),
        (dict(loss=np.full((3, 3), np.inf)), ValueError, "finite"),
        (dict(gain=[[1, np.nan, 0]] * 3), ValueError, "NaN"),
        (dict(outputs=["a", "b"]), ValueError, "outputs has 2 labels"),
        (dict(outputs="abc"), TypeError, "outputs"),
        (dict(pairs="some"), ValueError, "pairs"),
        (dict(method="simplex"), ValueError, "method"),
        (dict(options=[("maxiter", 3)]), TypeError, "options"),
    ],
)
def test_bad_input_raises(kwargs, exc, match):
    args = dict(prior=np.full(3, 1 / 3), epsilon=1.0)
    args.update(kwargs)
    prior = args.pop("prior")
    with pytest.raises(exc, match=match):
        optimal_mechanism(spaces.line(3), prior, **args)


def test_space_must_be_a_metric_space():
    with pytest.raises(TypeError, match="MetricSpace"):
        optimal_mechanism(np.ones((3, 3)) - np.eye(3), np.full(3, 1 / 3), epsilon=1.0)


def test_too_large_lp_is_refused_with_its_size():
    from dprivacy.mechanisms import optimal as mod

    space = spaces.grid(60, 60, metric="manhattan")  # 3600² = 12.96 M variables
    with pytest.raises(ValueError, match="MAX_VARIABLES"):
        mod.optimal_mechanism(space, np.full(space.n, 1 / space.n), epsilon=1.0)


@pytest.mark.parametrize("engine_gap, retried", [(1e-8, False), (0.05, True)])
def test_auto_retries_a_stalled_decomposition_only_when_its_gap_is_wide(monkeypatch, engine_gap, retried):
    # auto runs the decomposition above AUTO_CG_POINTS points; when it stalls, constraint generation
    # gets the time left only if the stalled gap is wider than AUTO_RETRY_GAP
    import dataclasses

    from dprivacy.mechanisms import decomposition, lp_solve, optimal

    real = decomposition.dantzig_wolfe

    def stalling(*args, **kwargs):
        kwargs["gap"] = engine_gap
        return dataclasses.replace(real(*args, **kwargs), status="stalled")

    calls = []
    real_cg = lp_solve._solve_generated

    def counted(*args, **kwargs):
        calls.append(1)
        return real_cg(*args, **kwargs)

    monkeypatch.setattr(decomposition, "dantzig_wolfe", stalling)
    monkeypatch.setattr(lp_solve, "_solve_generated", counted)
    space = spaces.grid(9, 9)
    assert space.n > optimal.AUTO_CG_POINTS
    prior = np.random.default_rng(3).dirichlet(np.ones(space.n))
    res = _optimal_mechanism(space, prior, epsilon=1.0, time_limit=120)
    assert bool(calls) == retried
    assert res.ok and res.bound >= res.value
    if not retried:
        assert res.gap <= optimal.AUTO_RETRY_GAP and res.method == "dantzig-wolfe"


def test_auto_returns_the_tent_channel_when_the_prior_is_regular():
    """grid:30x30 with the uniform prior (ε·d-regular at ε = 1): the tent LP's bracket closed at gap 6e-9
    before constraint generation started, which then ran the whole 300 s time limit. Auto now returns
    that channel — the tight-constraints mechanism, optimal there (ElSalamouny et al. 2014 Thm 4) — with its bracket;
    a method asked for by name still runs."""
    from dprivacy.mechanisms.tight import tight_constraints
    from dprivacy.priors import regularity

    space = spaces.grid(10, 10)  # auto: the decomposition (8×8: constraint generation)
    p = np.full(space.n, 1 / space.n)
    assert regularity(space, p, epsilon=1.0).ok
    r = _optimal_mechanism(space, p, epsilon=1.0, method="auto")
    assert r.ok and r.method == "tent-lp" and r.gap <= 1e-7 and r.rounds == 0
    tc = tight_constraints(space, epsilon=1.0)
    assert r.value == pytest.approx(utility(tc.channel, p).value, abs=1e-9)
    assert r.value <= r.bound + 1e-12
    named = optimal_mechanism(space, p, epsilon=1.0, method="dantzig-wolfe")
    assert named.method == "dantzig-wolfe" and named.value == pytest.approx(r.value, abs=1e-8)
    # a prior outside the region: the tent bound is not met, and the LP runs
    q = np.zeros(space.n)
    q[[0, 5, 77, 99]] = [0.4, 0.3, 0.2, 0.1]
    assert not regularity(space, q, epsilon=1.0).ok
    assert _optimal_mechanism(space, q, epsilon=1.0, method="auto", time_limit=60).method != "tent-lp"


def test_the_tent_channel_s_repair_gets_a_tenth_of_the_time_limit(monkeypatch):
    """The repair of the tent LP's channel took 36 s of a 30 s limit on grid:30x30 (a Dirichlet prior)
    and left the decomposition nothing: it is now given TENT_REPAIR_SHARE of the limit."""
    import time

    import dprivacy.mechanisms.optimal as O
    from dprivacy.mechanisms import lp_solve, tent_lp

    seen = []
    real = O.certified_repair

    def spy(h, space, *, epsilon, deadline=None, **kw):
        seen.append((time.perf_counter(), deadline))
        return real(h, space, epsilon=epsilon, deadline=deadline, **kw)

    monkeypatch.setattr(tent_lp, "certified_repair", spy)  # the tent channel's repair
    monkeypatch.setattr(lp_solve, "certified_repair", spy)  # the other repairs
    space = spaces.grid(9, 9)
    p = np.random.default_rng(4).dirichlet(np.full(space.n, 0.3))
    r = _optimal_mechanism(space, p, epsilon=1.0, method="dantzig-wolfe", time_limit=50.0)
    assert r.ok
    start, deadline = seen[0]  # the first repair is the tent channel's
    assert deadline is not None and deadline - start <= O.TENT_REPAIR_SHARE * 50.0 + 1e-6


def test_a_stopped_solve_returns_the_exponential_mechanism_when_it_beats_the_constant_channel():
    """Found by a review: a time limit before the first round returned the best constant channel (1/225 on
    grid:15x15) where private channels do far better. The exponential mechanism at ε/2, H ∝ e^{−(ε/2)d}, is
    ε·d-private, and with the prior's best remap it is returned when better; certified like any answer. (The
    solver is stopped by an iteration limit of 1, which linprog reports like a time limit.)"""
    from dprivacy import spaces
    from dprivacy.mechanisms.optimal import optimal_mechanism

    g = spaces.grid(6, 6)
    p = np.random.default_rng(5).dirichlet(np.ones(g.n))
    r = optimal_mechanism(g, p, epsilon=1.0, method="full", time_limit=600.0, options={"maxiter": 1})
    assert r.status == 1 and r.private and "exponential mechanism at ε/2" in r.solver_message
    e = np.exp(-0.5 * g.distances)
    e /= e.sum(axis=1, keepdims=True)
    expected = (e * p[:, None]).max(axis=0).sum()  # the binary gain of H with the Bayes remap
    assert r.value == pytest.approx(expected, rel=1e-9) and r.value > p.max()
    exact = optimal_mechanism(g, p, epsilon=1.0)
    assert r.value <= exact.value * (1 + 1e-9) and exact.value <= r.bound * (1 + 1e-9)
