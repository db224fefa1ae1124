"""The truncated geometric mechanism on points of a line (Ghosh, Roughgarden, Sundararajan 2009).

The *geometric* mechanism of Ghosh et al. adds to an integer answer y a two-sided geometric noise,
Pr[y + k] = (1−α)/(1+α) · α^{|k|} with α = e^{−ε}, and so reports any integer. Its *truncated* version
(Alvim et al. 2015 §6.2, Table 2(a): "truncated ½-geom. mechanism"; Chatzikokolakis et al. 2013 Fig 2 (iv): TG_ε on q[0..k]) maps
every report below the smallest answer to the smallest answer and every report above the largest to the
largest, i.e. it *folds the two tails* onto the end points. On a finite answer set only the folded
channel is a finite channel (the untruncated mechanism has infinitely many outputs and is not a
:class:`~dprivacy.channels.Channel`; the data commands sample its unbounded noise directly, see
:mod:`dprivacy.sampling.discrete`), so this module has one constructor, :func:`truncated_geometric`.

Where the matrix does not survive float64 — an entry c·α^{|k_i − k_j|} below the smallest normal
number (ε·d above about 708: ``count:1000`` at ε = 1) or a matrix too large to store — the mechanism is
kept implicit (:class:`TruncatedGeometricMechanism`): its entries are exact as logarithms, its privacy
is checked on them, and it samples by exact integer noise folded onto the end points. A stored matrix
with e^{−1000} rounded to 0 beside a positive entry is not private as stored, and an exact sampler built
from it would never produce that output: both would leak what the mechanism does not.

On positions k_i ∈ {0, …, n−1} with α = e^{−ε'} the matrix is

    H[i, j] = (1−α)/(1+α) · α^{|k_i − k_j|}   if 0 < k_j < n−1  (interior outputs)
    H[i, j] = 1/(1+α) · α^{|k_i − k_j|}        if k_j ∈ {0, n−1}  (the folded tails)

(Chatzikokolakis et al. 2013 Fig 2 (iv): λ(z) = e^{qε}/(e^{qε}+1) at the ends and (e^{qε}−1)/(e^{qε}+1) inside, times
e^{−ε|y−z|}; the two forms agree with α = e^{−qε}).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validate import check_epsilon, check_row_indices
from .base import DenseMechanism, LogEntries, Mechanism, PrivacyCertificate, built
from ..spaces import DENSE_LIMIT_BYTES, MetricSpace, line

#: Relative tolerance when deciding that coordinates are equally spaced.
SPACING_RTOL = 1e-9

#: The smallest normal float64: a matrix entry below it has lost bits (subnormal) or is 0, so the
#: stored matrix no longer has the mechanism's ratios and the mechanism is kept implicit.
_TINY = float(np.finfo(np.float64).tiny)


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
    a clique laid out on 0..n−1 (Alvim et al. 2015 Example 30, Table 1(a): "α^5 = 2").

    The minimum is taken over the space's constraint pairs only (its essential pairs when it knows them).
    This suffices: if d(i, j) = Σ_e d(e) along a tight chain of essential pairs e, then
    |x_i − x_j| ≤ Σ_e |Δx(e)| and d(i, j)/|x_i − x_j| ≥ Σ_e d(e)/Σ_e |Δx(e)| ≥ min_e d(e)/|Δx(e)|.
    Returns ``inf`` when no two points are at finite distance (then no constraint binds).

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
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
    interior, end = np.exp(_log_columns(step_epsilon))
    col = np.where((k == 0) | (k == n - 1), end, interior)
    return h * col[None, :]


def truncated_geometric(space, *, epsilon: float) -> Mechanism:
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
    Mechanism
        n × n, inputs and outputs labelled with the space's labels: a :class:`DenseMechanism`, or a
        :class:`TruncatedGeometricMechanism` (implicit, exact in log space) when some entry would fall
        below the smallest normal float64 (ε·d ≳ 708) or the matrix would not fit in memory. With α = e^{−ε'q} (one step),
        H[i, j] = c·α^{|k_i−k_j|} for interior outputs, c = (1−α)/(1+α), and α^{|k_i−k_j|}/(1+α) for the
        two end outputs, which collect the folded tails (Chatzikokolakis et al. 2013 Fig 2 (iv); Alvim et al. 2015 Table 2(a)).

    Notes
    -----
    *Choice of ε'.* TG with parameter α = e^{−ε'q} is ε'·|x − x'|-private, with log-ratio between rows
    i and j exactly ε'|x_i − x_j| on an end column. It is therefore ε·d-private iff
    ε'|x_i − x_j| ≤ ε d(i, j) for all pairs, and we take the largest such ε',
    ε' = ε · min_{i≠j} d(i, j)/|x_i − x_j| (:func:`line_epsilon`). On ``line(n)`` this is ε (Alvim et al. 2015
    Table 2: α = ½ at ε = ln 2); on the answers of a sum query with values 0..v (graph metric
    ⌈|i−j|/v⌉) it is ε/v per unit step, the geometric mechanism of ElSalamouny et al. 2014 §7.1; on a clique laid out
    on 0..n−1 it is ε/(n−1) (Alvim et al. 2015 Example 30, Table 1(a)).

    *Tightness.* The pair (i, j) attaining the minimum has log-ratio ε'|x_i − x_j| = ε d(i, j) on an end
    column, so for n ≥ 2 (and some pair at finite distance) the smallest ε for which the channel is
    ε·d-private is exactly ``epsilon``.

    TG is universally optimal for counting queries (Ghosh et al.; Chatzikokolakis et al. 2013 Thm 8) and, with ε/qk,
    for sum/avg/percentile under the normalized Manhattan metric (Chatzikokolakis et al. 2013 Thm 10–11).

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §4.2, Fig 2 (iv), Thm 8, Thm 10.
    .. [2] Alvim, Andrés, Chatzikokolakis, Degano, Palamidessi, *On the
       information leakage of differentially-private mechanisms* (J. Computer Security, 2015), Table 2(a),
       Example 30.
    """
    e = check_epsilon(epsilon)
    if isinstance(space, Integral) and not isinstance(space, bool):
        space = line(int(space))
    x = line_coordinates(space, who="truncated_geometric")
    k, q = _grid_positions(x, space.name)
    eps_coord = line_epsilon(space, epsilon=e, coordinates=x)
    step = eps_coord * q
    if _underflows(k.size, step) or 8.0 * k.size * k.size > DENSE_LIMIT_BYTES:
        return TruncatedGeometricMechanism(space, epsilon=e, positions=k, step_epsilon=step)
    return built(_tg_matrix(k, step), space, epsilon=e, name="truncated-geometric", reason=_TG_REASON)


_TG_REASON = ("truncated geometric with α = e^(−ε'q), ε' = ε·min d/|Δx|: ε'·|x−x'|-private on the line, "
              "hence ε·d-private (Chatzikokolakis et al. 2013 §4, Fig 2 (iv); Alvim et al. 2015 Table 2(a))")


def _log_columns(step_epsilon: float) -> tuple[float, float]:
    """log of the column factors of TG: (interior (1−α)/(1+α), end 1/(1+α)). The interior one is
    written tanh(ε'/2), which keeps its digits when ε' is small and α is close to 1."""
    alpha = float(np.exp(-step_epsilon))
    return float(np.log(np.tanh(step_epsilon / 2.0))), -float(np.log1p(alpha))


def _underflows(n: int, step_epsilon: float) -> bool:
    """Whether TG's smallest entry, c·α^{n−1}, falls below the smallest normal float64."""
    if n < 2 or not np.isfinite(step_epsilon):
        return False
    inner, end = _log_columns(step_epsilon)
    return min(inner, end) - step_epsilon * (n - 1) < np.log(_TINY)


class TruncatedGeometricMechanism(LogEntries, Mechanism):
    r"""The truncated geometric mechanism on a line, kept implicit, optionally followed by a remap.

    H[i, j] = c_j·α^{|k_i − k_j|} with α = e^{−ε'q} (:func:`truncated_geometric`), and, with a remap
    r : {0..n−1} → {0..m−1}, the channel H·R with R[j, w] = [r(j) = w]: output j of TG is reported as
    w = r(j). A remap is post-processing, so H·R is private whenever H is (Chatzikokolakis et al. 2013 Thm 8 uses it: TG
    followed by the optimal remap is optimal for every prior and monotone loss).

    Everything is computed from the positions k and α, in log space where entries underflow:

    * :meth:`log_rows` exact (log c_j − ε'q|k_i − k_j|; a log-sum-exp over each remap group);
    * :func:`~dprivacy.measures.check_privacy` on the log-entries (every constraint pair, every output)
      when the n × m log-matrix fits in memory;
    * utility and capacity from the log-entries, a block of rows at a time;
    * sampling: k_i plus exact two-sided geometric noise (:mod:`dprivacy.sampling.discrete`, ratio
      e^{−s/t} with s/t ≤ ε'q rational), folded onto 0 and n−1, then remapped. The sampled mechanism is
      TG at step s/t, private at :attr:`delivered_epsilon` ≤ ε.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §4.2, Fig 2 (iv), Thm 8.
    """

    def __init__(self, space: MetricSpace, *, epsilon: float, positions, step_epsilon: float, remap=None,
                 outputs=None, reason: str | None = None):
        k = np.asarray(positions, dtype=np.intp)
        n = space.n
        if k.shape != (n,) or not np.array_equal(np.sort(k), np.arange(n)):
            raise ValueError(f"positions must be a permutation of 0..{n - 1} (one per point of {space.name})")
        if not (np.isfinite(step_epsilon) and step_epsilon > 0):
            raise ValueError(f"step_epsilon must be a positive finite number, got {step_epsilon!r}")
        self._k = k
        self._at = np.empty(n, dtype=np.intp)
        self._at[k] = np.arange(n)  # the point at each position
        self._step = float(step_epsilon)
        inner, end = _log_columns(self._step)
        self._log_c = np.where((k == 0) | (k == n - 1), end, inner) if n > 1 else np.zeros(1)
        if remap is None:
            self._remap = None
            m = n
        else:
            r = np.asarray(remap, dtype=np.intp)
            m = int(len(outputs)) if outputs is not None else (int(r.max()) + 1 if r.size else 0)
            if r.shape != (n,) or (r.size and (r.min() < 0 or r.max() >= m)):
                raise ValueError(f"remap must give each of the {n} outputs of TG a guess index in 0..{m - 1}")
            order = np.argsort(r, kind="stable")
            sr = r[order]
            starts = np.flatnonzero(np.r_[True, sr[1:] != sr[:-1]]) if n else np.zeros(0, dtype=np.intp)
            self._remap = r
            self._groups = (order, starts, sr[starts])  # TG outputs sorted by guess, group starts, guesses
        cert = PrivacyCertificate(True, float(epsilon), "construction",
                                  reason or _TG_REASON + ("; the remap is post-processing" if remap is not None else ""),
                                  smallest_epsilon=None, rigorous=True)
        super().__init__(space, epsilon=epsilon, name="truncated-geometric" + ("+remap" if remap is not None else ""),
                         certificate=cert, n_outputs=m, outputs=outputs,
                         details={"implicit": True, "step_epsilon": self._step})

    def remapped(self, remap, outputs=None) -> "TruncatedGeometricMechanism":
        """This TG followed by the deterministic remap j ↦ remap[j] onto ``outputs`` (post-processing)."""
        return TruncatedGeometricMechanism(self.space, epsilon=self.epsilon, positions=self._k, step_epsilon=self._step,
                                           remap=remap, outputs=outputs)

    # -- entries ------------------------------------------------------------------------------
    def log_rows(self, secrets) -> np.ndarray:
        """log H[y, ·], exact where the entries underflow in float64 (−∞ for a guess no output maps to)."""
        idx = check_row_indices(secrets, self.space.n)
        ki = self._k[idx.ravel()]
        lg = self._log_c[None, :] - self._step * np.abs(ki[:, None] - self._k[None, :]).astype(np.float64)
        if self._remap is not None:
            order, starts, guesses = self._groups
            lg = lg[:, order]
            top = np.maximum.reduceat(lg, starts, axis=1) if starts.size else lg[:, :0]
            sizes = np.diff(np.r_[starts, lg.shape[1]])
            tot = np.add.reduceat(np.exp(lg - np.repeat(top, sizes, axis=1)), starts, axis=1) if starts.size else top
            out = np.full((lg.shape[0], self._m), -np.inf)
            out[:, guesses] = top + np.log(tot)
            lg = out
        return lg.reshape(idx.shape + (self._m,))

    def rows(self, secrets) -> np.ndarray:
        return np.exp(self.log_rows(secrets))

    # -- measure hooks: utility and capacity from the log-entries (LogEntries) -------------------
    def _check_privacy(self, space, epsilon, tol):
        """The check of :func:`~dprivacy.measures.check_privacy_log` on the exact log-entries (every
        constraint pair, every output), when the n × m log-matrix fits in memory; else None (the dense
        route, which refuses with the size)."""
        if 8.0 * self.space.n * self._m > DENSE_LIMIT_BYTES:
            return None
        from ..measures.privacy import check_privacy_log

        return check_privacy_log(self.log_rows(np.arange(self.space.n)), space, epsilon=epsilon, rtol=tol)

    # -- sampling -------------------------------------------------------------------------------
    @property
    def noise(self):
        """The rational s/t ≤ ε'q of the exact noise (:func:`dprivacy.sampling.discrete.geometric_parameters`)."""
        from ..sampling.discrete import geometric_parameters

        return geometric_parameters(self._step, 1.0)

    @property
    def delivered_epsilon(self) -> float:
        """The ε the sampler delivers: TG at step s/t ≤ ε'q is ε·(s/t)/(ε'q)-private (≤ ε)."""
        return min(self.epsilon, self.epsilon * self.noise.delivered_epsilon / self._step)

    def sample_indices(self, secrets, *, rng=None) -> np.ndarray:
        """One output index per secret index: k_y + exact two-sided geometric noise, folded onto the end
        points (the truncation), then remapped."""
        from ..sampling import as_generator
        from ..sampling.discrete import discrete_laplace

        idx = check_row_indices(secrets, self.space.n)
        if self.space.n == 1:
            j = np.zeros(idx.shape, dtype=np.intp)
        else:
            nz = self.noise
            pos = self._k[idx.ravel()] + discrete_laplace(idx.size, nz.s, nz.t, as_generator(rng))
            j = self._at[np.clip(pos, 0, self.space.n - 1)].reshape(idx.shape)
        return j if self._remap is None else self._remap[j]


