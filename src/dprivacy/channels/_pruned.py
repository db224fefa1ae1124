"""The all-pairs d-privacy sweep with exact pruning: most pairs are settled by an upper bound on their log-ratio,
and only the pairs whose bound reaches the largest ratio found so far are compared output by output.

The check asks for ε* = max over pairs i < j of D(i, j) / d(i, j), with D(i, j) = max_z |ℓ_i(z) − ℓ_j(z)| and
ℓ_i = ln H[i, ·] (ElSalamouny et al. 2014 Def 1; Chatzikokolakis et al. 2013 Def 1), and whether every pair's
excess D(i, j) − ε·d(i, j)·(1 + rtol) is at most the floor. Computing D for every pair costs n²m/2 comparisons.

*The bound.* For any number ε₀ ≥ 0, any point p(z) per output and any vector s over the outputs, write
r_i(z) = ℓ_i(z) + ε₀·d(i, p(z)) − s(z) and hi_i, lo_i for its largest and smallest entry. Then for every z

    |ℓ_i(z) − ℓ_j(z)| ≤ ε₀·|d(i, p(z)) − d(j, p(z))| + |r_i(z) − r_j(z)| ≤ ε₀·d(i, j) + max(hi_i − lo_j, hi_j − lo_i),

the first step by the definition of r, the second by the triangle inequality of d (|d(i, p) − d(j, p)| ≤ d(i, j))
and hi/lo. So D(i, j) ≤ B(i, j) := ε₀·d(i, j) + S(i, j), S(i, j) = max(hi_i − lo_j, hi_j − lo_i): two numbers per
row, one subtraction per pair. The triangle inequality is used only on a grid (a metric by construction); on any
other space ε₀ = 0 and the bound is S alone, valid whatever d is (non-metric, infinite or zero distances). A channel
H[i, z] = e^{−ε d(i, z)} w_z / c_i (the exponential mechanism, a tight-constraints mechanism, a row-normalised e^{−ε d})
has r_i constant for ε₀ = ε and s = the column means of ℓ + ε·d, and then B = D exactly: ε₀ and s are fitted (least
squares on a sample of rows; any values give a valid bound). On a grid the pairs are taken a block at a time, the
secrets of two grid rows k apart (distances ≥ k·step): a block is skipped whole when its largest S is below the
threshold at k·step. An output that is 0 from every secret adds 0 to every D and is left out of r; a row with another
zero gets hi = ∞, lo = −∞ (never pruned).

*Exactness.* A pair is pruned only when S(i, j) + μ < (best·(1 − 1e-9) − ε₀)·d(i, j), with ``best`` the largest ratio
computed so far on pairs compared exactly and μ = 1e-9 × the magnitude of the numbers involved: the margins exceed
every float64 rounding of r, hi, lo, S and of the ratio itself (relative 2^-53 per operation), so a pruned pair's
computed ratio is strictly below the final largest one and it can be neither the maximum nor tied with it. The pairs
left are compared exactly (the same subtraction, absolute value and maximum as the plain sweep, on the same ℓ), in
decreasing order of bound ratio, the threshold rising as ``best`` does; at the end the compared pairs are folded in
lexicographic order, so the pair reported is the first (i, j) of largest ratio, as the plain sweep's is. The verdict
is decided the same way on the excess: when the best pair's excess is within the floor and ε < ε*, every pair whose
bound excess B − ε·d·(1 − 1e-9) + μ can exceed the floor is compared too. When the bound prunes too little (a
channel with zeros in many rows, or with ratios close to ε* at every distance, like a discretised planar Laplace),
the caller runs the plain sweep.

*Early exit.* A few pairs of nearest neighbours spread over the space are compared first, on the logarithms of only
their rows: a channel that is not private usually breaks its constraint there, and the check stops before taking
the logarithm of the whole matrix.
"""

from __future__ import annotations

import numpy as np

from ._sweep import _CHUNK_ELEMENTS, LogRows, Sweep

#: Below this many comparisons (pairs × outputs) the plain sweep is used (it takes ~10 ms there).
PRUNE_MIN_WORK = 1 << 24
#: The plain sweep is used when more than this fraction of the pairs would remain to compare.
MAX_CANDIDATE_FRACTION = 0.25
#: Relative margin of every pruning comparison (far above the float64 rounding, far below any useful slack).
_REL = 1e-9
#: Rows whose nearest neighbours are compared first (the early exit's probe).
_PROBE = 16
#: Rows sampled to fit ε₀ and s and to seed the largest ratio.
_SAMPLE = 64
#: Pairs compared exactly to seed the largest ratio (those of largest bound ratio among the sampled rows' pairs).
_SEED = 64
#: Largest grid table (height × width²) and block of pair bounds held at once.
_GRID_TABLE = 1 << 24
_BLOCK = 1 << 20


class _Grid:
    """A grid space's distances by offset: T[|Δx|, |Δy|] (the space's own offset_distance), and TT[k] the W×W block of
    distances between two grid rows k apart."""

    def __init__(self, space):
        self.W, self.H = space.width, space.height
        self.T = np.asarray(space.offset_distance(np.arange(self.W)[:, None], np.arange(self.H)[None, :]), dtype=np.float64)
        dx = np.abs(np.arange(self.W)[:, None] - np.arange(self.W)[None, :])
        self.TT = np.ascontiguousarray(np.moveaxis(self.T[dx], 2, 0))  # (H, W, W)

    def rows_to(self, rows: np.ndarray, p: np.ndarray) -> np.ndarray:
        """d(rows[a], p[z]) as a (len(rows), len(p)) array."""
        W = self.W
        return self.T[np.abs(rows[:, None] % W - p[None, :] % W), np.abs(rows[:, None] // W - p[None, :] // W)]


def _grid_shape(space, n: int):
    """(width, height) of a grid space whose offset tables fit, else None."""
    from ..spaces import GridSpace

    if isinstance(space, GridSpace) and space.n == n and space.height * space.width ** 2 <= _GRID_TABLE:
        return space.width, space.height
    return None


class _Compared:
    """The pairs compared exactly: their (i, j, D, d), and a running fold for the largest ratio and excess so far."""

    def __init__(self, src: LogRows, space, d, eps_tol: float):
        self.src, self.space, self.d, self.eps_tol = src, space, d, eps_tol
        self.parts, self.seen = [], np.zeros(0, np.int64)
        self.run = Sweep(eps_tol)

    @property
    def count(self) -> int:
        return int(self.seen.size)

    def new(self, I: np.ndarray, J: np.ndarray):
        """The pairs (I, J) not compared yet, each once."""
        keys = I.astype(np.int64) * self.src.n + J
        keys, first = np.unique(keys, return_index=True)
        fresh = ~np.isin(keys, self.seen, assume_unique=True)
        return I[first[fresh]], J[first[fresh]]

    def add(self, I: np.ndarray, J: np.ndarray) -> float:
        """Compare the pairs (I, J) (i < j, not compared before) exactly; their largest excess."""
        if I.size == 0:
            return -np.inf
        m = self.src.m
        top = np.empty(I.size)
        step = max(1, _CHUNK_ELEMENTS // max(m, 1))
        for a in range(0, I.size, step):
            top[a:a + step] = np.abs(self.src.rows(I[a:a + step]) - self.src.rows(J[a:a + step])).max(axis=1)
        dist = np.asarray(self.d[I, J] if self.d is not None else self.space.pair_distances(I, J), dtype=np.float64)
        self.parts.append((I, J, top, dist))
        self.seen = np.union1d(self.seen, I.astype(np.int64) * self.src.n + J)
        return self.run.add(top, dist, I, J)

    def fold(self, pairs: int) -> Sweep:
        """The compared pairs folded in lexicographic order (the plain sweep's order: its first pair of largest
        ratio), counting ``pairs`` as examined."""
        I, J, top, dist = (np.concatenate(x) for x in zip(*self.parts))
        o = np.lexsort((J, I))
        s = Sweep(self.eps_tol)
        s.add(top[o], dist[o], I[o], J[o])
        s.pairs = pairs
        return s


def _sample_rows(n: int, shape, count: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """About ``count`` rows spread over 0..n−1 (among ``allowed``), and a grid's corners (the rows of a grid channel
    farthest from the average)."""
    pool = np.arange(n) if allowed is None else allowed
    if pool.size == 0:
        return pool
    pick = pool[np.unique(np.linspace(0, pool.size - 1, min(count, pool.size)).round().astype(np.intp))]
    if shape is not None:
        W, H = shape
        corners = np.array([0, W - 1, (H - 1) * W, H * W - 1])
        pick = np.union1d(pick, corners if allowed is None else corners[np.isin(corners, allowed)])
    return pick


def _grid_neighbours(rows: np.ndarray, shape):
    """Each row of a grid with the next cell of its grid row and of its grid column (the previous at the edge): nearest
    neighbours under any of the grid's metrics, read from the structure."""
    W, H = shape
    x, y = rows % W, rows // W
    I, J = [], []
    if W > 1:
        I.append(rows), J.append(np.where(x + 1 < W, rows + 1, rows - 1))
    if H > 1:
        I.append(rows), J.append(np.where(y + 1 < H, rows + W, rows - W))
    if not I:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    return _ordered(np.concatenate(I), np.concatenate(J))


def _sample_distances(space, d, grid, rows: np.ndarray, n: int) -> np.ndarray:
    if grid is not None:
        return grid.rows_to(rows, np.arange(n))
    return np.asarray(d[rows] if d is not None else space.distances_from(rows), dtype=np.float64)


def _ordered(I: np.ndarray, J: np.ndarray):
    return np.minimum(I, J), np.maximum(I, J)


def _nearest_pairs(rows: np.ndarray, dS: np.ndarray):
    """Each sampled row with its nearest other point (at finite distance)."""
    dd = dS.copy()
    dd[np.arange(rows.size), rows] = np.inf
    j = np.argmin(dd, axis=1)
    keep = np.isfinite(dd[np.arange(rows.size), j])
    return _ordered(rows[keep], j[keep])


def _threshold(kappa: float, dist: np.ndarray, c0: float) -> np.ndarray:
    """κ·d + c0, and −∞ (never pruned) where d ≤ 0 (a distance that is no metric's, which an unvalidated space may
    hold: the margins are relative to d > 0); +∞ (always pruned) where d = ∞: a pair at infinite distance constrains
    nothing."""
    with np.errstate(invalid="ignore", over="ignore"):
        t = kappa * dist + c0
    t[dist <= 0] = -np.inf
    t[np.isinf(dist)] = np.inf
    return t


def _pair_bounds(hi_a, lo_a, hi_b, lo_b, mu):
    """S + μ for every pair of a row of (hi_a, lo_a) with a column of (hi_b, lo_b)."""
    s = np.maximum(hi_a[..., :, None] - lo_b[..., None, :], hi_b[..., None, :] - lo_a[..., :, None])
    s += mu
    return s


def _fit(L: np.ndarray, G: np.ndarray | None):
    """ε₀ ≥ 0 and s: least squares of ℓ_i(z) ≈ a_i + s(z) − ε₀·g_i(z) on the sampled rows."""
    eps0 = 0.0
    if G is not None and L.shape[1] > 1:
        with np.errstate(all="ignore"):
            A = L - L.mean(axis=1, keepdims=True)
            A -= A.mean(axis=0)
            B = G - G.mean(axis=1, keepdims=True)
            B -= B.mean(axis=0)
            den = float((B * B).sum())
            e = -float((A * B).sum()) / den if den > 0 else 0.0
        eps0 = e if np.isfinite(e) and e > 0 else 0.0
    s = (L + eps0 * G).mean(axis=0) if eps0 else L.mean(axis=0)
    return eps0, s


def _row_ranges(src: LogRows, grid, eps0: float, s: np.ndarray, p: np.ndarray | None, live: np.ndarray | None):
    """hi_i and lo_i of r_i = ℓ_i + ε₀·d(i, p(·)) − s over the outputs ``live`` (all when None), a block of rows at a
    time (a grid row of secrets: their logarithms, d and r stay in the cache; the logarithms of the whole are not kept)."""
    n = src.n
    hi, lo = np.empty(n), np.empty(n)
    if grid is not None and eps0 and p is None and live is None:
        # outputs are the points: d(i, z) for the W secrets of grid row a is TT[|a − row of z|][x of i, x of z]
        W, H = grid.W, grid.H
        Q, ks = eps0 * grid.TT, np.arange(H)
        L, V = np.empty((W, n)), np.empty((H, W, W))
        for a in range(H):
            X = src.block(a * W, (a + 1) * W, L)
            np.take(Q, np.abs(a - ks), axis=0, out=V)  # [row of z, x of the secret, x of z]
            X.reshape(W, H, W)[...] += V.transpose(1, 0, 2)
            X -= s
            np.max(X, axis=1, out=hi[a * W:(a + 1) * W])
            np.min(X, axis=1, out=lo[a * W:(a + 1) * W])
        return hi, lo
    step = max(1, _BLOCK // max(src.m, 1))
    buf = np.empty((min(step, n), src.m))
    for a in range(0, n, step):
        b = min(n, a + step)
        X = src.block(a, b, buf)
        if live is not None:
            X = X[:, live]
        if grid is not None and eps0:
            X += eps0 * grid.rows_to(np.arange(a, b), np.arange(src.m) if p is None else p)
        X -= s
        hi[a:b], lo[a:b] = X.max(axis=1), X.min(axis=1)
    return hi, lo


def _grid_candidates(grid, hi, lo, mu, kappa, c0, limit):
    """Pairs i < j not settled by the bound (S + μ ≥ κ·d + c0), block by block of two grid rows k apart; None past
    ``limit`` pairs. A block is skipped whole when its largest S + μ is below κ times its smallest distance (k·step
    for rows k > 0 apart) + c0."""
    W, H, T, TT = grid.W, grid.H, grid.T, grid.TT
    hi2, lo2 = hi.reshape(H, W), lo.reshape(H, W)
    HI, LO = hi2.max(axis=1), lo2.min(axis=1)
    widest = float(HI.max() - LO.min()) + mu
    upper = np.arange(W)[:, None] < np.arange(W)[None, :]
    out, count = [], 0
    for k in range(H):
        if k == 0:
            if W < 2:
                continue
            a = np.arange(H)
        else:
            if kappa > 0 and widest < kappa * T[0, k] + c0:
                break  # every block farther apart is settled too (its distances are at least k·step)
            sb = np.maximum(HI[:-k] - LO[k:], HI[k:] - LO[:-k]) + mu
            a = np.flatnonzero(sb >= _threshold(kappa, np.full(sb.size, T[0, k]), c0))
        thr = _threshold(kappa, TT[k], c0)
        if k == 0:
            thr = np.where(upper, thr, np.inf)
        per = max(1, _BLOCK // (W * W))
        for a0 in range(0, a.size, per):
            aa = a[a0:a0 + per]
            S = _pair_bounds(hi2[aa], lo2[aa], hi2[aa + k], lo2[aa + k], mu)  # [block, x of i, x of j]
            b, xi, xj = np.nonzero(S >= thr)
            if b.size:
                out.append((aa[b] * W + xi, (aa[b] + k) * W + xj, S[b, xi, xj], TT[k][xi, xj]))
                count += b.size
                if count > limit:
                    return None
    return _concat(out)


def _dense_candidates(space, d, hi, lo, mu, kappa, c0, limit):
    """As :func:`_grid_candidates` on any space: rows [a, b) against the rows after a, distances from ``d``."""
    n = hi.size
    out, count = [], 0
    step = max(1, _BLOCK // max(n, 1))
    for a in range(0, n - 1, step):
        b = min(n - 1, a + step)
        dist = np.asarray(d[a:b, a + 1:] if d is not None else space.distances_from(np.arange(a, b))[:, a + 1:],
                          dtype=np.float64)
        S = _pair_bounds(hi[a:b], lo[a:b], hi[a + 1:], lo[a + 1:], mu)
        thr = _threshold(kappa, dist, c0)
        thr[np.arange(a + 1, n)[None, :] <= np.arange(a, b)[:, None]] = np.inf  # j > i only
        i, j = np.nonzero(S >= thr)
        if i.size:
            out.append((i + a, j + a + 1, S[i, j], dist[i, j]))
            count += i.size
            if count > limit:
                return None
    return _concat(out)


def _concat(out):
    if not out:
        e = np.zeros(0, np.intp)
        return e, e, np.zeros(0), np.zeros(0)
    return tuple(np.concatenate(x) for x in zip(*out))


def _bound_ratio(SB, dist, eps0):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = SB / dist + eps0
    return np.where(dist == 0, np.inf, r)


def bounded_sweep(src: LogRows, space, d, eps_tol: float, atol: float, smallest: bool, zeros=None) -> Sweep | None:
    """The all-pairs check of :func:`dprivacy.channels.privacy._check` with pruning (see the module's doc).

    Returns the fold of the plain sweep's result: the first pair (i, j) of largest ratio and whether some pair's
    excess is above ``atol`` (``smallest=False``: stopped at the first violation, the fold of the pairs compared); or
    None when the bound settles too few pairs, for the caller to run the plain sweep. ``zeros``: None when the channel
    has no zero entry, else the boolean array of its zero entries. An output that is 0 from every secret adds 0 to
    every pair's D and is left out of the bound; a row with any other zero gets an infinite bound (never pruned).
    """
    zero_rows, live = None, None
    if zeros is not None:
        unused = zeros.all(axis=0)
        live = np.flatnonzero(~unused) if unused.any() else None
        zero_rows = (zeros if live is None else zeros[:, live]).any(axis=1)
        if not zero_rows.any():
            zero_rows = None
    n, m = src.n, src.m
    total = n * (n - 1) // 2
    stop = not smallest
    shape = _grid_shape(space, n)
    if shape is None and (d is None or bool((d < 0).any())):
        # a negative distance is no metric's (an unvalidated space may hold one): the plain sweep answers as it did
        return None
    cmp = _Compared(src, space, d, eps_tol)

    def violated():
        return stop and cmp.run.excess > atol

    # 1. nearest neighbours of a few rows, on their rows' logarithms only
    allowed = None if zero_rows is None else np.flatnonzero(~zero_rows)
    probe = _sample_rows(n, shape, _PROBE, allowed)
    if probe.size == 0:
        return None
    if shape is not None:
        cmp.add(*cmp.new(*_grid_neighbours(probe, shape)))
    else:
        cmp.add(*cmp.new(*_nearest_pairs(probe, _sample_distances(space, d, None, probe, n))))
    if violated():
        return cmp.fold(cmp.count)
    grid = None if shape is None else _Grid(space)
    sample = _sample_rows(n, shape, _SAMPLE, allowed)
    dS = _sample_distances(space, d, grid, sample, n)

    # 2. the bound's two numbers per row
    p = None if m == n else np.argmax(src.h if src.h is not None else src.full(), axis=0)  # an output's likeliest secret
    L = src.rows(sample)
    if live is not None:
        L, p = L[:, live], (live if p is None else p[live])
    G = None if grid is None else dS if p is None else grid.rows_to(sample, p)
    eps0, s = _fit(L, G)
    hi, lo = _row_ranges(src, grid, eps0, s, p, live)
    if zero_rows is not None:
        hi[zero_rows], lo[zero_rows] = np.inf, -np.inf
    fin = np.isfinite(hi)
    scale = (float(np.abs(hi[fin]).max() + np.abs(lo[fin]).max()) + eps0 * (0.0 if grid is None else float(grid.T.max()))
             + float(np.abs(s).max()))
    mu = _REL * 2 * scale

    # 3. the pairs of largest bound ratio among the sampled rows' pairs
    S = _pair_bounds(hi[sample], lo[sample], hi, lo, mu)
    ratio = _bound_ratio(S, dS, eps0)
    ratio[np.arange(sample.size), sample] = -np.inf
    ratio[~np.isfinite(dS)] = -np.inf
    flat = np.argpartition(-ratio.ravel(), min(_SEED, ratio.size - 1))[:_SEED]
    si, sj = np.unravel_index(flat, ratio.shape)
    keep = ratio[si, sj] > -np.inf
    cmp.add(*cmp.new(*_ordered(sample[si[keep]], sj[keep])))
    if violated():
        return cmp.fold(cmp.count)

    # 4. every pair whose bound reaches the largest ratio so far, in decreasing order of bound ratio
    def kappa():
        return cmp.run.ratio * (1 - _REL) - eps0

    k0 = kappa()
    if not k0 > 0:
        return None
    thr = _threshold(k0, dS, 0.0)
    thr[np.arange(sample.size), sample] = np.inf
    if np.mean(S >= thr) > MAX_CANDIDATE_FRACTION:
        return None
    limit = int(MAX_CANDIDATE_FRACTION * total)
    found = (_grid_candidates(grid, hi, lo, mu, k0, 0.0, limit) if grid is not None
             else _dense_candidates(space, d, hi, lo, mu, k0, 0.0, limit))
    if found is None:
        return None
    I, J, SB, DB = found
    fresh = ~np.isin(I.astype(np.int64) * n + J, cmp.seen)
    I, J, SB, DB = I[fresh], J[fresh], SB[fresh], DB[fresh]
    chunk = 64
    while I.size:
        if I.size > chunk:
            take = np.argpartition(-_bound_ratio(SB, DB, eps0), chunk)[:chunk]
            rest = np.ones(I.size, bool)
            rest[take] = False
        else:
            take, rest = np.arange(I.size), np.zeros(I.size, bool)
        cmp.add(I[take], J[take])
        if violated():
            return cmp.fold(cmp.count)
        left = rest & (SB >= _threshold(kappa(), DB, 0.0))
        I, J, SB, DB = I[left], J[left], SB[left], DB[left]
        chunk *= 2

    # 5. the verdict: if the best pair is within the floor but ε < ε*, a pair of smaller ratio may exceed it
    if cmp.run.excess <= atol and eps_tol < cmp.run.ratio:
        ke = eps_tol * (1 - _REL) - eps0
        if not ke > 0:
            return None
        found = (_grid_candidates(grid, hi, lo, mu, ke, atol, limit) if grid is not None
                 else _dense_candidates(space, d, hi, lo, mu, ke, atol, limit))
        if found is None:
            return None
        I, J = cmp.new(found[0], found[1])
        step = 4096
        for a in range(0, I.size, step):
            cmp.add(I[a:a + step], J[a:a + step])
            if violated():
                return cmp.fold(cmp.count)
    return cmp.fold(total)
