"""The one-dimensional Laplace mechanism: a sampler on the reals and its discretization to a channel.

The Laplace mechanism on ℝ reports y + N with N of density (ε/2) e^{−ε|t|} (Chatzikokolakis et al. 2013 Fig 2 (i):
λ_ε(z) = ε/2 and D(y)(z) = λ_ε(z) e^{−ε|y−z|}; it is ε·d_ℝ-private by Chatzikokolakis et al. 2013 Fact 7). For a query of
sensitivity Δ the scale is Δ/ε.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_epsilon
from ..sampling import as_generator
from .base import Mechanism, built, built_from_log
from ..spaces import MetricSpace
from .geometric import line_coordinates, line_epsilon


#: The default sampler's lattice: Λ = Δ·2^−LATTICE_BITS.
LATTICE_BITS = 20


def laplace_sample(values, *, epsilon: float, sensitivity: float = 1.0, rng=None, method: str = "discrete"):
    """Add Laplace noise of scale ``sensitivity / epsilon`` to every entry of ``values``.

    Parameters
    ----------
    values : float or array_like
        True answers (any shape, finite).
    epsilon : float
        Privacy level, > 0.
    sensitivity : float
        Δ, the largest change of the answer between adjacent inputs (in the answers' units), > 0. The
        output is then ε-differentially private with respect to that adjacency, and for Δ = 1 it is
        ε·d_ℝ-private on the answers themselves (Chatzikokolakis et al. 2013 Fig 2 (i), Fact 7).
    rng : numpy Generator, int seed or None
        Source of randomness (DESIGN.md convention: None is the release-grade source).
    method : {"discrete", "textbook"}
        "discrete" (default, for release): the value is rounded to the lattice Λℤ, Λ = Δ·2^−20, and an
        exact discrete Laplace multiple of Λ is added (:func:`dprivacy.sampling.discrete.discrete_laplace`,
        CKS 2020, integer arithmetic only), with ratio e^{−r} per lattice step, r ≤ ε·Λ/(Δ + Λ). Every
        output lies on Λℤ whatever the input (no floating-point leak, Mironov CCS 2012), and two inputs
        at distance ≤ Δ round to lattice points at most Δ + Λ apart, so the release is ε-private
        exactly. It is the Laplace law of scale Δ/ε up to the lattice step (a relative 2^−20).
        "textbook": x + Laplace(Δ/ε) in floating point (numpy), which is *not* private as released
        (its low-order bits depend on x); kept for the papers' experiments, which study the
        mathematical mechanism.

    Returns
    -------
    numpy.ndarray or float
        values + N: mean 0, variance ≈ 2(Δ/ε)². A float when ``values`` is a scalar, else an array of the
        same shape.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §4.1 (Laplace mechanisms).
    """
    e = check_epsilon(epsilon)
    s = check_epsilon(sensitivity, name="sensitivity")
    if method not in ("discrete", "textbook"):
        raise ValueError(f"method must be 'discrete' or 'textbook', got {method!r}")
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"values must be numbers or an array of numbers: {exc}") from None
    if not np.isfinite(v).all():
        raise ValueError("values must be finite (got NaN or infinity)")
    gen = as_generator(rng)
    if method == "textbook":
        out = v + gen.laplace(0.0, s / e, size=v.shape)
        return float(out) if out.ndim == 0 else out
    from ..sampling.discrete import discrete_laplace, geometric_parameters

    lam = s * 2.0**-LATTICE_BITS
    steps = np.rint(v / lam)
    if np.abs(steps).max(initial=0.0) >= 2.0**52:
        raise ValueError(f"values up to {np.abs(v).max():.6g} are too large for the lattice Δ·2^-{LATTICE_BITS} "
                         f"= {lam:.3g} in float64 (|value| must be below 2^52 lattice steps)")
    # r = ε·Λ/(Δ + Λ) per lattice step = ε / (2^k + 1) in units where Λ = 1 and Δ = 2^k.
    params = geometric_parameters(e, float(2**LATTICE_BITS + 1))  # exact: 2^k + 1 is a float64 integer
    k = discrete_laplace(v.size, params.s, params.t, gen).reshape(v.shape)
    out = (steps + k) * lam
    return float(out) if out.ndim == 0 else out


def _cell_masses(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, rate: float) -> np.ndarray:
    """M[i, k] = P(x_i + N ∈ [lo_k, hi_k]) for N ~ Laplace(0, 1/rate), from the CDF in closed form.

    F(t) = ½e^{rate·t} for t ≤ 0 and 1 − ½e^{−rate·t} for t ≥ 0. The difference F(b) − F(a) is written
    per case so that neither tail suffers cancellation (1 − F near 0 is never formed as 1 − F):
    cell right of x: ½e^{−rate·a}(1 − e^{−rate(b−a)}); left: ½e^{rate·b}(1 − e^{−rate(b−a)});
    containing x: 1 − ½e^{rate·a} − ½e^{−rate·b}.
    """
    a = lo[None, :] - x[:, None]
    b = hi[None, :] - x[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        width = -np.expm1(-rate * (b - a))  # 1 − e^{−rate(b−a)}; = 1 for the unbounded end cells
        right = 0.5 * np.exp(-rate * a) * width
        left = 0.5 * np.exp(rate * b) * width
        # 1 − ½e^{ra} − ½e^{−rb} written with expm1: no cancellation when rate·(b − a) is tiny.
        inside = -0.5 * np.expm1(rate * a) - 0.5 * np.expm1(-rate * b)
    return np.where(a >= 0, right, np.where(b <= 0, left, inside))


def _log_cell_masses(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, rate: float) -> np.ndarray:
    """log of :func:`_cell_masses`, exact where the masses underflow in float64 (rate·distance above about 708)."""
    a = lo[None, :] - x[:, None]
    b = hi[None, :] - x[:, None]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        log_width = np.log(-np.expm1(-rate * (b - a)))  # 0 for the unbounded end cells
        right = np.log(0.5) - rate * a + log_width
        left = np.log(0.5) + rate * b + log_width
        inside = np.log(-0.5 * np.expm1(rate * a) - 0.5 * np.expm1(-rate * b))
    return np.where(a >= 0, right, np.where(b <= 0, left, inside))


def laplace_channel(space: MetricSpace, *, epsilon: float) -> Mechanism:
    """The Laplace mechanism on a line, discretized to the space's points by nearest-point remapping.

    Parameters
    ----------
    space : MetricSpace
        Points with distinct 1-D ``coordinates`` x_i (any spacing, any order) and any metric d.
    epsilon : float
        The privacy level: the channel is ε·d-private for the space's metric d.

    Returns
    -------
    Mechanism
        Dense, or a :class:`~dprivacy.mechanisms.base.LogMechanism` (its exact log-entries) where its float64
        entries would underflow.
        n × n, H[i, k] = P(x_i + N ∈ C_k) with N ~ Laplace(0, 1/ε') and C_k the Voronoi cell of x_k on
        the line (bounded by the midpoints to its neighbours; the two end cells extend to ±∞ and so
        take the tails). The masses are exact differences of the Laplace CDF, no sampling.
        ε' = ε · min_{i≠j} d(i, j)/|x_i − x_j| (:func:`~dprivacy.mechanisms.geometric.line_epsilon`):
        ε on ``line(n)``.

    Notes
    -----
    *Proof of ε·d-privacy.* The continuous Laplace density p_i(t) = (ε'/2)e^{−ε'|t − x_i|} satisfies
    p_i(t) ≤ e^{ε'|x_i − x_j|} p_j(t) pointwise (triangle inequality on ℝ; Chatzikokolakis et al. 2013 Fact 7). Integrating
    over any cell keeps the bound, H[i, k] = ∫_{C_k} p_i ≤ e^{ε'|x_i − x_j|} H[j, k], and
    ε'|x_i − x_j| ≤ ε d(i, j) by the choice of ε'. Mapping each real report to the point of its cell is
    post-processing, which cannot weaken privacy. Unlike the truncated geometric mechanism the
    discretized channel need not be tight: its smallest ε can be below ``epsilon``.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §4.1 (Laplace mechanisms), Fig 2.
    """
    e = check_epsilon(epsilon)
    x = line_coordinates(space, who="laplace_channel")
    rate = line_epsilon(space, epsilon=e, coordinates=x)
    n = x.size
    if n > 1 and np.isfinite(rate):
        from .._validate import check_scaled_epsilon

        check_scaled_epsilon(rate * float(np.diff(np.sort(x)).min()), what=f"laplace_channel at ε = {e:g}")
    if n == 1 or np.isinf(rate):
        h = np.eye(n)
    else:
        order = np.argsort(x)
        xs = x[order]
        mid = 0.5 * (xs[:-1] + xs[1:])
        lo = np.concatenate([[-np.inf], mid])
        hi = np.concatenate([mid, [np.inf]])
        h = np.empty((n, n))
        h[:, order] = _cell_masses(x, lo, hi, rate)  # columns back in the space's point order
        if (h < _TINY).any():
            # far cells' masses underflow (count:1000 at ε = 1: e^(−999)): the float64 matrix would not be private
            # as stored; the mechanism is kept by its exact log-masses
            lg = np.empty((n, n))
            lg[:, order] = _log_cell_masses(x, lo, hi, rate)
            return built_from_log(lg, space, epsilon=e, name="laplace", reason=_REASON)
    return built(h, space, epsilon=e, name="laplace", reason=_REASON)


_TINY = float(np.finfo(np.float64).tiny)
_REASON = ("Laplace on the line with rate ε' = ε·min d/|Δx|, remapped to the nearest point: ε·d-private by Chatzikokolakis et al. 2013 Fact 7 "
           "and post-processing")

