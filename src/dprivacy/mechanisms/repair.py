r"""The certified repair of an LP's channel: the solvers meet the privacy constraints only up to their
tolerance, and a constraint off by a tiny absolute amount is a large ratio on a tiny entry. The repair lifts
every column onto the ε·d-privacy constraints (:func:`private_lift`, the smallest private majorant) and
renormalises the rows, until the channel passes the exact check (:func:`certified_repair`). Every solver of
the optimal-mechanism LP (:mod:`.lp_solve`) returns a repaired channel.
"""

from __future__ import annotations

import time

import numpy as np

from ..measures.privacy import PRIVACY_RTOL, check_privacy
from ..spaces import MetricSpace

#: Elements per block of the max-times product in :func:`private_lift` (bounds memory to ~32 MB).
_LIFT_ELEMENTS = 4_000_000


def certified_repair(h, space: MetricSpace, *, epsilon: float, rounds: int = 6,
                     alternations: int = 60, deadline: float | None = None,
                     late_grace: float = 0.0) -> tuple[np.ndarray, float]:
    r"""An ε·d-private channel next to ``h`` (an LP solution that meets its constraints only up to the
    solver's tolerance), and the largest mass the repair moved in a row (max_y Σ_w |out − h|[y, w] / 2).

    The lift of :func:`private_lift` at a level ε' ≤ ε makes every column satisfy the ε'·d constraints
    exactly, but its rows sum to s_y ≥ 1, and renormalising row y by s_y multiplies a ratio between rows
    y, y' by s_{y'}/s_y ≤ e^{ρ}, ρ = ln(max s / min s). So the renormalised channel is
    (ε'·d + ρ)-private. Three steps, in order:

    1. **Alternate** lift at ε and renormalise. Each round's ρ is the mass the lift had to add, which
       shrinks geometrically (on an 8×8 grid LP solution perturbed by 1e−7: ρ = 7e−8, then 1e−9 after 5
       rounds). Stop when ρ ≤ ``PRIVACY_RTOL``·ε·d_min: every log-ratio is then within ρ of ε·d, i.e. the
       channel passes :func:`~dprivacy.measures.check_privacy` at its relative tolerance, at a cost in value of order ρ.
    2. From there, try to make it *strict*: lift at ε' = ε − ρ(1 + 10⁻³)/d_min (d_min the smallest
       positive distance) and renormalise; if (ε − ε')·d_min ≥ ρ' for the new spread ρ', the result is
       ε·d-private with no tolerance at all, and it is returned.
    3. If the alternation did not settle: the same ε'-step from ``h`` for ``rounds`` rounds, and if that
       does not settle either (distances of very different sizes amplify ρ/d_min), bisection on
       ε' ∈ [0, ε] — at ε' = 0 the lift is constant down each column, all row sums are equal and
       ρ = 0, so the result is always private, but it may cost much of the value (measured: 5% on the
       perturbed 8×8 solution above, which step 1 repairs at a cost of 1e−8).

    ``deadline`` (a ``time.perf_counter()`` reading) stops the repair between lifts, after the first,
    once ``late_grace`` seconds past it: the channel reached so far is returned, possibly not private —
    the caller's exact check decides.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1.
    """
    h = np.asarray(h, dtype=np.float64)
    d = space.distances
    pos = d[(d > 0) & np.isfinite(d)]
    if pos.size == 0:
        return h, 0.0
    dmin = float(pos.min())

    def moved(out):
        return float(0.5 * np.abs(out - h).sum(axis=1).max())

    def attempt(start, e_lift, exact_check=True):
        lifted = private_lift(start, space, epsilon=e_lift)
        sums = lifted.sum(axis=1)
        rho = float(np.log(sums.max() / sums.min()))
        # The ρ condition is sufficient, not necessary: when it fails, the exact check decides.
        good = (epsilon - e_lift) * dmin >= rho or (
            exact_check and check_privacy(lifted / sums[:, None], space, epsilon=epsilon, smallest=False).ok)
        return lifted / sums[:, None], rho, good

    def late() -> bool:
        return deadline is not None and time.perf_counter() >= deadline + late_grace

    # 1. alternate lift (at ε) and renormalisation
    m = h
    for k in range(alternations):
        if k and late():  # at least one lift: it certifies a channel that is private already
            return m, moved(m)
        m, rho, _ = attempt(m, epsilon, exact_check=False)
        if rho <= PRIVACY_RTOL * epsilon * dmin:
            # 2. one strict step
            strict, rho2, good = attempt(m, max(0.0, epsilon - (rho * (1.0 + 1e-3) + 1e-15) / dmin), exact_check=False)
            return (strict, moved(strict)) if good else (m, moved(m))
    # 3. ε'-steps from h, then bisection
    e_lift = float(epsilon)
    for _ in range(rounds):
        if late():
            return m, moved(m)
        out, rho, good = attempt(h, e_lift)
        if good:
            return out, moved(out)
        e_lift = max(0.0, epsilon - (rho * (1.0 + 1e-3) + 1e-15) / dmin)
    lo, hi = 0.0, e_lift
    best, _, _ = attempt(h, lo)
    for _ in range(40):
        if late():
            break
        mid = 0.5 * (lo + hi)
        cand, _, good = attempt(h, mid)
        if good:
            lo, best = mid, cand
        else:
            hi = mid
        if hi - lo <= 1e-6 * epsilon:
            break
    return best, moved(best)


def _separable_lift(space: MetricSpace) -> bool:
    from ..spaces import GridSpace

    return isinstance(space, GridSpace) and space.metric == "manhattan"


def lift_work(space: MetricSpace, columns: int) -> int:
    """Products one :func:`private_lift` of ``columns`` columns costs: n·m by the separable scans of a
    Manhattan grid, n²·m by the max-times product elsewhere."""
    n = space.n
    return n * columns * (4 if _separable_lift(space) else n)


def _lift_manhattan_grid(h: np.ndarray, width: int, height: int, q: float) -> np.ndarray:
    """:func:`private_lift` on a Manhattan grid: e^{−εd} = q^{|dx|}·q^{|dy|} (q = e^{−ε·step}) is
    separable, so the max-times product is two 1-D transforms, each a forward and a backward scan
    (max_j q^{|i−j|} x_j = the larger of the two running maxima): O(n·m) instead of O(n²·m)."""
    m = h.shape[1]
    g = h.reshape(height, width, m).copy()
    for axis in (1, 0):
        size = g.shape[axis]
        take = (lambda i: g[:, i]) if axis == 1 else (lambda i: g[i])
        for i in range(1, size):
            np.maximum(take(i), q * take(i - 1), out=take(i))
        for i in range(size - 2, -1, -1):
            np.maximum(take(i), q * take(i + 1), out=take(i))
    return g.reshape(width * height, m)


def private_lift(h, space: MetricSpace, *, epsilon: float) -> np.ndarray:
    r"""The smallest matrix Ĥ ≥ H whose columns satisfy the ε·d-privacy constraints.

    .. math:: \hat H[b, w] = \max_a e^{-\varepsilon d(a, b)} H[a, w]

    (a = b included, so Ĥ ≥ H). Each column of Ĥ satisfies Ĥ[b, w] ≥ e^{−εd(b,c)} Ĥ[c, w] for all
    b, c: if Ĥ[c, w] = e^{−εd(a,c)} H[a, w] then e^{−εd(b,c)} Ĥ[c, w] ≤ e^{−εd(a,b)} H[a, w] ≤ Ĥ[b, w]
    by the triangle inequality d(a, b) ≤ d(a, c) + d(c, b). Entries already satisfying the constraints
    are unchanged, so for a channel violating them only by the LP solver's tolerance the lift adds
    mass of the order of that tolerance. Rows of Ĥ sum to at least 1 (not renormalized here).

    Parameters
    ----------
    h : ndarray (n, m)
        Non-negative matrix, rows indexed by the space's points.
    space : MetricSpace
        Its distances must satisfy the triangle inequality for the result to be private.
    epsilon : float

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 1.
    """
    h = np.asarray(h, dtype=np.float64)
    n, m = h.shape
    if n != space.n:
        raise ValueError(f"matrix has {n} rows but the space has {space.n} points")
    if _separable_lift(space):
        return _lift_manhattan_grid(h, space.width, space.height, float(np.exp(-epsilon * space.step)))
    d = space.distances
    with np.errstate(invalid="ignore"):
        phi = np.exp(-epsilon * d)
    phi[np.isinf(d)] = 0.0  # ε = 0 with d = ∞ gives nan; infinitely distant points do not constrain
    out = np.empty_like(h)
    block = max(1, _LIFT_ELEMENTS // max(n * m, 1))
    for b0 in range(0, n, block):
        b1 = min(n, b0 + block)
        # out[b, w] = max_a phi[b, a] * h[a, w], a max-times matrix product on a block of rows b
        out[b0:b1] = (phi[b0:b1, :, None] * h[None, :, :]).max(axis=1)
    return out

