"""Graph symmetries and the closed-form mechanism of Alvim et al. 2015 Thm 27/28 (ElSalamouny et al. 2014 Def 7, Prop 9).

Expected values come from the papers (intersection numbers of Hamming graphs, Alvim et al. 2015 Prop 13; the
matrices of Alvim et al. 2015 Tables 1(b) and 2(b)), from textbook facts checked here independently (the
strongly-regular parameters of the Chang graphs, via A²), or from brute force over all permutations of
small graphs and an independent linear program for optimality.
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction
from math import comb

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dprivacy import measures, spaces
from dprivacy.graphs import (
    augment_to_symmetric,
    chang_graph,
    distance_counts,
    is_ball_size_symmetric,
    is_distance_regular,
    is_vertex_transitive,
)
from dprivacy.mechanisms.symmetric import remark29_mechanism, symmetric_mechanism

SETTINGS = settings(max_examples=30, deadline=None)

# A 4-regular graph on 7 vertices: K_{3,4} plus the matching {3-6, 4-5} on the 4-side. Every vertex
# sees 4 vertices at distance 1 and 2 at distance 2, yet it is neither distance-regular nor
# vertex-transitive (verified by brute force below).
BALL_ONLY = nx.Graph([(a, b) for a in range(3) for b in range(3, 7)] + [(3, 6), (4, 5)])


# ---------------------------------------------------------------------------------------------
# independent helpers
# ---------------------------------------------------------------------------------------------


def hop_matrix(g: nx.Graph) -> tuple[list, np.ndarray]:
    nodes = sorted(g.nodes) if all(isinstance(v, int) for v in g.nodes) else list(g.nodes)
    idx = {v: k for k, v in enumerate(nodes)}
    d = np.full((len(nodes), len(nodes)), np.inf)
    for s, lengths in nx.all_pairs_shortest_path_length(g):
        for t, l in lengths.items():
            d[idx[s], idx[t]] = l
    return nodes, d


def adjacency(g: nx.Graph) -> np.ndarray:
    nodes, _ = hop_matrix(g)
    return nx.to_numpy_array(g, nodelist=nodes).astype(bool)


def brute_force_orbit_of_0(a: np.ndarray) -> set:
    """All images of vertex 0 under automorphisms, by trying every permutation (n ≤ 7)."""
    n = a.shape[0]
    perms = np.array(list(itertools.permutations(range(n))))
    ok = (a[perms[:, :, None], perms[:, None, :]] == a[None]).all(axis=(1, 2))
    return set(perms[ok, 0].tolist())


def is_automorphism(a: np.ndarray, perm: np.ndarray) -> bool:
    return bool((a[np.ix_(perm, perm)] == a).all()) and sorted(perm.tolist()) == list(range(a.shape[0]))


def lp_best_utility(d: np.ndarray, prior: np.ndarray, epsilon: float) -> float:
    """max Σ_y π_y H[y, y] over ε·d-private H : Y → Y (identity gain; guesses = points), written for
    every ordered pair at finite distance (no reliance on the library's essential pairs)."""
    n = d.shape[0]
    c = -(prior[:, None] * np.eye(n)).ravel()
    rows = []
    for y, y2 in itertools.permutations(range(n), 2):
        if not np.isfinite(d[y, y2]):
            continue
        for z in range(n):
            r = np.zeros(n * n)
            # H[y,z] ≤ e^{ε d} H[y',z], written as e^{−ε d} H[y,z] − H[y',z] ≤ 0: coefficients in (0, 1], which HiGHS
            # solves accurately (with e^{ε d} up to 3e6 on a path of 6 at ε = 3 it returned 0.770 for an optimum ≥ 0.92)
            r[y * n + z] = np.exp(-epsilon * d[y, y2])
            r[y2 * n + z] = -1.0
            rows.append(r)
    a_eq = np.kron(np.eye(n), np.ones(n))
    res = linprog(c, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=a_eq, b_eq=np.ones(n), bounds=(0, None), method="highs")
    assert res.status == 0, res.message
    return -res.fun


@st.composite
def small_graphs(draw, min_n=2, max_n=7):
    n = draw(st.integers(min_n, max_n))
    pairs = list(itertools.combinations(range(n), 2))
    keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(p for p, k in zip(pairs, keep) if k)
    return g


@st.composite
def connected_graphs(draw, min_n=3, max_n=7):
    g = draw(small_graphs(min_n, max_n))
    n = g.number_of_nodes()
    order = draw(st.permutations(range(n)))
    g.add_edges_from(zip(order[:-1], order[1:]))  # a Hamiltonian path in random order: connected
    return g


# ---------------------------------------------------------------------------------------------
# ball-size symmetry (ElSalamouny et al. 2014 Def 7)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 10])
def test_ring_counts(n):
    c = distance_counts(spaces.ring(n))
    assert c.symmetric and bool(c)
    expected = [1] + [2] * ((n - 1) // 2) + ([1] if n % 2 == 0 else [])
    assert c.counts.tolist() == expected
    assert c.distances.tolist() == list(range(len(expected)))


@pytest.mark.parametrize("u,v", [(1, 4), (2, 3), (3, 2), (3, 3), (4, 2)])
def test_hamming_counts_seed001_section5(u, v):
    """n_d = C(u, d) (v−1)^d (Alvim et al. 2015 §5.1)."""
    c = distance_counts(spaces.hamming(u, v))
    assert c.symmetric
    assert c.counts.tolist() == [comb(u, d) * (v - 1) ** d for d in range(u + 1)]


def test_clique_and_scaling():
    c = distance_counts(spaces.clique(5, distance=2.5))
    assert c.distances.tolist() == [0.0, 2.5] and c.counts.tolist() == [1, 4]
    q3 = spaces.from_graph(nx.cubical_graph())
    base, scaled = distance_counts(q3), distance_counts(q3.scaled(0.37))
    np.testing.assert_allclose(scaled.distances, 0.37 * base.distances)
    assert scaled.counts.tolist() == base.counts.tolist() == [1, 3, 3, 1]


def test_extended_metric_counts_infinite_points():
    two_triangles = nx.disjoint_union(nx.complete_graph(3), nx.complete_graph(3))
    c = distance_counts(two_triangles)
    assert c.symmetric and c.n_infinite == 3 and c.counts.tolist() == [1, 2]
    lopsided = nx.disjoint_union(nx.complete_graph(3), nx.complete_graph(2))
    assert not distance_counts(lopsided).symmetric


def test_line_is_not_symmetric_with_witness():
    c = is_ball_size_symmetric(spaces.line(5))
    assert not c and c.points is not None and c.reason
    assert c.distances.size == 0


def test_euclidean_grid_regular_polygon():
    # Vertices of a regular hexagon under the Euclidean distance: float distances, symmetric.
    t = 2 * np.pi * np.arange(6) / 6
    xy = np.stack([np.cos(t), np.sin(t)], axis=1)
    d = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    d[np.diag_indices(6)] = 0
    c = distance_counts(spaces.from_matrix(d))
    assert c.symmetric
    np.testing.assert_allclose(c.distances, [0, 1, np.sqrt(3), 2])
    assert c.counts.tolist() == [1, 2, 2, 1]


@SETTINGS
@given(small_graphs(min_n=1))
def test_counts_agree_with_per_point_counting(g):
    nodes, d = hop_matrix(g)
    per_point = [Counter(row[np.isfinite(row)].tolist()) for row in d]
    c = distance_counts(g)
    assert c.symmetric == all(p == per_point[0] for p in per_point)
    if c.symmetric:
        assert dict(zip(c.distances.tolist(), c.counts.tolist())) == per_point[0]
        assert c.counts.sum() + c.n_infinite == len(nodes)
    else:
        y, y2 = c.points
        assert per_point[y][c.radius] == c.counts_at_radius[0]
        assert per_point[y2][c.radius] == c.counts_at_radius[1]
        assert c.counts_at_radius[0] != c.counts_at_radius[1]


# ---------------------------------------------------------------------------------------------
# distance-regularity (Alvim et al. 2015 Def 2)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "graph,array",
    [
        (nx.tetrahedral_graph(), ((3,), (1,))),  # K4 = Hamming(1, 4), Alvim et al. 2015 Fig 1(a)
        (nx.cubical_graph(), ((3, 2, 1), (1, 2, 3))),  # Q3 = Hamming(3, 2), Fig 1(b)
        (nx.petersen_graph(), ((3, 2), (1, 1))),
        (nx.cycle_graph(6), ((2, 1, 1), (1, 1, 2))),
        (nx.cycle_graph(7), ((2, 1, 1), (1, 1, 1))),
    ],
)
def test_intersection_arrays_of_classical_graphs(graph, array):
    r = is_distance_regular(graph)
    assert r.ok and r.intersection_array == array
    assert r.degree == array[0][0] and r.diameter == len(array[0])
    assert r.distance_counts().tolist() == distance_counts(graph).counts.tolist()


def test_seed001_fig1_graphs_are_hamming_graphs():
    """Alvim et al. 2015 §2.3: Fig 1(a) (K4) and 1(b) (the cube) are the Hamming graphs (1, 4) and (3, 2)."""
    for graph, (u, v) in ((nx.tetrahedral_graph(), (1, 4)), (nx.cubical_graph(), (3, 2))):
        h = spaces.hamming(u, v)
        ii, jj = np.nonzero(np.triu(h.distances == 1))
        assert nx.is_isomorphic(graph, nx.Graph(list(zip(ii.tolist(), jj.tolist()))))


def test_weighted_sum_needs_symmetry():
    c = distance_counts(spaces.ring(5))
    assert c.weighted_sum(1.0) == pytest.approx(1 + 2 * np.exp(-1) + 2 * np.exp(-2))
    with pytest.raises(ValueError, match="not ball-size symmetric"):
        distance_counts(spaces.line(3)).weighted_sum(1.0)


@pytest.mark.parametrize("u,v", [(1, 3), (2, 2), (2, 3), (3, 2), (2, 4), (3, 3)])
def test_hamming_intersection_numbers_seed001_prop13(u, v):
    r = is_distance_regular(spaces.hamming(u, v))
    assert r.ok and r.diameter == u
    assert r.b == tuple((u - d) * (v - 1) for d in range(u))
    assert r.c == tuple(range(1, u + 1))


@pytest.mark.parametrize("which", [1, 2, 3])
def test_chang_graphs_are_strongly_regular_28_12_6_4(which):
    g = chang_graph(which)
    a = adjacency(g).astype(int)
    assert a.shape == (28, 28) and (a.sum(axis=1) == 12).all()
    a2 = a @ a
    off = ~np.eye(28, dtype=bool)
    assert set(a2[(a == 1) & off].tolist()) == {6}  # λ: common neighbours of adjacent vertices
    assert set(a2[(a == 0) & off].tolist()) == {4}  # μ: of non-adjacent vertices
    # An srg(n, k, λ, μ) of diameter 2 has intersection array {k, k−1−λ; 1, μ}.
    r = is_distance_regular(g)
    assert r.ok and r.intersection_array == ((12, 5), (1, 4))


def test_chang_graphs_differ_from_triangular_graph():
    t8 = nx.line_graph(nx.complete_graph(8))
    edges = {frozenset(e) for e in t8.edges}
    for which in (1, 2, 3):
        assert {frozenset(e) for e in chang_graph(which).edges} != edges
    with pytest.raises(ValueError, match="which must be 1, 2 or 3"):
        chang_graph(4)


def test_truncated_tetrahedron_is_not_distance_regular():
    r = is_distance_regular(nx.truncated_tetrahedron_graph())
    assert not r and r.reason and r.witness is not None
    name, d, p0, x, p1, y = r.witness
    assert x != y


def test_not_distance_regular_cases():
    assert "not connected" in is_distance_regular(nx.disjoint_union(nx.cycle_graph(4), nx.cycle_graph(4))).reason
    assert not is_distance_regular(nx.path_graph(4)).ok
    assert not is_distance_regular(BALL_ONLY).ok
    r = is_distance_regular(spaces.grid(3, 3, metric="euclidean"))
    assert not r and "not the metric of an unweighted graph" in r.reason


def test_scaled_graph_metric_is_read_as_graph():
    assert is_distance_regular(spaces.hamming(2, 3).scaled(0.4)).intersection_array == ((4, 2), (1, 2))


@SETTINGS
@given(connected_graphs())
def test_distance_regularity_matches_definition_brute_force(g):
    nodes, d = hop_matrix(g)
    a = adjacency(g)
    ok = len({int(x) for x in a.sum(axis=1)}) == 1
    b, c = {}, {}
    for w, w2 in itertools.product(range(len(nodes)), repeat=2):
        k = int(d[w, w2])
        nb = a[w2]
        b.setdefault(k, set()).add(int((nb & (d[w] == k + 1)).sum()))
        c.setdefault(k, set()).add(int((nb & (d[w] == k - 1)).sum()))
    ok = all(len(s) == 1 for s in b.values()) and all(len(s) == 1 for s in c.values())
    r = is_distance_regular(g)
    assert r.ok == ok
    if ok:
        diam = int(d.max())
        assert r.b == tuple(next(iter(b[k])) for k in range(diam))
        assert r.c == tuple(next(iter(c[k])) for k in range(1, diam + 1))


# ---------------------------------------------------------------------------------------------
# vertex-transitivity (Alvim et al. 2015 Def 4)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "graph",
    [
        nx.tetrahedral_graph(),
        nx.cubical_graph(),
        nx.petersen_graph(),
        nx.truncated_tetrahedron_graph(),  # Alvim et al. 2015 Fig 2(b): VT, not DR
        nx.line_graph(nx.complete_graph(8)),  # T(8), the graph the Chang graphs are switched from
        spaces.hamming(2, 3),
        spaces.hamming(3, 2),
        spaces.ring(9),
    ],
    ids=["K4", "Q3", "Petersen", "truncated-tetrahedron", "T8", "H(2,3)", "H(3,2)", "ring9"],
)
def test_vertex_transitive_witnesses_are_automorphisms(graph):
    r = is_vertex_transitive(graph)
    assert r.ok and bool(r)
    a = (spaces.from_graph(graph) if isinstance(graph, nx.Graph) else graph).distances == 1
    n = a.shape[0]
    assert r.automorphisms.shape == (n, n)
    assert r.automorphisms[:, 0].tolist() == list(range(n))
    for perm in r.automorphisms:
        assert is_automorphism(a, perm)
    assert r.orbit.tolist() == list(range(n))


@pytest.mark.parametrize("which", [1, 2, 3])
def test_chang_graphs_are_not_vertex_transitive(which):
    """Alvim et al. 2015 §2.3, Fig 2(a): a Chang graph is distance-regular but not vertex-transitive."""
    g = chang_graph(which)
    r = is_vertex_transitive(g)
    assert not r and r.automorphisms is None and r.reason
    a = adjacency(g)
    for perm in r.generators:
        assert is_automorphism(a, perm)
    orbit = set(r.orbit.tolist())
    assert 0 in orbit and r.points[1] not in orbit and len(orbit) < 28
    for perm in r.generators:  # the orbit is closed under the automorphisms found
        assert {int(perm[x]) for x in orbit} == orbit
    assert distance_counts(g).symmetric  # ball-size symmetric all the same (Alvim et al. 2015 Prop 5 via DR)


def test_path_and_ball_only_graph_are_not_vertex_transitive():
    assert not is_vertex_transitive(nx.path_graph(5))
    r = is_vertex_transitive(BALL_ONLY)
    assert not r
    assert brute_force_orbit_of_0(adjacency(BALL_ONLY)) == set(r.orbit.tolist()) == {0, 1, 2}


def test_isometries_of_a_non_graph_metric():
    # Corners of a 1×2 rectangle: transitive isometry group, but not a graph metric.
    xy = np.array([[0, 0], [2, 0], [2, 1], [0, 1]], dtype=float)
    d = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    rect = spaces.from_matrix(d)
    r = is_vertex_transitive(rect)
    assert r.ok
    for perm in r.automorphisms:
        np.testing.assert_allclose(d[np.ix_(perm, perm)], d)
    assert not is_distance_regular(rect).ok
    # Moving one corner breaks the symmetry.
    xy[2] = [2, 1.5]
    d2 = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    assert not is_vertex_transitive(spaces.from_matrix(d2)).ok


@SETTINGS
@given(small_graphs(min_n=1, max_n=7))
def test_vertex_transitivity_matches_brute_force(g):
    a = adjacency(g)
    r = is_vertex_transitive(g)
    orbit = brute_force_orbit_of_0(a)
    assert r.ok == (len(orbit) == a.shape[0])
    if r.ok:
        for perm in r.automorphisms:
            assert is_automorphism(a, perm)
    elif distance_counts(g).symmetric:
        assert set(r.orbit.tolist()) == orbit


@SETTINGS
@given(connected_graphs())
def test_seed001_prop5_dr_or_vt_implies_ball_size_symmetry(g):
    if is_distance_regular(g).ok or is_vertex_transitive(g).ok:
        assert distance_counts(g).symmetric


# ---------------------------------------------------------------------------------------------
# the closed-form mechanism (Alvim et al. 2015 eq. (17)-(18), Thm 27/28; ElSalamouny et al. 2014 Prop 9)
# ---------------------------------------------------------------------------------------------


SYMMETRIC_CASES = [
    ("K4", nx.tetrahedral_graph()),
    ("Q3", nx.cubical_graph()),
    ("Petersen", nx.petersen_graph()),
    ("truncated-tetrahedron", nx.truncated_tetrahedron_graph()),
    ("Chang-1", chang_graph(1)),
    ("H(2,3)", spaces.hamming(2, 3)),
    ("ring7", spaces.ring(7)),
    ("ball-only", BALL_ONLY),
]


@pytest.mark.parametrize("name,graph", SYMMETRIC_CASES, ids=[c[0] for c in SYMMETRIC_CASES])
@pytest.mark.parametrize("epsilon", [0.3, np.log(2), 1.7])
def test_mechanism_is_a_tight_epsilon_private_channel(name, graph, epsilon):
    space = graph if isinstance(graph, spaces.MetricSpace) else spaces.from_graph(graph)
    m = symmetric_mechanism(graph, epsilon=epsilon)
    assert m.exists and bool(m)
    h = m.matrix
    np.testing.assert_allclose(h.sum(axis=1), 1.0, atol=1e-12)
    res = measures.check_privacy(m.channel, space, epsilon=epsilon)
    assert res.ok
    assert res.smallest_epsilon == pytest.approx(epsilon, rel=1e-9)
    # Thm 28: diagonal γ = 1/Σ_d n_d e^{−εd}, and utility for the uniform prior equal to γ.
    counts = Counter(space.distances[0].tolist())
    gamma = 1.0 / sum(k * np.exp(-epsilon * r) for r, k in counts.items())
    assert m.gamma == pytest.approx(gamma, rel=1e-12)
    np.testing.assert_allclose(np.diag(h), gamma, rtol=1e-12)
    u = np.full(space.n, 1.0 / space.n)
    assert measures.utility(m.channel, u).value == pytest.approx(gamma, rel=1e-12)


@pytest.mark.parametrize(
    "graph", [nx.petersen_graph(), nx.truncated_tetrahedron_graph(), BALL_ONLY, nx.cycle_graph(6)],
    ids=["Petersen", "truncated-tetrahedron", "ball-only", "C6"],
)
def test_mechanism_is_optimal_for_uniform_and_regular_priors(graph):
    """Alvim et al. 2015 Thm 27/28 (uniform prior) and ElSalamouny et al. 2014 Prop 9 + Thm 4 (every d-regular prior), checked
    against an independent LP. The ball-only graph is covered by ElSalamouny et al. 2014 but not by Alvim et al. 2015."""
    eps = 0.8
    _, d = hop_matrix(graph)
    n = d.shape[0]
    m = symmetric_mechanism(graph, epsilon=eps)
    u = np.full(n, 1.0 / n)
    best = lp_best_utility(d, u, eps)
    assert best == pytest.approx(m.gamma, rel=1e-7)  # Thm 27 bound, attained (Thm 28)
    # A regular prior π = μΦ with μ ≥ 0 (ElSalamouny et al. 2014 Def 4); optimal utility Σ μ (ElSalamouny et al. 2014 Thm 2).
    rng = np.random.default_rng(7)
    phi = np.exp(-eps * d)
    mu = rng.random(n)
    mu /= (mu @ phi).sum()
    prior = mu @ phi
    got = measures.utility(m.channel, prior).value
    assert got == pytest.approx(mu.sum(), rel=1e-9)
    assert lp_best_utility(d, prior, eps) == pytest.approx(got, rel=1e-7)


def test_seed001_table1b_clique_is_randomized_response():
    """Example 30: clique on 6 cities, ε = ln 2: diagonal 2/7, elsewhere 1/7; utility 0.2857."""
    from dprivacy.mechanisms import randomized_response

    m = symmetric_mechanism(spaces.clique(6), epsilon=np.log(2))
    expected = np.full((6, 6), 1 / 7) + np.eye(6) / 7
    np.testing.assert_allclose(m.matrix, expected, rtol=1e-12)
    assert m.utility_uniform == pytest.approx(2 / 7)
    for k in (2, 3, 5, 9):
        for eps in (0.2, 1.0, 3.0):
            np.testing.assert_allclose(
                symmetric_mechanism(spaces.clique(k), epsilon=eps).matrix,
                randomized_response(k, epsilon=eps).matrix, rtol=1e-12,
            )


def test_seed001_table2b_and_example31_remark29():
    """Example 31: a line of 6 answers made a ring (Remark 29), ε = ln 2: Table 2(b), utility 8/21,
    below the truncated geometric's 4/9 on the line; still (ln 2)-DP for the line."""
    from dprivacy.mechanisms.geometric import truncated_geometric

    eps = np.log(2)
    row0 = [Fraction(x, 21) for x in (8, 4, 2, 1, 2, 4)]
    expected = np.array([[float(row0[(j - i) % 6]) for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(symmetric_mechanism(spaces.ring(6), epsilon=eps).matrix, expected, rtol=1e-12)

    line = spaces.line(6)
    r = remark29_mechanism(line, epsilon=eps, method="cayley")
    assert r.augmentation.added_edges == [(0, 5)]
    np.testing.assert_allclose(r.channel.matrix, expected, rtol=1e-12)
    assert r.utility_uniform == pytest.approx(8 / 21)
    res = measures.check_privacy(r.channel, line, epsilon=eps)
    assert res.ok and res.smallest_epsilon == pytest.approx(eps)
    u = np.full(6, 1 / 6)
    tg = measures.utility(truncated_geometric(line, epsilon=eps), u).value
    assert tg == pytest.approx(4 / 9)
    ours = measures.utility(r.channel, u).value
    assert ours == pytest.approx(8 / 21) and ours < tg
    assert "lower bound" in r.guarantee


def test_exponential_mechanism_with_doubled_epsilon_coincides():
    """Alvim et al. 2015 §7: eq. (17) is the exponential mechanism with quality −d (which uses ε/2)."""
    from dprivacy.mechanisms import exponential

    for g in (spaces.hamming(2, 3), spaces.from_graph(nx.petersen_graph()), spaces.ring(8)):
        np.testing.assert_allclose(
            symmetric_mechanism(g, epsilon=0.9).matrix, exponential(g, epsilon=1.8).matrix, rtol=1e-12
        )


def test_extended_metric_mechanism():
    g = nx.disjoint_union(nx.cycle_graph(4), nx.cycle_graph(4))
    m = symmetric_mechanism(g, epsilon=1.0)
    assert m.exists
    h = m.matrix
    assert (h[:4, 4:] == 0).all()
    np.testing.assert_allclose(h.sum(axis=1), 1.0)


def test_mechanism_does_not_exist_on_asymmetric_space():
    m = symmetric_mechanism(spaces.line(4), epsilon=1.0)
    assert not m.exists and not m and m.channel is None and np.isnan(m.gamma)
    assert "not ball-size symmetric" in m.reason and "point 0" in m.reason


def test_graph_hypothesis_of_seed001_thm28():
    ok_dr = symmetric_mechanism(chang_graph(2), epsilon=1.0, hypothesis="graph")
    assert ok_dr.exists and "distance-regular" in ok_dr.reason
    ok_vt = symmetric_mechanism(nx.truncated_tetrahedron_graph(), epsilon=1.0, hypothesis="graph")
    assert ok_vt.exists and "vertex-transitive" in ok_vt.reason
    no = symmetric_mechanism(BALL_ONLY, epsilon=1.0, hypothesis="graph")
    assert not no.exists and "Thm 28" in no.reason
    assert symmetric_mechanism(BALL_ONLY, epsilon=1.0).exists  # ElSalamouny et al. 2014 Prop 9 needs only ball-size


def test_bad_inputs():
    with pytest.raises(ValueError, match="epsilon"):
        symmetric_mechanism(spaces.ring(5), epsilon=0)
    with pytest.raises(TypeError, match="MetricSpace"):
        symmetric_mechanism(np.zeros((3, 3)), epsilon=1.0)
    with pytest.raises(ValueError, match="hypothesis"):
        symmetric_mechanism(spaces.ring(5), epsilon=1.0, hypothesis="vt")
    with pytest.raises(TypeError, match="networkx.Graph or a MetricSpace"):
        is_vertex_transitive([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="method"):
        augment_to_symmetric(spaces.line(4), method="magic")
    with pytest.raises(ValueError, match="product n = 6"):
        augment_to_symmetric(spaces.line(6), group_shape=(2, 2))
    with pytest.raises(ValueError, match="unweighted graph"):
        augment_to_symmetric(spaces.grid(2, 3))


# ---------------------------------------------------------------------------------------------
# artificial adjacencies (Alvim et al. 2015 Remark 29)
# ---------------------------------------------------------------------------------------------


def test_grid_becomes_torus():
    g = spaces.grid(3, 4, metric="manhattan")
    aug = augment_to_symmetric(g, group_shape=(4, 3))
    assert aug.method == "cayley"
    torus = nx.convert_node_labels_to_integers(nx.grid_2d_graph(4, 3, periodic=True), ordering="sorted")
    assert {frozenset(e) for e in aug.graph.edges} == {frozenset(e) for e in torus.edges}
    assert is_vertex_transitive(aug.space).ok


def test_symmetric_graph_is_unchanged():
    aug = augment_to_symmetric(nx.petersen_graph())
    assert aug.method == "unchanged" and aug.added_edges == [] and "no adjacency added" in aug.guarantee


@SETTINGS
@given(connected_graphs(), st.sampled_from(["cayley", "power", "complete"]), st.floats(0.1, 3.0))
def test_augmentation_contains_graph_is_symmetric_and_mechanism_private(g, method, eps):
    aug = augment_to_symmetric(g, method=method)
    orig = {frozenset(e) for e in g.edges}
    new = {frozenset(e) for e in aug.graph.edges}
    assert orig <= new
    assert new - orig == {frozenset(e) for e in aug.added_edges}
    assert aug.counts.symmetric and distance_counts(aug.graph).symmetric
    m = symmetric_mechanism(aug.space, epsilon=eps)
    res = measures.check_privacy(m.channel, spaces.from_graph(g), epsilon=eps)
    assert res.ok


@SETTINGS
@given(connected_graphs(), st.floats(0.1, 3.0))
def test_best_augmentation_has_the_largest_uniform_utility(g, eps):
    best = remark29_mechanism(g, epsilon=eps)
    for method in ("cayley", "power", "complete"):
        assert best.utility_uniform >= remark29_mechanism(g, epsilon=eps, method=method).utility_uniform - 1e-12
    # never above the optimum for the original graph (its constraints are weaker)
    _, d = hop_matrix(g)
    u = np.full(d.shape[0], 1.0 / d.shape[0])
    assert best.utility_uniform <= lp_best_utility(d, u, eps) + 1e-7
