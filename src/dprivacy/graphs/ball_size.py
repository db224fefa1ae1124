"""Ball-size symmetry (ElSalamouny et al. 2014 §6.2, Def 7): every point sees the same number n_r of points at each distance
r, all that the closed-form tight-constraints mechanism needs (ElSalamouny et al. 2014 Prop 9). :func:`distance_counts`
counts the n_r of every point and decides. See :mod:`dprivacy.graphs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spaces import METRIC_RTOL, MetricSpace, distance_floor, from_graph

#: Rows sorted per block in :func:`distance_counts` (bounds the temporary memory to ~128 MiB).
_SORT_BLOCK_ELEMENTS = 2**24


def _as_space(space_or_graph) -> MetricSpace:
    if isinstance(space_or_graph, MetricSpace):
        return space_or_graph
    import networkx as nx

    if isinstance(space_or_graph, nx.Graph):
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
        True when the space is ball-size symmetric (ElSalamouny et al. 2014 Def 7): the number of points at each
        distance r from y is the same for every y.
    distances : ndarray of float
        The distinct finite distances r_0 = 0 < r_1 < ... seen from any point (empty when not
        symmetric).
    counts : ndarray of int
        n_r for each entry of ``distances`` (n_0 = 1); they sum to n − ``n_infinite``.
    n_infinite : int
        Number of points at infinite distance from each point (extended metrics, Chatzikokolakis et al. 2013 §3).
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
        (ElSalamouny et al. 2014 §6.2, before Prop 9; Alvim et al. 2015 eq. (18) is its reciprocal γ)."""
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

    A space is ball-size symmetric (ElSalamouny et al. 2014 §6.2, Def 7) iff |B_r(y)| is the same for every y and r,
    equivalently iff the multiset of distances {d(y, z) : z ∈ Y} is the same for every y. The test
    sorts every row of the distance matrix and compares it with row 0 (within a relative tolerance
    ``rtol``, so that float metrics such as ε·d or Euclidean grids are handled). Distance-regular and
    vertex-transitive graphs pass it (Alvim et al. 2015 Prop 5), and then n_d is the constant of Alvim et al. 2015
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
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 7 (§6.2).
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Prop 5.
    """
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
    """Whether ``space`` is ball-size symmetric (ElSalamouny et al. 2014 Def 7); same result as :func:`distance_counts`,
    which is truthy exactly when the space is symmetric.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 7.
    """
    return distance_counts(space, rtol=rtol)
