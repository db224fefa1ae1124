r"""Exact integer sampling from the rows of a tight-constraints mechanism on a grid, without its matrix.

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

The offset table stores one quadrant, (|dx|, |dy|) with weight k·(2 if dx ≠ 0)(2 if dy ≠ 0), as
**integers**: w(o) = ⌊2^62 · weight(o)/Σ weight⌋ (the remainder to 2^62 added to the heaviest), drawn
by an exact uniform 62-bit integer and an integer searchsorted, then independent random signs for the non-zero components; the acceptance test
compares a uniform integer below 2^62 with ⌊2^62 · z_z/z_max⌋. No floating-point rounding enters a draw:
the sampled row is the row of the integer-quantised kernel, whose entries differ from k(o)/K by less
than 2^-62 in absolute value.

**Every cell is reachable from every secret** (Mironov's condition, CCS 2012): offsets whose quantised
weight is 0 (k(o)/K < 2^-62, ε·d ≳ 43) cannot be proposed, so a far cell would be impossible from one
secret and possible from a nearer one — an infinite privacy loss. Each draw is therefore replaced, with
probability γ = 2^-``mixture_bits`` (default 2^-20), by a uniformly random cell: the released channel is
(1 − γ)H̃ + γ/n, which is ε·d-private whenever H̃ is (mediant inequality: mixing with the 0-private
uniform row never increases a ratio beyond max(H̃ ratio, 1)), costs at most γ in utility, and has every
entry ≥ γ/n. Against that floor the quantisation error 2^-62/A of an entry (A the acceptance rate of a
round) is a relative error of at most n·2^-62/(γA), which bounds the excess of the delivered ε over ε
(times d ≥ step) by about 2n·2^-62/(γA): :meth:`KernelRejectionSampler.to_dict` states it.
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
    """Exact integer sampler for the rows of H = Φ diag(z) on a grid, mixed with the uniform
    distribution at weight 2^-``mixture_bits`` (see module notes).

    Parameters
    ----------
    grid : GridSpace
    z : ndarray, shape (n,)
        Non-negative diagonal (the tight-constraints z).
    epsilon : float
    mixture_bits : int
        γ = 2^-mixture_bits (1 to 40).
    """

    BITS = 62

    def __init__(self, grid: GridSpace, z: np.ndarray, epsilon: float, *, mixture_bits: int = 20):
        self.grid = grid
        self.epsilon = float(epsilon)
        z = np.asarray(z, dtype=np.float64)
        if (z < 0).any():
            raise ValueError("the sampler needs z ≥ 0 (a mechanism that exists)")
        if not (isinstance(mixture_bits, (int, np.integer)) and 1 <= mixture_bits <= 40):
            raise ValueError(f"mixture_bits must be an integer in 1..40, got {mixture_bits!r}")
        self.mixture_bits = int(mixture_bits)
        self.z = z
        self.z_max = float(z.max())
        if not self.z_max > 0:
            raise ValueError("z is identically zero: no output can be drawn")
        one = float(1 << self.BITS)
        self._accept = np.floor(z / self.z_max * one).astype(np.int64)  # z_max's cell: exactly 2^62
        w, h = grid.width, grid.height
        dx = np.arange(w)
        dy = np.arange(h)
        k = np.exp(-self.epsilon * grid.offset_distance(dx[None, :], dy[:, None]))
        mult = np.where(dy > 0, 2.0, 1.0)[:, None] * np.where(dx > 0, 2.0, 1.0)[None, :]
        weight = (k * mult).ravel()
        self._kernel_total = float(weight.sum())
        wq = np.floor(weight / self._kernel_total * one).astype(np.int64)
        # Make the weights sum to exactly 2^62 (the remainder, fewer than one unit per offset, goes to the
        # heaviest offset): draws are then uniform 62-bit integers, the same in release and keyed mode.
        wq[int(np.argmax(wq))] += (1 << self.BITS) - int(wq.sum())
        # Heaviest offsets first (a short search for most draws); zero weights cannot be drawn anyway.
        order = np.argsort(-wq, kind="stable")
        order = order[wq[order] > 0]
        self._ady, self._adx = (a.astype(np.int64) for a in np.divmod(order, w))
        self._cum = np.cumsum(wq[order])  # ≤ 2^62: no overflow
        self.proposals = 0
        self.accepted = 0
        self.mixed = 0

    @property
    def gamma(self) -> float:
        """The weight γ of the uniform mixture."""
        return 2.0 ** -self.mixture_bits

    @property
    def acceptance_rate(self) -> float:
        """Accepted / proposed over all calls so far."""
        return self.accepted / self.proposals if self.proposals else float("nan")

    def to_dict(self) -> dict:
        """How draws are made and what that costs: the mixture weight, its utility cost and the
        estimated excess of the delivered ε (module notes), with the acceptance rate seen so far."""
        a = self.acceptance_rate
        a_lo = 1.0 / (self._kernel_total * self.z_max)  # per-round acceptance ≥ (Φz)_y / (K z_max) = 1/(K z_max)
        slack = 2.0 * self.grid.n * 2.0 ** -self.BITS / (self.gamma * a_lo) / self.grid.step
        return {"method": "rejection on integer tables (62-bit weights, exact uniform integers)",
                "uniform_mixture": self.gamma, "utility_cost_at_most": self.gamma,
                "every_cell_reachable": True, "estimated_epsilon_excess": slack,
                "acceptance_rate": None if not a == a else a, "draws_from_the_mixture": self.mixed}

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
        from ..sampling.keyed import KeyedStream

        keyed = isinstance(gen, KeyedStream)

        def draw(bits: int, idx: np.ndarray) -> np.ndarray:
            # A keyed stream gives every record its own draws: draw j of the pending records, so that a
            # record's values depend on its key and the round only, whatever else is in the batch.
            if keyed:
                return gen.integers_at(idx, bits)
            return gen.integers(0, 1 << bits, size=idx.size, dtype=np.int64)

        everyone = np.arange(flat.size)
        mix = draw(self.mixture_bits, everyone) == 0
        u = draw(62, everyone)
        if mix.any():
            # a cell independent of the secret (any law keeps privacy; this one is uniform to n·2^-53)
            out[mix] = np.minimum((u[mix].astype(np.float64) * (n * 2.0**-62)).astype(np.int64), n - 1)
            self.mixed += int(mix.sum())
        pending = np.flatnonzero(~mix)
        yr, yc = flat // w, flat % w
        for _ in range(MAX_ROUNDS):
            m = pending.size
            if m == 0:
                break
            j = np.searchsorted(self._cum, draw(self.BITS, pending), side="right")
            ady, adx = self._ady[j], self._adx[j]
            signs = draw(2, pending)
            odx = np.where(signs & 1, -adx, adx)
            ody = np.where(signs & 2, -ady, ady)
            r = yr[pending] + ody
            c = yc[pending] + odx
            inside = (r >= 0) & (r < h) & (c >= 0) & (c < w)
            zc = np.where(inside, r * w + c, 0)
            ok = inside & (draw(self.BITS, pending) < self._accept[zc])
            self.proposals += m
            self.accepted += int(ok.sum())
            out[pending[ok]] = zc[ok]
            pending = pending[~ok]
        else:
            raise RuntimeError(f"rejection sampling did not finish in {MAX_ROUNDS} rounds")
        return out.reshape(ys.shape)
