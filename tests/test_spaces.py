"""Finite (extended) metric spaces: validation, triangle check, essential pairs, constructors."""

import math

import networkx as nx
import numpy as np

from dprivacy.priors import constraints_matrix
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import brute_essential_pairs, graph_metrics, metric_matrices
from dprivacy import spaces
from dprivacy.spaces import GridSpace, MetricSpace


def _pairs(ij):
    i, j = ij
    return set(zip(np.asarray(i).tolist(), np.asarray(j).tolist()))


# ---------------------------------------------------------------------------------------------
# Validation: errors name the bad value
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "d, pattern",
    [
        (np.zeros((2, 3)), r"square, got shape \(2, 3\)"),
        ([[0, 1], [2, 0]], r"symmetric; d\[0,1\] = 1 but d\[1,0\] = 2"),
        ([[0, np.nan], [np.nan, 0]], r"NaN \(first at \[0, 1\]\)"),
        ([[0, -1], [-1, 0]], r"non-negative; d\[0,1\] = -1"),
        ([[0, 0, 1], [0, 0, 1], [1, 1, 0]], r"positive distance; d\[0,1\] = 0"),
        ([[1, 1], [1, 0]], r"zero diagonal; d\[0,0\] = 1"),
        ([0, 1, 2], r"2-D, got an array of shape \(3,\)"),
        (np.zeros((0, 0)), r"non-empty"),
    ],
)
def test_validation_errors_name_the_value(d, pattern):
    with pytest.raises(ValueError, match=pattern):
        MetricSpace(d)


def test_validation_type_and_labels_errors():
    with pytest.raises(TypeError, match="array of numbers"):
        MetricSpace([["a", "b"], ["c", "d"]])
    with pytest.raises(ValueError, match="labels has 2 entries, expected 3"):
        MetricSpace(spaces.line(3).distances, labels=["a", "b"])
    with pytest.raises(ValueError, match="coordinates has 2 rows, expected 3"):
        MetricSpace(spaces.line(3).distances, coordinates=[[0, 0], [1, 1]])
    with pytest.raises(ValueError, match="n must be >= 1"):
        spaces.line(0)
    with pytest.raises(TypeError, match="integer"):
        spaces.line(2.5)
    with pytest.raises(ValueError, match="grid metric must be one of"):
        spaces.grid(2, 2, metric="cosine")
    with pytest.raises(ValueError, match="step must be > 0"):
        spaces.grid(2, 2, step=0)


def test_labels_defaults_and_read_only_distances():
    s = MetricSpace([[0, 1], [1, 0]], labels=["a", "b"], name="two")
    assert s.labels == ["a", "b"] and s.n == len(s) == 2 and s.name == "two"
    assert spaces.line(3).labels == [0, 1, 2]
    with pytest.raises(ValueError):
        s.distances[0, 1] = 5.0
    src = np.array([[0.0, 1.0], [1.0, 0.0]])
    MetricSpace(src)
    assert src.flags.writeable  # building a space must not freeze the caller's array


def test_small_asymmetry_within_tolerance_is_accepted():
    MetricSpace([[0, 1.0], [1.0 + 1e-12, 0]])


# ---------------------------------------------------------------------------------------------
# Triangle inequality
# ---------------------------------------------------------------------------------------------


def test_triangle_witness():
    d = [[0, 1, 5], [1, 0, 1], [5, 1, 0]]
    tc = MetricSpace(d).check_triangle()
    assert not tc.ok and tc.witness in {(0, 2, 1), (2, 0, 1)} and tc.excess == pytest.approx(3.0)
    with pytest.raises(ValueError, match=r"triangle inequality: d\(\d,\d\) = 5 > d\(\d,1\) \+ d\(1,\d\) = 2"):
        MetricSpace(d, check_triangle=True)


def test_triangle_with_infinity():
    inf = np.inf
    assert MetricSpace([[0, inf], [inf, 0]]).check_triangle().ok
    # d(0,2) = ∞ although 0 — 1 — 2 is a finite path: not an extended metric.
    tc = MetricSpace([[0, 1, inf], [1, 0, 1], [inf, 1, 0]]).check_triangle()
    assert not tc.ok and tc.excess == np.inf


@given(metric_matrices(1, 8, extended=True))
def test_generated_metrics_satisfy_the_triangle_inequality(d):
    assert MetricSpace(d, check_triangle=True).check_triangle().ok


@given(metric_matrices(3, 8), st.data())
def test_triangle_witness_is_a_real_violation(d, data):
    n = d.shape[0]
    i, j = data.draw(st.sampled_from([(a, b) for a in range(n) for b in range(a + 1, n)]))
    bad = d.copy()
    # Make d(i, j) longer than some two-step path through a third point.
    k = next(k for k in range(n) if k not in (i, j))
    bad[i, j] = bad[j, i] = d[i, k] + d[k, j] + data.draw(st.floats(0.01, 5.0))
    tc = MetricSpace(bad).check_triangle()
    assert not tc.ok
    a, b, c = tc.witness
    assert bad[a, b] - bad[a, c] - bad[c, b] == pytest.approx(tc.excess) and tc.excess > 0
    # the reported violation is the largest one from its first point
    assert tc.excess == pytest.approx(max(bad[a, x] - min(bad[a, y] + bad[y, x] for y in range(n)) for x in range(n)))


# ---------------------------------------------------------------------------------------------
# Essential pairs: structural (constructors) and computed, against the brute-force definition
# ---------------------------------------------------------------------------------------------


@given(metric_matrices(1, 8, extended=True))
def test_computed_essential_pairs_match_the_definition(d):
    assert _pairs(MetricSpace(d).essential_pairs()) == brute_essential_pairs(d, rtol=0.0)
    assert _pairs(MetricSpace(d).essential_pairs(rtol=1e-9)) == brute_essential_pairs(d)


@given(graph_metrics(1, 8, connected=False))
def test_graph_edges_are_the_essential_pairs(de):
    d, edges = de
    n = d.shape[0]
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    s = spaces.from_graph(g)
    np.testing.assert_array_equal(s.distances, d)
    assert _pairs(s.essential_pairs()) == set(edges) == brute_essential_pairs(d)
    assert s.is_extended == (not nx.is_connected(g) if n else False)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
@pytest.mark.parametrize("w, h", [(1, 1), (1, 4), (4, 1), (2, 3), (3, 3), (5, 4), (4, 5)])
def test_grid_essential_pairs_structural_equals_computed(metric, w, h):
    g = spaces.grid(w, h, metric=metric, step=0.7)
    structural = _pairs(g.essential_pairs())
    d = g.distances
    assert structural == _pairs(MetricSpace(d).essential_pairs(rtol=1e-9)) == brute_essential_pairs(d)
    # The exact (default) comparison keeps pairs that rounding makes look non-implied: a superset.
    assert structural <= _pairs(MetricSpace(d).essential_pairs())


@pytest.mark.parametrize(
    "space",
    [spaces.line(6), spaces.line(4, step=2.5), spaces.ring(3), spaces.ring(6), spaces.ring(7),
     spaces.clique(5), spaces.hamming(2, 3), spaces.hamming(3, 2)],
    ids=lambda s: s.name,
)
def test_constructor_essential_pairs_equal_the_definition(space):
    assert _pairs(space.essential_pairs()) == brute_essential_pairs(space.distances)
    assert space.check_triangle().ok


def test_weighted_graph_essential_pairs_are_computed():
    # The edge (0, 2) of length 3 is implied by the path 0-1-2 of length 1 + 2.
    g = nx.Graph()
    g.add_edge(0, 1, w=1.0)
    g.add_edge(1, 2, w=2.0)
    g.add_edge(0, 2, w=3.0)
    s = spaces.from_graph(g, weight="w")
    assert _pairs(s.essential_pairs()) == {(0, 1), (1, 2)}


# ---------------------------------------------------------------------------------------------
# Constructors
# ---------------------------------------------------------------------------------------------


def test_line_ring_clique_hamming_distances():
    np.testing.assert_array_equal(spaces.line(3, step=2.0).distances, [[0, 2, 4], [2, 0, 2], [4, 2, 0]])
    assert spaces.ring(5).distances[0].tolist() == [0, 1, 2, 2, 1]
    np.testing.assert_array_equal(spaces.clique(3, distance=2.0).distances, 2.0 * (1 - np.eye(3)))
    hm = spaces.hamming(2, 2)
    assert hm.labels == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert hm.distances[0].tolist() == [0, 1, 1, 2]


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
def test_grid_layout_and_distances(metric):
    g = spaces.grid(4, 3, metric=metric, step=0.5)
    assert g.n == 12 and g.shape == (4, 3)
    # cell index = row * width + col, centre (col * step, row * step)
    np.testing.assert_array_equal(g.coordinates[6], [1.0, 0.5])
    dx, dy = 3, 2
    expected = {"euclidean": math.hypot(dx, dy), "manhattan": dx + dy, "chebyshev": max(dx, dy)}[metric] * 0.5
    assert g.distances[0, 2 * 4 + 3] == pytest.approx(expected)
    assert g.offset_distance(-dx, dy) == pytest.approx(expected)
    np.testing.assert_allclose(g.distances_from(5), g.distances[5])
    np.testing.assert_allclose(g.distances_from([1, 7]), g.distances[[1, 7]])


def test_from_graph_edge_list_and_labels():
    s = spaces.from_graph([("a", "b"), ("b", "c")])
    assert s.labels == ["a", "b", "c"] and s.distances[0, 2] == 2
    s = spaces.from_graph([(3, 1), (1, 2)])
    assert s.labels == [1, 2, 3]  # numeric nodes sorted
    s = spaces.from_graph([(0, 1)], nodes=[0, 1, 2])  # isolated node: infinitely far
    assert s.is_extended and s.distances[0, 2] == np.inf
    with pytest.raises(ValueError, match="self-loop"):
        spaces.from_graph([(0, 0)])
    with pytest.raises(ValueError, match="undirected"):
        spaces.from_graph(nx.DiGraph([(0, 1)]))
    with pytest.raises(ValueError, match="pair"):
        spaces.from_graph([(0, 1, 2)])


def test_load_matrix_and_edge_list(tmp_path):
    d = spaces.ring(4).distances
    np.save(tmp_path / "d.npy", d)
    np.savetxt(tmp_path / "d.csv", d, delimiter=",")
    for name in ("d.npy", "d.csv"):
        np.testing.assert_array_equal(spaces.load_matrix(tmp_path / name).distances, d)
    (tmp_path / "e.txt").write_text("# a path\n0 1\n1,2  # comment\n\n2 3\n")
    np.testing.assert_array_equal(spaces.load_edge_list(tmp_path / "e.txt").distances, spaces.line(4).distances)
    (tmp_path / "bad.txt").write_text("0 1 2\n")
    with pytest.raises(ValueError, match="bad.txt:1: expected two node names"):
        spaces.load_edge_list(tmp_path / "bad.txt")
    with pytest.raises(ValueError, match="npy or .csv"):
        spaces.load_matrix(tmp_path / "e.txt")
    with pytest.raises(FileNotFoundError):
        spaces.load_matrix(tmp_path / "missing.npy")


# ---------------------------------------------------------------------------------------------
# scaled(), extended metrics, constraints matrix
# ---------------------------------------------------------------------------------------------


@given(metric_matrices(1, 8, extended=True), st.floats(0.01, 10.0))
def test_scaled_multiplies_distances_and_keeps_structure(d, e):
    s = MetricSpace(d)
    t = s.scaled(e)
    np.testing.assert_allclose(t.distances, e * d)
    assert np.array_equal(np.isinf(t.distances), np.isinf(d)) and t.is_extended == s.is_extended
    # (up to rounding: ε·(a + b) and ε·a + ε·b may differ in the last bit)
    assert _pairs(t.essential_pairs(rtol=1e-9)) == _pairs(s.essential_pairs(rtol=1e-9))
    np.testing.assert_allclose(constraints_matrix(s, epsilon=e), np.exp(-e * d))
    np.testing.assert_allclose(constraints_matrix(t, epsilon=1.0), constraints_matrix(s, epsilon=e))


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
def test_grid_scaled(metric):
    g = spaces.grid(3, 2, metric=metric, step=2.0)
    t = g.scaled(0.25)
    assert isinstance(t, GridSpace) and t.step == 0.5
    np.testing.assert_allclose(t.distances, 0.25 * g.distances)
    assert _pairs(t.essential_pairs()) == _pairs(g.essential_pairs())


def test_scaled_rejects_bad_epsilon():
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        spaces.line(3).scaled(0)
    with pytest.raises(ValueError, match="finite"):
        spaces.line(3).scaled(np.inf)


def test_extended_metric():
    inf = np.inf
    s = MetricSpace([[0, 1, inf], [1, 0, inf], [inf, inf, 0]])
    assert s.is_extended and not spaces.line(3).is_extended
    np.testing.assert_array_equal(constraints_matrix(s, epsilon=1.0)[2], [0, 0, 1])
    assert _pairs(s.constraint_pairs()) == {(0, 1)}  # pairs at ∞ constrain nothing
    assert _pairs(s.essential_pairs()) == {(0, 1)}


@given(metric_matrices(1, 8, extended=True))
def test_constraint_pairs_are_the_finite_pairs_until_essential_pairs_are_known(d):
    s = MetricSpace(d)
    n = d.shape[0]
    finite = {(i, j) for i in range(n) for j in range(i + 1, n) if np.isfinite(d[i, j])}
    assert _pairs(s.constraint_pairs()) == finite
    s.essential_pairs()
    assert _pairs(s.constraint_pairs()) == brute_essential_pairs(d, rtol=0.0)


def test_a_line_of_numbers_with_one_bad_cell_is_data_not_a_header(tmp_path):
    """'0.5,0.5,x,0,0,0' was dropped as a header line and the one-line prior reported empty; a header is
    a line with no number in it."""
    from dprivacy.spaces import load_array

    bad = tmp_path / "p.csv"
    bad.write_text("0.5,0.5,x,0,0,0\n")
    with pytest.raises(ValueError, match="could not convert string 'x'"):
        load_array(bad, "prior")
    ok = tmp_path / "h.csv"
    ok.write_text("a,b,c\n0.5,0.25,0.25\n")
    assert load_array(ok, "prior").tolist() == [0.5, 0.25, 0.25]
