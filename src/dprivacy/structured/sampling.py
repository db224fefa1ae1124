r"""Exact sampling from the rows of a tight-constraints mechanism on a grid, without its matrix.

Row y of the mechanism is H[y, z] = k(z − y) z_z with k(o) = e^{−ε d(o)} a translation-invariant kernel
(seed 000 Def 6). :class:`KernelRejectionSampler` draws from it by rejection:

1. propose an offset o with probability q(o) = k(o)/K over the window
   O = {(dx, dy): |dx| < W, |dy| < H}, K = Σ_O k (one table for every row: the kernel does not depend
   on y);
2. let z = y + o; accept with probability 1[z in the grid] · z_z / z_max (z_max = max z);
3. repeat the rejected draws.

**Exactness.** Every cell z of the grid is y + o for exactly one o ∈ O. In one round, P(propose z and
accept) = k(z − y) z_z / (K z_max) for z in the grid, whose total is (Φz)_y / (K z_max). Rounds are
independent, so the accepted z has probability k(z − y) z_z / (Φz)_y = H[y, z] / Σ_z' H[y, z'] — the
row itself, since (Φz)_y = 1 (the row sum is 1 + r_y with r the solver's residual; the sampler then
draws from the normalized row, which differs from the stored row by at most |r_y|).

The offset table stores one quadrant, (|dx|, |dy|) with weight k·(2 if dx ≠ 0)(2 if dy ≠ 0), sorted
by decreasing weight and sampled by inverse CDF (searchsorted on cumulative sums, float64: exact up to
the rounding of the CDF, like :meth:`dprivacy.channels.Channel.sample`; offsets whose weight no longer
changes the float cumulative sum, beyond ~37/(ε·step) cells, have probability 0 there and are dropped
from the table), then independent random signs for the non-zero components.
Acceptance per round is about Σ_z H[y,z] / (K z_max) ≥ 1/(K z_max); on a large grid z is nearly
1/K inside and larger only near the border, so most proposals are accepted for interior secrets.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_rng
from ..spaces import GridSpace

#: Never run more than this many rounds (each round has a fixed positive acceptance probability, so
#: reaching it means something is wrong, e.g. z_max = 0).
MAX_ROUNDS = 100_000


class KernelRejectionSampler:
    """Exact sampler for the rows of H = Φ diag(z) on a grid (see module notes).

    Parameters
    ----------
    grid : GridSpace
    z : ndarray, shape (n,)
        Non-negative diagonal (the tight-constraints z).
    epsilon : float
    """

    def __init__(self, grid: GridSpace, z: np.ndarray, epsilon: float):
        self.grid = grid
        self.epsilon = float(epsilon)
        z = np.asarray(z, dtype=np.float64)
        if (z < 0).any():
            raise ValueError("the sampler needs z ≥ 0 (a mechanism that exists)")
        self.z = z
        self.z_max = float(z.max())
        if not self.z_max > 0:
            raise ValueError("z is identically zero: no output can be drawn")
        self.accept_scale = z / self.z_max
        w, h = grid.width, grid.height
        dx = np.arange(w)
        dy = np.arange(h)
        k = np.exp(-self.epsilon * grid.offset_distance(dx[None, :], dy[:, None]))
        mult = np.where(dy > 0, 2.0, 1.0)[:, None] * np.where(dx > 0, 2.0, 1.0)[None, :]
        weight = (k * mult).ravel()
        # Heaviest offsets first, so that the float CDF saturates early: entries after the point where
        # adding them no longer changes the cumulative sum have probability 0 under inverse-CDF sampling
        # anyway, and dropping them leaves the sampler's distribution unchanged while making the table
        # small enough to stay in cache.
        order = np.argsort(-weight, kind="stable")
        cdf = np.cumsum(weight[order])
        last = int(np.searchsorted(cdf, cdf[-1], side="left")) + 1
        order, cdf = order[:last], cdf[:last]
        self._ady, self._adx = (a.astype(np.int64) for a in np.divmod(order, w))
        self._cdf = cdf / cdf[-1]
        self._cdf[-1] = np.inf  # never fall off the end through rounding
        self.proposals = 0
        self.accepted = 0

    @property
    def acceptance_rate(self) -> float:
        """Accepted / proposed over all calls so far."""
        return self.accepted / self.proposals if self.proposals else float("nan")

    def sample(self, secrets, rng=None) -> np.ndarray:
        """One output cell for each secret cell index in ``secrets`` (any shape; vectorized)."""
        gen = as_rng(rng)
        ys = np.asarray(secrets)
        if not np.issubdtype(ys.dtype, np.integer):
            raise TypeError(f"secrets must be integer cell indices, got dtype {ys.dtype}")
        n, w, h = self.grid.n, self.grid.width, self.grid.height
        if ys.size and (ys.min() < 0 or ys.max() >= n):
            raise ValueError(f"secret indices must lie in 0..{n - 1}, got range {ys.min()}..{ys.max()}")
        flat = ys.ravel().astype(np.int64)
        out = np.empty(flat.size, dtype=np.int64)
        pending = np.arange(flat.size)
        yr, yc = flat // w, flat % w
        for _ in range(MAX_ROUNDS):
            m = pending.size
            if m == 0:
                break
            j = np.searchsorted(self._cdf, gen.random(m), side="right")
            ady, adx = self._ady[j], self._adx[j]
            signs = gen.integers(0, 4, size=m)
            odx = np.where(signs & 1, -adx, adx)
            ody = np.where(signs & 2, -ady, ady)
            r = yr[pending] + ody
            c = yc[pending] + odx
            inside = (r >= 0) & (r < h) & (c >= 0) & (c < w)
            zc = np.where(inside, r * w + c, 0)
            ok = inside & (gen.random(m) < self.accept_scale[zc])
            self.proposals += m
            self.accepted += int(ok.sum())
            out[pending[ok]] = zc[ok]
            pending = pending[~ok]
        else:
            raise RuntimeError(f"rejection sampling did not finish in {MAX_ROUNDS} rounds")
        return out.reshape(ys.shape)
