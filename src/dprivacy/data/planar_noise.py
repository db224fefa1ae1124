"""The noise of a location release and the figures of its guarantee: the exact discrete planar Laplace on a
lattice of the true point's tangent plane, applied along the WGS84 geodesic and rounded to a fixed output lattice.
The mechanism and its guarantee are set out in :mod:`dprivacy.data.locations`, which re-exports these names."""

from __future__ import annotations

import math

import numpy as np

from .geodesic import GEOD_CHUNK, WGS84_A, WGS84_F, geodesic_forward  # noqa: F401 (re-exported)


#: Lattice of reported coordinates, in degrees (≈ 1.1 cm of latitude).
DEFAULT_PRECISION_DEG = 1e-7

#: Step (metres) of the noise lattice in the true point's tangent plane (a power of two): 2^-22 m ≈ 0.24 µm.
NOISE_LATTICE_M = 2.0**-22
#: No cell of the output lattice is narrower (east–west) than this: its longitude step doubles toward the poles.
MIN_CELL_WIDTH_M = 1e-3
#: At most this many doublings; rows that would need more (within ~560 m of a pole at 1e-7°) are the pole.
MAX_COARSENING = 10
#: Error of the geodesic step and of the coordinates' float rounding (GeographicLib: 15 nm), metres.
GEODESIC_ERROR_M = 2e-8
#: Half the circumference of the Earth (m): a 95% radius beyond it is refused.
HALF_CIRCUMFERENCE_M = math.pi * WGS84_A
#: εr of the 95% quantile of the Gamma(2) radius: r₉₅ = RADIUS95_EPS / ε.
RADIUS95_EPS = 4.743864518390695

UNITS = {"m": 1.0, "km": 1000.0}


def epsilon_per_metre(epsilon: float, unit: str) -> float:
    """ε per metre from ε per ``unit`` (m or km)."""
    from .._validate import check_epsilon

    e = check_epsilon(epsilon)
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    return e / UNITS[unit]


def epsilon_for_accuracy(radius_m: float, probability: float) -> float:
    r"""The ε (per metre) at which the planar Laplace displacement is at most ``radius_m`` with
    probability ``probability``: the solution of C_ε(R) = 1 − e^{−εR}(1 + εR) = p, i.e.
    εR = −W₋₁((p − 1)/e) − 1 with W₋₁ the lower branch of Lambert's W (Chatzikokolakis et al. 2013 §6.2's radial law)."""
    from scipy.special import lambertw

    if not (isinstance(radius_m, (int, float)) and math.isfinite(radius_m) and radius_m > 0):
        raise ValueError(f"accuracy radius must be a positive number of metres, got {radius_m!r}")
    if not (0 < probability < 1):
        raise ValueError(f"accuracy probability must lie strictly between 0 and 1, got {probability!r}")
    t = float(-lambertw((probability - 1.0) / math.e, k=-1).real - 1.0)
    return t / radius_m


def check_sane_epsilon(epsilon_m: float, *, precision_deg: float = DEFAULT_PRECISION_DEG, what: str = "--epsilon") -> float:
    """Refuse an ε (per metre) whose 95% displacement radius r₉₅ = 4.744/ε is below the output lattice
    (about 1.1 cm at 1e-7°: the release would be the true point) or above half the Earth's circumference
    (20,038 km: the release says nothing and geodesics wrap around). Returns r₉₅."""
    r95 = RADIUS95_EPS / epsilon_m
    lattice = math.radians(precision_deg) * WGS84_A * (1 - WGS84_F) ** 2
    if r95 < lattice:
        raise ValueError(f"{what}: ε = {epsilon_m * 1000:.4g} per km puts 95% of the displacements within {r95 * 100:.3g} cm, "
                         f"below the {lattice * 100:.2g} cm output lattice: the release would be the true point (use ε ≤ "
                         f"{RADIUS95_EPS / lattice * 1000:.4g} per km)")
    if r95 > HALF_CIRCUMFERENCE_M:
        raise ValueError(f"{what}: ε = {epsilon_m * 1000:.4g} per km means a 95% displacement radius of {r95 / 1000:,.4g} km, "
                         f"beyond half the Earth's circumference ({HALF_CIRCUMFERENCE_M / 1000:,.0f} km): the release would say "
                         f"nothing (use ε ≥ {RADIUS95_EPS / HALF_CIRCUMFERENCE_M * 1000:.3g} per km)")
    return r95


def parse_accuracy(spec: str) -> tuple[float, float]:
    """'500m@95%' or '2km@0.9' → (radius in metres, probability)."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*(m|km)\s*@\s*([0-9]*\.?[0-9]+)\s*(%?)\s*", spec or "", re.I)
    if not m:
        raise ValueError(f"bad --accuracy {spec!r}: expected RADIUS(m|km)@PROBABILITY, e.g. 500m@95%")
    r = float(m.group(1)) * UNITS[m.group(2).lower()]
    p = float(m.group(3)) / (100.0 if m.group(4) else 1.0)
    return r, p


def planar_laplace_displacements(n: int, *, epsilon: float, generator, lattice: float = NOISE_LATTICE_M,
                                 threads: int = 1, stats: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Distances r (metres, ε per metre) and azimuths θ (degrees) of n planar Laplace displacements, from
    the exact discrete planar Laplace on the lattice ``lattice``·Z² of the tangent plane (:mod:`dprivacy.data.locations`):
    v = (east, north) with P(v) ∝ e^{−ε‖v‖}, r = ‖v‖ and θ = atan2(east, north). r follows Gamma(2, 1/ε)
    up to the lattice (a relative O((εΛ)²)). ``generator``: a numpy Generator or a KeyedStream.
    ``threads``: parts drawn in parallel (:meth:`~dprivacy.sampling.planar.LatticeLaplace.offsets`); a
    seeded draw depends on it, so callers pass a constant (``obfuscate``: :data:`NOISE_PARTS`). ``stats``: the
    sampler's counts are added there (``rounds``, ``proposals``, ...; drawn without the points)."""
    return prepare_displacements(n, epsilon=epsilon, generator=generator, lattice=lattice, threads=threads)(
        stats=stats, parallel=True)


def prepare_displacements(n: int, *, epsilon: float, generator, lattice: float = NOISE_LATTICE_M, threads: int = 1,
                          polar: bool = True):
    """:func:`planar_laplace_displacements` in two steps: the words taken from ``generator`` itself are taken now
    (:meth:`~dprivacy.sampling.planar.LatticeLaplace.prepare`), and the returned ``draw(stats=None, parallel=True)``
    gives (r, az), in any thread and the same whether its parts run in parallel or one after the other. When the
    draw would use ``generator``'s own stream (one part), it is drawn here: the returned call only hands it over.
    ``polar=False``: (east, north) in metres instead (the same draw)."""
    from ..sampling.planar import LatticeLaplace

    if n == 0:
        return lambda stats=None, parallel=True: (np.zeros(0), np.zeros(0))
    prepared = LatticeLaplace.build(epsilon, lattice).prepare(n, generator, threads=threads)

    def draw(stats=None, parallel=True):
        r, az = np.empty(n), np.empty(n)

        def polar_form(a, b, z_east, z_north):  # per chunk, in the sampler's threads
            east, north = z_east * lattice, z_north * lattice  # exact (|z| < 2^53)
            np.hypot(east, north, out=r[a:b])
            np.degrees(np.arctan2(east, north), out=az[a:b])

        def plane_form(a, b, z_east, z_north):  # (r, az) hold east and north
            np.multiply(z_east, lattice, out=r[a:b])
            np.multiply(z_north, lattice, out=az[a:b])

        prepared.run(polar_form if polar else plane_form, stats=stats, parallel=parallel)
        return r, az

    if not prepared.ordered:
        return draw
    counts: dict = {}
    done = draw(stats=counts)  # (on the caller's stream: now, in order)

    def handed(stats=None, parallel=True):
        if stats is not None:
            for k, v in counts.items():
                stats[k] = stats.get(k, 0) + v
        return done

    return handed


def output_lattice(lat: np.ndarray, lon: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Integer indices (i, j) of the output lattice cell of each point: latitude i·step, longitude j·step
    (degrees), a function of the point only. Rows: i = rint(lat/step). Row i's longitude step is
    step·2^k with k the smallest ≥ 0 for which its cells are at least :data:`MIN_CELL_WIDTH_M` wide at
    the row's poleward edge (on a sphere of radius a, a lower bound of the ellipsoid's parallel); j is a
    multiple of 2^k, and ±180° is one cell. Rows that reach a pole, or would need more than
    :data:`MAX_COARSENING` doublings, are the pole: (±90°, j = 0)."""
    i, j, _, _ = _lattice(lat, lon, step)
    return i, j


def _lattice(lat: np.ndarray, lon: np.ndarray, step: float):
    """(i, j, mult, cap) of :func:`output_lattice`: the cells, each row's longitude step in units of ``step``
    (2^k, an int or an array) and whether the row is the pole (None when no row is)."""
    full = int(round(360.0 / step))
    n90 = int(round(90.0 / step))
    if abs(full * step - 360.0) > 1e-9 or abs(n90 * step - 90.0) > 1e-9:
        raise ValueError(f"the output lattice step {step!r}° must divide 90° exactly")
    kmax = min(MAX_COARSENING, (full & -full).bit_length() - 1)  # 2^k must divide the steps around a parallel
    i = np.clip(np.rint(np.asarray(lat, dtype=np.float64) / step), -n90, n90).astype(np.int64)
    if i.size:
        k_all = _uniform_coarsening(int(np.abs(i).min()), int(np.abs(i).max()), step, n90, kmax)
        if k_all is not None:  # every row of the batch has this k and none is capped (the common case)
            mult = 1 << k_all
            j = np.rint(np.asarray(lon, dtype=np.float64) / (step * mult)).astype(np.int64)
            if mult != 1:
                j *= mult
            j[j >= full // 2] -= full
            j[j < -(full // 2)] += full
            return i, j, mult, None
    edge = np.minimum((np.abs(i) + 0.5) * step, 90.0)
    width = math.radians(step) * WGS84_A * np.cos(np.radians(edge))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.ceil(np.log2(MIN_CELL_WIDTH_M / np.where(width > 0, width, np.nan)))
    k = np.where(np.isfinite(k), np.maximum(k, 0.0), np.inf)
    cap = (np.abs(i) >= n90) | (k > kmax)
    mult = np.left_shift(np.int64(1), np.where(cap, 0, k).astype(np.int64))
    j = np.rint(np.asarray(lon, dtype=np.float64) / (step * mult)).astype(np.int64) * mult
    j = np.where(j >= full // 2, j - full, np.where(j < -(full // 2), j + full, j))
    i = np.where(cap, np.sign(i) * n90, i)
    j = np.where(cap, 0, j)
    return i, j, mult, cap


#: Relative margin of :func:`_uniform_coarsening`: far above the float error of the row-by-row computation of
#: MIN_CELL_WIDTH_M / width (a few ulp from cos, log2 and the products, 10⁻¹² of relative error in cos at 1.3 m from
#: a pole, where rows are capped anyway) and far below the spacing of the powers of two it separates.
_COARSENING_MARGIN = 1e-9


def _uniform_coarsening(lo: int, hi: int, step: float, n90: int, kmax: int) -> int | None:
    """The doubling k that :func:`output_lattice` computes for every row i with lo ≤ |i| ≤ hi, when it is the same
    for all of them and none is capped; else None (the caller computes row by row). k = max(0, ⌈log₂ x⌉) with
    x = MIN_CELL_WIDTH_M / width(|i|) increasing in |i| (width ∝ cos of the row's poleward edge): when x at both
    ends lies inside one interval (2^(K−1), 2^K] (K = 0: (0, 1]) with a relative margin of
    :data:`_COARSENING_MARGIN` on both sides, the exact x of every row in between lies inside it by that margin, so
    its float computation, within a few ulp, gives the same k: the result equals the row-by-row one bit for bit."""
    if hi >= n90:
        return None
    edge = np.minimum((np.array([lo, hi], dtype=np.float64) + 0.5) * step, 90.0)
    width = math.radians(step) * WGS84_A * np.cos(np.radians(edge))
    if not (width > 0).all():
        return None
    x = MIN_CELL_WIDTH_M / width
    x_lo, x_hi = float(x.min()), float(x.max())
    m = _COARSENING_MARGIN
    if x_hi <= 1.0 * (1 - m):
        k = 0
    else:
        k = max(0, math.ceil(math.log2(x_hi)))
        if not (2.0 ** (k - 1) * (1 + m) < x_lo and x_hi < 2.0**k * (1 - m)):
            return None
    return k if k <= kmax else None


def _from_lattice(i: np.ndarray, step: float) -> np.ndarray:
    """Degrees of lattice indices: the nearest double to i·10^-d for a decimal step, else i·step."""
    digits = -math.log10(step)
    if abs(digits - round(digits)) < 1e-12 and round(digits) > 0:
        return i / 10.0 ** round(digits)
    return i * step


def geodesic_guarantee(epsilon_m: float, *, precision_deg: float = DEFAULT_PRECISION_DEG,
                       lattice: float = NOISE_LATTICE_M) -> dict:
    """The figures of the released mechanism's guarantee (:mod:`dprivacy.data.locations`): σ = ε·δ + ln κ over the output
    lattice's cells, the curvature coefficient 1/(3R²), and what each covers."""
    e2 = WGS84_F * (2 - WGS84_F)
    step = math.radians(precision_deg)
    h_min = step * WGS84_A * (1 - e2)  # meridian arc of one step at the equator (the smallest)
    h_max = step * WGS84_A / math.sqrt(1 - e2)  # at the poles (the largest)
    w_eq = step * WGS84_A / math.sqrt(1 - e2)  # a parallel step is at most N·step ≤ a/√(1−e²)·step
    w_min = min(MIN_CELL_WIDTH_M, step * WGS84_A)
    s = lattice / math.sqrt(2) + GEODESIC_ERROR_M

    def log_kappa(h, w):
        a, p = h * w, 2 * (h + w)
        if a - p * s <= 0:
            raise ValueError("the noise lattice is too coarse for the output lattice")
        return math.log((a + p * s + math.pi * s * s) / (a - p * s))

    shapes = ((h_min, w_min), (h_min, 2 * w_min), (h_min, step * WGS84_A * (1 - e2)))
    ln_kappa = max(log_kappa(h, w) for h, w in shapes)
    ln_kappa_timing = _timing_log_kappa(shapes, lattice, ln_kappa, epsilon_m)
    delta = math.hypot(h_max, max(w_eq, 2 * MIN_CELL_WIDTH_M))
    r_min = WGS84_A * (1 - e2)  # smallest radius of curvature (meridional, at the equator)
    sigma = epsilon_m * delta + ln_kappa
    r95 = RADIUS95_EPS / epsilon_m
    return {
        "noise": {"law": "exact discrete planar Laplace on the tangent-plane lattice ΛZ², P(v) ∝ exp(−ε‖v‖)",
                  "lattice_m": lattice, "sampler": "rejection from block geometrics; each decision compares a lazily extended "
                  "uniform with the exact threshold (float64 with a 2^-40 error bound, Decimal fallback)"},
        "geodesic": "GeographicLib's direct geodesic on WGS84 (15 nm), through pyproj; the output cell of a point whose "
                    "displacement is within 48/ε and whose Taylor-polynomial end point (degree 5, error below 5e-7 m up to "
                    f"100 km) lies farther than {CELL_BAND_M:g} m from every cell boundary is taken from that end point "
                    "(it is GeographicLib's cell)",
        "output_lattice": {"step_degrees": precision_deg, "min_cell_width_m": MIN_CELL_WIDTH_M,
                           "rule": "longitude step doubled per row toward the poles until cells are ≥ min_cell_width_m wide; "
                                   f"rows needing more than {MAX_COARSENING} doublings are the pole"},
        "bound": "P(y|x) ≤ exp(ε·d + sigma + d·r/(3R²))·P(y|x') for true points x, x' at geodesic distance d (m) and any "
                 "released y within r (m) of both",
        "sigma": sigma, "sigma_terms": {"epsilon_times_cell_diagonal": epsilon_m * delta, "cell_diagonal_m": delta,
                                        "log_kappa": ln_kappa},
        "sigma_is": "rigorous in the true point's tangent plane: lattice points per output cell (area A, perimeter P) lie in "
                    "[(A − P·s)/Λ², (A + P·s + π·s²)/Λ²], s = Λ/√2 + 20 nm; the density varies by e^(ε·δ) over a cell",
        "curvature_per_m": 1.0 / (3.0 * r_min * r_min), "curvature_radius_m": r_min,
        "curvature_is": "first-order difference between the ellipsoid's geodesic polar area element and the plane's "
                        "(sphere model): an approximation, not certified",
        "example": {"r_m": 10 * r95, "epsilon_effective_per_m": epsilon_m + 10 * r95 / (3 * r_min * r_min),
                    "probability_beyond_r": math.exp(-10 * RADIUS95_EPS) * (1 + 10 * RADIUS95_EPS)},
        "every_output_reachable": True,
        "timing": {"sigma": epsilon_m * delta + ln_kappa_timing, "log_kappa": ln_kappa_timing, "band_m": CELL_BAND_M,
                   "is": f"which points GeographicLib computes (and so the run time) is a function of the released cell and of "
                         f"whether the end point lies within {CELL_BAND_M:g} m of its boundary: the same count of lattice "
                         "points per region (the band, the cell's inside; s widened by the Taylor polynomial's error up to "
                         "48/ε) bounds it with sigma in place of the release's; and of a displacement beyond 48/ε, "
                         "probability below 2^-63 a point (every point is GeographicLib's when 48/ε exceeds 100 km)"},
    }


def _timing_log_kappa(shapes, lattice: float, ln_kappa: float, epsilon_m: float) -> float:
    """ln κ of the two regions of a cell that :func:`released_cells` tells apart by its work at ε: the band of
    :data:`CELL_BAND_M` along the boundary and the inside (the whole cell when the inside is empty), with s widened by
    the Taylor polynomial's largest error up to its radius; ``ln_kappa`` (the release's) when GeographicLib computes
    every point."""
    from .geodesic import taylor_error, taylor_radius

    radius = taylor_radius(epsilon_m)
    if not radius:
        return ln_kappa
    s = lattice / math.sqrt(2) + GEODESIC_ERROR_M + float(taylor_error(radius))
    b = CELL_BAND_M
    worst = ln_kappa
    for h, w in shapes:
        if h <= 2 * b or w <= 2 * b:  # (every point of such a cell is GeographicLib's)
            continue
        a_in, p_in = (h - 2 * b) * (w - 2 * b), 2 * (h + w - 4 * b)
        a_band, p_band = h * w - a_in, 2 * (h + w) + p_in
        for a, p in ((a_in, p_in), (a_band, p_band)):
            if a - p * s <= 0:
                raise ValueError("the noise lattice is too coarse for the output lattice's band")
            worst = max(worst, math.log((a + p * s + math.pi * s * s) / (a - p * s)))
    return worst


#: Parts (threads) of the planar noise of one batch in the local engine: measured unloaded on 2 cores,
#: 0.21 µs per point on one thread, 0.12 µs on two (benchmarks/RESULTS.md).
NOISE_PARTS = 2

_geodesic_forward = geodesic_forward  # (the name the data layer has imported it by)


#: Half-width (m) of the band along every output cell boundary inside which an end point's cell is GeographicLib's
#: rather than the Taylor polynomial's (:func:`released_cells`): far above the polynomial's error up to its radius
#: (5·10⁻⁷ m at 100 km) plus GeographicLib's 20 nm, and 420 noise-lattice steps wide, so that which points fall in it
#: obeys a bound like the release's (:func:`geodesic_guarantee`, "timing").
CELL_BAND_M = 1e-4


def released_cells(lat: np.ndarray, lon: np.ndarray, east: np.ndarray, north: np.ndarray, step: float,
                   *, radius_m: float, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The output lattice cells (i, j) (:func:`output_lattice` of ``step`` degrees) of the ends of the geodesics from
    (lat, lon) with initial vectors (east, north) metres: GeographicLib's end points rounded to the lattice. Where the
    displacement is at most ``radius_m`` (public: :func:`~dprivacy.data.geodesic.taylor_radius` of ε; 0: none) the end
    point comes from the geodesic's Taylor polynomial (:func:`~dprivacy.data.geodesic.taylor_forward`, 3–4× faster),
    and its cell is taken when the point lies farther than :data:`CELL_BAND_M` from every boundary of the cell: the
    polynomial's error plus GeographicLib's 20 nm is far below that band, so GeographicLib's end point lies in the same
    cell. GeographicLib (:func:`~dprivacy.data.geodesic.geodesic_forward`, at the azimuth and distance of (east,
    north)) computes the others: those in the band (about 4·10⁻² of them at 10⁻⁷°) and beyond ``radius_m``
    (probability below 2⁻⁶³ each). Which points those are depends on the end point's place in its cell, at a
    resolution of 420 noise-lattice steps, not on the displacement's length. ``threads``: GeographicLib's."""
    from .geodesic import TAYLOR_CHUNK, taylor_chunk, taylor_error

    n = np.size(lat)
    if not radius_m or not taylor_error(radius_m) + GEODESIC_ERROR_M < 0.1 * CELL_BAND_M:
        lo, la = geodesic_forward(lon, lat, np.degrees(np.arctan2(east, north)), np.hypot(east, north), threads=threads)
        return output_lattice(la, (lo + 180.0) % 360.0 - 180.0, step)
    i, j = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    unsure = []
    for a in range(0, n, TAYLOR_CHUNK):  # (chunks whose temporaries stay in the cache)
        b = min(a + TAYLOR_CHUNK, n)
        i[a:b], j[a:b], k = _sure_cells(lat[a:b], lon[a:b], east[a:b], north[a:b], step, radius_m, taylor_chunk)
        unsure.append(k + a)
    k = np.concatenate(unsure) if unsure else np.zeros(0, dtype=np.int64)
    if k.size:  # each row's cells depend on that row only (output_lattice), so these can be computed apart
        e, n_ = east[k], north[k]
        lo, la = geodesic_forward(lon[k], lat[k], np.degrees(np.arctan2(e, n_)), np.hypot(e, n_), threads=threads)
        i[k], j[k] = output_lattice(la, (lo + 180.0) % 360.0 - 180.0, step)
    return i, j


def _sure_cells(lat, lon, east, north, step, radius_m, taylor_chunk):
    """(i, j, unsure) for one chunk of :func:`released_cells`: the cells of the Taylor end points and the positions
    of the points whose cell is left to GeographicLib (within :data:`CELL_BAND_M` of a boundary of its cell, or a
    displacement beyond ``radius_m``)."""
    from .geodesic import MIN_CURVATURE_RADIUS_M

    lat2, lon2, p2 = taylor_chunk(lat, lon, east, north)
    out = (lon2 >= 180.0) | (lon2 < -180.0)
    if out.any():
        lon2[out] = (lon2[out] + 180.0) % 360.0 - 180.0
    i, j, mult, cap = _lattice(lat2, lon2, step)
    t = lat2 / step
    t -= np.rint(t)
    np.abs(t, out=t)
    lat_short = (0.5 - t) * (math.radians(step) * MIN_CURVATURE_RADIUS_M) <= CELL_BAND_M
    u = lon2 / (step * mult)
    u -= np.rint(u)
    np.abs(u, out=u)
    lon_short = (0.5 - u) * (np.radians(step * mult) * p2) <= CELL_BAND_M
    if cap is not None:  # (a pole's cell has one longitude)
        lon_short &= ~cap
    unsure = lat_short | lon_short
    unsure |= ~(east * east + north * north <= radius_m * radius_m)  # (and NaN)
    return i, j, np.flatnonzero(unsure)


def displace(lat: np.ndarray, lon: np.ndarray, r: np.ndarray, az: np.ndarray, *, precision: float = DEFAULT_PRECISION_DEG,
             threads: int | None = None):
    """Move each point r metres along the geodesic in azimuth az on WGS84; round to the output lattice
    of ``precision`` degrees (:func:`output_lattice`; ``precision=0``: no rounding, for tests). ``threads``: of the
    geodesic step (:func:`_geodesic_forward`)."""
    lon2, lat2 = _geodesic_forward(lon, lat, az, r, threads=threads)
    lon2 = (lon2 + 180.0) % 360.0 - 180.0  # into [−180, 180)
    if precision:
        i, j = output_lattice(lat2, lon2, precision)
        lat2, lon2 = _from_lattice(i, precision), _from_lattice(j, precision)
    return lat2, lon2


def gamma2_quantile(q: float) -> float:
    r"""The q-quantile of Gamma(2, 1) (0 < q < 1): the x > 0 with (1 + x)e^{−x} = 1 − q, by Newton's method on
    k(x) = log(1 + x) − x − log(1 − q), which is decreasing and concave for x > 0: after the first step every iterate
    lies right of the root and they decrease to it (stopped when a step no longer decreases x). Relative error a
    few ulp for q ≥ 10⁻³ (below, log(1 + x) − x cancels). Pure Python: the command's summary needs a few
    quantiles, and ``scipy.stats`` takes 0.5–0.9 s to import."""
    if not (0.0 < q < 1.0):
        raise ValueError(f"quantile level must lie strictly between 0 and 1, got {q!r}")
    log_p = math.log1p(-q)
    x = 1.0
    for i in range(200):
        x_new = x + (math.log1p(x) - x - log_p) * (1.0 + x) / x  # x − k(x)/k'(x), k'(x) = −x/(1 + x)
        if i and not x_new < x:
            break
        x = x_new
    return x


def displacement_quantiles(epsilon_m: float, qs=(0.5, 0.9, 0.95, 0.99)) -> dict:
    """Quantiles (metres) of the planar Laplace displacement r ~ Gamma(2, 1/ε) and its mean 2/ε."""
    out = {"mean": 2.0 / epsilon_m}
    out.update({f"p{round(q * 100)}": gamma2_quantile(q) / epsilon_m for q in qs})
    return out
