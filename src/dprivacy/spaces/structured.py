"""Structured metric spaces whose dense distance matrix is built only on request: grids with a Euclidean,
Manhattan or Chebyshev metric (:class:`GridSpace`, :func:`grid`), and the answer lines of sum queries
(:class:`SumLineSpace`), on which the front doors take matrix-free paths. See :mod:`dprivacy.spaces`.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_epsilon, check_positive_int
from .metric import MetricSpace, _check_dense_fits

_GRID_METRICS = ("euclidean", "manhattan", "chebyshev")


class GridSpace(MetricSpace):
    """A W×H grid of cells with step s under the Euclidean, Manhattan or Chebyshev distance.

    Cell (col, row) has index ``row * width + col`` and centre ``(col * step, row * step)``. The metric
    is translation-invariant: d depends only on the offset between cells, which the structured solvers
    exploit. The dense distance matrix is built on first use and refused when it would not fit.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
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

    def pair_distances(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        c = self.coordinates / self.step
        return self.offset_distance(c[i, 0] - c[j, 0], c[i, 1] - c[j, 1])

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
    adjacent iff 0 < |i − j| ≤ Δ, so d(i, j) = ⌈|i − j| / Δ⌉ (the graph metric of ElSalamouny et al. 2014 §7.1).

    Held as (n, Δ); the dense distance matrix is built on first use and refused when it would not fit, as
    for :class:`GridSpace`. d depends on |i − j| only, so Φ = e^{−ε d} is a symmetric Toeplitz matrix and
    the front doors take the matrix-free sum-line path (:mod:`dprivacy._kernels.sum_line`) on large spaces.
    The essential pairs are the n·Δ edges (every other pair lies on a tight chain of edges).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
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
    """A W×H grid of locations (ElSalamouny et al. 2014 §7.2): see :class:`GridSpace`.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.2 (the
       geo-indistinguishability case study).
    """
    return GridSpace(width, height, metric=metric, step=step, name=name)
