r"""Exact integer sampling from the rows of a tight-constraints mechanism on a grid, without its matrix.

Row y of the mechanism is H[y, z] = k(z − y) z_z with k(o) = e^{−ε d(o)} a translation-invariant kernel
(ElSalamouny et al. 2014 Def 6). :class:`KernelRejectionSampler` draws from it by rejection:

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
probability γ = 2^-``mixture_bits`` (default 2^-20), by a cell drawn independently of the secret (the
uniform law up to n·2^-53, every cell with probability ≥ μ_min ≈ 1/n): the released channel is
(1 − γ)H̃ + γμ, which is ε·d-private whenever H̃ is (mediant inequality: mixing with a secret-independent
row never increases a ratio beyond max(H̃ ratio, 1)), costs at most γ in utility, and has every entry
≥ γμ_min.

**The delivered ε, certified** (:meth:`KernelRejectionSampler.certified_epsilon`). Let q be the exact
normalised row (exact kernel k/K, exact z/z_max) and q̃ the sampled one. One round proposes and accepts
z with probability w̃(o)ã(z), o = z − y, where the integer tables give |w̃(o) − w(o)| ≤ 2^-62 for every
offset but the heaviest (which also carries the remainder, at most N_o·2^-62 for N_o table entries) and
|ã(z) − a(z)| ≤ 2^-62. So |w̃ã − wa| ≤ 2·2^-62 off the heaviest offset, and the round's total S̃_y differs
from S_y = Σ_z w a by at most D = 2N_o·2^-62 + 2^-62. With S_y ≥ S_min = (1 − ‖r‖∞)/(K z_max) (r = Φz − 1,
the solver's residual), every entry off the heaviest offset has |q̃ − q| ≤ (2·2^-62 + q·D)/(S_min − D),
hence a relative error of the released entry (floor γμ_min) at most
ρ = 2·2^-62/((S_min − D)γμ_min) + D/(S_min − D); at the heaviest offset (weight w_max) the relative error
is at most (N_o·2^-62/w_max + 2^-62/a(z))… bounded the same way through the floor. The exact rows are
those of Φ diag(z) normalised by 1 + r_y, whose ratios exceed e^{εd} by at most (1 + ‖r‖∞)/(1 − ‖r‖∞).
Together, for every pair at distance d ≥ d_min (the grid step):
ε_delivered ≤ ε + [2·log((1 + ρ)/(1 − ρ)) + log((1 + ‖r‖∞)/(1 − ‖r‖∞))]/d_min, stated with ‖r‖∞
computed by one FFT product (its float rounding, ~n·2^-52 relative, added).
Acceptance per round is Σ_z H[y,z] / (K z_max) = (1 + r_y)/(K z_max) (up to the 62-bit tables): the
same for every secret y but for the solver's residual r_y — a secret near the border proposes more cells
outside the grid, and its z is larger in the same proportion. On a large grid z is nearly 1/K inside and
larger only near the border, so the rate is about z_interior / z_max. The number of rounds of a run
therefore depends on the secrets only through r_y: :meth:`KernelRejectionSampler.sample` counts it for the
data owner, not for the sidecar of a release.
"""

from __future__ import annotations

import numpy as np

from ..sampling import as_generator
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
        self._residual = None

    @property
    def gamma(self) -> float:
        """The weight γ of the uniform mixture."""
        return 2.0 ** -self.mixture_bits

    @property
    def acceptance_rate(self) -> float:
        """Accepted / proposed over all calls so far."""
        return self.accepted / self.proposals if self.proposals else float("nan")

    def residual(self) -> float:
        """‖Φz − 1‖∞ by one FFT product, plus a bound on that product's float rounding."""
        if self._residual is None:
            from .operator import GridConstraintsOperator

            phi_z = GridConstraintsOperator(self.grid, self.epsilon).matvec(self.z)
            rounding = 4.0 * self.grid.n * 2.0**-52 * float(np.abs(phi_z).max())
            self._residual = float(np.abs(phi_z - 1.0).max()) + rounding
        return self._residual

    def certified_epsilon(self) -> tuple[float, str]:
        """(an upper bound on the ε·d-privacy level of the released channel, the derivation in words);
        module notes. ``inf`` when the bound is vacuous (the residual or the quantisation too large)."""
        one = 2.0 ** -self.BITS
        n_o = int(self._cum.size)
        res = self.residual()
        d_total = 2.0 * n_o * one + one
        s_min = (1.0 - res) / (self._kernel_total * self.z_max)  # per-round acceptance ≥ (Φz)_y / (K z_max)
        # the mixture's smallest cell probability: 2^62/n integers a cell, less the float conversion's fuzz
        mu_min = (2.0**62 // self.grid.n - 2.0**12) / 2.0**62
        denom = s_min - d_total
        if not (denom > 0 and mu_min > 0):
            return float("inf"), "the quantisation is too coarse for this grid: no useful bound"
        floor = self.gamma * mu_min  # every released entry is at least this
        norm = d_total / (denom * (1.0 - self.gamma))  # the round total's share of an entry's relative error
        # entries off the heaviest offset: absolute error ≤ (2·2^-62 + q·D)/(S_min − D), against the floor
        rho_off = 2.0 * one / (denom * floor) + norm
        # the heaviest offset's entries: relative to their own value, or against the floor, whichever is less
        w_max = float(self._cum[0]) * one - n_o * one  # ≤ its true weight
        a_min = float(self.z.min()) / self.z_max
        own = (n_o * one / w_max if w_max > 0 else float("inf")) + (one / a_min if a_min > 0 else float("inf"))
        rho_heavy = min(own, (n_o + 1) * one / (denom * floor)) + norm
        rho = max(rho_off, rho_heavy)
        if not (rho < 0.5 and res < 0.5):
            return float("inf"), "the quantisation or the residual is too large for a useful bound"
        excess = (2.0 * np.log1p(2 * rho / (1 - rho)) + np.log1p(2 * res / (1 - res))) / self.grid.step
        excess = float(excess) * (1 + 1e-12)  # the float evaluation of this bound
        return self.epsilon + excess, (
            f"ε + [2·log((1+ρ)/(1−ρ)) + log((1+‖r‖)/(1−‖r‖))]/step with ρ = {rho:.3g} (62-bit tables, mixture floor "
            f"γ·μ_min = {self.gamma * mu_min:.3g}, acceptance per round ≥ {s_min:.3g}) and ‖Φz − 1‖∞ ≤ {res:.3g}")

    def to_dict(self) -> dict:
        """How draws are made and what that costs: the mixture weight, its utility cost and the
        certified bound on the delivered ε (module notes). What a run of draws did is counted by
        :meth:`sample` (``stats``), read after it."""
        bound, how = self.certified_epsilon()
        return {"method": "rejection on integer tables (62-bit weights, exact uniform integers)",
                "uniform_mixture": self.gamma, "utility_cost_at_most": self.gamma,
                "every_cell_reachable": True, "requested_epsilon": self.epsilon,
                "delivered_epsilon_at_most": bound, "epsilon_excess_at_most": bound - self.epsilon,
                "delivered_epsilon_certified_by": how}

    def sample(self, secrets, rng=None, *, stats: dict | None = None) -> np.ndarray:
        """One output cell for each secret cell index in ``secrets`` (any shape; vectorized).

        ``stats``: a dict to which this call's counts are added — ``mixed`` (draws replaced by the uniform
        mixture: one independent Bernoulli(γ) per draw, drawn before the secrets are used), ``proposals`` and
        ``accepted`` (rounds of the rejection loop: each accepts with probability (1 + r_y)/(K z_max), which
        depends on the secret y through the solver's residual r_y; module notes). The sampler's own totals
        (``mixed``, ``proposals``, ``accepted``) are updated too."""
        gen = as_generator(rng)
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
        n_mixed = int(mix.sum())
        proposals = accepted = 0
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
            proposals += m
            accepted += int(ok.sum())
            out[pending[ok]] = zc[ok]
            pending = pending[~ok]
        else:
            raise RuntimeError(f"rejection sampling did not finish in {MAX_ROUNDS} rounds")
        self.proposals += proposals
        self.accepted += accepted
        if stats is not None:
            for k, v in (("mixed", n_mixed), ("proposals", proposals), ("accepted", accepted)):
                stats[k] = stats.get(k, 0) + v
        return out.reshape(ys.shape)
