"""The truncated geometric mechanism on points of a line (Ghosh, Roughgarden, Sundararajan 2009).

The *geometric* mechanism of Ghosh et al. adds to an integer answer y a two-sided geometric noise,
Pr[y + k] = (1−α)/(1+α) · α^{|k|} with α = e^{−ε}, and so reports any integer. Its *truncated* version
(seed 001 §6.2, Table 2(a): "truncated ½-geom. mechanism"; seed 002 Fig 2 (iv): TG_ε on q[0..k]) maps
every report below the smallest answer to the smallest answer and every report above the largest to the
largest, i.e. it *folds the two tails* onto the end points. On a finite answer set only the folded
channel is a finite channel (the untruncated mechanism has infinitely many outputs and is not a
:class:`~dprivacy.channels.Channel`; the data commands sample its unbounded noise directly, see
:mod:`dprivacy.sampling.discrete`), so this module has one constructor, :func:`truncated_geometric`.

On positions k_i ∈ {0, …, n−1} with α = e^{−ε'} the matrix is

    H[i, j] = (1−α)/(1+α) · α^{|k_i − k_j|}   if 0 < k_j < n−1  (interior outputs)
    H[i, j] = 1/(1+α) · α^{|k_i − k_j|}        if k_j ∈ {0, n−1}  (the folded tails)

(seed 002 Fig 2 (iv): λ(z) = e^{qε}/(e^{qε}+1) at the ends and (e^{qε}−1)/(e^{qε}+1) inside, times
e^{−ε|y−z|}; the two forms agree with α = e^{−qε}).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validate import check_epsilon
from .base import DenseMechanism, built
from ..spaces import MetricSpace, line

#: Relative tolerance when deciding that coordinates are equally spaced.
SPACING_RTOL = 1e-9


def line_coordinates(space: MetricSpace, *, who: str = "this mechanism") -> np.ndarray:
    """The 1-D coordinates x_i of a space whose points lie on a line, checked to be distinct.

    Raises ``TypeError`` when ``space`` is not a :class:`MetricSpace` and ``ValueError`` when it has no
    coordinates, coordinates of dimension other than 1, non-finite or repeated coordinates.
    """
    if not isinstance(space, MetricSpace):
        raise TypeError(f"{who} needs a MetricSpace (or an int n for line(n)), got {type(space).__name__}")
    c = space.coordinates
    if c is None:
        raise ValueError(
            f"{who} needs a space whose points lie on a line (1-D coordinates); {space.name!r} has no "
            "coordinates (build it with spaces.line(n) or pass coordinates= to MetricSpace)"
        )
    if c.ndim != 2 or c.shape[1] != 1:
        raise ValueError(
            f"{who} needs a space whose points lie on a line (1-D coordinates); {space.name!r} has "
            f"coordinates of shape {c.shape}"
        )
    x = c[:, 0]
    if not np.isfinite(x).all():
        raise ValueError(f"{who}: coordinates of {space.name!r} must be finite")
    if np.unique(x).size != x.size:
        raise ValueError(f"{who}: points of {space.name!r} must have distinct coordinates")
    return x


def line_epsilon(space: MetricSpace, *, epsilon: float, coordinates: np.ndarray | None = None) -> float:
    """The ε' to use on the coordinates so that a mechanism that is ε'·|x − x'|-private is ε·d-private.

    ε' = ε · min_{i ≠ j} d(i, j) / |x_i − x_j|, the largest ε' with ε'|x_i − x_j| ≤ ε d(i, j) for every
    pair. Examples: ε on ``line(n)``; ε/step on ``line(n, step=step)`` measured in coordinate units;
    ε/v per unit step on the answers of a sum query (graph metric ⌈|i − j|/v⌉); ε/(n−1) per unit step on
    a clique laid out on 0..n−1 (seed 001 Example 30, Table 1(a): "α^5 = 2").

    The minimum is taken over the space's constraint pairs only (its essential pairs when it knows them).
    This suffices: if d(i, j) = Σ_e d(e) along a tight chain of essential pairs e, then
    |x_i − x_j| ≤ Σ_e |Δx(e)| and d(i, j)/|x_i − x_j| ≥ Σ_e d(e)/Σ_e |Δx(e)| ≥ min_e d(e)/|Δx(e)|.
    Returns ``inf`` when no two points are at finite distance (then no constraint binds).

    References
    ----------
    .. [1] ``002_3df4dd999d47c651.txt``: Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §4.2, Thm 10.
    """
    e = check_epsilon(epsilon)
    x = line_coordinates(space) if coordinates is None else np.asarray(coordinates, dtype=np.float64)
    i, j = space.constraint_pairs()
    if i.size == 0:
        return float("inf")
    d = space.distances[i, j]
    finite = np.isfinite(d)
    if not finite.any():
        return float("inf")
    ratio = d[finite] / np.abs(x[i[finite]] - x[j[finite]])
    return e * float(ratio.min())


def _grid_positions(x: np.ndarray, name: str) -> tuple[np.ndarray, float]:
    """Positions k_i ∈ {0..n−1} and step q with x_i = min(x) + q·k_i, or raise."""
    n = x.size
    if n == 1:
        return np.zeros(1, dtype=np.intp), 1.0
    xs = np.sort(x)
    q = (xs[-1] - xs[0]) / (n - 1)
    k = (x - xs[0]) / q
    kr = np.rint(k)
    if np.abs(k - kr).max() > SPACING_RTOL * n:
        gaps = np.diff(xs)
        raise ValueError(
            f"truncated_geometric needs equally spaced points on a line (coordinates x0 + q*k for "
            f"k = 0..n-1); the points of {name!r} have gaps from {gaps.min():.6g} to {gaps.max():.6g}. "
            "For unevenly spaced points use laplace_channel"
        )
    return kr.astype(np.intp), float(q)


def _tg_matrix(k: np.ndarray, step_epsilon: float) -> np.ndarray:
    """The truncated geometric matrix on integer positions k (a permutation of 0..n−1), α = e^{−step_epsilon}."""
    n = k.size
    if n == 1:
        return np.ones((1, 1))
    alpha = float(np.exp(-step_epsilon))
    steps = np.abs(k[:, None] - k[None, :]).astype(np.float64)
    h = np.power(alpha, steps)  # 0**0 = 1, so α = 0 (ε' = ∞) gives the identity
    # (1−α)/(1+α) = tanh(ε'/2), which keeps its digits when ε' is small and α is close to 1.
    interior = float(np.tanh(step_epsilon / 2.0))
    col = np.where((k == 0) | (k == n - 1), 1.0 / (1.0 + alpha), interior)
    return h * col[None, :]


def truncated_geometric(space, *, epsilon: float) -> DenseMechanism:
    """The truncated geometric mechanism TG on points equally spaced on a line.

    Parameters
    ----------
    space : MetricSpace or int
        A space whose ``coordinates`` are 1-D and equally spaced (x_i = x_0 + q·k_i, the k_i a
        permutation of 0..n−1; the points may be listed in any order), with any metric d on them; or an
        int n, meaning ``spaces.line(n)``.
    epsilon : float
        The privacy level: the channel is ε·d-private for the space's metric d.

    Returns
    -------
    DenseMechanism
        n × n, inputs and outputs labelled with the space's labels. With α = e^{−ε'q} (one step),
        H[i, j] = c·α^{|k_i−k_j|} for interior outputs, c = (1−α)/(1+α), and α^{|k_i−k_j|}/(1+α) for the
        two end outputs, which collect the folded tails (seed 002 Fig 2 (iv); seed 001 Table 2(a)).

    Notes
    -----
    *Choice of ε'.* TG with parameter α = e^{−ε'q} is ε'·|x − x'|-private, with log-ratio between rows
    i and j exactly ε'|x_i − x_j| on an end column. It is therefore ε·d-private iff
    ε'|x_i − x_j| ≤ ε d(i, j) for all pairs, and we take the largest such ε',
    ε' = ε · min_{i≠j} d(i, j)/|x_i − x_j| (:func:`line_epsilon`). On ``line(n)`` this is ε (seed 001
    Table 2: α = ½ at ε = ln 2); on the answers of a sum query with values 0..v (graph metric
    ⌈|i−j|/v⌉) it is ε/v per unit step, the geometric mechanism of seed 000 §7.1; on a clique laid out
    on 0..n−1 it is ε/(n−1) (seed 001 Example 30, Table 1(a)).

    *Tightness.* The pair (i, j) attaining the minimum has log-ratio ε'|x_i − x_j| = ε d(i, j) on an end
    column, so for n ≥ 2 (and some pair at finite distance) the smallest ε for which the channel is
    ε·d-private is exactly ``epsilon``.

    TG is universally optimal for counting queries (Ghosh et al.; seed 002 Thm 8) and, with ε/qk,
    for sum/avg/percentile under the normalized Manhattan metric (seed 002 Thm 10–11).

    References
    ----------
    .. [1] ``002_3df4dd999d47c651.txt``: Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §4.2, Fig 2 (iv), Thm 8, Thm 10.
    .. [2] ``001_c2128648fe62df4d.txt``: Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Table 2(a),
       Example 30.
    """
    e = check_epsilon(epsilon)
    if isinstance(space, Integral) and not isinstance(space, bool):
        space = line(int(space))
    x = line_coordinates(space, who="truncated_geometric")
    k, q = _grid_positions(x, space.name)
    eps_coord = line_epsilon(space, epsilon=e, coordinates=x)
    return built(_tg_matrix(k, eps_coord * q), space, epsilon=e, name="truncated-geometric",
                 reason=("truncated geometric with α = e^(−ε'q), ε' = ε·min d/|Δx|: ε'·|x−x'|-private on the line, "
                         "hence ε·d-private (seed 002 §4, Fig 2 (iv); seed 001 Table 2(a))"))

