"""The metric space object and its general constructors: a dense distance matrix, validated, with the essential
pairs when they are known (:class:`MetricSpace`; :func:`from_matrix`, :func:`line`, :func:`clique`,
:func:`from_graph`, :func:`ring`, :func:`hamming`). See :mod:`dprivacy.spaces`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .._validate import as_float_matrix, check_epsilon, check_positive_int

#: Relative tolerance for "distance implied through a third point" and for metric validation.
METRIC_RTOL = 1e-9

#: A dense n×n float64 matrix above this many bytes is refused (the structured path is named instead).
DENSE_LIMIT_BYTES = 4 * 2**30


def _check_dense_fits(n: int, what: str, alternative: str | None = None) -> None:
    need = 8 * n * n
    if need > DENSE_LIMIT_BYTES:
        msg = (
            f"{what} needs a dense {n:,}x{n:,} float64 matrix ({need / 2**30:.3g} GiB), over the "
            f"{DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit"
        )
        if alternative:
            msg += f"; {alternative}"
        raise MemoryError(msg)


@dataclass(frozen=True)
class TriangleCheck:
    """Result of :meth:`MetricSpace.check_triangle`.

    ``ok`` is True when d(i, j) <= d(i, k) + d(k, j) for every triple (within a relative tolerance);
    otherwise ``witness`` is a violating triple (i, j, k) and ``excess`` is d(i,j) - d(i,k) - d(k,j).
    """

    ok: bool
    witness: tuple[int, int, int] | None = None
    excess: float = 0.0


class MetricSpace:
    """A finite, possibly extended, metric space (Y, d).

    Parameters
    ----------
    distances : array_like, shape (n, n)
        The metric d. Must be square, symmetric, with a zero diagonal and positive off-diagonal entries;
        ``np.inf`` is allowed (an extended metric, Chatzikokolakis et al. 2013 §3: points at infinite distance may be told
        apart freely). NaN is refused.
    labels : sequence, optional
        One label per point (default ``0..n-1``).
    name : str, optional
        A short description, usually the SPACE spec it was built from.
    coordinates : array_like, shape (n, k), optional
        Positions of the points when the space is embedded in R^k (lines, grids).
    essential_pairs : tuple of two int arrays, optional
        Pairs (i < j) whose privacy constraints imply all others (e.g. the edges of a graph metric).
        Given by constructors that know the structure; computed by :meth:`essential_pairs` otherwise.
    check_triangle : bool
        Also verify the triangle inequality (O(n^3)); a violation raises with a witness triple.

    Notes
    -----
    Distances are in the metric's own units; the privacy level ε is applied separately (functions take
    ``epsilon`` and use ε·d), or eagerly with :meth:`scaled`.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.1 (finite
       metric spaces (Y, d_Y)).
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §3 (extended metrics).
    """

    def __init__(
        self,
        distances,
        *,
        labels: Sequence | None = None,
        name: str | None = None,
        coordinates=None,
        essential_pairs: tuple[np.ndarray, np.ndarray] | None = None,
        check_triangle: bool = False,
        validate: bool = True,
    ):
        d = as_float_matrix(distances, name="distance matrix")
        if validate:
            _validate_distances(d)
        d = d.view()  # read-only view: freezing ``d`` itself would freeze the caller's array
        d.setflags(write=False)
        self._distances = d
        self._init_common(d.shape[0], labels, name, coordinates, essential_pairs)
        if check_triangle:
            tc = self.check_triangle()
            if not tc.ok:
                i, j, k = tc.witness
                raise ValueError(
                    f"distance matrix violates the triangle inequality: d({i},{j}) = {d[i, j]:.6g} > "
                    f"d({i},{k}) + d({k},{j}) = {d[i, k] + d[k, j]:.6g}"
                )

    # -- construction helpers shared with structured subclasses --------------------------------
    def _init_common(self, n, labels, name, coordinates, essential_pairs):
        self._n = int(n)
        if labels is None:
            self._labels = None
        else:
            labels = list(labels)
            if len(labels) != self._n:
                raise ValueError(f"labels has {len(labels)} entries, expected {self._n} (one per point)")
            self._labels = labels
        self.name = name if name is not None else f"metric space on {self._n} points"
        if coordinates is not None:
            coordinates = np.asarray(coordinates, dtype=np.float64)
            if coordinates.ndim == 1:
                coordinates = coordinates[:, None]
            if coordinates.shape[0] != self._n:
                raise ValueError(f"coordinates has {coordinates.shape[0]} rows, expected {self._n}")
        self.coordinates = coordinates
        if essential_pairs is not None:
            i, j = (np.asarray(a, dtype=np.intp) for a in essential_pairs)
            if i.shape != j.shape or i.ndim != 1:
                raise ValueError("essential_pairs must be two 1-D index arrays of equal length")
            lo, hi = np.minimum(i, j), np.maximum(i, j)
            essential_pairs = (lo, hi)
        self._essential = essential_pairs

    # -- basic properties ----------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of points."""
        return self._n

    def __len__(self) -> int:
        return self._n

    @property
    def labels(self) -> list:
        """Point labels (``list(range(n))`` when none were given)."""
        return list(range(self._n)) if self._labels is None else list(self._labels)

    @property
    def distances(self) -> np.ndarray:
        """The dense distance matrix (read-only)."""
        return self._distances

    def distances_from(self, i) -> np.ndarray:
        """Distances from point(s) ``i`` to every point: shape (n,) or (len(i), n)."""
        return self.distances[i]

    def pair_distances(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Distances d(i[k], j[k]) of listed pairs of point indices (a grid computes them from its
        coordinates, without the dense matrix)."""
        return self.distances[i, j]

    @property
    def is_extended(self) -> bool:
        """True when some distance is infinite (Chatzikokolakis et al. 2013 §3)."""
        return bool(np.isinf(self.distances).any())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self._n} points>"

    # -- operations ----------------------------------------------------------------------------
    def scaled(self, epsilon: float) -> "MetricSpace":
        """The space (Y, ε·d). Infinite distances stay infinite."""
        e = check_epsilon(epsilon)
        return MetricSpace(
            self.distances * e,
            labels=self._labels,
            name=f"{e:g}*({self.name})",
            coordinates=self.coordinates,
            essential_pairs=self._essential,
            validate=False,
        )

    def check_triangle(self, *, rtol: float = METRIC_RTOL) -> TriangleCheck:
        """Check d(i,j) <= d(i,k) + d(k,j) for all triples, returning a witness when it fails.

        Vectorized over (j, k) for each i: O(n^3) time, O(n^2) memory.
        """
        d = self.distances
        floor = distance_floor(d)
        for i in range(self._n):
            via = d[i][:, None] + d  # via[k, j] = d(i,k) + d(k,j)
            best = via.min(axis=0)
            with np.errstate(invalid="ignore"):
                excess = np.where(np.isinf(d[i]) & np.isinf(best), 0.0, d[i] - best)
            bad = excess > rtol * np.maximum(np.where(np.isfinite(d[i]), d[i], floor), floor)
            if bad.any():
                j = int(np.argmax(np.where(bad, excess, -np.inf)))
                k = int(np.argmin(via[:, j]))
                return TriangleCheck(False, (i, j, k), float(excess[j]))
        return TriangleCheck(True)

    def essential_pairs(self, *, rtol: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (i < j) at finite distance not implied by the triangle inequality through a third point.

        A pair is *implied* when d(i,j) = d(i,k) + d(k,j) for some k ∉ {i, j}; then the d-privacy
        constraints of (i,k) and (k,j) imply that of (i,j). The comparison is exact by default
        (``rtol = 0``): a pair is skipped only when the computed d(i,k) + d(k,j) ≤ d(i,j), so the chain's
        constraints imply the pair's without any slack (a pair implied only up to rounding is kept;
        with rtol > 0 a check could miss an excess of ε·rtol·d). Privacy on the essential pairs therefore
        implies privacy on all pairs (ElSalamouny et al. 2013 Prop 1 generalized from graph edges to any metric).
        Known structurally for graph metrics, lines and grids; otherwise computed once in O(n^3) and cached.
        """
        if rtol:  # a loose comparison is never cached: the cache serves the privacy checks
            return _compute_essential_pairs(self.distances, rtol)
        if self._essential is None:
            self._essential = _compute_essential_pairs(self.distances, 0.0)
        return self._essential

    def constraint_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (i < j) whose privacy constraints a check must examine.

        The essential pairs when the structure gives them for free, else every pair at finite distance
        (computing the essential pairs costs as much as checking every pair once).
        """
        if self._essential is not None:
            return self._essential
        d = self.distances
        i, j = np.triu_indices(self._n, k=1)
        keep = np.isfinite(d[i, j])
        return i[keep], j[keep]


def distance_floor(d: np.ndarray) -> float:
    """The smallest positive finite distance of ``d`` (1.0 when there is none): the scale under which the relative
    comparisons of distances become absolute. A fixed floor of 1 would make every distance of grid:3x3:step=1e-10
    equal within 1e-9, so the grid would pass for ball-size symmetric and get a wrong "certified" closed form."""
    pos = d[np.isfinite(d) & (d > 0)]
    return float(pos.min()) if pos.size else 1.0


def _validate_distances(d: np.ndarray) -> None:
    n, m = d.shape
    if n != m:
        raise ValueError(f"distance matrix must be square, got shape {d.shape}")
    diag = np.diag(d)
    if np.any(diag != 0):
        i = int(np.flatnonzero(diag != 0)[0])
        raise ValueError(f"distance matrix must have a zero diagonal; d[{i},{i}] = {diag[i]:.6g}")
    if (d < 0).any():
        i, j = np.argwhere(d < 0)[0]
        raise ValueError(f"distances must be non-negative; d[{i},{j}] = {d[i, j]:.6g}")
    off = d + np.eye(n)  # positivity off the diagonal
    if (off <= 0).any():
        i, j = np.argwhere(off <= 0)[0]
        raise ValueError(f"distinct points must be at positive distance; d[{i},{j}] = 0")
    both_inf = np.isinf(d) & np.isinf(d.T)
    with np.errstate(invalid="ignore"):
        asym = np.abs(d - d.T) > METRIC_RTOL * np.maximum(np.abs(d), distance_floor(d))
    asym &= ~both_inf
    if asym.any():
        i, j = np.argwhere(asym)[0]
        raise ValueError(f"distance matrix must be symmetric; d[{i},{j}] = {d[i, j]:.6g} but d[{j},{i}] = {d[j, i]:.6g}")


def _compute_essential_pairs(d: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    n = d.shape[0]
    keep_i, keep_j = [], []
    big = np.inf
    for i in range(n - 1):
        js = np.arange(i + 1, n)
        dij = d[i, js]
        # via[k, t] = d(i,k) + d(k, js[t]), with k = i and k = js[t] excluded.
        via = d[i][:, None] + d[:, js]
        via[i, :] = big
        via[js, np.arange(js.size)] = big
        best = via.min(axis=0)
        finite = np.isfinite(dij)
        implied = best <= dij * (1 + rtol)
        sel = finite & ~implied
        keep_i.append(np.full(int(sel.sum()), i, dtype=np.intp))
        keep_j.append(js[sel])
    if not keep_i:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    return np.concatenate(keep_i), np.concatenate(keep_j)


# ---------------------------------------------------------------------------------------------
# Constructors
# ---------------------------------------------------------------------------------------------


def from_matrix(distances, *, labels=None, name=None, check_triangle: bool = True) -> MetricSpace:
    """A metric space from an explicit distance matrix (validated, including the triangle inequality:
    the privacy of the exponential and tight-constraints mechanisms rests on it, ElSalamouny et al. 2014 Prop 6).
    ``check_triangle=False`` skips that O(n³) check for a matrix known to be a metric."""
    return MetricSpace(distances, labels=labels, name=name, check_triangle=check_triangle)


def line(n: int, *, step: float = 1.0, name: str | None = None) -> MetricSpace:
    """The points {0, …, n−1}·step with d(i, j) = step·|i − j| (a line graph when step = 1)."""
    n = check_positive_int(n, name="n")
    step = check_epsilon(step, name="step")
    _check_dense_fits(n, f"line:{n}", "a sum or count space (sum:N,D, count:N) is held without its matrix")
    x = np.arange(n, dtype=np.float64)
    d = step * np.abs(x[:, None] - x[None, :])
    i = np.arange(n - 1)
    return MetricSpace(
        d, name=name or f"line:{n}", coordinates=x * step, essential_pairs=(i, i + 1), validate=False
    )


def clique(n: int, *, distance: float = 1.0, name: str | None = None) -> MetricSpace:
    """The discrete metric on n points: every two distinct points at ``distance``."""
    n = check_positive_int(n, name="n")
    distance = check_epsilon(distance, name="distance")
    _check_dense_fits(n, f"clique:{n}")
    d = distance * (1.0 - np.eye(n))
    return MetricSpace(d, name=name or f"clique:{n}", essential_pairs=np.triu_indices(n, k=1), validate=False)


def from_graph(graph, *, nodes: Sequence | None = None, weight: str | None = None, name: str | None = None) -> MetricSpace:
    """The shortest-path metric of a graph (ElSalamouny et al. 2014 §3.2: the metric d_~ of an adjacency relation).

    Parameters
    ----------
    graph : networkx.Graph or sequence of (u, v) pairs
        An undirected graph or an edge list. Nodes with no path between them are at distance ∞
        (an extended metric).
    nodes : sequence, optional
        The order of the points (and their labels); default: the graph's node order (edge list: the
        order of first appearance, or sorted when all nodes are numbers).
    weight : str, optional
        Edge attribute holding edge lengths (networkx graphs only); unit lengths by default.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.2 (the
       graph metric d_~).
    """
    import networkx as nx

    if isinstance(graph, nx.Graph):
        if graph.is_directed():
            raise ValueError("graph must be undirected: d-privacy needs a symmetric metric")
        g = graph
    else:
        edges = list(graph)
        g = nx.Graph()
        for e in edges:
            if len(e) != 2:
                raise ValueError(f"each edge must be a pair (u, v), got {e!r}")
            g.add_edge(*e)
    if nodes is None:
        nodes = list(g.nodes)
        try:
            if all(isinstance(v, (int, np.integer)) for v in nodes):
                nodes = sorted(nodes)
        except TypeError:
            pass
    else:
        nodes = list(nodes)
        missing = [v for v in nodes if v not in g]
        for v in missing:
            g.add_node(v)
        extra = [v for v in g.nodes if v not in set(nodes)]
        if extra:
            raise ValueError(f"nodes does not list graph node(s) {extra[:5]!r}")
    if g.number_of_nodes() == 0:
        raise ValueError("graph has no nodes")
    if any(u == v for u, v in g.edges):
        raise ValueError("graph has a self-loop; a metric needs d(y, y) = 0 and no loops")
    a = nx.to_scipy_sparse_array(g, nodelist=nodes, weight=weight, format="csr", dtype=np.float64)
    if weight is not None and (a.data <= 0).any():
        raise ValueError(f"edge weights ({weight!r}) must be positive")
    from scipy import sparse
    from scipy.sparse import csgraph

    d = csgraph.shortest_path(a, method="D" if weight else "auto", unweighted=weight is None, directed=False)
    ii, jj = sparse.triu(a, k=1).nonzero()
    ess = (ii, jj) if weight is None else None  # weighted edges may be implied by shorter paths
    return MetricSpace(d, labels=nodes, name=name or f"graph on {len(nodes)} nodes", essential_pairs=ess, validate=weight is not None)


def ring(n: int, *, name: str | None = None) -> MetricSpace:
    """A cycle of n nodes with the graph distance d(i, j) = min(|i − j|, n − |i − j|)."""
    n = check_positive_int(n, name="n", minimum=3)
    x = np.arange(n)
    k = np.abs(x[:, None] - x[None, :])
    d = np.minimum(k, n - k).astype(np.float64)
    i = np.arange(n)
    return MetricSpace(d, name=name or f"ring:{n}", essential_pairs=(i, (i + 1) % n), validate=False)


def hamming(u: int, v: int, *, name: str | None = None) -> MetricSpace:
    """Databases V^u of u individuals with v possible values each, under the Hamming distance.

    Standard ε-differential privacy is ε·d_h-privacy on this space (ElSalamouny et al. 2014 §3.2). Points are the v^u
    tuples in lexicographic order; labels are the tuples.

    References
    ----------
    .. [1] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), §5.1, Prop
       13, Prop 14.
    """
    u = check_positive_int(u, name="u")
    v = check_positive_int(v, name="v", minimum=2)
    n = v**u
    _check_dense_fits(n, f"hamming:{u},{v}")
    digits = np.stack(np.unravel_index(np.arange(n), (v,) * u), axis=1)  # (n, u)
    d = np.zeros((n, n), dtype=np.float64)
    for c in range(u):
        d += digits[:, c][:, None] != digits[:, c][None, :]
    ii, jj = np.nonzero(np.triu(d == 1.0))
    labels = [tuple(int(x) for x in row) for row in digits]
    return MetricSpace(d, labels=labels, name=name or f"hamming:{u},{v}", essential_pairs=(ii, jj), validate=False)


