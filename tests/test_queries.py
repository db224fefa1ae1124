"""Tests for dprivacy.queries: database universes, queries, induced graphs, closed forms, sensitivity.

References are computed independently of the module: per-database Python loops for the queries, a
double loop over database pairs for the induced graph, Floyd–Warshall for graph distances, and the
definitions of Chatzikokolakis et al. 2013 Def 4–5 checked on *all* pairs of databases (the module uses essential pairs).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from conftest import brute_essential_pairs, floyd_warshall, stochastic_matrices
from dprivacy import queries as q
from dprivacy import spaces
from dprivacy.channels import Channel
from dprivacy.measures import check_privacy, smallest_epsilon
from dprivacy.spaces import MetricSpace


# ---------------------------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------------------------


def ref_databases(u, values, null=False):
    syms = list(values) + ([None] if null else [])
    out = [t for t in itertools.product(syms, repeat=u)]
    if null:
        out = [t for t in out if any(s is not None for s in t)]
    return out


def ref_induced_distances(answers, labels, dbs):
    """Induced graph by a double loop over database pairs at Hamming distance 1, then Floyd–Warshall."""
    pos = {y: i for i, y in enumerate(labels)}
    m = len(labels)
    w = np.full((m, m), np.inf)
    np.fill_diagonal(w, 0.0)
    for a, b in itertools.combinations(range(len(dbs)), 2):
        diff = sum(1 for s, t in zip(dbs[a], dbs[b]) if s != t)
        ya, yb = pos[answers[a]], pos[answers[b]]
        if diff == 1 and ya != yb:
            w[ya, yb] = w[yb, ya] = 1.0
    return floyd_warshall(w)


def as_label(a):
    a = np.asarray(a)
    return [tuple(r) for r in a.tolist()] if a.ndim == 2 else a.tolist()


def random_channel(rng, n, m=None, zeros=False):
    m = n if m is None else m
    h = rng.dirichlet(np.ones(m), size=n)
    if zeros:
        h[rng.random((n, m)) < 0.2] = 0.0
        h[:, 0] += 1e-3
        h /= h.sum(axis=1, keepdims=True)
    return h


def brute_sensitivity(answers_idx, dX, dY):
    """max over all pairs x ≠ x' at finite d_X of d_Y(f x, f x') / d_X(x, x') (Chatzikokolakis et al. 2013 Def 4)."""
    best = 0.0
    n = dX.shape[0]
    for a in range(n):
        for b in range(n):
            if a != b and np.isfinite(dX[a, b]):
                best = max(best, dY[answers_idx[a], answers_idx[b]] / dX[a, b])
    return best


def brute_uniform(answers_idx, dX, dY, delta, rtol=1e-9):
    """Chatzikokolakis et al. 2013 Def 5 with Δ-expansive pairs collected over *all* database pairs."""
    m = dY.shape[0]
    w = np.full((m, m), np.inf)
    np.fill_diagonal(w, 0.0)
    n = dX.shape[0]
    for a in range(n):
        for b in range(n):
            ya, yb = answers_idx[a], answers_idx[b]
            if ya != yb and np.isfinite(dX[a, b]) and abs(dY[ya, yb] - delta * dX[a, b]) <= rtol * max(dY[ya, yb], delta * dX[a, b]):
                w[ya, yb] = dY[ya, yb]
    sp = floyd_warshall(w)
    fin = np.isfinite(dY)
    return bool(np.all(~fin | (sp <= dY * (1 + rtol) + 1e-12)))


QUERY_CASES = {
    "count": lambda U: q.count(U),
    "count{2}": lambda U: q.count(U, {2}),
    "sum": lambda U: q.total(U),
    "avg": lambda U: q.average(U),
    "median": lambda U: q.percentile(U, 50),
    "max": lambda U: q.percentile(U, 100),
    "2count": lambda U: q.kcount(U, [{1, 2}, {2}]),
    "most_frequent": lambda U: q.most_frequent(U),
}


# ---------------------------------------------------------------------------------------------
# The universe
# ---------------------------------------------------------------------------------------------


class TestUniverse:
    @pytest.mark.parametrize("u,v", [(1, 2), (2, 3), (3, 2), (2, 4)])
    def test_enumeration_matches_product_and_hamming_order(self, u, v):
        U = q.universe(u, v)
        assert U.databases.shape == (v**u, u)
        assert U.databases.dtype.kind == "i"
        assert [tuple(r) for r in U.databases.tolist()] == ref_databases(u, range(v))
        h = spaces.hamming(u, v)
        assert U.labels == h.labels
        H = U.hamming()
        ref = (U.databases[:, None, :] != U.databases[None, :, :]).sum(axis=2)
        np.testing.assert_array_equal(H.distances, ref)

    @pytest.mark.parametrize("u,v,null", [(2, 3, False), (3, 2, False), (2, 3, True), (3, 2, True), (1, 3, True)])
    def test_adjacent_pairs_are_the_hamming_edges(self, u, v, null):
        U = q.universe(u, v, null=null)
        dbs = ref_databases(u, range(v), null)
        ref = {(a, b) for a, b in itertools.combinations(range(len(dbs)), 2) if sum(s != t for s, t in zip(dbs[a], dbs[b])) == 1}
        i, j = U.adjacent_pairs()
        assert set(zip(i.tolist(), j.tolist())) == ref
        assert len(i) == len(ref)  # no repetition
        # the Hamming space with the all-null database removed: distance = number of differing individuals
        H = U.hamming()
        for a, b in [(0, len(dbs) - 1), (1, len(dbs) // 2)]:
            assert H.distances[a, b] == sum(s != t for s, t in zip(dbs[a], dbs[b]))
        assert set(zip(*map(np.ndarray.tolist, H.essential_pairs()))) == ref

    def test_null_universe_excludes_the_empty_database(self):
        U = q.universe(2, 2, null=True)
        assert U.n == 3**2 - 1
        assert not np.isnan(U.databases).all(axis=1).any()
        assert U.labels == ref_databases(2, [0, 1], null=True)
        assert np.isnan(U.databases).sum() == 4  # (0,∅) (1,∅) (∅,0) (∅,1)

    def test_hamming_with_null_is_still_the_graph_metric(self):
        U = q.universe(2, 2, null=True)
        H = U.hamming()
        i, j = U.adjacent_pairs()
        w = np.full((U.n, U.n), np.inf)
        np.fill_diagonal(w, 0)
        w[i, j] = w[j, i] = 1
        np.testing.assert_array_equal(H.distances, floyd_warshall(w))

    def test_value_list(self):
        U = q.universe(2, [0.0, 0.5, 2.0])
        assert U.databases.dtype.kind == "f"
        assert [tuple(r) for r in U.databases.tolist()] == ref_databases(2, [0.0, 0.5, 2.0])
        assert U.hamming().labels[1] == (0.0, 0.5)

    @pytest.mark.parametrize("null", [False, True])
    def test_manhattan_and_chebyshev_against_definitions(self, null):
        vals = [0, 1, 3]
        U = q.universe(2, vals, null=null)
        dbs = ref_databases(2, vals, null)
        diam = 3.0

        def dv(a, b):
            if a is None and b is None:
                return 0.0
            if a is None or b is None:
                return diam
            return abs(a - b)

        d1 = np.array([[sum(dv(s, t) for s, t in zip(x, y)) for y in dbs] for x in dbs])
        dinf = np.array([[max(dv(s, t) for s, t in zip(x, y)) for y in dbs] for x in dbs])
        M = U.manhattan()
        np.testing.assert_allclose(M.distances, d1)
        np.testing.assert_allclose(U.manhattan(normalized=True).distances, d1 / diam)
        np.testing.assert_allclose(U.chebyshev().distances, dinf)
        # the structural essential pairs are those of the definition (no third point in between)
        got = set(zip(*map(np.ndarray.tolist, M.essential_pairs())))
        assert got == brute_essential_pairs(d1)
        assert MetricSpace(d1, check_triangle=True).n == len(dbs)

    def test_too_large_is_refused_with_its_size(self):
        with pytest.raises(ValueError, match="2,097,152"):
            q.universe(21, 2)
        with pytest.raises(ValueError, match=r"6\^150"):
            q.universe(150, 6)

    @pytest.mark.parametrize(
        "args,kw,exc",
        [
            ((0, 2), {}, ValueError),
            ((2, 1), {}, ValueError),
            ((2, True), {}, TypeError),
            ((2, "abc"), {}, TypeError),
            ((2, [1, 1]), {}, ValueError),
            ((2, [0.0, np.inf]), {}, ValueError),
            ((2, []), {}, ValueError),
            ((2.5, 2), {}, TypeError),
            ((2, [True, False]), {}, TypeError),
        ],
    )
    def test_bad_input(self, args, kw, exc):
        with pytest.raises(exc):
            q.universe(*args, **kw)

    def test_null_with_a_single_value_has_no_manhattan_metric(self):
        U = q.universe(2, [5], null=True)  # symbols {5, ∅}: a valid Hamming universe
        assert U.hamming().n == 3
        with pytest.raises(ValueError, match="two distinct values"):
            U.manhattan()


# ---------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------


def nearest_rank(vals, p):
    vals = sorted(vals)
    m = len(vals)
    k = max(1, math.ceil(p * m / 100))
    return vals[k - 1]


class TestQueries:
    @pytest.mark.parametrize("null", [False, True])
    def test_against_per_database_loops(self, null):
        U = q.universe(3, 3, null=null)
        dbs = ref_databases(3, range(3), null)
        present = [[s for s in x if s is not None] for x in dbs]
        assert q.count(U).tolist() == [sum(s >= 1 for s in x) for x in present]
        assert q.count(U, {0, 2}).tolist() == [sum(s in (0, 2) for s in x) for x in present]
        assert q.count(U, lambda a: a % 2 == 1).tolist() == [sum(s % 2 == 1 for s in x) for x in present]
        assert q.total(U).tolist() == [sum(x) for x in present]
        np.testing.assert_allclose(q.average(U), [sum(x) / len(x) for x in present])
        for p in (0, 10, 25, 50, 100 / 3, 75, 100):
            assert q.percentile(U, p).tolist() == [nearest_rank(x, p) for x in present]
        assert q.kcount(U, [{1}, {2}, None]).tolist() == [
            [x.count(1), x.count(2), sum(s >= 1 for s in x)] for x in present
        ]

    def test_percentile_special_cases(self):
        x = np.array([[3, 1, 2, 2], [0, 0, 5, 1]])
        assert q.percentile(x, 0).tolist() == [1, 0]  # min
        assert q.percentile(x, 100).tolist() == [3, 5]  # max
        assert q.percentile(x, 50).tolist() == [2, 0]  # lower median x_(2) of 4
        assert q.percentile(x, 50.0001).tolist() == [2, 1]  # x_(3)

    def test_average_rounding(self):
        x = np.array([[0.0, 1.0], [0.0, 0.5], [1.0, np.nan], [0.5, 1.5]])
        np.testing.assert_allclose(q.average(x), [0.5, 0.25, 1.0, 1.0])
        np.testing.assert_allclose(q.average(x, step=1.0), [1.0, 0.0, 1.0, 1.0])  # ties round up
        np.testing.assert_allclose(q.average(x, step=0.5, rounding="floor"), [0.5, 0.0, 1.0, 1.0])
        np.testing.assert_allclose(q.average(x, step=1.0, rounding="ceil"), [1.0, 1.0, 1.0, 1.0])
        with pytest.raises(ValueError, match="rounding"):
            q.average(x, step=1.0, rounding="banker")

    def test_most_frequent_tie_breaking(self):
        x = np.array([[1, 2], [2, 2], [0, 1], [3, 3]])
        assert q.most_frequent(x).tolist() == [1, 2, 0, 3]
        assert q.most_frequent(x, candidates=[2, 1, 0]).tolist() == [2, 2, 1, 2]  # no candidate held: first
        xn = np.array([[np.nan, 4.0], [4.0, 7.0]])
        assert q.most_frequent(xn, candidates=[7, 4]).tolist() == [4, 7]

    def test_empty_database_is_refused_where_undefined(self):
        x = np.array([[np.nan, np.nan], [1.0, np.nan]])
        assert q.count(x).tolist() == [0, 1]
        assert q.total(x).tolist() == [0.0, 1.0]
        with pytest.raises(ValueError, match="database 0"):
            q.average(x)
        with pytest.raises(ValueError, match="database 0"):
            q.percentile(x, 50)

    @pytest.mark.parametrize(
        "call,exc",
        [
            (lambda: q.count(np.array([1, 2])), ValueError),
            (lambda: q.count(np.array([["a", "b"]])), TypeError),
            (lambda: q.count(np.array([[1.0, np.inf]])), ValueError),
            (lambda: q.count(np.array([[1, 2]]), "12"), TypeError),
            (lambda: q.count(np.array([[1, 2]]), lambda a: a), ValueError),
            (lambda: q.percentile(np.array([[1, 2]]), 101), ValueError),
            (lambda: q.percentile(np.array([[1, 2]]), "50"), TypeError),
            (lambda: q.kcount(np.array([[1, 2]]), []), ValueError),
            (lambda: q.kcount(np.array([[1, 2]]), {1}.__contains__), TypeError),
            (lambda: q.most_frequent(np.array([[1, 2]]), [1, 1]), ValueError),
            (lambda: q.average(np.array([[1, 2]]), step=0), ValueError),
        ],
    )
    def test_bad_input(self, call, exc):
        with pytest.raises(exc):
            call()


# ---------------------------------------------------------------------------------------------
# Induced graph and induced space
# ---------------------------------------------------------------------------------------------


class TestInducedGraph:
    @pytest.mark.parametrize("name", sorted(QUERY_CASES))
    @pytest.mark.parametrize("u,v,null", [(2, 3, False), (3, 3, False), (2, 3, True)])
    def test_against_double_loop(self, name, u, v, null):
        U = q.universe(u, v, null=null)
        ans = QUERY_CASES[name](U)
        S = q.induced_space(ans, U)
        labels = sorted(set(as_label(ans)))
        assert S.labels == labels
        dbs = ref_databases(u, range(v), null)
        ref = ref_induced_distances(as_label(ans), labels, dbs)
        np.testing.assert_array_equal(S.distances, ref)
        i, j = S.essential_pairs()
        assert set(zip(i.tolist(), j.tolist())) == {(a, b) for a, b in zip(*np.nonzero(np.triu(ref == 1)))}

    def test_adjacency_forms_agree(self):
        U = q.universe(3, 2)
        ans = q.total(U)
        g0 = q.induced_graph(ans, U)
        H = U.hamming()
        i, j = U.adjacent_pairs()
        adj = sparse.coo_array((np.ones(i.size), (i, j)), shape=(U.n, U.n)).tocsr()
        for other in (H, (i, j), adj, adj.T.tocsr()):
            g = q.induced_graph(ans, other)
            assert g.labels == g0.labels
            np.testing.assert_array_equal(g.edges[0], g0.edges[0])
            np.testing.assert_array_equal(g.edges[1], g0.edges[1])
        assert g0.labels == [0, 1, 2, 3]
        assert [U.databases[k].sum() for k in range(U.n)] == [g0.labels[a] for a in g0.answer_index]
        nxg = g0.to_networkx()
        assert sorted(nxg.edges) == [(0, 1), (1, 2), (2, 3)]

    def test_most_frequent_is_a_clique(self):
        # Alvim et al. 2015 Example 30: "every two answers are neighbors, so the graph ... is a clique"
        for u in (1, 2, 3, 4):
            U = q.universe(u, 4)
            S = q.induced_space(q.most_frequent(U, candidates=[0, 1, 2]), U)  # value 3: another candidate
            assert S.labels == [0, 1, 2]
            np.testing.assert_array_equal(S.distances, 1 - np.eye(3))

    def test_bad_input(self):
        U = q.universe(2, 2)
        with pytest.raises(ValueError, match="4 databases"):
            q.induced_graph(np.arange(3), U)
        with pytest.raises(TypeError):
            q.induced_graph(np.arange(4), "hamming")
        with pytest.raises(ValueError):
            q.induced_graph(np.arange(4), (np.array([0, 1]), np.array([1, 9])))
        with pytest.raises(ValueError, match="NaN"):
            q.induced_graph(np.array([0.0, np.nan, 1.0, 1.0]), U)

    def test_disconnected_adjacency_gives_an_extended_metric(self):
        S = q.induced_space(np.array([0, 0, 1, 2]), (np.array([0, 1]), np.array([2, 2])))
        assert S.labels == [0, 1, 2]
        assert S.distances[0, 1] == 1 and np.isinf(S.distances[0, 2])


# ---------------------------------------------------------------------------------------------
# Closed forms (ElSalamouny et al. 2014 §7.1) against enumeration
# ---------------------------------------------------------------------------------------------


def same_space(a: MetricSpace, b: MetricSpace):
    assert a.labels == b.labels
    np.testing.assert_array_equal(a.distances, b.distances)
    ea = set(zip(*map(np.ndarray.tolist, a.essential_pairs())))
    eb = set(zip(*map(np.ndarray.tolist, b.essential_pairs())))
    assert ea == eb


class TestClosedForms:
    @given(u=st.integers(1, 5))
    @settings(max_examples=10)
    def test_count(self, u):
        U = q.universe(u, 2)
        same_space(q.count_space(u), q.induced_space(q.count(U), U))
        # more values, the default predicate value >= 1: still the line
        U3 = q.universe(min(u, 3), 3)
        same_space(q.count_space(min(u, 3)), q.induced_space(q.count(U3), U3))

    @given(u=st.integers(1, 3), v=st.integers(1, 4))
    @settings(max_examples=25)
    def test_sum_values_0_to_v(self, u, v):
        U = q.universe(u, v + 1)  # values 0..v
        same_space(q.sum_space(u, v), q.induced_space(q.total(U), U))

    @given(u=st.integers(1, 3), v=st.integers(2, 4))
    @settings(max_examples=20)
    def test_sum_values_1_to_v_alternative_reading(self, u, v):
        U = q.universe(u, list(range(1, v + 1)))
        S = q.induced_space(q.total(U), U)
        C = q.sum_space(u, v - 1)
        assert S.labels == [y + u for y in C.labels]
        np.testing.assert_array_equal(S.distances, C.distances)

    @pytest.mark.parametrize("u,k", [(1, 1), (2, 1), (1, 2), (2, 2), (3, 2), (1, 3), (2, 3)])
    def test_kcount_independent_predicates(self, u, k):
        U = q.universe(u, 2**k)
        same_space(q.kcount_space(u, k), q.induced_space(q.kcount(U, q.independent_predicates(k)), U))

    @given(
        u=st.integers(1, 2),
        p1=st.sets(st.integers(0, 3)),
        p2=st.sets(st.integers(0, 3)),
    )
    @settings(max_examples=40)
    def test_kcount_matches_iff_every_truth_pattern_is_realized(self, u, p1, p2):
        # The closed form is the induced graph exactly when each of the 2^k patterns of the predicates
        # is held by some value. (If a pattern s is missing, the answer with count u on the predicates
        # true in s and 0 on the others needs every individual to have pattern s.)
        U = q.universe(u, 4)
        S = q.induced_space(q.kcount(U, [p1, p2]), U)
        C = q.kcount_space(u, 2)
        patterns = {(x in p1, x in p2) for x in range(4)}
        agrees = S.labels == C.labels and np.array_equal(S.distances, C.distances)
        assert agrees == (len(patterns) == 4)

    def test_kcount_dependent_predicates_disagree(self):
        # Disjoint predicates {1}, {2} on V = {0,1,2}: c1 + c2 <= u and no (+1,+1) step.
        U = q.universe(2, 3)
        S = q.induced_space(q.kcount(U, [{1}, {2}]), U)
        assert S.labels == [(a, b) for a in range(3) for b in range(3) if a + b <= 2]
        pos = {y: i for i, y in enumerate(S.labels)}
        assert S.distances[pos[(0, 0)], pos[(1, 1)]] == 2  # 1 in the king's graph
        assert S.distances[pos[(1, 0)], pos[(0, 1)]] == 1  # an individual switches from 1 to 2
        # Nested predicates {>=1}, {>=2}: c2 <= c1
        S2 = q.induced_space(q.kcount(U, [{1, 2}, {2}]), U)
        assert S2.labels == [(a, b) for a in range(3) for b in range(3) if b <= a]

    def test_large_closed_forms_do_not_enumerate(self):
        s = q.sum_space(150, 5)
        assert s.n == 751 and s.labels[-1] == 750 and s.name == "sum:150,5"
        i, j = s.essential_pairs()
        assert i.size == sum(751 - d for d in range(1, 6))
        assert np.all((j - i >= 1) & (j - i <= 5))
        x = np.arange(751)
        np.testing.assert_array_equal(s.distances[0], np.ceil(x / 5))
        np.testing.assert_array_equal(s.distances[372], np.ceil(np.abs(x - 372) / 5))
        k = q.kcount_space(30, 2)
        assert k.n == 961 and k.labels[0] == (0, 0) and k.labels[-1] == (30, 30) and k.labels[31] == (1, 0)
        i, j = k.essential_pairs()
        assert i.size == 2 * 31 * 30 + 2 * 30 * 30  # rook + diagonal king moves on a 31x31 board
        a, b = np.array(k.labels)[i], np.array(k.labels)[j]
        assert np.all(np.abs(a - b).max(axis=1) == 1)
        c = q.count_space(7)
        assert c.labels == list(range(8)) and c.name == "count:7"

    def test_closed_forms_are_graph_metrics(self):
        for sp in (q.sum_space(3, 2), q.kcount_space(2, 2), q.count_space(4)):
            i, j = sp.essential_pairs()
            w = np.full((sp.n, sp.n), np.inf)
            np.fill_diagonal(w, 0)
            w[i, j] = w[j, i] = 1
            np.testing.assert_array_equal(sp.distances, floyd_warshall(w))
            assert set(zip(i.tolist(), j.tolist())) == brute_essential_pairs(sp.distances)

    @pytest.mark.parametrize("call", [lambda: q.count_space(0), lambda: q.sum_space(2, 0), lambda: q.kcount_space(2, 0), lambda: q.sum_space(1.5, 2)])
    def test_bad_input(self, call):
        with pytest.raises((ValueError, TypeError)):
            call()


# ---------------------------------------------------------------------------------------------
# Sensitivity and uniform sensitivity (Chatzikokolakis et al. 2013 Def 4–5, Thm 6, Thm 11–13, Prop 4–5)
# ---------------------------------------------------------------------------------------------


class TestSensitivity:
    def test_classic_sensitivities_wrt_hamming(self):
        u, v = 3, 4
        U = q.universe(u, v)
        H = U.hamming()
        line = lambda a: q.answer_line(a)  # noqa: E731
        assert q.sensitivity(q.count(U), H, q.count_space(u)) == 1
        assert q.sensitivity(q.total(U), H, line(q.total(U))) == v - 1  # values 0..v-1
        U5 = q.universe(2, 5 + 1)  # values 0..5 as in sum:U,5 (ElSalamouny et al. 2014 §7.1): sensitivity 5
        assert q.sensitivity(q.total(U5), U5.hamming(), line(q.total(U5))) == 5
        assert q.sensitivity(q.average(U), H, line(q.average(U))) == pytest.approx((v - 1) / u)
        assert q.sensitivity(q.percentile(U, 50), H, line(q.percentile(U, 50))) == v - 1
        U2 = q.universe(2, 4)
        kc = q.kcount(U2, q.independent_predicates(2))
        assert q.sensitivity(kc, U2.hamming(), q.kcount_space(2, 2)) == 1
        # the same answers under d_1 on the counts: both counts can move at once
        K = q.kcount_space(2, 2)
        c = np.array(K.labels)
        L1 = MetricSpace(np.abs(c[:, None, :] - c[None, :, :]).sum(axis=2), labels=K.labels)
        assert q.sensitivity(kc, U2.hamming(), L1) == 2

    @pytest.mark.parametrize("name", sorted(QUERY_CASES))
    def test_every_query_is_uniformly_1_sensitive_wrt_its_induced_graph(self, name):
        # ElSalamouny et al. 2014 §3.2: any f is uniformly 1-sensitive wrt d_h, d_{~f}
        for U in (q.universe(2, 3), q.universe(3, 3), q.universe(2, 3, null=True)):
            ans = QUERY_CASES[name](U)
            r = q.is_uniformly_sensitive(ans, U.hamming(), q.induced_space(ans, U))
            assert r.ok and r.delta == 1 and r.witness is None and bool(r)

    def test_sum_is_not_uniformly_sensitive_wrt_hamming_and_the_reals(self):
        U = q.universe(2, 3)
        ans = q.total(U)
        r = q.is_uniformly_sensitive(ans, U.hamming(), q.answer_line(ans))
        assert not r.ok and r.delta == 2 and r.witness_kind == "answers"
        assert r.witness == (0, 1)  # d_R(0, 1) = 1: no 2-expansive chain can be tight
        # a given Δ below the sensitivity: not even Δ-sensitive, witness is a database pair
        r1 = q.is_uniformly_sensitive(ans, U.hamming(), q.answer_line(ans), delta=1)
        assert not r1 and r1.witness_kind == "databases" and r1.sensitivity == 2
        x, x2 = r1.witness
        assert abs(ans[x] - ans[x2]) == 2 and U.hamming().distances[x, x2] == 1
        # a Δ above: no pair is Δ-expansive
        r3 = q.is_uniformly_sensitive(q.count(U), U.hamming(), q.count_space(2), delta=3)
        assert not r3 and r3.witness_kind == "answers" and r3.expansive_pairs[0].size == 0

    def test_answer_outside_the_image_fails(self):
        U = q.universe(2, 2)
        r = q.is_uniformly_sensitive(q.count(U), U.hamming(), q.count_space(3))  # answer 3 never occurs
        assert not r and r.witness_kind == "answers" and 3 in r.witness

    @given(data=st.data())
    @settings(max_examples=40)
    def test_against_the_definitions_on_all_pairs(self, data):
        # random database metric (d_1 on an uneven value list, d_∞, or Hamming), random query to random Y
        u = data.draw(st.integers(1, 2))
        vals = sorted(data.draw(st.sets(st.integers(0, 6), min_size=2, max_size=3)))
        U = q.universe(u, vals, null=data.draw(st.booleans()))
        X = data.draw(st.sampled_from([U.manhattan(), U.chebyshev(), U.hamming(), U.manhattan(normalized=True)]))
        kind = data.draw(st.sampled_from(["random", "sum", "avg", "perc", "count"]))
        if kind == "random":
            m = data.draw(st.integers(1, 4))
            ans = np.array(data.draw(st.lists(st.integers(0, m - 1), min_size=U.n, max_size=U.n)))
            pts = np.array(data.draw(st.lists(st.integers(0, 5), min_size=m, max_size=m, unique=True)), dtype=float)
            Y = MetricSpace(np.abs(pts[:, None] - pts[None, :]))  # labels 0..m-1
        else:
            ans = {
                "sum": lambda: q.total(U),
                "avg": lambda: q.average(U, step=1),
                "perc": lambda: q.percentile(U, data.draw(st.integers(0, 100))),
                "count": lambda: q.count(U, {vals[0]}),
            }[kind]()
            Y = q.answer_line(ans)
        idx, _ = q.answer_index(ans, Y.labels)
        s = q.sensitivity(ans, X, Y)
        assert s == pytest.approx(brute_sensitivity(idx, X.distances, Y.distances), rel=1e-12)
        r = q.is_uniformly_sensitive(ans, X, Y)
        assert r.ok == brute_uniform(idx, X.distances, Y.distances, s)

    # -- Chatzikokolakis et al. 2013 §5–6 ---------------------------------------------------------------------------
    @pytest.mark.parametrize("u,k", [(2, 2), (2, 3), (3, 2)])
    def test_thm12_and_thm13_on_integer_values(self, u, k):
        U = q.universe(u, k + 1, null=True)  # V = [0..k]_∅, q = 1
        queries = {
            "sum": q.total(U),
            "avg": q.average(U, step=1),
            "avg-floor": q.average(U, step=1, rounding="floor"),
            "min": q.percentile(U, 0),
            "median": q.percentile(U, 50),
            "p30": q.percentile(U, 30),
            "max": q.percentile(U, 100),
        }
        for name, ans in queries.items():
            Y = q.answer_line(ans)
            r1 = q.is_uniformly_sensitive(ans, U.manhattan(), Y)
            assert r1.ok and r1.delta == pytest.approx(1), (name, r1.reason)  # Thm 12
            r2 = q.is_uniformly_sensitive(ans, U.manhattan(normalized=True), Y)
            assert r2.ok and r2.delta == pytest.approx(k), (name, r2.reason)  # Thm 11: qk
            if name != "sum":
                r3 = q.is_uniformly_sensitive(ans, U.chebyshev(), Y)
                assert r3.ok and r3.delta == pytest.approx(1), (name, r3.reason)  # Thm 13
        # the sum is not 1-sensitive wrt d_∞ (all individuals move at once)
        assert q.sensitivity(queries["sum"], U.chebyshev(), q.answer_line(queries["sum"])) == u

    def test_thm11_with_a_non_unit_step(self):
        qs, k = 0.5, 3
        U = q.universe(2, [qs * i for i in range(k + 1)], null=True)
        for ans in (q.total(U), q.average(U, step=qs), q.percentile(U, 50)):
            r = q.is_uniformly_sensitive(ans, U.manhattan(normalized=True), q.answer_line(ans))
            assert r.ok and r.delta == pytest.approx(qs * k), r.reason

    def test_exact_average_is_not_uniformly_1_sensitive(self):
        # Disagreement with Chatzikokolakis et al. 2013 Thm 12–13 under the exact-mean reading of avg (see average()).
        U = q.universe(2, 3, null=True)
        ans = q.average(U)
        Y = q.answer_line(ans)
        for X in (U.manhattan(), U.chebyshev()):
            r = q.is_uniformly_sensitive(ans, X, Y)
            assert not r.ok and r.delta == pytest.approx(1)
            assert [Y.labels[i] for i in r.witness] == [0.0, 0.5]

    @pytest.mark.parametrize("k", [2, 3])
    def test_prop4_prop5_class_C(self, k):
        # sum, avg, p-perc are in class C: sensitivity wrt d_h and wrt normalized d_1 both = d_V(V)
        U = q.universe(2, k + 1, null=True)
        for ans in (q.total(U), q.average(U), q.percentile(U, 50), q.percentile(U, 100)):
            Y = q.answer_line(ans)
            assert q.sensitivity(ans, U.hamming(), Y) == pytest.approx(k)
            assert q.sensitivity(ans, U.manhattan(normalized=True), Y) == pytest.approx(k)

    def test_bad_input(self):
        U = q.universe(2, 2)
        with pytest.raises(ValueError, match="not a point"):
            q.sensitivity(q.total(U), U.hamming(), q.count_space(1))
        with pytest.raises(ValueError, match="4 answers"):
            q.sensitivity(np.zeros(4, int), q.universe(2, 3).hamming(), q.count_space(1))
        with pytest.raises(TypeError):
            q.sensitivity(q.count(U), U, q.count_space(2))
        with pytest.raises(ValueError):
            q.is_uniformly_sensitive(q.count(U), U.hamming(), q.count_space(2), delta=-1)


# ---------------------------------------------------------------------------------------------
# Oblivious mechanisms: ElSalamouny et al. 2014 Thm 1 / Cor 1, Chatzikokolakis et al. 2013 Thm 6 and Fact 5, numerically
# ---------------------------------------------------------------------------------------------


class TestOblivious:
    def test_rows_are_picked_by_answer(self):
        h = np.array([[0.5, 0.5], [0.1, 0.9], [1.0, 0.0]])
        k = q.oblivious(Channel(h, outputs=["a", "b"]), np.array([2, 0, 0, 1]))
        np.testing.assert_array_equal(k.matrix, h[[2, 0, 0, 1]])
        assert k.outputs == ["a", "b"] and k.shape == (4, 2)
        np.testing.assert_array_equal(q.oblivious(h, np.array([1])).matrix, h[[1]])

    @pytest.mark.parametrize(
        "idx,exc", [(np.array([0, 3]), ValueError), (np.array([0.0, 1.0]), TypeError), (np.zeros((2, 2), int), ValueError), (np.array([-1]), ValueError)]
    )
    def test_bad_input(self, idx, exc):
        with pytest.raises(exc):
            q.oblivious(np.eye(3), idx)

    @pytest.mark.parametrize("name", sorted(QUERY_CASES))
    def test_cor1_smallest_epsilons_agree(self, name):
        # H is ε·d_{~f}-private iff H∘f is ε·d_h-private (ElSalamouny et al. 2014 Cor 1), so the smallest ε coincide
        rng = np.random.default_rng(sum(map(ord, name)))
        U = q.universe(3, 3)
        ans = QUERY_CASES[name](U)
        Y = q.induced_space(ans, U)
        idx, _ = q.answer_index(ans)
        for trial in range(4):
            h = random_channel(rng, Y.n, m=rng.integers(2, 5), zeros=trial == 3)
            K = q.oblivious(h, idx)
            eY, eX = smallest_epsilon(h, Y), smallest_epsilon(K, U.hamming())
            assert eX == pytest.approx(eY, rel=1e-12) or (np.isinf(eX) and np.isinf(eY))
            if np.isfinite(eY) and eY > 0:
                for e in (eY, 1.001 * eY, 0.99 * eY):
                    assert check_privacy(h, Y, epsilon=e).ok == check_privacy(K, U.hamming(), epsilon=e).ok

    @given(u=st.integers(1, 3), v=st.integers(2, 3), data=st.data())
    @settings(max_examples=25)
    def test_cor1_property(self, u, v, data):
        U = q.universe(u, v)
        name = data.draw(st.sampled_from(sorted(QUERY_CASES)))
        ans = QUERY_CASES[name](U)
        Y = q.induced_space(ans, U)
        h = data.draw(stochastic_matrices(n=Y.n, m=data.draw(st.integers(1, 4))))
        idx, _ = q.answer_index(ans)
        eY, eX = smallest_epsilon(h, Y), smallest_epsilon(q.oblivious(h, idx), U.hamming())
        assert eX == pytest.approx(eY, rel=1e-12) or (np.isinf(eX) and np.isinf(eY))

    @pytest.mark.parametrize("metric", ["manhattan", "normalized", "chebyshev"])
    def test_thm6_with_uniform_delta(self, metric):
        # f uniformly Δ-sensitive: smallest ε of H∘f on d_X = Δ · smallest ε of H on d_Y
        rng = np.random.default_rng(7)
        U = q.universe(2, 3, null=True)
        X = {"manhattan": U.manhattan(), "normalized": U.manhattan(normalized=True), "chebyshev": U.chebyshev()}[metric]
        cases = [q.average(U, step=1), q.percentile(U, 50), q.percentile(U, 0)]
        if metric != "chebyshev":
            cases.append(q.total(U))
        for ans in cases:
            Y = q.answer_line(ans)
            r = q.is_uniformly_sensitive(ans, X, Y)
            assert r.ok
            idx, _ = q.answer_index(ans, Y.labels)
            for _ in range(3):
                h = random_channel(rng, Y.n, m=4)
                assert smallest_epsilon(q.oblivious(h, idx), X) == pytest.approx(r.delta * smallest_epsilon(h, Y), rel=1e-9)

    def test_fact5_only_without_uniformity(self):
        # sum wrt d_h, d_R has sensitivity v but is not uniformly sensitive: H∘f is v·ε_H·d_h-private
        # (Fact 5), and can be strictly more private, so the converse of Fact 5 fails.
        rng = np.random.default_rng(3)
        U = q.universe(2, 3)
        ans = q.total(U)
        Y = q.answer_line(ans)
        idx, _ = q.answer_index(ans, Y.labels)
        delta = q.sensitivity(ans, U.hamming(), Y)
        assert delta == 2
        gaps = []
        for _ in range(10):
            h = random_channel(rng, Y.n, m=3)
            eX, eY = smallest_epsilon(q.oblivious(h, idx), U.hamming()), smallest_epsilon(h, Y)
            assert eX <= delta * eY * (1 + 1e-12)
            gaps.append(delta * eY - eX)
        assert max(gaps) > 1e-6
        # an explicit H (u = 1, values 0..2): rows 0 and 2 equal, row 1 different
        U1 = q.universe(1, 3)
        a1 = q.total(U1)
        h = np.array([[0.5, 0.5], [0.25, 0.75], [0.5, 0.5]])
        eX = smallest_epsilon(q.oblivious(h, q.answer_index(a1)[0]), U1.hamming())
        eY = smallest_epsilon(h, q.answer_line(a1))
        assert eX == pytest.approx(np.log(2)) and 2 * eY == pytest.approx(2 * np.log(2))
