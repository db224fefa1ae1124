"""Distance-regular graphs (Alvim et al. 2015 §2.3, Def 2; Alvim et al. 2011 §3) and vertex-transitive graphs (Alvim et al. 2015 Def 4),
decided on a graph or on the graph of a metric space's essential pairs (:mod:`.views`). See
:mod:`dprivacy.graphs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..spaces import MetricSpace
from .ball_size import distance_counts
from .views import _space_of, _View, _view


# ---------------------------------------------------------------------------------------------
# Distance-regularity
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DistanceRegularity:
    """Result of :func:`is_distance_regular`.

    Attributes
    ----------
    ok : bool
        Whether the graph is (connected and) distance-regular, Alvim et al. 2015 Def 2.
    intersection_array : (tuple, tuple) or None
        {b_0, ..., b_{D-1}; c_1, ..., c_D} (D the diameter) when it holds.
    degree, diameter : int or None
        k = b_0 and D when it holds.
    reason : str
        Why it does not hold (empty when it does).
    witness : tuple or None
        When an intersection number is not constant: ``(name, d, (w, w'), x, (u, u'), y)`` — the pairs
        (w, w') and (u, u'), both at distance d, have x and y for the intersection number ``name``
        ("b" or "c").
    """

    ok: bool
    intersection_array: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    degree: int | None = None
    diameter: int | None = None
    reason: str = ""
    witness: tuple | None = None

    def __bool__(self) -> bool:
        return self.ok

    @property
    def b(self) -> tuple[int, ...]:
        """b_0..b_{D-1}."""
        return self.intersection_array[0] if self.intersection_array else ()

    @property
    def c(self) -> tuple[int, ...]:
        """c_1..c_D."""
        return self.intersection_array[1] if self.intersection_array else ()

    def distance_counts(self) -> np.ndarray:
        """n_0..n_D from the intersection array: n_0 = 1, n_{d+1} = n_d b_d / c_{d+1} (counting the
        edges between distance layers d and d+1 of a vertex in two ways).

        References
        ----------
        .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
           differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 7
           (§6.2).
        .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
           information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Prop 5.
        """
        if not self.ok:
            raise ValueError(f"the graph is not distance-regular: {self.reason}")
        counts = [1]
        for bd, cd in zip(self.b, self.c):
            counts.append(counts[-1] * bd // cd)
        return np.asarray(counts, dtype=np.int64)


def is_distance_regular(graph_or_space) -> DistanceRegularity:
    r"""Test distance-regularity and return the intersection array (Alvim et al. 2015 §2.3, Def 2; Alvim et al. 2011 §3).

    A connected graph is distance-regular when there are integers b_d, c_d such that for all vertices
    w, w' at distance d, w' has exactly b_d neighbours at distance d+1 from w and c_d neighbours at
    distance d−1 from w. With M_t the 0/1 matrix of "distance = t" and A the adjacency matrix,
    (M_{d+1} A)[w, w'] counts the first and (M_{d-1} A)[w, w'] the second, so the test is one matrix
    product per distance: both must be constant on the pairs at distance d.

    Parameters
    ----------
    graph_or_space : networkx.Graph or MetricSpace
        A space is read as a graph when all its essential pairs have the same length (a graph metric,
        possibly scaled by ε); otherwise the result says it is not a graph metric.

    Returns
    -------
    DistanceRegularity
        With the intersection array {b_0..b_{D-1}; c_1..c_D} when the graph is distance-regular, else
        the reason (not a graph metric, not connected, or two pairs at the same distance with different
        intersection numbers).

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Def 2, Prop
       3.
    """
    v = _view(graph_or_space)
    if v.hops is None:
        return DistanceRegularity(False, reason=v.why_not_graph)
    hops = v.hops
    if not np.isfinite(hops).all():
        i, j = np.argwhere(~np.isfinite(hops))[0]
        return DistanceRegularity(
            False, reason=f"the graph is not connected (no path between {v.labels[i]!r} and {v.labels[j]!r}); "
            "distance-regularity is defined for connected graphs"
        )
    h = hops.astype(np.int64)
    diam = int(h.max())
    a = v.adjacency.astype(np.float64)
    # through[t][w, w'] = number of neighbours of w' at distance t from w
    through = [np.rint((h == t).astype(np.float64) @ a).astype(np.int64) for t in range(diam + 1)]
    b, c = [], []
    for d in range(diam + 1):
        at_d = h == d
        for name, t, out in (("b", d + 1, b), ("c", d - 1, c)):
            if d == 0 and name == "c":
                continue
            if d == diam and name == "b":
                continue
            counts = through[t][at_d]
            if counts.min() != counts.max():
                w = np.argwhere(at_d)
                k0, k1 = int(np.argmin(counts)), int(np.argmax(counts))
                p0, p1 = tuple(int(x) for x in w[k0]), tuple(int(x) for x in w[k1])
                lab = lambda p: (v.labels[p[0]], v.labels[p[1]])  # noqa: E731
                side = "d+1" if name == "b" else "d-1"
                return DistanceRegularity(
                    False,
                    reason=(
                        f"intersection number {name}_{d} is not constant: {lab(p0)} and {lab(p1)} are both "
                        f"at distance {d}, but the second vertex has {counts[k0]} resp. {counts[k1]} "
                        f"neighbour(s) at distance {side} from the first"
                    ),
                    witness=(name, d, lab(p0), int(counts[k0]), lab(p1), int(counts[k1])),
                )
            out.append(int(counts[0]))
    return DistanceRegularity(
        True,
        intersection_array=(tuple(b), tuple(c)),
        degree=b[0] if b else 0,
        diameter=diam,
    )


# ---------------------------------------------------------------------------------------------
# Vertex-transitivity
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VertexTransitivity:
    """Result of :func:`is_vertex_transitive`.

    Attributes
    ----------
    ok : bool
        Whether the automorphism group acts transitively (Alvim et al. 2015 Def 4).
    automorphisms : ndarray of int, shape (n, n), or None
        When it holds, row v is an automorphism σ_v (as the permutation x ↦ σ_v[x]) with σ_v(0) = v.
    generators : list of ndarray
        The automorphisms found by search; ``automorphisms`` are products of them.
    orbit : ndarray of int
        The orbit of point 0 under the automorphism group (all points when it holds).
    points : (int, int) or None
        When it fails: 0 and a point v that no automorphism maps 0 to.
    reason : str
        Why it fails (empty when it holds).
    """

    ok: bool
    automorphisms: np.ndarray | None
    generators: list = field(default_factory=list)
    orbit: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    points: tuple[int, int] | None = None
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def _refine(blocks: list, colors: np.ndarray) -> np.ndarray:
    """Colour refinement (1-dimensional Weisfeiler–Leman) on a graph with edge classes.

    ``blocks`` are sparse adjacency matrices, one per edge class. A vertex's new colour is its old
    colour together with how many neighbours of each colour it has through each edge class; the
    colours are numbered by sorting these signatures, so they are canonical: isomorphic inputs get
    the same colours. Every automorphism preserves the stable colouring.
    """
    from scipy import sparse

    n = colors.size
    k = int(colors.max()) + 1
    while True:
        onehot = sparse.csr_matrix((np.ones(n), (np.arange(n), colors)), shape=(n, k))
        sig = np.hstack([colors[:, None].astype(np.float64)] + [(m @ onehot).toarray() for m in blocks])
        _, new = np.unique(sig, axis=0, return_inverse=True)
        new = new.ravel()
        k_new = int(new.max()) + 1
        if k_new == k:
            return new
        colors, k = new, k_new


def _rooted_colourings(v: _View, blocks_union: list, target: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable colourings of the graph with 0 individualized and with ``target`` individualized, refined
    together on the disjoint union so that their colours are comparable."""
    n = v.n
    c = np.zeros(2 * n, dtype=np.int64)
    c[0] = 1
    c[n + target] = 1
    c = _refine(blocks_union, c)
    return c[:n], c[n:]


def _is_automorphism(v: _View, perm: np.ndarray) -> bool:
    return bool(np.array_equal(v.edge_class[np.ix_(perm, perm)], v.edge_class))


def _orbit_transversal(n: int, generators: list) -> dict:
    """For every point w in the orbit of 0 under the group generated by ``generators``, a product σ_w
    of generators with σ_w(0) = w (breadth-first search; σ_w = g ∘ σ_u when w = g(u))."""
    trans = {0: np.arange(n)}
    queue = [0]
    while queue:
        u = queue.pop()
        for g in generators:
            w = int(g[u])
            if w not in trans:
                trans[w] = g[trans[u]]
                queue.append(w)
    return trans


def is_vertex_transitive(graph_or_space) -> VertexTransitivity:
    """Test vertex-transitivity through the automorphism group (Alvim et al. 2015 Def 4, Prop 5, Lemma 32).

    For every vertex v, search an automorphism σ with σ(0) = v; the vertices already reached by
    products of the automorphisms found are skipped. Each search individualizes 0 in one copy of the
    graph and v in another, refines the colours of both together (1-WL) and, when the colour classes
    agree, runs networkx's VF2++ matcher constrained to colour-preserving maps. Different colour
    classes, or an exhausted VF2++ search, prove that no automorphism maps 0 to v.

    For a MetricSpace the automorphisms are its isometries (permutations preserving d), found as the
    automorphisms of its essential pairs coloured by length; for a graph metric these are exactly the
    graph's automorphisms.

    Returns
    -------
    VertexTransitivity
        When transitive, ``automorphisms[v]`` maps 0 to v (the witnesses); otherwise two points that no
        automorphism exchanges, the orbit of 0, and the reason. A quick first test compares the distance
        counts of all points (automorphisms preserve them, so a difference settles it).

    Notes
    -----
    Alvim et al. 2011 (§3) asks for "VT+": n automorphisms σ_0..σ_{n-1} with {σ_i(w)} = V for every w. The
    automorphisms returned here map 0 to every vertex, which is the single-orbit condition of seed
    001 Def 4 (the one the later paper uses), not necessarily VT+.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Def 4, Prop
       5, Lemma 32.
    """
    import networkx as nx
    from scipy import sparse

    v = _view(graph_or_space)
    n = v.n
    counts = distance_counts(graph_or_space if isinstance(graph_or_space, MetricSpace) else _space_of(v))
    if not counts.symmetric:
        a, b = counts.points
        reason = (
            f"points {v.labels[a]!r} and {v.labels[b]!r} have different numbers of points at distance "
            f"{counts.radius:g} ({counts.counts_at_radius[0]} vs {counts.counts_at_radius[1]}), which an "
            "automorphism would preserve"
        )
        return VertexTransitivity(False, None, [], np.asarray([0]), (a, b), reason)

    classes = int(v.edge_class.max()) + 1 if (v.edge_class >= 0).any() else 0
    blocks = [sparse.csr_matrix(v.edge_class == t, dtype=np.float64) for t in range(classes)]
    blocks_union = [sparse.block_diag([m, m], format="csr") for m in blocks]
    # VF2++ matches node labels only: with several edge classes, each edge becomes a middle node
    # labelled by its class (negative labels, never equal to a vertex colour).
    base = nx.Graph()
    base.add_nodes_from(range(n))
    ii, jj = np.nonzero(np.triu(v.adjacency))
    if classes <= 1:
        base.add_edges_from(zip(ii.tolist(), jj.tolist()))
    else:
        for k, (x, y) in enumerate(zip(ii.tolist(), jj.tolist())):
            base.add_node(n + k, c=-1 - int(v.edge_class[x, y]))
            base.add_edges_from([(x, n + k), (n + k, y)])

    generators: list[np.ndarray] = []
    trans = _orbit_transversal(n, generators)
    impossible: dict[int, str] = {}
    for target in range(1, n):
        if target in trans or target in impossible:
            continue
        c0, ct = _rooted_colourings(v, blocks_union, target)
        if not np.array_equal(np.sort(c0), np.sort(ct)):
            impossible[target] = "colour refinement with each of them individualized gives different colour classes"
            continue
        perm = None
        if np.unique(c0).size == n:  # discrete colouring: the only candidate map is colour to colour
            where = np.empty(n, dtype=np.int64)
            where[ct] = np.arange(n)
            cand = where[c0]
            if _is_automorphism(v, cand):
                perm = cand
        else:
            g1, g2 = base.copy(), base.copy()
            nx.set_node_attributes(g1, {x: int(c0[x]) for x in range(n)}, "c")
            nx.set_node_attributes(g2, {x: int(ct[x]) for x in range(n)}, "c")
            m = nx.vf2pp_isomorphism(g1, g2, node_label="c")
            if m is not None:
                perm = np.fromiter((m[x] for x in range(n)), dtype=np.int64, count=n)
        if perm is None:
            impossible.setdefault(target, "an exhaustive search finds no automorphism")
            continue
        generators.append(perm)
        trans = _orbit_transversal(n, generators)
    orbit = np.asarray(sorted(trans), dtype=np.int64)
    if orbit.size == n:
        autos = np.stack([trans[w] for w in range(n)])
        return VertexTransitivity(True, autos, generators, orbit)
    target = min(impossible)
    reason = (
        f"no automorphism maps {v.labels[0]!r} to {v.labels[target]!r} ({impossible[target]}); "
        f"the orbit of {v.labels[0]!r} has {orbit.size} of the {n} points"
    )
    return VertexTransitivity(False, None, generators, orbit, (0, target), reason)
