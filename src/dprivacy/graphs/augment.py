"""Named graphs of the papers and artificial adjacencies: the Chang graphs (Alvim et al. 2015 §2.3, Fig 2(a)), and the
supergraphs ~' ⊇ ~ whose metric is ball-size symmetric (Alvim et al. 2015 Remark 29), on which the symmetric mechanism
exists. See :mod:`dprivacy.graphs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spaces import MetricSpace, from_graph
from .ball_size import DistanceCounts, distance_counts
from .views import _space_of, _View, _view

_CHANG_SWITCHING_SETS = {
    1: [(0, 1), (2, 3), (4, 5), (6, 7)],  # four disjoint edges of K8
    2: [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (0, 7)],  # an 8-cycle
    3: [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (5, 6), (6, 7), (3, 7)],  # a triangle and a 5-cycle
}


def chang_graph(which: int = 1):
    """One of the three Chang graphs (Alvim et al. 2015 §2.3, Fig 2(a): distance-regular, not vertex-transitive).

    The triangular graph T(8) is the line graph of K8: its 28 vertices are the edges {i, j} of K8,
    adjacent when they share an end; it is strongly regular with parameters (28, 12, 6, 4). Seidel
    switching T(8) with respect to a set S of its vertices (toggling every adjacency between S and its
    complement) keeps these parameters when S, seen as a set of edges of K8, is 4 disjoint edges
    (``which=1``), an 8-cycle (``which=2``), or a triangle plus a 5-cycle (``which=3``); the results are
    the three Chang graphs, not isomorphic to T(8) nor to each other.

    Returns
    -------
    networkx.Graph
        Nodes are the pairs (i, j), i < j, of K8's vertices.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §2.3.
    """
    import itertools

    import networkx as nx

    if which not in _CHANG_SWITCHING_SETS:
        raise ValueError(f"which must be 1, 2 or 3 (the three Chang graphs), got {which!r}")
    nodes = list(itertools.combinations(range(8), 2))
    switch = {tuple(sorted(e)) for e in _CHANG_SWITCHING_SETS[which]}
    g = nx.Graph()
    g.add_nodes_from(nodes)
    for p, q in itertools.combinations(nodes, 2):
        adjacent = bool(set(p) & set(q))
        if (p in switch) != (q in switch):
            adjacent = not adjacent
        if adjacent:
            g.add_edge(p, q)
    return g


_AUGMENT_METHODS = ("cayley", "power", "complete")


@dataclass(frozen=True)
class Augmentation:
    """Result of :func:`augment_to_symmetric`: a supergraph ~' ⊇ ~ whose metric is ball-size symmetric.

    Attributes
    ----------
    graph : networkx.Graph
        The augmented graph (Y, ~'), on the same nodes as the original.
    space : MetricSpace
        Its graph metric d_{~'}, points in the original order.
    original : MetricSpace
        The original graph metric d_~.
    added_edges : list of (label, label)
        The artificial adjacencies ~' \\ ~.
    method : str
        How ~' was built ("unchanged" when the original was already symmetric).
    counts : DistanceCounts
        The distance counts n'_r of the augmented metric.
    guarantee : str
        What a mechanism built on ~' guarantees for the original graph.
    """

    graph: object
    space: MetricSpace
    original: MetricSpace
    added_edges: list
    method: str
    counts: DistanceCounts
    guarantee: str


def _guarantee_text(n_added: int) -> str:
    if n_added == 0:
        return (
            "no adjacency added: the closed-form mechanism on this graph is itself optimal for the "
            "uniform prior (Alvim et al. 2015 Thm 28) and every regular prior (ElSalamouny et al. 2014 Prop 9, Thm 4)"
        )
    return (
        f"{n_added} adjacency(ies) added. Since ~ ⊆ ~', d_~' ≤ d_~ pointwise, so any ε·d_~'-private "
        "mechanism (in particular the closed-form one, Alvim et al. 2015 eq. (17)) is ε·d_~-private for the original "
        "graph (Alvim et al. 2015 Remark 29). It is optimal among ε·d_~'-private mechanisms for the uniform prior "
        "(its utility γ' = 1/Σ_r n'_r e^{-εr}, Thm 28), hence γ' is only a lower bound on the best utility "
        "for the original graph, which may be higher (Alvim et al. 2015 Example 31: 8/21 on the ring vs 4/9 for "
        "the truncated geometric mechanism on the line)"
    )


def _edge_pairs(view: _View) -> tuple[np.ndarray, np.ndarray]:
    return np.nonzero(np.triu(view.adjacency))


def _cayley_edges(view: _View, group_shape: tuple[int, ...]) -> set:
    n = view.n
    shape = np.asarray(group_shape, dtype=np.int64)
    coords = np.stack(np.unravel_index(np.arange(n), group_shape), axis=1)  # (n, k)
    i, j = _edge_pairs(view)
    diffs = (coords[j] - coords[i]) % shape
    conn = np.unique(np.concatenate([diffs, (-diffs) % shape]), axis=0)
    edges = set()
    for s in conn:  # one vectorized translate per generator of the connection set
        tgt = np.ravel_multi_index(tuple(((coords + s) % shape).T), group_shape)
        lo, hi = np.minimum(np.arange(n), tgt), np.maximum(np.arange(n), tgt)
        edges.update(zip(lo.tolist(), hi.tolist()))
    return {(a, b) for a, b in edges if a != b}


def augment_to_symmetric(graph_or_space, *, method: str = "cayley", group_shape=None) -> Augmentation:
    """Add artificial adjacencies so that the graph's metric becomes ball-size symmetric (Alvim et al. 2015 Remark 29).

    Remark 29 of Alvim et al. 2015: when (Y, ~) is neither distance-regular nor vertex-transitive, take a
    relation ~' ⊇ ~ that is, and build the mechanism of eq. (17) with the distance of ~'; it is still
    ε-differentially private for ~ but may be sub-optimal, and "the smaller ~', the higher the
    utility". The paper gives no construction beyond an example (Example 31: a line closed into a
    ring). This function offers three:

    ``"cayley"`` (default)
        Identify the points, in their order, with the elements of the abelian group
        Z_{m_1} × ... × Z_{m_k} (``group_shape``, default (n,), i.e. Z_n; row-major order), take the
        connection set S = {±(x_j − x_i) : i ~ j}, and return the Cayley graph Cay(Z, S): x ~' x + s for
        s ∈ S. It contains ~ and is vertex-transitive (translations are automorphisms). A path in its
        order becomes a ring (Example 31); a W×H grid in row-major order with ``group_shape=(H, W)``
        becomes a torus.
    ``"power"``
        The smallest power G^k (x ~' y iff d(x, y) ≤ k) that is ball-size symmetric; the complete graph
        if none is.
    ``"complete"``
        The complete graph: the mechanism is then randomized response.

    When the original is already ball-size symmetric, it is returned unchanged (``method ==
    "unchanged"``), since the closed form (ElSalamouny et al. 2014 Prop 9) needs nothing more.

    Parameters
    ----------
    graph_or_space : networkx.Graph, MetricSpace, or edge list
        An unweighted graph, or the metric of one.
    method : {"cayley", "power", "complete"}
    group_shape : tuple of int, optional
        For ``"cayley"``: the cyclic factors, with product n.

    Returns
    -------
    Augmentation
        The augmented graph and metric, the added edges, and what the resulting mechanism guarantees
        for the original graph (``guarantee``).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Remark 29.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Prop 9.
    """
    import networkx as nx

    if method not in _AUGMENT_METHODS:
        raise ValueError(f"method must be one of {', '.join(_AUGMENT_METHODS)}; got {method!r}")
    if not isinstance(graph_or_space, (MetricSpace, nx.Graph)):
        graph_or_space = from_graph(graph_or_space)
    view = _view(graph_or_space)
    if view.hops is None:
        raise ValueError(f"augment_to_symmetric needs an unweighted graph: {view.why_not_graph}")
    n = view.n
    original = _space_of(view)
    orig_edges = set(zip(*(x.tolist() for x in _edge_pairs(view))))
    if group_shape is not None and method != "cayley":
        raise ValueError(f"group_shape applies to method='cayley' only, got method={method!r}")

    base = distance_counts(original)
    if base.symmetric:
        used, edges = "unchanged", orig_edges
    elif method == "complete":
        used, edges = method, {(a, b) for a in range(n) for b in range(a + 1, n)}
    elif method == "cayley":
        shape = (n,) if group_shape is None else tuple(int(m) for m in group_shape)
        if any(m < 1 for m in shape) or int(np.prod(shape)) != n:
            raise ValueError(f"group_shape must be positive integers with product n = {n}, got {group_shape!r}")
        used, edges = method, _cayley_edges(view, shape)
    else:  # power
        used, edges = "complete", {(a, b) for a in range(n) for b in range(a + 1, n)}
        h = view.hops
        finite = h[np.isfinite(h)]
        for k in range(2, int(finite.max()) + 1):
            hk = np.where(np.isfinite(h), np.ceil(h / k), np.inf)
            if distance_counts(MetricSpace(hk, validate=False)).symmetric:
                ii, jj = np.nonzero(np.triu(h <= k) & ~np.eye(n, dtype=bool))
                used, edges = f"power:{k}", set(zip(ii.tolist(), jj.tolist()))
                break
    labels = view.labels
    g = nx.Graph()
    g.add_nodes_from(labels)
    g.add_edges_from((labels[a], labels[b]) for a, b in edges)
    space = from_graph(g, nodes=labels, name=f"{used} augmentation of {getattr(graph_or_space, 'name', 'a graph')}")
    counts = distance_counts(space)
    added = sorted(edges - orig_edges)
    return Augmentation(
        graph=g,
        space=space,
        original=original,
        added_edges=[(labels[a], labels[b]) for a, b in added],
        method=used,
        counts=counts,
        guarantee=_guarantee_text(len(added)),
    )
