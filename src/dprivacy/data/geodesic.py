"""The direct geodesic problem on WGS84 for displacements of up to some tens of kilometres: where does the geodesic
that leaves (φ, λ) with initial tangent vector v = east·ê + north·n̂ end after the length ‖v‖?

Two ways, used together by :func:`dprivacy.data.planar_noise.released_cells`:

- :func:`geodesic_forward`: GeographicLib's solution (Karney 2013, "Algorithms for geodesics") through pyproj,
  accurate to 15 nm at any distance, about 0.3 µs a point.
- :func:`taylor_forward`: the geodesic's Taylor polynomial of degree :data:`TAYLOR_DEGREE` in Earth-centred
  coordinates, with an error estimate, about 0.08 µs a point. On the ellipsoid
  F(x) = xᵀDx = 1, D = diag(a⁻², a⁻², b⁻²), a geodesic x(τ) has its acceleration along the normal Dx, and
  differentiating xᵀDx = 1 twice fixes its size: x'' = −μ Dx with μ = x'ᵀDx' / xᵀD²x (any constant speed; here
  x'(0) = v, so x(1) is the end point at geodesic distance ‖v‖). Writing x(τ) = Σ c_k τ^k, the products
  P = x'ᵀDx' and Q = xᵀD²x are power series whose coefficients are sums of c_iᵀDc_j, μ = P/Q follows by
  series division, and c_{k+2} = −D·Σ_{j≤k} μ_j c_{k−j} / ((k+1)(k+2)). The computation is made in the frame turned
  by −λ about the polar axis (the start on the x–z meridian, east along y), and λ is added back at the end.

The polynomial's terms fall like (‖v‖/R)^k: |c_k| ≤ κ_k‖v‖^k with κ_k R^{k−1} ≈ 1/k! (a sphere's values; over every
latitude and direction of WGS84 the largest are 0.50, 0.17, 0.043, 0.0092, 0.0018 for k = 2…6, on a 0.05° × 0.5°
grid). The remainder of degree 5 is therefore estimated as 2·κ₆‖v‖⁶ (κ₆ taken 1.5× the grid's largest value; the
terms beyond the sixth add less than 1% of it up to :data:`TAYLOR_MAX_M`): 6·10⁻⁹ m at 48 km, 5·10⁻⁷ m at 100 km;
tests compare both ways on random and extreme points (poles, equator, the antimeridian, 100 km) and find the
estimate above the difference everywhere.
"""

from __future__ import annotations

import numpy as np

WGS84_A = 6378137.0
WGS84_F = 1 / 298.257223563
_E2 = WGS84_F * (2 - WGS84_F)
_D1 = 1.0 / WGS84_A**2
_D2 = 1.0 / (WGS84_A * (1 - WGS84_F)) ** 2

#: Degree of the Taylor polynomial of :func:`taylor_forward`.
TAYLOR_DEGREE = 5
#: Bound on |c₆|/‖v‖⁶ over every start and direction (1.5× the largest value on a 0.05° × 0.5° grid, 1.75·10⁻³⁷ m⁻⁵).
TAYLOR_KAPPA6 = 2.62e-37
#: The polynomial is used for displacements up to this (m) at most (:func:`taylor_radius`).
TAYLOR_MAX_M = 100_000.0
#: εr beyond which a planar Laplace displacement has probability below 2⁻⁶³: (1 + 48)e^{−48} = 7·10⁻²⁰.
TAYLOR_RADIUS_EPS = 48.0
#: Bound on the float rounding of :func:`taylor_forward` (a few ulp of Earth-centred coordinates ≈ 10⁶ m), metres.
TAYLOR_FLOAT_ERROR_M = 2e-8
#: Points per chunk of :func:`taylor_forward` (its dozens of temporaries stay in the cache).
TAYLOR_CHUNK = 16384


def taylor_error(r):
    """Estimated distance (m) between :func:`taylor_forward`'s point and the geodesic's for a displacement of ``r``
    metres: 2·κ₆r⁶ plus the float rounding (module docstring)."""
    r = np.asarray(r, dtype=np.float64)
    return 2.0 * TAYLOR_KAPPA6 * r**6 + TAYLOR_FLOAT_ERROR_M


def taylor_radius(epsilon_m: float) -> float:
    """The displacement (m) up to which a release at ε (per metre) takes its end points from the Taylor polynomial:
    :data:`TAYLOR_RADIUS_EPS`/ε, beyond which a displacement has probability below 2⁻⁶³; 0 (GeographicLib for every
    point) when that is beyond :data:`TAYLOR_MAX_M`. A function of ε only, so which points GeographicLib computes
    says nothing of a displacement's length but with that probability."""
    r = TAYLOR_RADIUS_EPS / float(epsilon_m)
    return r if r <= TAYLOR_MAX_M else 0.0


def taylor_forward(lat: np.ndarray, lon: np.ndarray, east: np.ndarray, north: np.ndarray):
    """(lat₂, lon₂, p₂): the end of the geodesic from (lat, lon) (degrees) with initial vector (east, north) (metres
    in the tangent plane) by its Taylor polynomial of degree 5 (module docstring), and p₂ the end point's distance
    (m) from the polar axis. lon₂ is lon plus the turn about the axis (not reduced to [−180°, 180°))."""
    n = np.size(lat)
    out = np.empty(n), np.empty(n), np.empty(n)
    for a in range(0, n, TAYLOR_CHUNK):
        b = min(a + TAYLOR_CHUNK, n)
        for o, v in zip(out, taylor_chunk(lat[a:b], lon[a:b], east[a:b], north[a:b])):
            o[a:b] = v
    return out


def taylor_chunk(lat, lon, e, n):
    """:func:`taylor_forward` on arrays of at most a few :data:`TAYLOR_CHUNK` points (no chunking)."""
    d1, d2 = _D1, _D2
    # sin φ and cos φ from t = tan(φ/2): numpy's tan is vectorised (0.9 ns a point here), its sin and cos are the C
    # library's, one point at a time (8 ns each); the absolute error stays a few ulp, the pole included (1 − t is exact)
    t = np.tan(np.radians(lat) * 0.5)
    q = 1.0 / (1.0 + t * t)
    s, c = (2.0 * q) * t, ((1.0 - t) * (1.0 + t)) * q
    N = WGS84_A / np.sqrt(1.0 - _E2 * s * s)  # prime vertical radius
    X0, Z0 = N * c, (N * (1.0 - _E2)) * s  # c₀ = (X0, 0, Z0); Dc₀ = d₁N(cos φ, 0, sin φ), so Q₀ = (d₁N)²
    dN = d1 * N
    Q0 = dN * dN
    c1x, c1z = -n * s, n * c  # c₁ = v = (−north·sin φ, east, north·cos φ)
    mu0 = (d1 * (c1x * c1x + e * e) + d2 * c1z * c1z) / Q0
    h = 0.5 * mu0 * dN  # c₂ = −μ₀Dc₀/2 = −h(cos φ, 0, sin φ)
    c2x, c2z = -h * c, -h * s
    P1 = 4.0 * (d1 * c1x * c2x + d2 * c1z * c2z)  # 2·(1·2)c₁ᵀDc₂
    Q1 = 2.0 * dN * (d1 * c * c1x + d2 * s * c1z)  # 2c₀ᵀD²c₁ = 2(Dc₀)ᵀDc₁
    mu1 = (P1 - mu0 * Q1) / Q0
    c3x = (-d1 / 6.0) * (mu0 * c1x + mu1 * X0)  # c₃ = −D(μ₀c₁ + μ₁c₀)/6
    c3y = (-d1 / 6.0) * (mu0 * e)
    c3z = (-d2 / 6.0) * (mu0 * c1z + mu1 * Z0)
    P2 = 6.0 * (d1 * (c1x * c3x + e * c3y) + d2 * c1z * c3z) + 4.0 * (d1 * c2x * c2x + d2 * c2z * c2z)
    Q2 = 2.0 * dN * (d1 * c * c2x + d2 * s * c2z) + (d1 * d1 * (c1x * c1x + e * e) + d2 * d2 * c1z * c1z)
    mu2 = (P2 - mu0 * Q2 - mu1 * Q1) / Q0
    c4x = (-d1 / 12.0) * (mu0 * c2x + mu1 * c1x + mu2 * X0)  # c₄ = −D(μ₀c₂ + μ₁c₁ + μ₂c₀)/12
    c4y = (-d1 / 12.0) * (mu1 * e)
    c4z = (-d2 / 12.0) * (mu0 * c2z + mu1 * c1z + mu2 * Z0)
    P3 = 8.0 * (d1 * (c1x * c4x + e * c4y) + d2 * c1z * c4z) + 12.0 * (d1 * c2x * c3x + d2 * c2z * c3z)
    Q3 = 2.0 * dN * (d1 * c * c3x + d2 * s * c3z) + 2.0 * (d1 * d1 * c1x * c2x + d2 * d2 * c1z * c2z)
    mu3 = (P3 - mu0 * Q3 - mu1 * Q2 - mu2 * Q1) / Q0
    c5x = (-d1 / 20.0) * (mu0 * c3x + mu1 * c2x + mu2 * c1x + mu3 * X0)  # c₅ = −D(μ₀c₃ + μ₁c₂ + μ₂c₁ + μ₃c₀)/20
    c5y = (-d1 / 20.0) * (mu0 * c3y + mu2 * e)
    c5z = (-d2 / 20.0) * (mu0 * c3z + mu1 * c2z + mu2 * c1z + mu3 * Z0)
    x = X0 + (c1x + (c2x + (c3x + (c4x + c5x))))  # small terms first
    y = e + (c3y + (c4y + c5y))
    z = Z0 + (c1z + (c2z + (c3z + (c4z + c5z))))
    p = np.sqrt(x * x + y * y)  # (hypot is the C library's, 9 ns a point; no overflow or underflow at 10⁶ m)
    lat2 = np.degrees(np.arctan2(z, (1.0 - _E2) * p))  # exact for a point on the ellipsoid
    lon2 = lon + np.degrees(np.arctan2(y, x))
    return lat2, lon2, p


def geodesic_forward(lon, lat, az, r, *, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """pyproj ``Geod(ellps="WGS84").fwd`` (GeographicLib) over chunks in a thread pool: (lon₂, lat₂) as float64
    arrays, az in degrees from north, r in metres. ``threads``: at most this many (default: the cores); 1 runs it in
    the calling thread."""
    import os

    from pyproj import Geod

    lon, lat, az, r = (np.ascontiguousarray(a, dtype=np.float64) for a in (lon, lat, az, r))
    n = lon.size
    workers = min(threads or os.cpu_count() or 1, -(-n // GEOD_CHUNK))
    if workers <= 1:
        lo2, la2, _ = Geod(ellps="WGS84").fwd(lon, lat, az, r, return_back_azimuth=False)
        return np.asarray(lo2, dtype=np.float64), np.asarray(la2, dtype=np.float64)
    from .._threads import thread_pool

    lon2, lat2 = np.empty(n), np.empty(n)
    bounds = np.linspace(0, n, workers + 1).astype(int)

    def part(i):
        sl = slice(bounds[i], bounds[i + 1])
        lo2, la2, _ = Geod(ellps="WGS84").fwd(lon[sl], lat[sl], az[sl], r[sl], return_back_azimuth=False)
        lon2[sl], lat2[sl] = lo2, la2

    list(thread_pool("geodesic", workers).map(part, range(workers)))
    return lon2, lat2


#: Points per thread of :func:`geodesic_forward` (pyproj releases the GIL, so threads use every core).
GEOD_CHUNK = 131072

#: Smallest radius of curvature of WGS84 (meridional, at the equator), metres.
MIN_CURVATURE_RADIUS_M = WGS84_A * (1 - _E2)
