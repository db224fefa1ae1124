"""The planar Laplace mechanism (geo-indistinguishability): a sampler on ℝ² and its exact grid channel.

The mechanism reports x0 + N with N of density D_ε(x0)(x) = ε²/(2π) e^{−ε‖x − x0‖} (Chatzikokolakis et al. 2013 §6.2,
"Geolocation", and §4.1; Andrés, Bordenabe, Chatzikokolakis, Palamidessi, *Geo-indistinguishability*,
CCS 2013, cited by ElSalamouny et al. 2014 §7.2 as [9]). For any x0, x0', x the densities satisfy
D(x0)(x) ≤ e^{ε‖x0 − x0'‖} D(x0')(x), so the mechanism is ε·d₂-private (ε-geo-indistinguishable,
ElSalamouny et al. 2014 §3.3).

In polar coordinates around x0 the angle θ is uniform on [0, 2π) and the radius has density
ε² r e^{−εr} (a Gamma(2, 1/ε) law) with CDF C_ε(r) = 1 − (1 + εr) e^{−εr}; its inverse is
r = −(1/ε) (W₋₁((p − 1)/e) + 1), W₋₁ the branch −1 of the Lambert W function (CCS 2013 §4).

**Sampling without floating-point leaks.** The textbook sampler (θ and r = C_ε^{-1}(p) in float64) releases
floats whose low-order bits depend on the input: of 300 outputs drawn at (1, 0) with ε = 1, only about 3%
can be produced at all from (0, 0) (Mironov's reachability test, CCS 2012), so it is not private as
released. :func:`planar_laplace_sample` therefore draws the *discrete* planar Laplace on a lattice ΛZ²
exactly (:mod:`dprivacy.sampling.planar`), which is exactly ε·d₂-private between lattice points; the
float sampler survives only in the tests, as their negative control.

On a finite grid the mechanism is discretized and truncated: the noisy point is remapped to the
nearest cell of the grid, so cell z receives the mass of its square (side ``step``) for interior z,
and of that square extended to infinity outward for boundary z (ElSalamouny et al. 2014 §7.2). Integrating the
pointwise ε-private density over any region keeps the ratio bound, and the remap is post-processing,
so the exact channel is ε·d₂-private between cell centres without any adjustment of ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.special import lambertw

from .._validate import check_epsilon
from ..channels import Channel
from ..spaces import GridSpace
from ._quadrature import log_rectangle_masses, radial_cdf, rectangle_masses
from .base import Mechanism, by_construction

#: Angular resolution of the sampler: θ = 2π·U with U a float64 uniform on [0, 1) on a 2^-53 lattice.
SAMPLER_DELTA_THETA = 2.0 * math.pi * 2.0**-53

_ADJUST = ("none", "ccs")


def _as_points(points) -> np.ndarray:
    try:
        p = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"points must be an array of (x, y) coordinates: {exc}") from None
    if p.ndim not in (1, 2) or p.shape[-1] != 2:
        raise ValueError(f"points must have shape (k, 2) or (2,), got shape {p.shape}")
    if not np.isfinite(p).all():
        raise ValueError("points must be finite (got NaN or infinity)")
    return p


def planar_laplace_radius(p, *, epsilon: float) -> np.ndarray:
    """Inverse of the radial CDF C_ε(r) = 1 − (1 + εr) e^{−εr}: r = −(W₋₁((p − 1)/e) + 1)/ε (CCS 2013 §4).

    ``p`` in [0, 1) (any shape); the real part of ``scipy.special.lambertw(·, k=-1)`` is used (the
    imaginary part is 0 on (−1/e, 0)), except for p < 1e-4, near the branch point, where a series
    polished by Newton's method keeps full relative precision.

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §6.2.
    """
    e = check_epsilon(epsilon)
    p = np.atleast_1d(np.asarray(p, dtype=np.float64))
    bad = (p < 0) | (p >= 1) | ~np.isfinite(p)
    if bad.any():
        raise ValueError(f"p must lie in [0, 1); got {p[bad].ravel()[0]!r} ({int(bad.sum())} value(s) out of range)")
    rho = -(lambertw((p - 1.0) / math.e, k=-1).real + 1.0)  # ρ = εr
    # Near the branch point −1/e, (p − 1)/e has lost the digits of p and scipy's W₋₁ is inaccurate
    # (relative error ~1e-12 at p = 1e-4, NaN at p = 0 where the rounded argument falls below −1/e).
    # For p < 1e-4 start from the branch-point series of W₋₁ in s = √(2p) (p = 1 + e·z exactly);
    # for p < 1/2 polish by Newton on the accurately computed CDF F(ρ) = p.
    # (For p ≥ 1/2 W₋₁ is accurate and Newton would not help: F is flat there and p itself only
    # resolves ρ to ~1e-16/(ρe^{−ρ}).)
    rho = np.where(np.isnan(rho), 0.0, rho)
    small = p < 1e-4
    s = np.sqrt(2.0 * p[small])
    rho[small] = s * (1 + s * (1 / 3 + s * (11 / 72 + s * (43 / 540 + s * 769 / 17280))))
    polish = (p < 0.5) & (rho > 0)
    r0, pp = rho[polish], p[polish]
    for _ in range(3):
        r0 = r0 - (radial_cdf(r0) - pp) / (r0 * np.exp(-r0))
    rho[polish] = r0
    return np.maximum(rho, 0.0) / e


def planar_laplace_lattice(epsilon: float, lattice: float | None = None):
    """The exact discrete planar Laplace sampler for ε (per unit length) on the lattice ΛZ²
    (:class:`dprivacy.sampling.planar.LatticeLaplace`); Λ defaults to the power of two nearest below
    2^-20/ε (about a millionth of the mean displacement 2/ε)."""
    from ..sampling.planar import LatticeLaplace, default_lattice

    e = check_epsilon(epsilon)
    return LatticeLaplace.build(e, default_lattice(e) if lattice is None else lattice)


def planar_laplace_sample(points, *, epsilon: float, rng=None, lattice: float | None = None) -> np.ndarray:
    r"""Add planar Laplace noise to each location without floating-point leaks: the exact discrete
    planar Laplace on the lattice ΛZ² (Chatzikokolakis et al. 2013 §6.2 on a lattice).

    Each point is first rounded to the nearest point x̄ of ΛZ² (Λ a power of two, so x̄ and every output
    are exact doubles), then x̄ + ΛZ is released with P(Z = z) ∝ exp(−ε‖Λz‖₂) exactly
    (:mod:`dprivacy.sampling.planar`: rejection from block geometrics with every decision exact; no
    float value decides a draw). Outputs lie on the fixed lattice ΛZ² whatever the input, and every
    lattice point is a possible output of every input, so no output singles out an input (the
    reachability test of Mironov, CCS 2012).

    **Guarantee.** For inputs on the lattice, P(y | x) ≤ e^{ε‖x − x'‖} P(y | x') for every y, exactly
    (the normaliser Σ_z e^{−ε‖Λz‖} does not depend on x): ε·d₂-privacy with the ε given, no rounding of
    ε. For arbitrary inputs the rounding moves each point by at most Λ/√2, so
    P(y | x) ≤ e^{ε(‖x − x'‖ + √2·Λ)} P(y | x'): an additive slack ε·√2·Λ (≈ 1.35·10⁻⁶ with the default
    Λ ≈ 2^-20/ε).

    Parameters
    ----------
    points : array_like, shape (k, 2) or (2,)
        True locations (Euclidean coordinates, in the units in which ε is per unit length).
    epsilon : float
        Privacy level per unit distance, > 0.
    rng : None, int seed or numpy Generator
        Source of randomness (None is the release-grade source: :func:`~dprivacy.sampling.source.release_source`).
    lattice : float, optional
        Λ, a power of two (default: :func:`planar_laplace_lattice`'s). ε·Λ must lie in [2^-50, 64].

    Returns
    -------
    numpy.ndarray, same shape as ``points``
        x̄ + ΛZ. Mean error E‖ΛZ‖ = 2/ε up to a relative O((εΛ)²).

    References
    ----------
    .. [1] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §6.2 (geolocation).
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §3.3.
    """
    from ..sampling import as_generator

    pts = _as_points(points)
    spec = planar_laplace_lattice(epsilon, lattice)
    lam = spec.lattice
    flat = pts.reshape(-1, 2)
    steps = np.rint(flat / lam)
    if np.abs(steps).max(initial=0.0) >= 2.0**52:
        raise ValueError(f"points up to {np.abs(flat).max():.6g} are too large for the lattice Λ = {lam:.3g} in float64 "
                         "(|coordinate| must be below 2^52·Λ; choose a coarser lattice)")
    z1, z2 = spec.offsets(flat.shape[0], as_generator(rng))
    out = (steps + np.stack([z1, z2], axis=1).astype(np.float64)) * lam  # exact while |steps + z| < 2^53
    return out.reshape(pts.shape)


def nearest_cell(points, space: GridSpace) -> np.ndarray:
    """Index of the grid cell nearest to each point (truncation = remap to the nearest cell).

    Cell (col, row) has centre (col·step, row·step) and index row·width + col. The nearest grid point
    to a point outside the grid is found by clamping each coordinate, since the grid is a product set.
    """
    if not isinstance(space, GridSpace):
        raise TypeError(f"space must be a GridSpace (spaces.grid), got {type(space).__name__}")
    pts = _as_points(points).reshape(-1, 2)
    col = np.clip(np.rint(pts[:, 0] / space.step), 0, space.width - 1).astype(np.intp)
    row = np.clip(np.rint(pts[:, 1] / space.step), 0, space.height - 1).astype(np.intp)
    return row * space.width + col


def ccs_adjusted_epsilon(epsilon: float, *, step: float, r_max: float, delta_theta: float = SAMPLER_DELTA_THETA) -> float:
    """The ε' at which to *sample* so that the discretized, finite-precision planar Laplace is ε-private.

    CCS 2013 (§4, discretization and truncation; the theorem relating u, r_max, δθ and q): with grid
    unit u (= ``step``), angular precision δθ, r_max the largest distance between an input and an
    output (the diameter of the truncation region) and q = u / (r_max δθ) > 1,

        ε' = ε − (1/u) ln((q + 2 e^{εu}) / (q − 1)).

    **Provenance**: the statement could not be retrieved through the project's search tools; the
    formula is quoted from memory of the CCS paper. Its shape is what a Riemann-sum argument gives
    (a cell within r_max subtends at least q angular steps; partially covered steps at the two sides
    of the cell and the variation e^{εu} of the radial mass across the cell give the factor
    (q + 2e^{εu})/(q − 1), absorbed at distance ≥ u by ε − ε'). Where the paper writes e^{ε'u},
    this form with e^{εu} ≥ e^{ε'u} gives a smaller, i.e. safer, ε'. For double-precision angles
    (δθ = 2π·2^-53) and any realistic grid, ε − ε' is below 1e-12.

    Raises
    ------
    ValueError
        If q ≤ 1 (the angular precision is too coarse for the grid) or the resulting ε' ≤ 0.
    """
    e = check_epsilon(epsilon)
    u = check_epsilon(step, name="step")
    rmax = check_epsilon(r_max, name="r_max")
    dt = check_epsilon(delta_theta, name="delta_theta")
    q = u / (rmax * dt)
    if q <= 1.0:
        raise ValueError(f"q = step/(r_max·delta_theta) = {q:.6g} must exceed 1 (step={u}, r_max={rmax}, delta_theta={dt})")
    # log1p form: (q + 2e^{εu})/(q − 1) = 1 + (2e^{εu} + 1)/(q − 1), so ε − ε' keeps its digits.
    eps_prime = e - math.log1p((2.0 * math.exp(e * u) + 1.0) / (q - 1.0)) / u
    if eps_prime <= 0.0:
        raise ValueError(f"no positive ε' exists for epsilon={e}, step={u}, r_max={rmax}, delta_theta={dt} (got {eps_prime:.6g})")
    return eps_prime


@dataclass(frozen=True)
class PlanarLaplaceGrid:
    """The planar Laplace channel on a grid with its provenance and error estimate.

    Attributes
    ----------
    channel : Channel
        n×n, entry [x, z] the probability that the mechanism centred at cell x's centre is remapped to z.
    epsilon : float
        The privacy level requested.
    epsilon_used : float
        The ε at which the continuous density was integrated (ε itself for ``adjust="none"``, ε' for
        ``adjust="ccs"``).
    max_abs_error : float
        Estimated largest absolute error of an entry (Gauss–Legendre error estimate plus rounding in the
        signed edge sums; see ``_quadrature``).
    max_rel_error : float
        Estimated largest relative error of a non-zero entry (of every entry, from its logarithm, where
        ``log_matrix`` is given).
    log_matrix : ndarray or None
        n×n natural logarithms of the entries, given when some entry is below the smallest normal float64
        (ε × distance ≳ 700): the channel then holds them as 0 (or subnormal), and only the logarithms,
        exact to the quadrature's relative error, show the mechanism private.
    """

    channel: Channel
    epsilon: float
    epsilon_used: float
    max_abs_error: float
    max_rel_error: float
    log_matrix: np.ndarray | None = None


def _epsilon_used(space: GridSpace, e: float, adjust: str) -> float:
    """ε itself, or for ``adjust="ccs"`` the ε' of :func:`ccs_adjusted_epsilon` with u = step and r_max
    the grid's diameter."""
    if adjust != "ccs":
        return e
    step = space.step
    return ccs_adjusted_epsilon(e, step=step, r_max=max(step * math.hypot(space.width - 1, space.height - 1), step))


def _axis_intervals(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct remap intervals along one axis, in steps relative to the source, and their index.

    For source i and output k among n cells, cell k collects [k − i − ½, k − i + ½], extended to −∞
    for k = 0 and to +∞ for k = n − 1. Returns (intervals (m, 2), index (n, n) [i, k] → interval).
    """
    i = np.arange(n)[:, None]
    k = np.arange(n)[None, :]
    lo = np.where(k == 0, -np.inf, k - i - 0.5)
    hi = np.where(k == n - 1, np.inf, k - i + 0.5)
    uniq, inv = np.unique(np.stack([lo, hi], axis=-1).reshape(-1, 2), axis=0, return_inverse=True)
    return uniq, inv.reshape(n, n)


def _axis_intervals_for(source: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_axis_intervals` for the given sources only: (distinct intervals, index (k, n))."""
    k = np.arange(n)[None, :]
    i = np.asarray(source)[:, None]
    lo = np.where(k == 0, -np.inf, k - i - 0.5)
    hi = np.where(k == n - 1, np.inf, k - i + 0.5)
    uniq, inv = np.unique(np.stack([lo, hi], axis=-1).reshape(-1, 2), axis=0, return_inverse=True)
    return uniq, inv.reshape(i.shape[0], n)


def planar_laplace_grid(space: GridSpace, *, epsilon: float, adjust: str = "none") -> PlanarLaplaceGrid:
    """The planar Laplace mechanism on a grid, truncated by remapping to the nearest cell, computed exactly.

    Entry [x, z] is the probability that the continuous planar Laplace centred at cell x's centre lands
    in the region remapped to cell z: z's square of side ``step`` for interior z, extended to infinity
    outward for boundary z (ElSalamouny et al. 2014 §7.2, the comparison of Fig 7; Chatzikokolakis et al. 2013 §6.2). Masses are computed
    by deterministic Gauss–Legendre quadrature of one-dimensional edge integrals (the region's mass is a
    signed sum over its edges of triangle masses (1/2π)∫F(R(θ))dθ, F(R) = 1 − e^{−R}(1 + R)); no Monte
    Carlo. Interior masses depend only on the offset between cells, and boundary masses only on the
    offset and the distance to the boundary, so each distinct region is integrated once.

    Parameters
    ----------
    space : GridSpace
        A W×H grid (``spaces.grid``); only its geometry (width, height, step) is used. The guarantee is
        ε·d₂ (Euclidean); on a Manhattan grid it implies ε·d₁-privacy too (d₁ ≥ d₂), not so on Chebyshev.
    epsilon : float
        Privacy level per unit distance, > 0.
    adjust : {"none", "ccs"}
        ``"none"`` (default): integrate at ε. The exact channel is ε·d₂-private as it stands
        (integration of a pointwise ε-private density, then post-processing), so no adjustment is due.
        ``"ccs"``: integrate at the ε' of :func:`ccs_adjusted_epsilon` (u = step, r_max = the grid's
        diameter, δθ = the sampler's angular resolution) — the channel of the CCS 2013 *sampled*
        mechanism, which needs ε' < ε because it draws angles with finite precision. ElSalamouny et al. 2014 §7.2 says
        the discretized, truncated mechanism is private "for a slightly adjusted ε"; for double
        precision the adjustment is below 1e-12·ε, invisible in Fig 7.

        Which one the papers used: the adjustment belongs to CCS 2013's *sampling* algorithm. For a
        channel *matrix* (what Fig 7 of ElSalamouny et al. 2014 compares) the authors' own code — ``libqif``
        (github.com/chatziko/libqif, ``src/planar_laplace.cpp``) and a stand-alone C++ program (found by
        code search, repository not identified) whose main loop is exactly Fig 7's sweep (ε = 0.4 …
        1.3 by 0.02, 100×100 grid, step 1, uniform prior, tight-constraints vs planar Laplace) —
        integrates the density at ε itself (GSL MISER Monte Carlo, 50 000 calls per cell) and clamps
        outputs to the grid, i.e. ``adjust="none"`` up to Monte Carlo error. That is the sound choice
        for an exactly computed channel, hence the default.

    Returns
    -------
    PlanarLaplaceGrid
        The channel, the ε used, and an error estimate (relative error of entries ≲ 1e-13, ~1e-15
        typically, for ε·step from 1e-9 to 1e3; rows sum to 1 within ~1e-15).

    Notes
    -----
    Cost: O(W·H) regions are integrated, then the n×n matrix is filled by table look-up (n = W·H).
    Measured on the shared 2-core machine: 20×20 in ~0.07 s, 50×50 in ~0.4 s, 100×100 (a 10 000 ×
    10 000 matrix, 800 MB) in ~5 s, most of it writing the matrix. Entries whose mass is below the
    smallest double (ε × distance ≳ 700) underflow to 0; such a channel cannot be certified by
    :func:`dprivacy.measures.check_privacy` in float64, although the mechanism is private: their logarithms
    are then computed too (``log_matrix``), and :func:`planar_laplace_channel` holds the mechanism by them.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.2, Fig 7.
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §6.2.
    """
    if not isinstance(space, GridSpace):
        raise TypeError(f"space must be a GridSpace (spaces.grid), got {type(space).__name__}")
    if space.metric not in ("euclidean", "manhattan"):
        # ε·d₂-privacy implies ε·d-privacy only where d ≥ d₂ (Euclidean, Manhattan); the Chebyshev distance
        # is shorter off the axes, and the channel failed the check (smallest ε 1.41 at ε = 1 on 6×6)
        raise ValueError(f"planar Laplace is ε·d₂-private, which is not ε·d-private on a {space.metric} grid (its "
                         f"distances are shorter than the Euclidean ones off the axes): use a euclidean or manhattan grid, "
                         "or ε/√2 for the Chebyshev metric (d₂ ≤ √2·d∞)")
    e = check_epsilon(epsilon)
    if adjust not in _ADJUST:
        raise ValueError(f"adjust must be one of {', '.join(map(repr, _ADJUST))}; got {adjust!r}")
    w, h, step = space.width, space.height, space.step
    e_used = _epsilon_used(space, e, adjust)
    unit = e_used * step  # lengths in steps → scaled units (density (1/2π)e^{−‖z‖})
    if space.n > 1:
        from .._validate import check_scaled_epsilon

        check_scaled_epsilon(unit, what=f"planar Laplace at ε = {e:g}")

    ux, ix = _axis_intervals(w)
    uy, iy = _axis_intervals(h)
    # Every (y-interval, x-interval) rectangle, integrated once: table[a, b] for y-interval a, x-interval b.
    yy, xx = np.meshgrid(np.arange(uy.shape[0]), np.arange(ux.shape[0]), indexing="ij")
    mass, err = rectangle_masses(
        ux[xx.ravel(), 0] * unit, ux[xx.ravel(), 1] * unit, uy[yy.ravel(), 0] * unit, uy[yy.ravel(), 1] * unit
    )
    table = mass.reshape(uy.shape[0], ux.shape[0])
    small = mass < np.finfo(np.float64).tiny  # 0 or subnormal: the entry's relative precision is lost
    normal = ~small  # (subnormal masses have no relative precision: their logarithms are computed below)
    rel = float(np.max(err[normal] / mass[normal])) if normal.any() else 0.0
    log_table = None
    if small.any():
        # far cells whose mass underflows (ε·distance ≳ 700): their logarithms, from the same edge sums taken
        # relative to e^{−R₀}; a cell that far never contains the centre
        with np.errstate(divide="ignore"):
            logm = np.log(mass)
        sx, sy = xx.ravel()[small], yy.ravel()[small]
        logm[small], rel_small = log_rectangle_masses(ux[sx, 0] * unit, ux[sx, 1] * unit, uy[sy, 0] * unit, uy[sy, 1] * unit)
        rel = max(rel, float(rel_small.max()))
        log_table = logm.reshape(table.shape)

    n = w * h
    out = np.empty((h, w, h, w), dtype=np.float64)  # [source row, source col, output row, output col]
    out_log = None if log_table is None else np.empty((h, w, h, w), dtype=np.float64)
    cols = ix[:, None, :]
    for j in range(h):
        out[j] = table[iy[j][None, :, None], cols]
        if out_log is not None:
            out_log[j] = log_table[iy[j][None, :, None], cols]
    channel = Channel._trusted(out.reshape(n, n), inputs=space.labels, outputs=space.labels)
    return PlanarLaplaceGrid(channel, e, e_used, float(err.max()), rel,
                             None if out_log is None else out_log.reshape(n, n))


def planar_laplace_channel(space: GridSpace, *, epsilon: float, adjust: str = "none"):
    """The planar Laplace mechanism on a grid, as a :class:`~dprivacy.mechanisms.base.DenseMechanism`
    (the channel of :func:`planar_laplace_grid`).

    Private by construction: the continuous planar Laplace mechanism is ε·d₂-private (Chatzikokolakis et al. 2013 §6.2;
    Andrés et al. CCS 2013) and snapping its report to the nearest cell is post-processing. The stored
    matrix is computed by quadrature; its largest relative error is in ``details``.
    See :func:`planar_laplace_grid` for the construction, the meaning of ``adjust`` and the error bound.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.2, Fig 7.
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §6.2.
    """
    from .base import built, built_from_log

    g = planar_laplace_grid(space, epsilon=epsilon, adjust=adjust)
    # where entries underflow, the mechanism is held by their logarithms (a LogMechanism): its float64 matrix
    # has zeros beside positive entries and is not private as stored, although the mechanism is
    make = built if g.log_matrix is None else built_from_log
    return make(g.channel.matrix if g.log_matrix is None else g.log_matrix, space, epsilon=epsilon, name="planar-laplace",
                 reason=("planar Laplace at ε' = {:.12g} (ε·d₂-private, Chatzikokolakis et al. 2013 §6.2) snapped to the nearest cell "
                         "(post-processing); matrix by quadrature, estimated relative error ≤ {:.2g}").format(g.epsilon_used, g.max_rel_error),
                 details={"quadrature_max_abs_error": g.max_abs_error, "quadrature_max_rel_error": g.max_rel_error})


def grid_lattice(epsilon: float, step: float):
    """(K, sampler) for the exact grid sampler: the lattice (step/K)Z² with K odd (so no lattice point
    lies on a cell boundary) and about 2^10 lattice steps per noise scale, and the exact discrete planar
    Laplace on it at the rate a' = the largest double ≤ ε·step/K (delivered ε' = a'K/step ≤ ε)."""
    from ..sampling.planar import MIN_RATE, LatticeLaplace

    exact = Fraction(float(epsilon)) * Fraction(float(step))
    k = 2 * math.ceil(512 * max(1.0, float(exact))) + 1
    if exact / k < 2 * MIN_RATE:
        k = 1
    if exact / k < MIN_RATE:
        raise ValueError(f"ε·step = {float(exact):.3g} is too small: the noise would span more than 2^50 cells")
    from ..sampling.planar import _float_down

    rate = _float_down(exact / k)
    return k, LatticeLaplace.from_rate(rate, epsilon=float(Fraction(rate) * k / Fraction(float(step))), lattice=float(step) / k)


class PlanarLaplaceGridMechanism(Mechanism):
    r"""The planar Laplace mechanism on a grid, snapped to the nearest cell, held implicitly.

    Secret cell y reports the cell nearest to y's centre + N (Chatzikokolakis et al. 2013 §6.2; ElSalamouny et al. 2014 §7.2: truncation by
    remapping to the nearest cell, clamped to the grid). **Sampling is exact and leak-free**: N is the
    discrete planar Laplace on the lattice (step/K)Z² (K odd, about 2^10 lattice steps per noise scale
    1/ε), P(N = v) ∝ e^{−ε'‖v‖}, drawn with integer-exact decisions (:mod:`dprivacy.sampling.planar`);
    cell centres are lattice points, so the sampled channel is exactly ε'·d₂-private between cell
    centres (translation invariance; nearest cell and clamping are post-processing), with
    ε' = a'K/step ≤ ε the delivered ε (a' the double just below ε·step/K: ε − ε' < 2^-52·ε). Every cell
    has positive probability from every secret, and no matrix is needed: a million cells sample as fast
    as nine. :meth:`rows` (and the dense :attr:`channel` on demand) are the masses of the *continuous*
    planar Laplace at ε' by quadrature — what the measures and the remap use; the sampled lattice law
    equals them up to the lattice's Riemann-sum error, a relative O((ε·step/K)²) ≈ 10⁻⁶ or less.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.2.
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §6.2.
    """

    def __init__(self, space: GridSpace, *, epsilon: float, adjust: str = "none"):
        if not isinstance(space, GridSpace):
            raise TypeError(f"space must be a GridSpace (spaces.grid), got {type(space).__name__}")
        e = check_epsilon(epsilon)
        if adjust not in _ADJUST:
            raise ValueError(f"adjust must be one of {', '.join(map(repr, _ADJUST))}; got {adjust!r}")
        k, lat = grid_lattice(_epsilon_used(space, e, adjust), space.step)
        self.lattice_k, self.lattice_sampler = k, lat
        self.epsilon_used = lat.epsilon
        reason = (f"exact discrete planar Laplace on the lattice (step/{k})Z² at ε' = {lat.epsilon:.17g} ≤ ε (exactly "
                  "ε'·d₂-private between cell centres, which are lattice points; Chatzikokolakis et al. 2013 §6.2 on a lattice), snapped to "
                  "the nearest cell (post-processing, ElSalamouny et al. 2014 §7.2); sampled with integer-exact decisions, every cell "
                  "reachable from every secret")
        Mechanism.__init__(self, space, epsilon=e, name="planar-laplace-grid", certificate=by_construction(epsilon=e, reason=reason),
                           n_outputs=space.n, details={"epsilon_used": lat.epsilon, "adjust": adjust, "lattice_per_cell": k})

    @property
    def exact_sampler(self):
        """The sampler's description for reports (:meth:`sampler_info`)."""
        return _GridSamplerInfo(self)

    def rows(self, secrets) -> np.ndarray:
        """Exact rows at ε' by quadrature (Gauss–Legendre edge integrals, relative error ≲ 1e-13)."""
        g = self.space
        idx = np.asarray(secrets)
        if not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"secret index must be an integer, got {secrets!r}")
        flat = idx.reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= g.n):
            raise ValueError(f"secret index must lie in 0..{g.n - 1}, got {secrets!r}")
        w, h = g.width, g.height
        unit = self.epsilon_used * g.step
        row, col = np.divmod(flat, w)
        # Along each axis the remap interval of output k from source i depends only on (k − i) and on
        # whether k is a boundary cell, so the requested rows use about 2W + 2H distinct intervals and
        # about 4n distinct rectangles: integrate each once, then look the rows up.
        ux, ix = _axis_intervals_for(col, w)
        uy, iy = _axis_intervals_for(row, h)
        yy, xx = np.meshgrid(np.arange(uy.shape[0]), np.arange(ux.shape[0]), indexing="ij")
        mass, _ = rectangle_masses(ux[xx.ravel(), 0] * unit, ux[xx.ravel(), 1] * unit,
                                   uy[yy.ravel(), 0] * unit, uy[yy.ravel(), 1] * unit)
        table = mass.reshape(uy.shape[0], ux.shape[0])
        out = table[iy[:, :, None], ix[:, None, :]]  # (k, h, w)
        out = out.reshape(flat.size, g.n)
        return out[0] if idx.ndim == 0 else out.reshape(idx.shape + (g.n,))

    @property
    def channel(self) -> Channel:
        ch = getattr(self, "_channel", None)
        if ch is None:
            self._check_dense_fits()
            ch = planar_laplace_grid(self.space, epsilon=self.epsilon_used).channel
            self._channel = ch
        return ch

    def sample_indices(self, secrets, *, rng=None, stats: dict | None = None) -> np.ndarray:
        """The cell nearest to each secret cell's centre plus an exact discrete planar Laplace offset. ``stats``: the
        lattice sampler's counts are added there (``rounds``, ``proposals``, ...: :meth:`~dprivacy.sampling.planar.LatticeLaplace.offsets`;
        the offsets are drawn without the secrets, so these do not depend on them)."""
        from ..sampling import as_generator

        ys = np.asarray(secrets)
        if ys.size and not np.issubdtype(ys.dtype, np.integer):
            raise TypeError(f"secrets must be integer cell indices, got dtype {ys.dtype}")
        if ys.size and (ys.min() < 0 or ys.max() >= self.space.n):
            raise ValueError(f"secret index must lie in 0..{self.space.n - 1}")
        flat = ys.reshape(-1).astype(np.int64)
        if not flat.size:
            return np.zeros(ys.shape, dtype=np.intp)
        w, h = self.space.width, self.space.height
        row, col = np.divmod(flat, w)
        z1, z2 = self.lattice_sampler.offsets(flat.size, as_generator(rng), stats=stats)
        half = (self.lattice_k - 1) // 2  # K odd: the nearest cell offset is ⌊(z + (K−1)/2)/K⌋, no ties
        c = np.clip(col + (z1 + half) // self.lattice_k, 0, w - 1)
        r = np.clip(row + (z2 + half) // self.lattice_k, 0, h - 1)
        return (r * w + c).astype(np.intp).reshape(ys.shape)


class _GridSamplerInfo:
    """What the grid sampler delivers, as ``exact_sampler.to_dict()`` of the dense mechanisms says it."""

    def __init__(self, mech: PlanarLaplaceGridMechanism):
        self.mech = mech
        self.delivered_epsilon = mech.epsilon_used

    def to_dict(self) -> dict:
        m = self.mech
        return {"method": "exact discrete planar Laplace on the lattice (cell/K)Z², K = " f"{m.lattice_k}, snapped to the nearest "
                "cell (every decision exact: float64 with a 2^-40 error bound, Decimal fallback)",
                "delivered_epsilon": m.epsilon_used, "requested_epsilon": m.epsilon,
                "epsilon_slack": m.epsilon_used - m.epsilon, "every_cell_reachable": True,
                "rows_used_by_measures": "continuous planar Laplace masses at the delivered ε by quadrature (differ from "
                                         "the lattice law by a relative O((ε·cell/K)²))"}


def planar_laplace_grid_mechanism(space: GridSpace, *, epsilon: float, adjust: str = "none"):
    """The planar Laplace mechanism on a grid as an implicit :class:`~dprivacy.mechanisms.base.Mechanism`
    (no n×n matrix; see the class notes): exact lattice sampling snapped to the nearest cell, rows by
    quadrature, the dense channel on demand. The sampler is exact, so no adjustment of ε is due
    (``adjust="none"``, default); ``"ccs"`` samples at CCS 2013's smaller ε' (kept for comparison).

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), §7.2.
    .. [2] Chatzikokolakis, Andrés, Bordenabe, Palamidessi, *Broadening the
       scope of differential privacy using metrics* (PETS 2013), §6.2.
    """
    return PlanarLaplaceGridMechanism(space, epsilon=epsilon, adjust=adjust)
