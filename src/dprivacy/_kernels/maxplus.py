r"""Max-convolution on a grid: m(z) = max_y π_y e^{−ε d(y, z)} and a maximizer, for every cell z.

This is what the utility of a tight-constraints mechanism needs under the binary gain and an optimal
remap (ElSalamouny et al. 2014 §3.4, Eq. 6): with H[y, z] = e^{−ε d(y,z)} z_z,

.. math:: \mathcal U = \sum_z \max_y \pi_y H[y,z] = \sum_z z_z\, m(z), \qquad
          \hat R(z) = \arg\max_y \pi_y e^{-\varepsilon d(y,z)} .

In the log domain, with g = −ln π (+∞ where π = 0), −ln m(z) = T(z) = min_y [g(y) + ε d(y, z)]: a
*weighted distance transform* (an infimal convolution of g with the cone ε d). The brute force costs
O(n²) (10¹² for a million cells); the structure of each metric does much better:

* **Manhattan and Chebyshev: exact, O(n).** Both are path metrics of the lattice: Manhattan is the
  length of the shortest path of unit axis moves, Chebyshev of unit king moves (axis or diagonal,
  each of length one step). So T is the composition of 1-D transforms along each move direction,
  T = g □ c_→ □ c_↑ (□ c_↗ □ c_↘), where c_v(t v) = ε·step·|t| on the line through v; each 1-D
  transform is two linear scans (forward: V[i] = min(V[i], V[i−1] + a); backward likewise). The
  composition minimizes over paths that make all horizontal moves, then vertical, then diagonal, then
  antidiagonal; a shortest lattice path between y and z can be put in that order without leaving the
  bounding box of y and z (an optimal king path uses at most one axis and one diagonal direction), so
  no shortest path is lost to the grid's boundary, and no path is shorter than d(y, z) (triangle
  inequality). The scans are vectorized across lines: O(W + H) numpy operations on vectors of length
  ≤ max(W, H). A maximizer is carried along with each value.
* **Euclidean: exact, branch and bound.** Not a lattice path metric, so no separable scan is exact.
  (1) Bounds in O(n): the king-move scans with diagonal cost √2·a compute the transform for the
  octagonal distance d₈ = max + (√2 − 1)·min ≥ d₂; its minimizer y gives an upper bound
  V(z) = g(y) + ε‖z − y‖ ≥ T(z) (evaluated exactly), and the same scans with costs divided by
  γ = max d₈/d₂ = √(4 − 2√2) give a lower bound L(z) ≤ T(z). Where L(z) = V(z) (to
  :data:`CERTIFY_RTOL`), y is optimal — for a prior that is (ε/γ)·d₈-private, i.e. varies slowly
  between neighbours, that is every cell.
  (2) The remaining cells, by tiles of b×b: a source tile σ can improve a cell of the target tile τ
  only if min_σ g + ε·dist(σ, τ) < max_τ V; other pairs are skipped, the rest evaluated exactly
  (a block of at most b²×b²). Cost: O(n) for the bounds, O((n/b²)²) cheap vectorized tile-pair tests
  for the tiles with open cells, and b⁴ per surviving pair. Measured (benchmarks/bench_structured.py):
  seconds on 300×300 for smooth and rough priors; the worst case is O(n²) (a prior that decays at
  rate exactly ε along long rays keeps every tile on the ray a candidate).

The uniform prior needs none of this: m(z) = (1/n) max_y Φ[y, z] = 1/n since Φ's diagonal is 1, so
U = Σz / n with the identity remap.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import as_prior, check_epsilon
from ..spaces import GridSpace

#: Tile side for the Euclidean branch and bound.
TILE = 8

#: max over directions of (octagonal distance) / (Euclidean distance) = √(4 − 2√2), at 22.5°.
OCTAGON_RATIO = math.sqrt(4 - 2 * math.sqrt(2))

#: A cell whose lower and upper bounds agree to this relative tolerance is settled without search
#: (the scans accumulate rounding of order 1e-15 relative; the value is then within 2e-13 of T(z)).
CERTIFY_RTOL = 1e-13

#: Elements per block in the exact tile-pair evaluation.
_BLOCK_ELEMENTS = 1 << 21


def _scan_axis(v: np.ndarray, lab: np.ndarray, cost: float, axis: int) -> None:
    """1-D transform along rows (axis=1) or columns (axis=0), in place: two scans."""
    m = v.shape[axis]
    sl = (lambda k: (slice(None), k)) if axis == 1 else (lambda k: (k, slice(None)))
    for order in (range(1, m), range(m - 2, -1, -1)):
        step = 1 if order.step == 1 else -1
        for k in order:
            cur, prev = sl(k), sl(k - step)
            cand = v[prev] + cost
            better = cand < v[cur]
            if better.any():
                v[cur] = np.where(better, cand, v[cur])
                lab[cur] = np.where(better, lab[prev], lab[cur])


def _scan_diagonal(v: np.ndarray, lab: np.ndarray, cost: float, anti: bool) -> None:
    """1-D transform along diagonals (r−1, c−1)→(r, c), or antidiagonals (r+1, c−1)→(r, c), in place."""
    w = v.shape[1]
    if v.shape[0] < 2 or w < 2:
        return
    # Forward in c: the predecessor of (r, c) is (r ∓ 1, c − 1); backward: (r ± 1, c + 1).
    dst_f, src_f = (slice(0, -1), slice(1, None)) if anti else (slice(1, None), slice(0, -1))
    for c in range(1, w):
        cand = v[src_f, c - 1] + cost
        cur = v[dst_f, c]
        better = cand < cur
        if better.any():
            v[dst_f, c] = np.where(better, cand, cur)
            lab[dst_f, c] = np.where(better, lab[src_f, c - 1], lab[dst_f, c])
    for c in range(w - 2, -1, -1):
        cand = v[dst_f, c + 1] + cost
        cur = v[src_f, c]
        better = cand < cur
        if better.any():
            v[src_f, c] = np.where(better, cand, cur)
            lab[src_f, c] = np.where(better, lab[dst_f, c + 1], lab[src_f, c])


def _path_transform(g2: np.ndarray, a: float, diagonal_cost: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Values and labels (flat) of min_y g(y) + (cheapest lattice path from y), with axis moves of
    cost a and, when ``diagonal_cost`` is given, diagonal moves of that cost."""
    h, w = g2.shape
    v = g2.copy()
    lab = np.arange(h * w, dtype=np.int64).reshape(h, w)
    _scan_axis(v, lab, a, axis=1)
    _scan_axis(v, lab, a, axis=0)
    if diagonal_cost is not None:
        _scan_diagonal(v, lab, diagonal_cost, anti=False)
        _scan_diagonal(v, lab, diagonal_cost, anti=True)
    return v.ravel(), lab.ravel()


def _exact_values(grid: GridSpace, g: np.ndarray, eps: float, src: np.ndarray) -> np.ndarray:
    """g(src[z]) + ε d(src[z], z) for every cell z."""
    w = grid.width
    z = np.arange(grid.n)
    dx = (src % w) - (z % w)
    dy = (src // w) - (z // w)
    return g[src] + eps * grid.offset_distance(dx, dy)


def max_convolution(grid: GridSpace, prior: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """m(z) = max_y π_y e^{−ε d(y,z)} and an argmax ŷ(z), for every cell (see module notes).

    Returns ``(m, argmax)``, both of length n. m is evaluated as π_ŷ e^{−ε d(ŷ, z)} from the maximizer,
    so it carries no accumulated rounding from the scans.
    """
    if not isinstance(grid, GridSpace):
        raise TypeError(f"grid must be a GridSpace, got {type(grid).__name__}")
    p = as_prior(prior, grid.n)
    with np.errstate(divide="ignore"):
        g = -np.log(p)
    eps = check_epsilon(epsilon)
    a = eps * grid.step
    g2 = g.reshape(grid.height, grid.width)
    if grid.metric == "manhattan":
        src = _path_transform(g2, a, None)[1]
    elif grid.metric == "chebyshev":
        src = _path_transform(g2, a, a)[1]
    else:
        src = _euclidean_transform(grid, g, eps)
    d = grid.offset_distance((src % grid.width) - np.arange(grid.n) % grid.width, (src // grid.width) - np.arange(grid.n) // grid.width)
    return p[src] * np.exp(-eps * d), src


def _euclidean_transform(grid: GridSpace, g: np.ndarray, eps: float, tile: int = TILE) -> np.ndarray:
    """Exact argmin_y g(y) + ε‖z − y‖: chamfer bounds, then tile branch and bound where they differ."""
    h, w = grid.height, grid.width
    a = eps * grid.step
    g2 = g.reshape(h, w)
    src = _path_transform(g2, a, math.sqrt(2) * a)[1]
    val = _exact_values(grid, g, eps, src)
    # Lower bound: octagonal distance / OCTAGON_RATIO ≤ Euclidean distance.
    low = _path_transform(g2, a / OCTAGON_RATIO, math.sqrt(2) * a / OCTAGON_RATIO)[0]
    with np.errstate(invalid="ignore"):
        open_ = ~(low >= val - CERTIFY_RTOL * (np.abs(val) + 1.0))
    open_ &= np.isfinite(val)
    if not open_.any():
        return src
    th, tw = -(-h // tile), -(-w // tile)
    r0 = np.arange(th) * tile
    c0 = np.arange(tw) * tile
    r1 = np.minimum(r0 + tile, h) - 1
    c1 = np.minimum(c0 + tile, w) - 1
    gp = np.full((th * tile, tw * tile), np.inf)
    gp[:h, :w] = g2
    gmin = gp.reshape(th, tile, tw, tile).min(axis=(1, 3)).ravel()
    op = np.zeros((th * tile, tw * tile), dtype=bool)
    op[:h, :w] = open_.reshape(h, w)
    tiles_open = np.flatnonzero(op.reshape(th, tile, tw, tile).any(axis=(1, 3)).ravel())
    ti, tj = np.divmod(np.arange(th * tw), tw)
    alive = np.isfinite(gmin)
    idx = np.arange(grid.n).reshape(h, w)
    for t in tiles_open:
        a_r, a_c = ti[t], tj[t]
        cells = idx[r0[a_r] : r1[a_r] + 1, c0[a_c] : c1[a_c] + 1].ravel()
        cells = cells[open_[cells]]
        vmax = val[cells].max()
        # Smallest distance between tile t and every source tile (cell offsets).
        gap_r = np.maximum(0, np.maximum(r0[ti] - r1[a_r], r0[a_r] - r1[ti]))
        gap_c = np.maximum(0, np.maximum(c0[tj] - c1[a_c], c0[a_c] - c1[tj]))
        lower = gmin + eps * grid.offset_distance(gap_c, gap_r)
        cand = np.flatnonzero(alive & (lower < vmax))
        if cand.size == 0:
            continue
        srcs = np.concatenate([idx[r0[ti[s]] : r1[ti[s]] + 1, c0[tj[s]] : c1[tj[s]] + 1].ravel() for s in cand])
        srcs = srcs[np.isfinite(g[srcs])]
        zr, zc = cells // w, cells % w
        sr, sc, sg = srcs // w, srcs % w, g[srcs]
        best_v = val[cells].copy()
        best_s = src[cells].copy()
        chunk = max(1, _BLOCK_ELEMENTS // max(cells.size, 1))
        for k in range(0, srcs.size, chunk):
            blk = slice(k, k + chunk)
            tot = sg[blk][None, :] + eps * grid.offset_distance(sc[blk][None, :] - zc[:, None], sr[blk][None, :] - zr[:, None])
            j = tot.argmin(axis=1)
            v = tot[np.arange(cells.size), j]
            better = v < best_v
            best_v = np.where(better, v, best_v)
            best_s = np.where(better, srcs[blk][j], best_s)
        val[cells] = best_v
        src[cells] = best_s
    return src
