r"""The privacy cone K = {r ≥ 0 : r(a) ≤ e^{εd(a,b)} r(b) for all a, b}: every column of an ε·d-private channel
lies in it (ElSalamouny et al. 2014 Def 1), and the Dantzig–Wolfe decomposition (:mod:`.decomposition`) prices rays of it.

Here: the factors e^{εd}; the largest vector of K below a ray and the smallest above it (both in K by the
triangle inequality), which repair a priced ray into K; the lattice of rays e^{−ελk} of path metrics (lines
and Manhattan grids) and the snapping of a ray to it; and the sparse inverse of the tent matrix e^{−εd} (seed
000's Φ, Def 3) on those spaces, the basis in which the master's rows are written.
"""

from __future__ import annotations

import numpy as np

from ..spaces import MetricSpace

def _cone_factors(space: MetricSpace, epsilon: float) -> np.ndarray:
    """E[a, b] = e^{εd(a, b)} (∞ where d is ∞: no constraint)."""
    with np.errstate(over="ignore"):
        return np.exp(epsilon * space.distances)


def largest_minorant(r: np.ndarray, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The largest vector of K below ``r`` ≥ 0: r̃(a) = min_b e^{εd(a,b)} r(b), and the minimising b.

    r̃ ∈ K by the triangle inequality (e^{εd(a,b)} ≤ e^{εd(a,c)} e^{εd(c,b)}), r̃ ≤ r (b = a), and
    r̃ = r iff r ∈ K; a point a with r̃(a) < r(a) violates its pair (a, argmin) by r(a) − r̃(a).
    """
    with np.errstate(invalid="ignore"):
        t = factors * r[None, :]
    t[np.isnan(t)] = np.inf  # 0·∞: no constraint between the two points
    arg = t.argmin(axis=1)
    return t[np.arange(r.size), arg], arg


def smallest_majorant(r: np.ndarray, factors: np.ndarray) -> np.ndarray:
    r"""The smallest vector of K above ``r`` ≥ 0: r̂(a) = max_b e^{−εd(a,b)} r(b).

    r̂ ∈ K by the triangle inequality, r̂ ≥ r (b = a), and r̂ = r iff r ∈ K. It repairs a pricing
    optimum whose violations are only at the solver's absolute tolerance: an entry that should be
    e^{−38} (a far point of a 20×20 Manhattan grid) comes back as 0 within the primal tolerance, and
    the largest minorant below such an r is 0 everywhere (every point is within a finite factor of the
    zero), while the majorant moves no entry by more than that tolerance.
    """
    return (r[None, :] / factors).max(axis=1)  # factors ≥ 1 (∞ at infinite distance: r/∞ = 0)


def _markov_precision(x: np.ndarray, epsilon: float):
    """The inverse of T[i, j] = e^{−ε|x_i − x_j|} for sorted distinct points x on a line: tridiagonal.

    T is the covariance of a stationary Ornstein–Uhlenbeck process sampled at x, a Markov chain, so its
    precision matrix couples neighbours only: with a_i = e^{−ε(x_{i+1} − x_i)} and s_i = 1/(1 − a_i²),
    P[i, i] = s_{i−1} + s_i − 1 inside, s_1 and s_{n−1} at the two ends,
    P[i, i+1] = −a_i s_i.
    """
    import scipy.sparse as sp

    n = x.size
    if n == 1:
        return sp.csr_matrix(np.ones((1, 1)))
    a = np.exp(-epsilon * np.diff(x))
    s = 1.0 / (1.0 - a * a)
    diag = np.zeros(n)
    diag[:-1] += s
    diag[1:] += s
    diag[1:-1] -= 1.0
    off = -a * s
    return sp.diags([off, diag, off], [-1, 0, 1], format="csr")


def lattice_step(space: MetricSpace) -> float | None:
    """λ when every distance of the space is a multiple of λ along a path of steps λ (Manhattan grids
    and evenly spaced lines), else None. There the pricing LP's vertices are r = e^{−ελk} with integer
    k ≥ 0 (a tight tree of unit steps from the points at 1), which :func:`snap_to_lattice` restores
    exactly from the solver's approximate vertex."""
    from ..spaces import GridSpace

    if isinstance(space, GridSpace):
        return float(space.step) if space.metric == "manhattan" else None
    line = _line_order(space)
    if line is None:
        return None
    gaps = np.diff(line[1])
    return float(gaps[0]) if np.allclose(gaps, gaps[0], rtol=1e-12, atol=0) else None


def _line_order(space: MetricSpace):
    """(order, sorted positions) of a space of at least two points with distinct finite 1-D
    coordinates, else None."""
    c = space.coordinates
    if c is None or c.ndim != 2 or c.shape[1] != 1 or space.n < 2:
        return None
    order = np.argsort(c[:, 0], kind="stable")
    xs = c[order, 0]
    return (order, xs) if np.all(np.isfinite(xs)) and np.all(np.diff(xs) > 0) else None


def snap_to_lattice(r: np.ndarray, epsilon: float, step: float) -> np.ndarray:
    """r ∈ K ∩ [0, 1]^n rounded to the nearest lattice ray e^{−ε·step·k}, k = round(−ln r / (ε·step)).

    The result is in K again: on a path metric with steps λ, r ∈ K means |ℓ_a − ℓ_b| ≤ λ for the
    neighbours' ℓ = −ln r / ε, and rounding ℓ/λ to integers keeps neighbours at most one step apart and
    ℓ ≥ 0 (so r ≤ 1). Zero entries stay zero."""
    pos = r > 0
    with np.errstate(divide="ignore"):
        k = np.round(-np.log(np.where(pos, r, 1.0)) / (epsilon * step))
    return np.where(pos, np.exp(-epsilon * step * k), 0.0)


def tent_inverse(space: MetricSpace, epsilon: float, tents: np.ndarray):
    r"""The inverse of the tent matrix T = e^{−εd} (ElSalamouny et al. 2014's privacy-constraints matrix Φ, Def 3)
    when it is sparse, else None.

    On a line T is the covariance of a sampled Ornstein–Uhlenbeck process and its inverse is tridiagonal
    (:func:`_markov_precision`); on a Manhattan grid T is the Kronecker product of the two lines' tent
    matrices and its inverse the product of theirs (9 entries per row). The master's rows
    Σ_k α_k r_k = 1 can then be written M·Σ_k α_k r_k = M·1 with M = T^{-1}: the same LP, but a tent
    (on 50×50 Manhattan about 800 entries above 1e-9) becomes a unit vector, and a product-shaped ray a
    few entries. Rays of other shapes stay partly dense (measured on 20×20 Manhattan: about 250 of 400
    entries), so the gain is largest while the master is mostly tents. Returned only when ‖M·T − I‖ is
    at rounding level (it is checked here against ``tents``).

    References
    ----------
    ElSalamouny et al. 2014 (ElSalamouny et al. 2014) Def 3 (Φ, φ_yy' = e^{−d(y, y')}).
    """
    import scipy.sparse as sp

    from ..spaces import GridSpace

    m = None
    if isinstance(space, GridSpace) and space.metric == "manhattan" and space.n > 1:
        step = space.step
        rows = _markov_precision(np.arange(space.height) * step, epsilon)
        cols = _markov_precision(np.arange(space.width) * step, epsilon)
        m = sp.kron(rows, cols, format="csr")  # cell (col, row) is index row·width + col
    elif (line := _line_order(space)) is not None:
        order, xs = line
        p = _markov_precision(xs, epsilon).tocoo()
        m = sp.csr_matrix((p.data, (order[p.row], order[p.col])), shape=(space.n, space.n))
    if m is None:
        return None
    with np.errstate(all="ignore"):
        err = np.abs(m @ tents - np.eye(space.n)).max()
    # the spaces' distances must be the ones the structure assumes (e.g. a line's |x_i − x_j|)
    return m if np.isfinite(err) and err <= 1e-9 else None
