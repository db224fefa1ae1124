"""Shared hypothesis strategies: small random metric spaces, channels and priors.

Import them in a test module with ``from conftest import metric_spaces, channels, priors`` (pytest puts
``tests/`` on ``sys.path``). Everything is small (n ≤ 8) so that property tests stay fast.

Distances are generated *independently of the library*: shortest paths are computed here with a
Floyd–Warshall loop on the drawn weights, so a test comparing against ``dprivacy.spaces`` does not check
the library against itself.
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dprivacy.spaces import MetricSpace

# The machine is shared and slow: no per-example deadline; modest example counts by default
# (a test's own @settings still wins).
settings.register_profile(
    "dprivacy", deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow]
)
# In CI the examples are derandomized, so that a run is reproducible from the commit alone; locally
# hypothesis keeps exploring new examples.
settings.register_profile(
    "ci", parent=settings.get_profile("dprivacy"), derandomize=True, database=None, print_blob=True
)
settings.load_profile("ci" if os.environ.get("CI") else "dprivacy")

MAX_N = 8


# ---------------------------------------------------------------------------------------------
# Metrics (as dense matrices)
# ---------------------------------------------------------------------------------------------


def floyd_warshall(w: np.ndarray) -> np.ndarray:
    """All-pairs shortest paths of a symmetric weight matrix (``inf`` = no edge, zero diagonal)."""
    d = np.array(w, dtype=np.float64)
    for k in range(d.shape[0]):
        d = np.minimum(d, d[:, k][:, None] + d[k, :][None, :])
    return d


@st.composite
def weighted_graph_metrics(draw, min_n: int = 1, max_n: int = MAX_N, connected: bool = True):
    """Shortest-path metric of a random weighted graph.

    A random spanning tree (node k hangs from an earlier node) plus random extra edges; weights are
    small integers (many ties: pairs implied through a third point) or arbitrary positive floats.
    With ``connected=False`` the tree may be cut, giving ``inf`` distances (an extended metric).
    """
    n = draw(st.integers(min_n, max_n))
    integer = draw(st.booleans())
    weight = st.integers(1, 4).map(float) if integer else st.floats(0.1, 10.0)
    w = np.full((n, n), np.inf)
    np.fill_diagonal(w, 0.0)
    edges = []
    for k in range(1, n):
        if connected or draw(st.booleans()):
            edges.append((draw(st.integers(0, k - 1)), k))
    if n > 1:
        edges += draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n))
    for a, b in edges:
        if a != b:
            w[a, b] = w[b, a] = min(w[a, b], draw(weight))
    return floyd_warshall(w)


@st.composite
def graph_metrics(draw, min_n: int = 1, max_n: int = MAX_N, connected: bool = True):
    """Hop-count metric of a random unweighted graph (``inf`` between components if not connected).

    Returns ``(distances, edges)`` with ``edges`` the list of pairs (i < j) of the graph.
    """
    n = draw(st.integers(min_n, max_n))
    all_pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = set()
    if connected:
        for k in range(1, n):
            chosen.add((draw(st.integers(0, k - 1)), k))
    if all_pairs:
        chosen |= set(draw(st.lists(st.sampled_from(all_pairs), max_size=2 * n)))
    w = np.full((n, n), np.inf)
    np.fill_diagonal(w, 0.0)
    for a, b in chosen:
        w[a, b] = w[b, a] = 1.0
    return floyd_warshall(w), sorted(chosen)


@st.composite
def plane_metrics(draw, min_n: int = 1, max_n: int = MAX_N):
    """Euclidean distances between distinct random points of R^2.

    Half the time the points are on a small integer lattice (collinear triples: implied pairs), else
    they are arbitrary floats kept at least 0.05 apart.
    """
    n = draw(st.integers(min_n, max_n))
    if draw(st.booleans()):
        pts = draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=n, max_size=n, unique=True))
        x = np.array(pts, dtype=np.float64).reshape(n, 2)
    else:
        coord = st.floats(-5.0, 5.0, allow_nan=False)
        x = np.array(draw(st.lists(st.tuples(coord, coord), min_size=n, max_size=n)), dtype=np.float64).reshape(n, 2)
        d = np.hypot(x[:, 0][:, None] - x[:, 0], x[:, 1][:, None] - x[:, 1])
        assume(n == 1 or (d + np.eye(n) * 1e9).min() > 0.05)
    return np.hypot(x[:, 0][:, None] - x[:, 0], x[:, 1][:, None] - x[:, 1])


def metric_matrices(min_n: int = 1, max_n: int = MAX_N, extended: bool = False):
    """Any of the above (as a dense distance matrix); ``extended`` allows ``inf`` distances."""
    return st.one_of(
        weighted_graph_metrics(min_n, max_n, connected=not extended),
        graph_metrics(min_n, max_n, connected=not extended).map(lambda de: de[0]),
        plane_metrics(min_n, max_n),
    )


def metric_spaces(min_n: int = 1, max_n: int = MAX_N, extended: bool = False):
    """Random finite metric spaces (``MetricSpace``), see :func:`metric_matrices`."""
    return metric_matrices(min_n, max_n, extended).map(MetricSpace)


# ---------------------------------------------------------------------------------------------
# Channels and priors
# ---------------------------------------------------------------------------------------------

# Entries are exactly 0 or at least 0.01: zeros matter (impossible outputs), denormal noise does not.
_weights = st.one_of(st.just(0.0), st.floats(0.01, 1.0))


def _normalize_rows(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    empty = a.sum(axis=1) == 0
    a[empty, 0] = 1.0
    return a / a.sum(axis=1, keepdims=True)


@st.composite
def stochastic_matrices(draw, n: int | None = None, m: int | None = None, *, positive: bool = False, max_n: int = MAX_N):
    """A random n×m row-stochastic matrix (entries may be 0 unless ``positive``)."""
    n = draw(st.integers(1, max_n)) if n is None else n
    m = draw(st.integers(1, max_n)) if m is None else m
    elems = st.floats(0.01, 1.0) if positive else _weights
    return _normalize_rows(draw(hnp.arrays(np.float64, (n, m), elements=elems)))


@st.composite
def priors(draw, n: int | None = None, *, zeros: bool = True, max_n: int = MAX_N):
    """A random prior on n secrets; with ``zeros`` some entries may be exactly 0 (never all)."""
    n = draw(st.integers(1, max_n)) if n is None else n
    elems = _weights if zeros else st.floats(0.01, 1.0)
    return _normalize_rows(draw(hnp.arrays(np.float64, (1, n), elements=elems)))[0]


def exponential_channel(distances: np.ndarray, epsilon: float) -> np.ndarray:
    """H[x, z] ∝ exp(−ε d(x, z)) on Z = X: an exponential-like mechanism.

    It is 2ε·d-private: H[x,z]/H[x',z] = e^{ε(d(x',z) − d(x,z))} · c_{x'}/c_x with c_x = Σ_z e^{−ε d(x,z)},
    and each factor is at most e^{ε d(x,x')} by the triangle inequality.
    """
    with np.errstate(over="ignore"):
        k = np.exp(-epsilon * np.asarray(distances, dtype=np.float64))
    return k / k.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Brute-force references (deliberately naive loops, for small n)
# ---------------------------------------------------------------------------------------------


def brute_smallest_epsilon(h: np.ndarray, d: np.ndarray) -> float:
    """max over pairs at finite distance of max_z |ln H[y,z]/H[y',z]| / d(y,y'), by a triple loop."""
    n, m = h.shape
    best = 0.0
    for y in range(n):
        for y2 in range(n):
            if y == y2 or not np.isfinite(d[y, y2]):
                continue
            for z in range(m):
                a, b = h[y, z], h[y2, z]
                if a == 0 and b == 0:
                    continue
                r = np.inf if b == 0 else (0.0 if a == 0 else abs(np.log(a / b)))
                best = max(best, r / d[y, y2])
    return best


def brute_essential_pairs(d: np.ndarray, rtol: float = 1e-9) -> set[tuple[int, int]]:
    """Pairs i < j at finite distance with no k ∉ {i, j} such that d(i,k) + d(k,j) = d(i,j)."""
    n = d.shape[0]
    out = set()
    for i in range(n):
        for j in range(i + 1, n):
            if not np.isfinite(d[i, j]):
                continue
            implied = any(
                k not in (i, j) and d[i, k] + d[k, j] <= d[i, j] * (1 + rtol) for k in range(n)
            )
            if not implied:
                out.add((i, j))
    return out
