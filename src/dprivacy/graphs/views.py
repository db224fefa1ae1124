"""A graph or a metric space seen as an edge-coloured graph on 0..n−1 (a graph's edges, a space's essential
pairs coloured by their lengths): the form in which :mod:`.symmetry` and :mod:`.augment` look for
automorphisms and intersection numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spaces import METRIC_RTOL, MetricSpace, from_graph

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


def _space_of(v: _View) -> MetricSpace:
    if v.hops is not None:
        return MetricSpace(v.hops, labels=v.labels, validate=False)
    raise AssertionError("graph views always have hop distances")  # pragma: no cover
