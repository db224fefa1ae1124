r"""Spanners of a finite metric space: sparse graphs whose shortest paths stretch no distance by more
than a factor δ (the dilation).

A **δ-spanner** of (Y, d) is a graph G = (Y, E) whose edges (y, y') carry the weight d(y, y') and whose
shortest-path distance d_G satisfies

.. math:: d(y, y') \le d_G(y, y') \le \delta\, d(y, y') \qquad \text{for all } y, y'.

They serve the linear program of :mod:`dprivacy.mechanisms.spanner` (N. E. Bordenabe,
K. Chatzikokolakis, C. Palamidessi, *Optimal geo-indistinguishable mechanisms for location privacy*,
CCS 2014, "Reducing the number of constraints"), which writes privacy constraints on the edges only.
The dilation reported is the one the spanner achieves, computed from its shortest paths.

Spanners provided:

* :func:`greedy_spanner`, the classic greedy construction (Althöfer, Das, Dobkin, Joseph, Soares 1993),
  the kind of spanner CCS 2014 builds: pairs in increasing distance, an edge added when the current
  graph distance exceeds δ·d;
* :func:`grid_offset_spanner`, for grids: every cell joined to the cells at offsets (dx, dy) with
  gcd(|dx|, |dy|) = 1 and max(|dx|, |dy|) ≤ k (k = 1 is the king graph, whose dilation tends to
  1/cos(π/8) ≈ 1.0824 on large Euclidean grids), with k the smallest reaching the requested dilation.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from numbers import Real

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from .spaces import METRIC_RTOL, GridSpace, MetricSpace

_SPANNER_METHODS = ("auto", "greedy", "offsets")

#: Pairs examined per vectorized step of the greedy scan (grows while no edge is needed).
_SCAN_MIN, _SCAN_MAX = 16, 1 << 16

@dataclass(frozen=True)
class SpannerResult:
    """A spanner G = (Y, E) of a metric space and its achieved dilation.

    Attributes
    ----------
    i, j : ndarray of int
        Edge endpoints (i < j), one entry per edge.
    weights : ndarray
        Edge weights d(i, j) (the space's distances).
    dilation : float
        The achieved dilation max d_G(y, y') / d(y, y') over the pairs at finite, positive distance,
        computed from the shortest paths of G (1.0 when there is no such pair). ``inf`` when some pair
        at finite distance is disconnected in G.
    worst : tuple (y, y') or None
        A pair attaining ``dilation``.
    target : float
        The dilation that was requested.
    method : str
        "greedy" or "offsets".
    k : int or None
        For "offsets": the largest offset coordinate max(|dx|, |dy|).
    seconds : float
        Wall-clock time of the construction, dilation computation included.
    graph_distances : ndarray (n, n)
        d_G, the shortest-path distances of G (``inf`` between components).
    """

    i: np.ndarray
    j: np.ndarray
    weights: np.ndarray
    dilation: float
    worst: tuple[int, int] | None
    target: float
    method: str
    k: int | None
    seconds: float
    graph_distances: np.ndarray = field(repr=False)

    @property
    def n(self) -> int:
        """Number of points of the space."""
        return int(self.graph_distances.shape[0])

    @property
    def n_edges(self) -> int:
        """|E|."""
        return int(self.i.size)

    @property
    def edges(self) -> np.ndarray:
        """The edges as an (|E|, 2) array of (i, j), i < j."""
        return np.stack([self.i, self.j], axis=1)


def _check_dilation(dilation) -> float:
    if isinstance(dilation, bool) or not isinstance(dilation, Real):
        raise TypeError(f"dilation must be a real number >= 1, got {dilation!r} of type {type(dilation).__name__}")
    t = float(dilation)
    if math.isnan(t) or math.isinf(t) or t < 1.0:
        raise ValueError(f"dilation must be a finite number >= 1, got {t}")
    return t


def _check_space(space) -> MetricSpace:
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    return space


def spanner_dilation(space: MetricSpace, i, j) -> tuple[float, tuple[int, int] | None, np.ndarray]:
    r"""The dilation of the graph with edges (i[k], j[k]) weighted by the space's distances.

    Computes d_G by Dijkstra from every vertex (``scipy.sparse.csgraph``), then

    .. math:: \delta(G) = \max_{y \ne y',\ d(y,y') < \infty} d_G(y, y') / d(y, y').

    Returns
    -------
    dilation : float
        ``inf`` if a pair at finite distance is disconnected in G; 1.0 when there is no pair.
    worst : tuple (y, y') or None
        A pair attaining it.
    graph_distances : ndarray (n, n)
    """
    space = _check_space(space)
    n = space.n
    i = np.asarray(i, dtype=np.intp)
    j = np.asarray(j, dtype=np.intp)
    if i.shape != j.shape or i.ndim != 1:
        raise ValueError("edges must be two 1-D index arrays of equal length")
    if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
        raise ValueError(f"edge endpoints must be point indices in 0..{n - 1}")
    if np.any(i == j):
        raise ValueError("an edge joins a point to itself")
    d = space.distances
    w = d[i, j]
    if not np.isfinite(w).all():
        k = int(np.flatnonzero(~np.isfinite(w))[0])
        raise ValueError(f"edge ({i[k]}, {j[k]}) joins points at infinite distance")
    graph = sparse.coo_array((w, (i, j)), shape=(n, n)).tocsr()
    dg = csgraph.shortest_path(graph, method="D", directed=False)
    if n < 2:
        return 1.0, None, dg
    iu, ju = np.triu_indices(n, k=1)
    dist = d[iu, ju]
    keep = np.isfinite(dist)
    if not keep.any():
        return 1.0, None, dg
    iu, ju, dist = iu[keep], ju[keep], dist[keep]
    ratio = dg[iu, ju] / dist
    k = int(np.argmax(ratio))
    return max(float(ratio[k]), 1.0), (int(iu[k]), int(ju[k])), dg


def greedy_spanner(space: MetricSpace, *, dilation: float, rtol: float = METRIC_RTOL) -> SpannerResult:
    r"""The greedy δ-spanner of a finite metric space (Althöfer et al. 1993; CCS 2014, spanner section).

    Pairs {u, v} at finite distance are visited in increasing order of d(u, v) (ties by index); the edge
    (u, v) of weight d(u, v) is added when the distance in the graph built so far exceeds
    δ·d(u, v)·(1 + ``rtol``). Every pair visited and not added was within δ(1 + rtol) when visited and
    stays so (edges are only added), hence the result is a δ(1 + rtol)-spanner; its dilation is then
    recomputed from scratch (:func:`spanner_dilation`). With δ = 1 on a graph metric the result is the
    graph itself.

    Implementation: the all-pairs distance matrix D of the current graph is kept exact. Adding an edge
    (u, v) of weight w can shorten D[a, b] only through u → v with D[a, u] + w < D[a, v] and
    D[v, b] + w < D[u, b] (or the mirror image), so only that block of D is updated, in one vectorized
    step. The pair list is scanned in vectorized chunks for the next pair that needs an edge. Cost:
    O(n²) memory; measured on the shared 2-core machine: a 32×32 Euclidean grid (n = 1024, δ = 1.1)
    in about a second, 1,000 uniform random points in the unit square (δ = 1.1, 4,267 edges) in about
    7 s, most of it in the block updates.

    Parameters
    ----------
    space : MetricSpace
        Any finite (possibly extended) metric space; its dense distance matrix is used.
    dilation : float
        The target δ ≥ 1.
    rtol : float
        Relative slack on the comparison, so that a path whose length equals δ·d up to rounding is
        accepted (needed for δ = 1).

    Returns
    -------
    SpannerResult
    """
    space = _check_space(space)
    t = _check_dilation(dilation)
    t0 = time.perf_counter()
    n = space.n
    d = space.distances
    iu, ju = np.triu_indices(n, k=1)
    w = d[iu, ju]
    finite = np.isfinite(w)
    iu, ju, w = iu[finite], ju[finite], w[finite]
    order = np.lexsort((ju, iu, w))
    I, J, W = iu[order], ju[order], w[order]
    threshold = t * W * (1.0 + rtol)

    D = np.full((n, n), np.inf)
    np.fill_diagonal(D, 0.0)
    added = []
    pos, chunk, total = 0, _SCAN_MIN, I.size
    while pos < total:
        end = min(total, pos + chunk)
        need = D[I[pos:end], J[pos:end]] > threshold[pos:end]
        if not need.any():
            pos = end
            chunk = min(2 * chunk, _SCAN_MAX)
            continue
        k = pos + int(np.argmax(need))
        added.append(k)
        _insert_edge(D, int(I[k]), int(J[k]), float(W[k]))
        pos = k + 1
        chunk = max(chunk // 2, _SCAN_MIN)
    sel = np.asarray(added, dtype=np.intp)
    ei, ej, ew = I[sel], J[sel], W[sel]
    dil, worst, dg = spanner_dilation(space, ei, ej)
    return SpannerResult(ei, ej, ew, dil, worst, t, "greedy", None, time.perf_counter() - t0, dg)


def _insert_edge(D: np.ndarray, u: int, v: int, w: float) -> None:
    # Exact incremental all-pairs update. A shortest path through the new edge goes a → u → v → b
    # (or the mirror image); it beats D[a, b] ≤ D[a, v] + D[v, b] only if D[a, u] + w < D[a, v], and
    # similarly on b's side, so the update is confined to the block A × B (and B × A by symmetry).
    du, dv = D[u].copy(), D[v].copy()
    A = np.flatnonzero(du + w < dv)
    B = np.flatnonzero(dv + w < du)
    if A.size == 0 or B.size == 0:
        return
    block = np.minimum(D[np.ix_(A, B)], (du[A] + w)[:, None] + dv[B][None, :])
    D[np.ix_(A, B)] = block
    D[np.ix_(B, A)] = block.T


def _grid_offsets(k: int) -> list[tuple[int, int]]:
    # One offset per direction class ±(dx, dy): dx > 0, or dx = 0 and dy > 0.
    return [
        (dx, dy)
        for dx in range(0, k + 1)
        for dy in range(-k, k + 1)
        if (dx > 0 or dy > 0) and math.gcd(dx, abs(dy)) == 1
    ]


def _offset_edges(space: GridSpace, k: int) -> tuple[np.ndarray, np.ndarray]:
    w, h = space.width, space.height
    idx = np.arange(space.n).reshape(h, w)
    I, J = [], []
    for dx, dy in _grid_offsets(k):
        r0, r1 = max(0, -dy), min(h, h - dy)
        c1 = w - dx
        if r1 <= r0 or c1 <= 0:
            continue
        I.append(idx[r0:r1, 0:c1].ravel())
        J.append(idx[r0 + dy : r1 + dy, dx : dx + c1].ravel())
    if not I:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    i, j = np.concatenate(I), np.concatenate(J)
    return np.minimum(i, j), np.maximum(i, j)


def grid_offset_spanner(space: GridSpace, *, dilation: float | None = None, k: int | None = None) -> SpannerResult:
    r"""A structured spanner of a grid: each cell joined to the cells at offsets (dx, dy) with
    gcd(|dx|, |dy|) = 1 and max(|dx|, |dy|) ≤ k.

    For the Euclidean metric, a lattice vector lying between two consecutive edge directions at angle
    θ is reached by a path of those two directions of length at most 1/cos(θ/2) times its norm, so
    k = 1 (the king graph, θ = π/4) gives dilation ≤ 1/cos(π/8) ≈ 1.0824, k = 2 (θ = arctan ½) about
    1.0275, and the dilation tends to 1 as k grows; k = max(W, H) − 1 joins every essential pair
    (dilation 1). For the Manhattan and Chebyshev metrics k = 1 already gives dilation 1. The
    dilation reported is computed exactly (:func:`spanner_dilation`), not taken from these bounds.

    Parameters
    ----------
    space : GridSpace
    dilation : float, optional
        Target δ ≥ 1: the smallest k whose computed dilation is ≤ δ is used.
    k : int, optional
        Use this k (give exactly one of ``dilation`` and ``k``).
    """
    if not isinstance(space, GridSpace):
        raise TypeError(f"grid_offset_spanner needs a GridSpace, got {type(space).__name__}")
    if (dilation is None) == (k is None):
        raise ValueError("give exactly one of dilation (a target) and k (the offset range)")
    t0 = time.perf_counter()
    k_max = max(space.width, space.height) - 1
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        ks, t = [int(k)], float("nan")
    else:
        t = _check_dilation(dilation)
        ks = range(1, max(k_max, 1) + 1)
    for kk in ks:
        i, j = _offset_edges(space, kk)
        dil, worst, dg = spanner_dilation(space, i, j)
        if k is not None or dil <= t * (1.0 + METRIC_RTOL) or kk >= k_max:
            break
    w = space.distances[i, j]
    return SpannerResult(i, j, w, dil, worst, t, "offsets", kk, time.perf_counter() - t0, dg)


def build_spanner(space: MetricSpace, *, dilation: float, method: str = "auto") -> SpannerResult:
    """A spanner of dilation at most ``dilation`` (up to the greedy's relative slack ``METRIC_RTOL``).

    ``method``: "greedy" (:func:`greedy_spanner`), "offsets" (:func:`grid_offset_spanner`, grids only),
    or "auto": on a grid both, keeping the one with fewer edges (then smaller dilation; its ``seconds``
    is then the time of both constructions); elsewhere the greedy spanner.
    """
    space = _check_space(space)
    t = _check_dilation(dilation)
    if method not in _SPANNER_METHODS:
        raise ValueError(f"spanner method must be one of {', '.join(map(repr, _SPANNER_METHODS))}; got {method!r}")
    if method == "greedy":
        return greedy_spanner(space, dilation=t)
    if method == "offsets":
        return grid_offset_spanner(space, dilation=t)
    if not isinstance(space, GridSpace):
        return greedy_spanner(space, dilation=t)
    off = grid_offset_spanner(space, dilation=t)
    gr = greedy_spanner(space, dilation=t)
    best = min((off, gr), key=lambda s: (s.n_edges, s.dilation))
    return replace(best, seconds=off.seconds + gr.seconds)  # the time spent on both


def spanner_space(space: MetricSpace, spanner: SpannerResult) -> MetricSpace:
    """The metric space (Y, d_G) of a spanner, with the spanner's edges as its essential pairs.

    ε'·d_G-privacy on it is exactly the set of edge constraints H[y, z] ≤ e^{ε' d(y, y')} H[y', z]
    (every edge is a d_G-shortest path of its own weight, since d_G ≥ d), and it implies
    (ε' δ)·d-privacy on the original space (CCS 2014, spanner theorem).
    """
    space = _check_space(space)
    if spanner.n != space.n:
        raise ValueError(f"the spanner has {spanner.n} points but the space has {space.n}")
    return MetricSpace(
        spanner.graph_distances,
        labels=space.labels,
        name=f"{spanner.method} spanner of {space.name} (dilation {spanner.dilation:.6g})",
        essential_pairs=(spanner.i, spanner.j),
        validate=False,
    )
