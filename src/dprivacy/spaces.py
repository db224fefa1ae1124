"""Finite (extended) metric spaces: the secrets a mechanism protects.

A metric space (Y, d) is the domain of d-privacy (seed 000 Def 1; seed 002 §3, where d may take the
value ∞: an *extended* metric). It is held as a dense distance matrix, or, for grids, in a structured
form whose dense matrix is built only on request (a million-cell grid never is).

Besides the distances, a space may know its *essential pairs*: the pairs (y, y') whose distance is not
the sum of distances through a third point. Privacy constraints on the essential pairs imply all the
others (seed 004 Prop 1 for graph metrics: adjacent pairs suffice; the same argument works for any
metric, since e^{d(y,y'')} = e^{d(y,y')} e^{d(y',y'')} along a tight chain). Graph metrics know theirs
(the edges); other spaces compute them once, on request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ._validate import as_float_matrix, check_epsilon, check_positive_int

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
        ``np.inf`` is allowed (an extended metric, seed 002 §3: points at infinite distance may be told
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
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.1 (finite
       metric spaces (Y, d_Y)).
    .. [2] ``002_3df4dd999d47c651.txt``: Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
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

    @property
    def is_extended(self) -> bool:
        """True when some distance is infinite (seed 002 §3)."""
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
        implies privacy on all pairs (seed 004 Prop 1 generalized from graph edges to any metric).
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
    comparisons of distances become absolute. A fixed floor of 1 made every distance of grid:3x3:step=1e-10 equal
    within 1e-9, so the grid passed for ball-size symmetric and got a "certified" closed form that was wrong."""
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
    the privacy of the exponential and tight-constraints mechanisms rests on it, seed 000 Prop 6).
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
    """The shortest-path metric of a graph (seed 000 §3.2: the metric d_~ of an adjacency relation).

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
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
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

    Standard ε-differential privacy is ε·d_h-privacy on this space (seed 000 §3.2). Points are the v^u
    tuples in lexicographic order; labels are the tuples.

    References
    ----------
    .. [1] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
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


_GRID_METRICS = ("euclidean", "manhattan", "chebyshev")


class GridSpace(MetricSpace):
    """A W×H grid of cells with step s under the Euclidean, Manhattan or Chebyshev distance.

    Cell (col, row) has index ``row * width + col`` and centre ``(col * step, row * step)``. The metric
    is translation-invariant: d depends only on the offset between cells, which the structured solvers
    exploit. The dense distance matrix is built on first use and refused when it would not fit.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.3, §7.2.
    """

    def __init__(self, width: int, height: int, *, metric: str = "euclidean", step: float = 1.0, name: str | None = None):
        self.width = check_positive_int(width, name="width")
        self.height = check_positive_int(height, name="height")
        if metric not in _GRID_METRICS:
            raise ValueError(f"grid metric must be one of {', '.join(_GRID_METRICS)}; got {metric!r}")
        self.metric = metric
        self.step = check_epsilon(step, name="step")
        n = self.width * self.height
        cols, rows = np.meshgrid(np.arange(self.width), np.arange(self.height))
        coords = np.stack([cols.ravel(), rows.ravel()], axis=1) * self.step
        self._distances = None
        default = f"grid:{self.width}x{self.height}:{metric}" + ("" if self.step == 1.0 else f":step={self.step:g}")
        self._init_common(n, None, name or default, coords, None)

    @property
    def shape(self) -> tuple[int, int]:
        """(width, height)."""
        return self.width, self.height

    def offset_distance(self, dx, dy) -> np.ndarray:
        """Distance between cells whose column and row indices differ by (dx, dy)."""
        dx = np.abs(np.asarray(dx, dtype=np.float64))
        dy = np.abs(np.asarray(dy, dtype=np.float64))
        if self.metric == "euclidean":
            r = np.hypot(dx, dy)
        elif self.metric == "manhattan":
            r = dx + dy
        else:
            r = np.maximum(dx, dy)
        return self.step * r

    @property
    def distances(self) -> np.ndarray:
        if self._distances is None:
            _check_dense_fits(self._n, f"the dense distance matrix of {self.name}", "the front doors tight_constraints, tight_threshold and regularity take the matrix-free grid path with method='auto' or 'structured'")
            c = self.coordinates / self.step
            d = self.offset_distance(c[:, 0][:, None] - c[:, 0][None, :], c[:, 1][:, None] - c[:, 1][None, :])
            d.setflags(write=False)
            self._distances = d
        return self._distances

    def distances_from(self, i) -> np.ndarray:
        c = self.coordinates / self.step
        i = np.asarray(i)
        ci = c[i]
        if ci.ndim == 1:
            return self.offset_distance(c[:, 0] - ci[0], c[:, 1] - ci[1])
        return self.offset_distance(c[:, 0][None, :] - ci[:, 0][:, None], c[:, 1][None, :] - ci[:, 1][:, None])

    def scaled(self, epsilon: float) -> "GridSpace":
        e = check_epsilon(epsilon)
        return GridSpace(self.width, self.height, metric=self.metric, step=self.step * e, name=f"{e:g}*({self.name})")

    def essential_pairs(self, *, rtol: float = 0.0):
        if self._essential is None:
            self._essential = self._grid_essential_pairs()
        return self._essential

    def constraint_pairs(self):
        if self.metric in ("manhattan", "chebyshev"):
            return self.essential_pairs()
        return super().constraint_pairs()

    def _grid_essential_pairs(self):
        """Essential pairs from the grid's structure, without the O(n^3) search.

        Manhattan: 4-neighbours (a lattice path of unit steps is tight). Chebyshev: 8-neighbours
        (king moves). Euclidean: offsets (dx, dy) with gcd(|dx|, |dy|) = 1, since a lattice point lies
        strictly inside the segment iff the gcd exceeds 1, and no off-segment point is on a tight chain.
        """
        w, h = self.width, self.height
        if self.metric == "manhattan":
            offsets = [(1, 0), (0, 1)]
        elif self.metric == "chebyshev":
            offsets = [(1, 0), (0, 1), (1, 1), (1, -1)]
        else:
            offsets = [
                (dx, dy)
                for dx in range(0, w)
                for dy in range(-(h - 1), h)
                if (dx > 0 or dy > 0) and math.gcd(dx, abs(dy)) == 1
            ]
        idx = np.arange(self._n).reshape(h, w)
        I, J = [], []
        for dx, dy in offsets:
            r0, r1 = max(0, -dy), min(h, h - dy)
            c1 = w - dx
            if r1 <= r0 or c1 <= 0:
                continue
            a = idx[r0:r1, 0:c1].ravel()
            b = idx[r0 + dy : r1 + dy, dx : dx + c1].ravel()
            I.append(a)
            J.append(b)
        if not I:
            return np.zeros(0, np.intp), np.zeros(0, np.intp)
        i, j = np.concatenate(I), np.concatenate(J)
        return np.minimum(i, j), np.maximum(i, j)


class SumLineSpace(MetricSpace):
    """The answers 0..n−1 of a sum query whose one-row change moves the answer by at most Δ: answers
    adjacent iff 0 < |i − j| ≤ Δ, so d(i, j) = ⌈|i − j| / Δ⌉ (the graph metric of seed 000 §7.1).

    Held as (n, Δ); the dense distance matrix is built on first use and refused when it would not fit, as
    for :class:`GridSpace`. d depends on |i − j| only, so Φ = e^{−ε d} is a symmetric Toeplitz matrix and
    the front doors take the matrix-free sum-line path (:mod:`dprivacy._kernels.sum_line`) on large spaces.
    The essential pairs are the n·Δ edges (every other pair lies on a tight chain of edges).

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.1 (sum
       query).
    """

    def __init__(self, n: int, delta: int, *, name: str | None = None):
        n = check_positive_int(n, name="n")
        self.delta = check_positive_int(delta, name="delta")
        self._distances = None
        self._init_common(n, None, name or f"sum line of {n} answers (Δ = {self.delta})",
                          np.arange(n, dtype=np.float64), None)

    def offset_distance(self, m) -> np.ndarray:
        """d between answers m apart: ⌈|m| / Δ⌉."""
        return np.ceil(np.abs(np.asarray(m, dtype=np.float64)) / self.delta)

    @property
    def distances(self) -> np.ndarray:
        if self._distances is None:
            _check_dense_fits(self._n, f"the dense distance matrix of {self.name}", "the front doors tight_constraints, "
                              "tight_threshold and regularity take the matrix-free sum-line path with method='auto' or "
                              "'structured'")
            x = np.arange(self._n, dtype=np.int64)
            d = self.offset_distance(x[:, None] - x[None, :])
            d.setflags(write=False)
            self._distances = d
        return self._distances

    def distances_from(self, i) -> np.ndarray:
        i = np.asarray(i, dtype=np.int64)
        x = np.arange(self._n, dtype=np.int64)
        if i.ndim == 0:
            return self.offset_distance(x - i)
        return self.offset_distance(x[None, :] - i[:, None])

    @property
    def is_extended(self) -> bool:
        return False

    def essential_pairs(self, *, rtol: float = 0.0):
        if self._essential is None:
            k = min(self.delta, self._n - 1)
            i = np.concatenate([np.arange(self._n - s, dtype=np.intp) for s in range(1, k + 1)]) if k else np.zeros(0, np.intp)
            j = np.concatenate([np.arange(s, self._n, dtype=np.intp) for s in range(1, k + 1)]) if k else np.zeros(0, np.intp)
            order = np.lexsort((j, i))  # row-major, as np.nonzero of the upper triangle
            self._essential = (i[order], j[order])
        return self._essential

    def constraint_pairs(self):
        return self.essential_pairs()


def grid(width: int, height: int, *, metric: str = "euclidean", step: float = 1.0, name: str | None = None) -> GridSpace:
    """A W×H grid of locations (seed 000 §7.2): see :class:`GridSpace`.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.2 (the
       geo-indistinguishability case study).
    """
    return GridSpace(width, height, metric=metric, step=step, name=name)


def load_matrix(path, *, check_triangle: bool = True) -> MetricSpace:
    """A metric space from a distance matrix stored as .npy or .csv (comma-separated, no header),
    validated like :func:`from_matrix` (triangle inequality included unless ``check_triangle=False``)."""
    from pathlib import Path

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"distance matrix file not found: {p}")
    if p.suffix.lower() == ".npy":
        d = load_array(p, "distance matrix")
    elif p.suffix.lower() == ".csv":
        d = load_array(p, "distance matrix", ndmin=2)
    else:
        raise ValueError(f"distance matrix must be a .npy or .csv file, got {p.name!r}")
    return MetricSpace(d, name=f"matrix:{p}", check_triangle=check_triangle)


def load_array(path, what: str, *, ndmin: int = 1, max_bytes: int = DENSE_LIMIT_BYTES) -> np.ndarray:
    """Read a real numeric array from .npy, .csv (comma-separated) or .txt (whitespace-separated), any
    case of the extension, with errors that name the file and say what was expected (an empty file,
    pickled data, complex/datetime/record data, text that is not numbers, a declared size over
    ``max_bytes``). A CSV may start with a byte-order mark and with one header line of column names."""
    import warnings
    from pathlib import Path

    if not str(path).strip():  # Path("") is ".", the current folder (review: "path . is a directory")
        raise ValueError(f"{what} path is empty, expected a .npy, .csv or .txt file")
    from ._system import check_input_file

    p = Path(path)
    # a device or a pipe (/dev/zero) has no size to check and was read without end
    check_input_file(p, f"{what} file", expected="a .npy, .csv or .txt file")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        try:
            head = np.load(p, allow_pickle=False, mmap_mode="r")  # reads the header only
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(f"{what} file {p} is not a readable numeric .npy array ({exc})") from None
        if head.dtype.kind not in "biuf":
            raise ValueError(f"{what} file {p} holds {head.dtype} data, expected real numbers")
        need = int(head.size) * 8
        if need > max_bytes:
            raise MemoryError(f"{what} file {p} declares shape {head.shape} ({need / 2**30:.1f} GiB as float64), over the "
                              f"{max_bytes / 2**30:.0f} GiB limit")
        return np.array(head, dtype=np.float64)
    if suffix not in (".csv", ".txt"):
        raise ValueError(f"{what} must be a .npy, .csv or .txt file, got {p.name!r}")
    if p.stat().st_size > max_bytes:
        raise MemoryError(f"{what} file {p} is {p.stat().st_size / 2**30:.1f} GiB, over the {max_bytes / 2**30:.0f} GiB limit")
    delim = "," if suffix == ".csv" else None
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} file {p} is not text ({exc})") from None
    lines = text.splitlines()
    skip = 0
    if lines:
        first = [c.strip() for c in (lines[0].split(",") if delim else lines[0].split())]

        def number(c: str) -> bool:
            try:
                float(c)
                return True
            except ValueError:
                return False

        # a header line of column names: no cell of it is a number (a line of numbers with one bad
        # cell is data, and its error names the cell: '0.5,0.5,x' was dropped as a header and the
        # one-line prior reported empty)
        # ... and names start like names: '1/3,1/3,1/3' is a line of data that is not numbers (it was taken for
        # a header and the one-line file called empty)
        named = all(c and (c[0].isalpha() or c[0] in "_\"'") for c in first)
        skip = 1 if named and not any(number(c) for c in first if c) else 0
        if skip and len([ln for ln in lines[1:] if ln.strip()]) == 0:
            raise ValueError(f"{what} file {p} holds a header line only ({lines[0].strip()[:60]!r}), no numbers")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns (rather than fails) on an empty file
        try:
            a = np.loadtxt(lines[skip:], delimiter=delim, dtype=np.float64, ndmin=ndmin)
        except UserWarning:
            raise ValueError(f"{what} file {p} is empty") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{what} file {p} does not hold numbers separated by "
                             f"{'commas' if delim else 'whitespace'} ({str(exc).splitlines()[0]})") from None
    if a.size == 0:
        raise ValueError(f"{what} file {p} is empty")
    return a


def load_edge_list(path) -> MetricSpace:
    """A graph metric from an edge list file: one edge per line, two node names separated by
    whitespace or a comma; ``#`` starts a comment. Node names that are all integers are sorted."""
    from pathlib import Path

    if not str(path).strip():
        raise ValueError("edge list path is empty (graph:FILE), expected a text file with one edge per line")
    from ._system import check_input_file

    p = Path(path)
    check_input_file(p, "edge list file", expected="a text file with one edge per line")  # (graph:/dev/zero grew to 24 GB)
    if p.stat().st_size > DENSE_LIMIT_BYTES:
        raise MemoryError(f"edge list {p} is {p.stat().st_size / 2**30:.1f} GiB, over the {DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"edge list {p} is not text ({exc.reason} at byte {exc.start}); expected one edge per line") from None
    edges = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        parts = s.replace(",", " ").split()
        if len(parts) != 2:
            raise ValueError(f"{p}:{lineno}: expected two node names per line, got {raw.strip()!r}")
        edges.append(tuple(parts))
    if not edges:
        raise ValueError(f"edge list {p} has no edges")
    # Names that are all canonical integers ("1", not "01") are sorted as numbers; otherwise every name
    # is kept as written, so "01" and "1" stay two nodes.
    names = {x for e in edges for x in e}
    if all(x.lstrip("-").isdigit() and str(int(x)) == x for x in names):
        edges = [(int(a), int(b)) for a, b in edges]
    return from_graph(edges, name=f"graph:{p}")
