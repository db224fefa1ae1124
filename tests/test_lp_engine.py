"""The scalable optimal-mechanism LP (constraint generation) and the bracket every answer carries.

References: the LP of ElSalamouny et al. 2014 §3.4 / §5.1, Alvim et al. 2015 Def 22 / Prop 23, Chatzikokolakis et al. 2013 Def 7; the
Lagrangian bound and the engine in ``dprivacy.mechanisms.lp_engine``. The reference optimum here is
an independent dense LP written in this file with *every* ordered pair constrained (no essential-pair
reduction, no output restriction), solved by scipy's HiGHS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import brute_smallest_epsilon, metric_matrices, plane_metrics, priors
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dprivacy import spaces
from dprivacy.measures import check_privacy
from dprivacy.mechanisms.lp_engine import lagrangian_bound, violated_constraints
from dprivacy.mechanisms.optimal import optimal_mechanism

LP_TOL = 1e-7

#: The reference LP is solved by HiGHS, which drops matrix coefficients below 1e-9 (its
#: small_matrix_value) and then may report numerical difficulties: its coefficients e^{−εd} must stay
#: above that, ε·d ≤ 20 (a true precondition of the reference, stated in every test that uses it).
MAX_EPS_D = 20.0


#: ... and with its rows scaled (:func:`reference_optimum`), the pairs it holds exactly: ε·d ≤ 30.
SCALED_EPS_D = 30.0


def reference_applies(d: np.ndarray, eps: float) -> bool:
    fin = d[np.isfinite(d)]
    return bool(fin.size == 0 or eps * fin.max() <= MAX_EPS_D)


def reference_optimum(d: np.ndarray, prior: np.ndarray, eps: float, c: np.ndarray) -> float:
    """max Σ c·H over channels H : Y → W with H[a, w] ≤ e^{ε d(a,b)} H[b, w] for all a ≠ b, w (every pair)."""
    from scipy import sparse

    n, m = c.shape
    # one row per ordered pair (a, b) at finite distance and output w, in that order: e^{−εd}·H[a, w] − H[b, w] ≤ 0.
    # Where e^{−εd} is below HiGHS's smallest matrix value (1e-9, which it drops, leaving a relaxation whose optimum is
    # too high: found at ε·d = 24), the same row times 1e-8·e^{εd}, up to ε·d = SCALED_EPS_D (beyond, HiGHS fails on
    # the coefficient range: "Solve error" at ε·d = 48); a test with needed pairs past that must say so in its
    # precondition. The matrix is sparse (two entries a row): dense, a 7×7 grid's 115,248 rows took 9 GB.
    a, b = np.nonzero(~np.eye(n, dtype=bool) & np.isfinite(d))
    ed = eps * d[a, b]
    small = np.exp(-ed)
    scale = np.where((small < 1e-8) & (ed <= SCALED_EPS_D), 1e-8 / np.where(small > 0, small, 1.0), 1.0)
    k = np.arange(a.size * m)
    w = np.tile(np.arange(m), a.size)
    pa_, pb_ = np.repeat(a, m), np.repeat(b, m)
    vals = np.concatenate([np.repeat(small * scale, m), -np.repeat(scale, m)])
    a_ub = sparse.csr_matrix((vals, (np.concatenate([k, k]), np.concatenate([pa_ * m + w, pb_ * m + w]))),
                             shape=(k.size, n * m)) if k.size else None
    rows = k.size
    a_eq = np.kron(np.eye(n), np.ones((1, m)))
    # HiGHS's default choice once ended with model status "Unknown" (a 7-point plane metric at ε = 3.25, a
    # point-mass prior, coefficients down to 1e-12: hypothesis, in a local run); the LP is feasible and
    # bounded, so the other algorithms are tried before the reference gives up
    for method in ("highs", "highs-ds", "highs-ipm"):
        res = linprog(-c.ravel(), A_ub=a_ub, b_ub=np.zeros(rows) if rows else None,
                      A_eq=a_eq, b_eq=np.ones(n), bounds=(0, None), method=method,
                      options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
        if res.status == 0:
            break
    if res.status != 0:
        raise ReferenceFailed(res.message)
    return float(-res.fun)


class ReferenceFailed(AssertionError):
    """The dense reference LP could not be solved by any HiGHS algorithm (wide coefficient ranges)."""


def gain_form(prior, d, kind):
    if kind == "binary":
        return prior[:, None] * np.eye(prior.size), None, None
    if kind == "distance":
        return -(prior[:, None] * d), None, d
    g = np.exp(-d)  # a gain that rewards close guesses
    return prior[:, None] * g, g, None


@given(plane_metrics(min_n=2, max_n=7), st.floats(0.2, 3.0), st.sampled_from(["binary", "distance", "gain"]), st.data())
@settings(max_examples=30)
def test_constraint_generation_equals_the_all_pairs_lp_and_brackets_it(d, eps, kind, data):
    assume(reference_applies(d, eps))
    n = d.shape[0]
    space = spaces.from_matrix(d)
    prior = data.draw(priors(n))
    c, gain, loss = gain_form(prior, d, kind)
    opt = reference_optimum(d, prior, eps, c)
    r = optimal_mechanism(space, prior, epsilon=eps, gain=gain, loss=loss, method="constraint-generation")
    assert r.ok and r.method == "constraint-generation" and r.status == 0
    # The channel is private: the library's check and a brute-force triple loop agree.
    assert check_privacy(r.channel, space, epsilon=eps).ok
    assert brute_smallest_epsilon(r.channel.matrix, d) <= eps + 1e-9
    sign = 1.0 if r.kind == "gain" else -1.0
    value, bound = sign * r.value, sign * r.bound
    # The optimum is the all-pairs LP's, and the bracket holds: value ≤ OPT ≤ bound (gain form).
    assert value == pytest.approx(opt, abs=LP_TOL)
    assert value <= opt + 1e-9
    assert bound >= opt - 1e-9
    assert r.gap <= 1e-6 or r.bound - r.value <= 1e-9 * max(1.0, abs(r.bound))  # relative, or absolute for tiny values


@given(metric_matrices(min_n=2, max_n=6), st.floats(0.2, 3.0), st.sampled_from(["binary", "distance"]), st.data())
@settings(max_examples=25)
def test_full_lp_bound_brackets_the_optimum_on_any_metric(d, eps, kind, data):
    assume(reference_applies(d, eps))
    n = d.shape[0]
    space = spaces.from_matrix(d)
    prior = data.draw(priors(n))
    c, gain, loss = gain_form(prior, d, kind)
    opt = reference_optimum(d, prior, eps, c)
    r = optimal_mechanism(space, prior, epsilon=eps, gain=gain, loss=loss, method="full")
    assert r.ok and r.method == "full"
    sign = 1.0 if r.kind == "gain" else -1.0
    assert sign * r.value == pytest.approx(opt, abs=LP_TOL)
    assert sign * r.value <= opt + 1e-9 <= sign * r.bound + 2e-9


@given(plane_metrics(min_n=2, max_n=6), st.floats(0.2, 3.0), st.data())
@settings(max_examples=25)
def test_lagrangian_bound_holds_for_any_nonnegative_multipliers(d, eps, data):
    # Σ_y max_w (c − Aᵀλ)[y, w] ≥ OPT for every λ ≥ 0: weak duality, whatever λ is.
    assume(reference_applies(d, eps))
    n = d.shape[0]
    prior = data.draw(priors(n))
    c = prior[:, None] * np.eye(n)
    opt = reference_optimum(d, prior, eps, c)
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    j = np.repeat(np.arange(n), a.size)
    a, b = np.tile(a, n), np.tile(b, n)
    coef = np.exp(-eps * d[a, b])
    lam = np.asarray(data.draw(st.lists(st.floats(0.0, 2.0), min_size=a.size, max_size=a.size)))
    assert lagrangian_bound(c, a, b, j, coef, lam) >= opt - 1e-12
    assert lagrangian_bound(c, a, b, j, coef, np.zeros(a.size)) == pytest.approx(c.max(axis=1).sum())


def test_zero_prior_outputs_are_dropped_without_changing_the_optimum():
    # Binary gain on a 5×5 Euclidean grid, a prior with zeros: the LP over positive-prior outputs only
    # has the optimum of the LP over every output (merging argument, optimal_mechanism Notes).
    space = spaces.grid(4, 4)
    rng = np.random.default_rng(3)
    prior = rng.dirichlet(np.full(space.n, 0.5))
    prior[[0, 5, 6, 15]] = 0.0
    prior /= prior.sum()
    r = optimal_mechanism(space, prior, epsilon=0.8, method="full")
    assert r.n_variables == space.n * 12
    opt = reference_optimum(space.distances, prior, 0.8, prior[:, None] * np.eye(space.n))
    assert r.value == pytest.approx(opt, abs=LP_TOL)
    assert (r.channel.matrix[:, [0, 5, 6, 15]] == 0).all()  # zero columns, labels kept
    assert r.channel.outputs == space.labels


def test_constraint_generation_on_a_grid_matches_the_full_lp_and_adds_few_rows():
    space = spaces.grid(6, 6)
    rng = np.random.default_rng(1)
    prior = rng.dirichlet(np.full(space.n, 0.3))
    prior[rng.random(space.n) < 0.3] = 0.0
    prior /= prior.sum()
    full = optimal_mechanism(space, prior, epsilon=1.0, method="full")
    cg = optimal_mechanism(space, prior, epsilon=1.0, method="constraint-generation")
    assert cg.ok and full.ok
    assert cg.value == pytest.approx(full.value, abs=1e-9)
    assert cg.rounds >= 2 and len(cg.history) == cg.rounds
    assert cg.n_constraints < full.n_constraints / 2
    # each round's restricted objective is an upper bound, non-increasing as constraints are added
    objs = [h.objective for h in cg.history]
    assert all(x >= y - 1e-9 for x, y in zip(objs, objs[1:]))
    assert all(h.bound >= cg.value - 1e-9 for h in cg.history)


@given(metric_matrices(min_n=2, max_n=6), st.floats(0.1, 3.0), st.data())
@settings(max_examples=30)
def test_violated_constraints_finds_the_most_violated_constraint_of_each_secret_and_column(d, eps, data):
    # Brute force over the ordered constraint pairs (a, b) and columns w: for each (b, w) with a violation
    # e^{−εd(a,b)} H[a, w] − H[b, w] > 1e-9, the search returns exactly one row, for the most violated a.
    n = d.shape[0]
    space = spaces.from_matrix(d)
    m = data.draw(st.integers(1, 4))
    h = np.array(data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.05, 0.3, 1.0]), min_size=m, max_size=m),
                                    min_size=n, max_size=n)))
    h[h.sum(axis=1) == 0, 0] = 1.0
    h /= h.sum(axis=1, keepdims=True)
    # the search covers the space's constraint pairs (essential pairs suffice, ElSalamouny et al. 2013 Prop 1)
    pi, pj = space.constraint_pairs()
    pairs = set(zip(pi.tolist(), pj.tolist())) | set(zip(pj.tolist(), pi.tolist()))
    expected = {}
    for b in range(n):
        for w in range(m):
            best = max(((math.exp(-eps * d[a, b]) * h[a, w] - h[b, w], a) for a in range(n)
                        if (a, b) in pairs and np.isfinite(d[a, b])), default=(0.0, -1))
            if best[0] > 1e-9:
                expected[(b, w)] = best
    a, b, w, coef, worst = violated_constraints(h, space, epsilon=eps)
    got = {(bb, ww): aa for aa, bb, ww in zip(a.tolist(), b.tolist(), w.tolist())}
    assert set(got) == set(expected)
    for key, aa in got.items():
        bb, ww = key
        # the returned a is a most violated one (ties may pick another a of the same violation)
        v = math.exp(-eps * d[aa, bb]) * h[aa, ww] - h[bb, ww]
        assert v == pytest.approx(expected[key][0], rel=1e-12, abs=1e-15)
    for aa, bb, cc in zip(a, b, coef):
        assert cc == pytest.approx(math.exp(-eps * d[aa, bb]), rel=1e-15)
    assert worst == pytest.approx(max((v for v, _ in expected.values()), default=0.0), rel=1e-12)


def test_time_limit_returns_a_certified_mechanism_and_an_honest_gap():
    space = spaces.grid(7, 7)
    rng = np.random.default_rng(2)
    prior = rng.dirichlet(np.full(space.n, 0.3))
    ref = optimal_mechanism(space, prior, epsilon=1.0, method="constraint-generation")
    assert ref.ok and ref.status == 0
    for limit in (1e-3, 0.3):
        r = optimal_mechanism(space, prior, epsilon=1.0, method="constraint-generation", time_limit=limit)
        assert r.ok  # a private channel is always returned
        assert check_privacy(r.channel, space, epsilon=1.0).ok
        assert r.value <= ref.value + 1e-9 and r.bound >= ref.value - 1e-7
        if r.status == 1:
            assert "time limit" in r.solver_message
            assert r.gap == pytest.approx((r.bound - r.value) / max(abs(r.bound), abs(r.value)))


@pytest.mark.parametrize("method", ["constraint-generation", "full"])
def test_time_limit_covers_the_whole_call_and_the_message_names_the_users_limit(method):
    """Issue 9 audit: the tent LP ran without a limit and the message reported the leftover time
    ("time limit of 0.001 s reached" for --time-limit 5). Every stage gets what is left of the user's
    limit; the result names that limit, is certified, and its gap is honest (status, not wall-clock)."""
    space = spaces.grid(12, 12)
    prior = np.random.default_rng(4).dirichlet(np.full(space.n, 0.5))
    r = optimal_mechanism(space, prior, epsilon=1.0, method=method, time_limit=1e-3)
    assert r.status == 1 and r.ok and "time limit of 0.001 s reached" in r.solver_message, r.solver_message
    assert "time limit of 0.001 s" in r.reason
    assert check_privacy(r.channel, space, epsilon=1.0).ok
    assert 0.0 <= r.gap <= 1.0 and r.bound >= r.value
    if method == "constraint-generation":  # (HiGHS's interior point checks its limit only between iterations)
        r = optimal_mechanism(space, prior, epsilon=1.0, method=method, time_limit=0.25)
        assert r.ok and (r.status == 0 or "time limit of 0.25 s" in r.solver_message), r.solver_message


def test_certified_repair_stops_at_its_deadline_after_one_lift():
    from dprivacy.mechanisms.optimal import certified_repair

    space = spaces.grid(4, 4)
    h = np.random.default_rng(0).dirichlet(np.ones(16), size=16)  # far from private
    out, moved = certified_repair(h, space, epsilon=1.0, deadline=0.0)  # already past
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    assert moved > 0 and not check_privacy(out, space, epsilon=1.0).ok  # one lift, then stopped
    out, _ = certified_repair(h, space, epsilon=1.0)
    assert check_privacy(out, space, epsilon=1.0).ok
    # past the deadline but within the grace: the alternation goes on and certifies
    import time

    out, _ = certified_repair(h, space, epsilon=1.0, deadline=time.perf_counter(), late_grace=600.0)
    assert check_privacy(out, space, epsilon=1.0).ok


def test_auto_picks_the_edges_lp_on_small_graphs_generation_on_small_grids_and_decomposition_above():
    from dprivacy.mechanisms.optimal import lp_plan

    from dprivacy.cli.specs import parse_space

    # a prior outside the region where tight-constraints is optimal (on a uniform one auto returns the
    # tent LP's channel: test_optimal.py::test_auto_returns_the_tent_channel_when_the_prior_is_regular)
    prior = np.random.default_rng(3).dirichlet(np.full(100, 0.3))
    # edges LP up to grid:8x8:manhattan and sum:15,3, the decomposition from 10×10 and sum:30,3 (measured:
    # optimal.AUTO_FULL_SPARSE_ROWS)
    assert optimal_mechanism(spaces.grid(8, 8, metric="manhattan"), np.full(64, 1 / 64), epsilon=1.0).method == "full"
    assert optimal_mechanism(spaces.grid(10, 10, metric="manhattan"), prior, epsilon=1.0).method == "dantzig-wolfe"
    assert lp_plan(parse_space("sum:15,3"))[0] == "full"
    assert lp_plan(parse_space("sum:30,3"))[0] == "dantzig-wolfe"
    assert lp_plan(spaces.grid(8, 8))[0] == "constraint-generation"
    assert lp_plan(spaces.grid(30, 30, metric="manhattan"))[0] == "dantzig-wolfe"
    r = optimal_mechanism(spaces.grid(10, 10), prior, epsilon=1.0, time_limit=5.0)
    assert r.method == "dantzig-wolfe" and r.ok


@pytest.mark.parametrize("kwargs, text", [
    ({"method": "simplex"}, "method must be one of"),
    ({"solver": "glpk"}, "solver must be one of"),
    ({"gap": -0.1}, "gap must be a number in [0, 1)"),
    ({"gap": 1.5}, "gap must be a number in [0, 1)"),
    ({"time_limit": 0}, "time_limit must be a positive number"),
    ({"time_limit": float("nan")}, "time_limit must be a positive number"),
])
def test_bad_arguments_are_named(kwargs, text):
    with pytest.raises(ValueError, match=text.replace("[", r"\[").replace(")", r"\)")):
        optimal_mechanism(spaces.line(3), np.full(3, 1 / 3), epsilon=1.0, **kwargs)


@given(plane_metrics(min_n=3, max_n=7), st.floats(0.2, 3.0), st.sampled_from(["binary", "distance"]), st.data())
@settings(max_examples=25)
def test_columns_priced_in_reach_the_optimum_of_all_columns(d, eps, kind, data):
    # Starting from a subset of the outputs, the engine prices the others in with the Lagrangian terms
    # of excluded columns (valid for any λ ≥ 0), so the bound it reports is an upper bound on the full
    # optimum at every round, and at the end the optimum is the all-pairs, all-outputs LP's.
    from dprivacy.mechanisms.lp_engine import constraint_generation

    assume(reference_applies(d, eps))
    n = d.shape[0]
    space = spaces.from_matrix(d)
    prior = data.draw(priors(n))
    c, _, _ = gain_form(prior, d, kind)
    opt = reference_optimum(d, prior, eps, c)
    start = np.asarray(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True)))
    out = constraint_generation(space, c, np.arange(n), epsilon=eps, start=start, max_new_columns=1)
    assert out.status == "optimal"
    assert out.objective == pytest.approx(opt, abs=LP_TOL)
    assert all(r.bound >= opt - 1e-9 for r in out.rounds)
    h = np.clip(out.raw, 0, None)
    h /= h.sum(axis=1, keepdims=True)
    assert float((c * h).sum()) == pytest.approx(opt, abs=LP_TOL)


@given(st.integers(2, 8), st.floats(0.1, 3.0), st.sampled_from(["binary", "monotone"]), st.data())
@settings(max_examples=30)
def test_universal_optimality_of_the_truncated_geometric_on_a_line(n, eps, kind, data):
    # Chatzikokolakis et al. 2013 Thm 8 (Ghosh et al.): on a line, the truncated geometric with its optimal remap is optimal
    # for every prior and every loss monotone in |y − w|; auto uses it, and it equals the all-pairs LP.
    space = spaces.line(n)
    prior = data.draw(priors(n))
    if kind == "binary":
        gain, loss, c = None, None, prior[:, None] * np.eye(n)
    else:
        steps = np.sort(np.asarray(data.draw(st.lists(st.floats(0.0, 5.0), min_size=n * n, max_size=n * n))).reshape(n, n), axis=1)
        dist = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
        loss = steps[np.arange(n)[:, None], dist]  # row y: a non-decreasing function of |y − w|
        gain, c = None, -(prior[:, None] * loss)
    opt = reference_optimum(space.distances, prior, eps, c)
    r = optimal_mechanism(space, prior, epsilon=eps, gain=gain, loss=loss)
    assert r.method == "truncated-geometric" and r.ok and r.gap == 0.0
    sign = 1.0 if r.kind == "gain" else -1.0
    assert sign * r.value == pytest.approx(opt, abs=LP_TOL)
    assert check_privacy(r.channel, space, epsilon=eps).ok


def test_truncated_geometric_is_not_used_where_the_theorem_does_not_apply():
    prior = np.full(5, 0.2)
    loss = np.array([[0, 1, 0.5, 2, 3]] * 5, dtype=float)  # not monotone in |y − w|
    assert optimal_mechanism(spaces.line(5), prior, epsilon=1.0, loss=loss).method == "full"
    from dprivacy.cli.specs import parse_space

    sq = parse_space("sum:3,2")  # ⌈|i − j|/v⌉: not a multiple of the line distance
    p = np.full(sq.n, 1 / sq.n)
    assert optimal_mechanism(sq, p, epsilon=1.0).method == "full"
    with pytest.raises(ValueError, match="does not apply"):
        optimal_mechanism(sq, p, epsilon=1.0, method="truncated-geometric")

