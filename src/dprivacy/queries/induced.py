"""Answers as points of a metric space: the graph a query induces on its answers (ElSalamouny et al. 2014 §3.2;
Alvim et al. 2015 Def 25), the answer line, and the closed forms of ElSalamouny et al. 2014 §7.1 that never enumerate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from .. import spaces
from .._validate import check_positive_int
from ..spaces import MetricSpace, _check_dense_fits
from .databases import Universe

#: Relative tolerance when comparing distances (Δ-expansive pairs, tight chains).
RTOL = 1e-9


# ---------------------------------------------------------------------------------------------
# Answers as points of a space
# ---------------------------------------------------------------------------------------------


def _as_answers(answers) -> np.ndarray:
    a = np.asarray(answers)
    if a.ndim not in (1, 2) or a.shape[0] == 0:
        raise ValueError(f"answers must be a non-empty array of shape (N,) or (N, k), got shape {a.shape}")
    if a.dtype.kind == "f" and np.isnan(a).any():
        i = int(np.flatnonzero(np.isnan(a).reshape(a.shape[0], -1).any(axis=1))[0])
        raise ValueError(f"answers must not be NaN (the query is undefined on database {i})")
    if a.dtype == object:
        raise TypeError("answers must be a numeric array of shape (N,) or (N, k), not an object array")
    return a


def answer_index(answers, labels: Sequence | None = None) -> tuple[np.ndarray, list]:
    """Map each database's answer to the index of a point of the answer space.

    Parameters
    ----------
    answers : array, shape (N,) or (N, k)
        A query's answers (rows of a 2-D array are answers, labelled by tuples).
    labels : sequence, optional
        The answer space's labels. Default: the distinct answers in ``np.unique`` order (ascending
        numbers; tuples in lexicographic order) — the order used by :func:`induced_space`.

    Returns
    -------
    (index, labels) : int array of shape (N,), list
        ``labels[index[i]]`` is the answer of database i.
    """
    a = _as_answers(answers)
    uniq, inv = np.unique(a, axis=0 if a.ndim == 2 else None, return_inverse=True)
    inv = np.asarray(inv).ravel().astype(np.intp)
    found = [tuple(r) for r in uniq.tolist()] if a.ndim == 2 else uniq.tolist()
    if labels is None:
        return inv, found
    labels = list(labels)
    pos = {lab: i for i, lab in enumerate(labels)}
    try:
        where = np.array([pos[y] for y in found], dtype=np.intp)  # one lookup per distinct answer
    except KeyError as exc:
        raise ValueError(f"answer {exc.args[0]!r} is not a point (label) of the answer space") from None
    except TypeError:
        raise TypeError("answer-space labels must be hashable") from None
    return where[inv], labels


@dataclass(frozen=True)
class InducedGraph:
    """The induced graph ~_f of a query on its answers (ElSalamouny et al. 2014 §3.2; Alvim et al. 2015 Def 25).

    Attributes
    ----------
    labels : list
        The answers (points), in ``np.unique`` order.
    edges : (ndarray, ndarray)
        Pairs (i < j) of answer indices with y_i ~_f y_j, sorted, without repetition.
    answer_index : ndarray of int, shape (N,)
        For each database, the index of its answer in ``labels``.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.2.
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Def 25.
    .. [3] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 3.
    """

    labels: list
    edges: tuple[np.ndarray, np.ndarray]
    answer_index: np.ndarray = field(repr=False)

    @property
    def n(self) -> int:
        return len(self.labels)

    def adjacency(self) -> sparse.csr_array:
        """Symmetric 0/1 adjacency matrix of ~_f."""
        i, j = self.edges
        n = self.n
        a = sparse.coo_array((np.ones(2 * i.size), (np.r_[i, j], np.r_[j, i])), shape=(n, n))
        return a.tocsr()

    def to_networkx(self):
        """The graph as a ``networkx.Graph`` with the answers as nodes."""
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(self.labels)
        lab = self.labels
        g.add_edges_from((lab[a], lab[b]) for a, b in zip(self.edges[0].tolist(), self.edges[1].tolist()))
        return g


def _database_pairs(adjacency, n: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(adjacency, Universe):
        pairs = adjacency.adjacent_pairs()
        size = adjacency.n
    elif isinstance(adjacency, MetricSpace):
        pairs = adjacency.essential_pairs()
        size = adjacency.n
    elif sparse.issparse(adjacency):
        if adjacency.shape[0] != adjacency.shape[1]:
            raise ValueError(f"an adjacency matrix must be square, got shape {adjacency.shape}")
        coo = sparse.triu(sparse.coo_array(adjacency) + sparse.coo_array(adjacency).T, k=1).tocoo()
        pairs = (coo.row.astype(np.intp), coo.col.astype(np.intp))
        size = adjacency.shape[0]
    elif isinstance(adjacency, tuple) and len(adjacency) == 2:
        i, j = (np.asarray(p) for p in adjacency)
        if i.shape != j.shape or i.ndim != 1 or (i.size and not np.issubdtype(i.dtype, np.integer)):
            raise ValueError("adjacent pairs must be two 1-D integer index arrays of equal length")
        if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
            raise ValueError(f"adjacent pair indices must lie in 0..{n - 1} (one per database)")
        return i.astype(np.intp), j.astype(np.intp)
    else:
        raise TypeError(
            "databases adjacency must be a Universe, a MetricSpace (its essential pairs = edges of a graph "
            f"metric), a sparse adjacency matrix or a pair of index arrays; got {type(adjacency).__name__}"
        )
    if size != n:
        raise ValueError(f"there are {n} answers but the adjacency is on {size} databases")
    return pairs


def induced_graph(answers, adjacency) -> InducedGraph:
    """The induced graph y ~_f y' iff x ~ x' for some x ∈ f⁻¹(y), x' ∈ f⁻¹(y') (ElSalamouny et al. 2014 §3.2).

    Parameters
    ----------
    answers : array, shape (N,) or (N, k)
        The query's answer on each database (e.g. ``count(U)``).
    adjacency : Universe, MetricSpace, sparse matrix or (I, J)
        The adjacency of databases: a :class:`Universe` (Hamming adjacency, by index arithmetic), a
        metric space (its essential pairs, which for a graph metric such as d_h are the edges), a
        sparse adjacency matrix, or two index arrays of adjacent database pairs.

    Vectorized: the adjacent database pairs are mapped to answer indices through ``np.unique``'s
    inverse; self-pairs (x ~ x' with f(x) = f(x')) and repetitions are dropped.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.2.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Def 3 (adjacent query
       results).
    """
    inv, labels = answer_index(answers)
    I, J = _database_pairs(adjacency, inv.size)
    a, b = inv[I], inv[J]
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    m = len(labels)
    key = np.unique(lo.astype(np.int64) * m + hi)
    return InducedGraph(labels, ((key // m).astype(np.intp), (key % m).astype(np.intp)), inv)


def induced_space(answers, adjacency, *, name: str | None = None) -> MetricSpace:
    """The answers under the graph metric d_{~f} of the induced graph (ElSalamouny et al. 2014 §3.2, Cor 1).

    Labels are the distinct answers in ``np.unique`` order (:func:`answer_index` gives each database's
    answer index in this order); the essential pairs are the edges of ~_f. Answers in different
    components are at distance ∞ (an extended metric), which cannot happen with the Hamming adjacency.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.2, Cor 1.
    """
    g = induced_graph(answers, adjacency)
    d = csgraph.shortest_path(g.adjacency(), unweighted=True, directed=False)
    return MetricSpace(d, labels=g.labels, name=name or f"induced graph on {g.n} answers", essential_pairs=g.edges, validate=False)


def answer_line(answers, *, name: str | None = None) -> MetricSpace:
    """Numeric answers under the usual distance d_ℝ(y, y') = |y − y'| (Chatzikokolakis et al. 2013 §2).

    Labels are the distinct answers in ascending order; essential pairs are consecutive answers. This
    is the answer metric of Chatzikokolakis et al. 2013 Thm 10–13 (not a graph metric unless answers are consecutive
    integers).

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §2, Thm 10–13.
    """
    a = _as_answers(answers)
    if a.ndim != 1 or a.dtype.kind not in "iuf" or a.dtype == bool:
        raise ValueError(f"answer_line needs 1-D numeric answers, got shape {a.shape} and dtype {a.dtype}")
    y = np.unique(a)
    _check_dense_fits(y.size, "answer_line")
    yf = y.astype(np.float64)
    d = np.abs(yf[:, None] - yf[None, :])
    i = np.arange(y.size - 1)
    return MetricSpace(d, labels=y.tolist(), name=name or f"line of {y.size} answers", coordinates=yf, essential_pairs=(i, i + 1), validate=False)


# ---------------------------------------------------------------------------------------------
# Closed forms (ElSalamouny et al. 2014 §7.1): no enumeration
# ---------------------------------------------------------------------------------------------


def count_space(u: int) -> MetricSpace:
    """Answers {0, …, u} of a counting query on u individuals: the line, adjacent iff |i − j| = 1
    (ElSalamouny et al. 2014 §3.2 Fig 1; Chatzikokolakis et al. 2013 Thm 8). Labels 0..u; essential pairs = the u edges.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.2.
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), Thm 8.
    """
    u = check_positive_int(u, name="u")
    return spaces.line(u + 1, name=f"count:{u}")


def sum_space(u: int, v: int) -> MetricSpace:
    """Answers of a sum query on u individuals with values 0..v (ElSalamouny et al. 2014 §7.1).

    The answers are {0, …, u·v}; changing one individual's value changes the sum by at most v, and by
    any amount up to v from any database that allows it, so i ~_f j iff 0 < |i − j| ≤ v and

        d_{~f}(i, j) = ⌈|i − j| / v⌉.

    Labels 0..u·v; essential pairs = the edges. ``sum:150,5`` has 751 answers. The space is a
    :class:`~dprivacy.spaces.SumLineSpace`: its dense distance matrix is built only when asked for, and
    the front doors solve on it matrix-free (``sum:30000,5`` has 150,001 answers).

    Notes
    -----
    This follows ElSalamouny et al. 2014 §7.1 ("each having an integer value between 0 and v"): v + 1 values. If the
    values are read as 1..v instead, the answers are {u, …, u·v} and i ~_f j iff |i − j| ≤ v − 1:
    the same graph as ``sum_space(u, v - 1)`` with labels shifted by u. In :func:`universe` terms,
    ``sum_space(u, v)`` is the induced space of ``total(universe(u, v + 1))``.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.1 (sum
       query).
    """
    u = check_positive_int(u, name="u")
    v = check_positive_int(v, name="v")
    return spaces.SumLineSpace(u * v + 1, v, name=f"sum:{u},{v}")


def kcount_space(u: int, k: int) -> MetricSpace:
    """Answers of k counting queries on u individuals (ElSalamouny et al. 2014 §7.1, "2-count" for k = 2).

    The answers are {0, …, u}^k, labelled by tuples in lexicographic order; changing one individual
    changes each count by at most 1, so answers are adjacent iff every coordinate differs by at most 1
    (the king's graph), and d_{~f}(y, y') = max_j |y_j − y'_j| (Chebyshev). ``kcount:30,2`` has 961
    answers. This is the induced graph only for independent predicates (see :func:`kcount`).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.1 (2-count
       query).
    """
    u = check_positive_int(u, name="u")
    k = check_positive_int(k, name="k")
    n = (u + 1) ** k
    _check_dense_fits(n, f"kcount:{u},{k}")
    coords = np.stack(np.unravel_index(np.arange(n), (u + 1,) * k), axis=1)  # lexicographic
    d = np.zeros((n, n))
    for c in range(k):
        np.maximum(d, np.abs(coords[:, c][:, None] - coords[:, c][None, :]), out=d)
    i, j = np.nonzero(np.triu(d == 1.0))
    labels = [tuple(r) for r in coords.tolist()]
    return MetricSpace(
        d, labels=labels, name=f"kcount:{u},{k}", coordinates=coords.astype(np.float64), essential_pairs=(i, j), validate=False
    )
