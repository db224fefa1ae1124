"""Symmetries of graphs and metric spaces that give closed-form optimal mechanisms.

Three notions, from the weakest requirement on the space's automorphisms to the strongest:

* **ball-size symmetry** (seed 000 §6.2, Def 7): every point sees the same number n_r of points at
  each distance r. It is all that the closed-form mechanism needs (seed 000 Prop 9).
* **distance-regular graphs** (seed 001 §2.3, Def 2; seed 003 §3): intersection numbers b_d, c_d
  that do not depend on the pair of vertices at distance d.
* **vertex-transitive graphs** (seed 001 Def 4): the automorphism group has a single orbit. Seed 003
  (§3, Def "VT+") used a variant asking for n automorphisms σ_0..σ_{n-1} with {σ_i(v)} = V for
  every v.

Distance-regular and vertex-transitive graphs are both ball-size symmetric (seed 001 Prop 5) and
neither implies the other (seed 001 §2.3, Fig 2: a Chang graph, the truncated tetrahedron).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .spaces import METRIC_RTOL, MetricSpace

__all__ = [
    "Augmentation",
    "DistanceCounts",
    "DistanceRegularity",
    "VertexTransitivity",
    "augment_to_symmetric",
    "chang_graph",
    "distance_counts",
    "is_ball_size_symmetric",
    "is_distance_regular",
    "is_vertex_transitive",
]

#: Rows sorted per block in :func:`distance_counts` (bounds the temporary memory to ~128 MiB).
_SORT_BLOCK_ELEMENTS = 2**24


def _as_space(space_or_graph) -> MetricSpace:
    if isinstance(space_or_graph, MetricSpace):
        return space_or_graph
    import networkx as nx

    if isinstance(space_or_graph, nx.Graph):
        from .spaces import from_graph

        return from_graph(space_or_graph)
    raise TypeError(
        f"expected a MetricSpace or a networkx.Graph, got {type(space_or_graph).__name__}"
    )


@dataclass(frozen=True)
class DistanceCounts:
    """Result of :func:`distance_counts`.

    Attributes
    ----------
    symmetric : bool
        True when the space is ball-size symmetric (seed 000 Def 7): the number of points at each
        distance r from y is the same for every y.
    distances : ndarray of float
        The distinct finite distances r_0 = 0 < r_1 < ... seen from any point (empty when not
        symmetric).
    counts : ndarray of int
        n_r for each entry of ``distances`` (n_0 = 1); they sum to n − ``n_infinite``.
    n_infinite : int
        Number of points at infinite distance from each point (extended metrics, seed 002 §3).
    points : (int, int) or None
        When not symmetric: two points y, y' whose counts differ ...
    radius : float or None
        ... at this distance r ...
    counts_at_radius : (int, int) or None
        ... namely |{z : d(y, z) = r}| and |{z : d(y', z) = r}|.
    reason : str
        Why the space is not symmetric (empty when it is).
    """

    symmetric: bool
    distances: np.ndarray
    counts: np.ndarray
    n_infinite: int = 0
    points: tuple[int, int] | None = None
    radius: float | None = None
    counts_at_radius: tuple[int, int] | None = None
    reason: str = ""

    def __bool__(self) -> bool:
        return self.symmetric

    def weighted_sum(self, epsilon: float) -> float:
        r"""\sum_r n_r e^{-ε r}: the common row sum of the privacy-constraints matrix Φ of ε·d
        (seed 000 §6.2, before Prop 9; seed 001 eq. (18) is its reciprocal γ)."""
        if not self.symmetric:
            raise ValueError(f"the space is not ball-size symmetric: {self.reason}")
        return float(np.sum(self.counts * np.exp(-epsilon * self.distances)))


def _close(a: np.ndarray, b: np.ndarray, rtol: float, floor: float = 1.0) -> np.ndarray:
    # A finite distance is never close to ∞ (|a − ∞| ≤ rtol·∞ would say it is). ``floor``: the space's smallest
    # positive distance (spaces.distance_floor), under which the tolerance stops being relative.
    both_inf = np.isinf(a) & np.isinf(b)
    both_finite = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore"):
        near = both_finite & (np.abs(a - b) <= rtol * np.maximum(np.abs(b), floor))
    return both_inf | near


def distance_counts(space, *, rtol: float = METRIC_RTOL) -> DistanceCounts:
    r"""The numbers n_r of points at each distance r from a point, when they do not depend on the point.

    A space is ball-size symmetric (seed 000 §6.2, Def 7) iff |B_r(y)| is the same for every y and r,
    equivalently iff the multiset of distances {d(y, z) : z ∈ Y} is the same for every y. The test
    sorts every row of the distance matrix and compares it with row 0 (within a relative tolerance
    ``rtol``, so that float metrics such as ε·d or Euclidean grids are handled). Distance-regular and
    vertex-transitive graphs pass it (seed 001 Prop 5), and then n_d is the constant of seed 001
    §2.3 / Thm 27.

    Parameters
    ----------
    space : MetricSpace or networkx.Graph
        A graph is taken with its shortest-path metric.
    rtol : float
        Relative tolerance for two distances to count as equal.

    Returns
    -------
    DistanceCounts
        ``symmetric``, the distinct finite ``distances`` and their ``counts``; or, when not symmetric,
        two points and a radius at which their counts differ.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 7 (§6.2).
    .. [2] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Prop 5.
    """
    from .spaces import distance_floor

    space = _as_space(space)
    d = space.distances
    n = space.n
    floor = distance_floor(d)
    ref = np.sort(d[0])
    block = max(1, _SORT_BLOCK_ELEMENTS // max(n, 1))
    for start in range(1, n, block):
        rows = np.sort(d[start : start + block], axis=1)
        ok = _close(rows, ref[None, :], rtol, floor)
        bad_rows = np.flatnonzero(~ok.all(axis=1))
        if bad_rows.size:
            r = int(bad_rows[0])
            y = start + r
            k = int(np.argmax(~ok[r]))
            # Rows agree before position k, so the smaller of the two values at k is a radius at
            # which the point holding it has strictly more points than the other.
            radius = float(min(ref[k], rows[r, k]))
            c0 = int(_close(d[0], np.full(n, radius), rtol, floor).sum())
            cy = int(_close(d[y], np.full(n, radius), rtol, floor).sum())
            return DistanceCounts(
                symmetric=False,
                distances=np.zeros(0),
                counts=np.zeros(0, dtype=np.int64),
                points=(0, y),
                radius=radius,
                counts_at_radius=(c0, cy),
                reason=(
                    f"point 0 has {c0} point(s) at distance {radius:g} but point {y} has {cy}"
                ),
            )
    finite = ref[np.isfinite(ref)]
    # Group a sorted row into runs of (nearly) equal distances.
    gaps = np.diff(finite) > rtol * np.maximum(np.abs(finite[1:]), floor)
    starts = np.concatenate([[0], np.flatnonzero(gaps) + 1])
    counts = np.diff(np.concatenate([starts, [finite.size]])).astype(np.int64)
    return DistanceCounts(
        symmetric=True,
        distances=finite[starts].copy(),
        counts=counts,
        n_infinite=int(n - finite.size),
    )


def is_ball_size_symmetric(space, *, rtol: float = METRIC_RTOL) -> DistanceCounts:
    """Whether ``space`` is ball-size symmetric (seed 000 Def 7); same result as :func:`distance_counts`,
    which is truthy exactly when the space is symmetric.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 7.
    """
    return distance_counts(space, rtol=rtol)


# ---------------------------------------------------------------------------------------------
# Graph views of graphs and metric spaces
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _View:
    """A graph or a metric space seen as an edge-coloured graph on 0..n-1.

    ``adjacency`` holds the edges (a graph's edges, a space's essential pairs); ``edge_class[i, j]`` is
    the class of the edge's length (−1 off the edges), so that a permutation preserving adjacency and
    classes is an isometry of the space (the metric is the weighted shortest-path metric of its
    essential pairs). ``hops`` is the graph distance when every edge has the same length, else None
    and ``why_not_graph`` says why.
    """

    n: int
    labels: list
    adjacency: np.ndarray
    edge_class: np.ndarray
    hops: np.ndarray | None
    why_not_graph: str


def _length_classes(lengths: np.ndarray, rtol: float) -> np.ndarray:
    if lengths.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(lengths)
    s = lengths[order]
    pos = s[s > 0]
    floor = float(pos.min()) if pos.size else 1.0  # relative to the lengths' own scale, not to 1 (spaces.distance_floor)
    new = np.concatenate([[False], np.diff(s) > rtol * np.maximum(np.abs(s[1:]), floor)])
    cls = np.empty(lengths.size, dtype=np.int64)
    cls[order] = np.cumsum(new)
    return cls


def _view(graph_or_space, *, rtol: float = METRIC_RTOL) -> _View:
    import networkx as nx

    if isinstance(graph_or_space, MetricSpace):
        space = graph_or_space
        n = space.n
        i, j = space.essential_pairs()
        lengths = space.distances[i, j]
        cls = _length_classes(lengths, rtol)
    elif isinstance(graph_or_space, nx.Graph):
        from .spaces import from_graph

        space = from_graph(graph_or_space)
        n = space.n
        i, j = space.essential_pairs()
        cls = np.zeros(i.size, dtype=np.int64)
    else:
        raise TypeError(
            f"expected a networkx.Graph or a MetricSpace, got {type(graph_or_space).__name__}"
        )
    adj = np.zeros((n, n), dtype=bool)
    adj[i, j] = adj[j, i] = True
    ec = np.full((n, n), -1, dtype=np.int64)
    ec[i, j] = ec[j, i] = cls
    hops, why = None, ""
    if cls.size == 0 or cls.max() == 0:
        unit = float(space.distances[i[0], j[0]]) if i.size else 1.0
        h = space.distances / unit
        finite = np.isfinite(h)
        rounded = np.where(finite, np.round(h), np.inf)
        if np.allclose(h[finite], rounded[finite], rtol=rtol, atol=rtol):
            hops = rounded
        else:  # pragma: no cover - impossible for a metric whose essential pairs have one length
            why = "distances are not multiples of the common edge length"
    else:
        k = int(np.argmax(cls != cls[0]))
        why = (
            f"the space is not the metric of an unweighted graph: its essential pairs "
            f"({i[0]},{j[0]}) and ({i[k]},{j[k]}) have different lengths "
            f"{space.distances[i[0], j[0]]:g} and {space.distances[i[k], j[k]]:g}"
        )
    return _View(n, space.labels, adj, ec, hops, why)


# ---------------------------------------------------------------------------------------------
# Distance-regularity
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DistanceRegularity:
    """Result of :func:`is_distance_regular`.

    Attributes
    ----------
    ok : bool
        Whether the graph is (connected and) distance-regular, seed 001 Def 2.
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
        .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
           differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 7
           (§6.2).
        .. [2] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
           information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Prop 5.
        """
        if not self.ok:
            raise ValueError(f"the graph is not distance-regular: {self.reason}")
        counts = [1]
        for bd, cd in zip(self.b, self.c):
            counts.append(counts[-1] * bd // cd)
        return np.asarray(counts, dtype=np.int64)


def is_distance_regular(graph_or_space) -> DistanceRegularity:
    r"""Test distance-regularity and return the intersection array (seed 001 §2.3, Def 2; seed 003 §3).

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
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
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
        Whether the automorphism group acts transitively (seed 001 Def 4).
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
    """Test vertex-transitivity through the automorphism group (seed 001 Def 4, Prop 5, Lemma 32).

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
    Seed 003 (§3) asks for "VT+": n automorphisms σ_0..σ_{n-1} with {σ_i(w)} = V for every w. The
    automorphisms returned here map 0 to every vertex, which is the single-orbit condition of seed
    001 Def 4 (the one the later paper uses), not necessarily VT+.

    References
    ----------
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
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


def _space_of(v: _View) -> MetricSpace:
    if v.hops is not None:
        return MetricSpace(v.hops, labels=v.labels, validate=False)
    raise AssertionError("graph views always have hop distances")  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# Named graphs of the papers
# ---------------------------------------------------------------------------------------------

_CHANG_SWITCHING_SETS = {
    1: [(0, 1), (2, 3), (4, 5), (6, 7)],  # four disjoint edges of K8
    2: [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (0, 7)],  # an 8-cycle
    3: [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (5, 6), (6, 7), (3, 7)],  # a triangle and a 5-cycle
}


def chang_graph(which: int = 1):
    """One of the three Chang graphs (seed 001 §2.3, Fig 2(a): distance-regular, not vertex-transitive).

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
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
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


# ---------------------------------------------------------------------------------------------
# Artificial adjacencies (seed 001 Remark 29)
# ---------------------------------------------------------------------------------------------

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
            "uniform prior (seed 001 Thm 28) and every regular prior (seed 000 Prop 9, Thm 4)"
        )
    return (
        f"{n_added} adjacency(ies) added. Since ~ ⊆ ~', d_~' ≤ d_~ pointwise, so any ε·d_~'-private "
        "mechanism (in particular the closed-form one, seed 001 eq. (17)) is ε·d_~-private for the original "
        "graph (seed 001 Remark 29). It is optimal among ε·d_~'-private mechanisms for the uniform prior "
        "(its utility γ' = 1/Σ_r n'_r e^{-εr}, Thm 28), hence γ' is only a lower bound on the best utility "
        "for the original graph, which may be higher (seed 001 Example 31: 8/21 on the ring vs 4/9 for "
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
    """Add artificial adjacencies so that the graph's metric becomes ball-size symmetric (seed 001 Remark 29).

    Remark 29 of seed 001: when (Y, ~) is neither distance-regular nor vertex-transitive, take a
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
    "unchanged"``), since the closed form (seed 000 Prop 9) needs nothing more.

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
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Remark 29.
    .. [2] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Prop 9.
    """
    import networkx as nx

    if method not in _AUGMENT_METHODS:
        raise ValueError(f"method must be one of {', '.join(_AUGMENT_METHODS)}; got {method!r}")
    if not isinstance(graph_or_space, (MetricSpace, nx.Graph)):
        from .spaces import from_graph

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
    from .spaces import from_graph

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
