"""The geodesic's Taylor polynomial (dprivacy.data.geodesic) against GeographicLib, and the release's output cells
(planar_noise.released_cells) against GeographicLib's end points rounded to the same lattice."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyproj import Geod

from dprivacy.data import geodesic, planar_noise
from dprivacy.data.geodesic import TAYLOR_KAPPA6, TAYLOR_MAX_M, geodesic_forward, taylor_error, taylor_forward, taylor_radius
from dprivacy.data.planar_noise import CELL_BAND_M, GEODESIC_ERROR_M, output_lattice, released_cells

A, F = geodesic.WGS84_A, geodesic.WGS84_F
E2 = F * (2 - F)
D = np.array([1 / A**2, 1 / A**2, 1 / (A * (1 - F)) ** 2])


def series(lat, east, north, degree):
    """Taylor coefficients c_0..c_degree of the geodesic x(τ) with x(0) on the ellipsoid at latitude ``lat`` (longitude
    0) and x'(0) = east·ê + north·n̂, from x'' = −μDx, μ = x'ᵀDx'/xᵀD²x, by the general recurrence (written
    independently of the library's unrolled degree-4 formulas)."""
    phi = np.radians(lat)
    s, c = np.sin(phi), np.cos(phi)
    N = A / np.sqrt(1 - E2 * s * s)
    cs = [np.stack([N * c, 0 * s, N * (1 - E2) * s]), np.stack([-north * s, east + 0 * s, north * c])]
    mu, Q = [], []
    Dc = D[:, None] if np.ndim(lat) else D
    for k in range(degree - 1):
        P = sum((i + 1) * (k - i + 1) * (cs[i + 1] * Dc * cs[k - i + 1]).sum(0) for i in range(k + 1))
        Q.append(sum((cs[i] * Dc * Dc * cs[k - i]).sum(0) for i in range(k + 1)))
        mu.append((P - sum(mu[j] * Q[k - j] for j in range(k))) / Q[0])
        cs.append(-Dc * sum(mu[j] * cs[k - j] for j in range(k + 1)) / ((k + 1) * (k + 2)))
    return cs


def geodesic_distance(lat1, lon1, lat2, lon2):
    return Geod(ellps="WGS84").inv(lon1, lat1, lon2, lat2)[2]


def test_the_unrolled_polynomial_is_the_general_recurrence_of_degree_5():
    g = np.random.default_rng(1)
    n = 2000
    lat, r, th = g.uniform(-90, 90, n), g.uniform(0, 100_000, n), g.uniform(0, 2 * np.pi, n)
    east, north = r * np.sin(th), r * np.cos(th)
    la, lo, p = taylor_forward(lat, np.zeros(n), east, north)
    x, y, z = sum(series(lat, east, north, 5))
    assert np.allclose(np.hypot(x, y), p, rtol=0, atol=1e-8)
    assert np.allclose(np.degrees(np.arctan2(z, (1 - E2) * np.hypot(x, y))), la, rtol=0, atol=1e-13)  # 1e-13° ≈ 1.1e-8 m: float rounding
    # the longitude's rounding in metres along the parallel (in degrees it grows as 1/p toward a pole: 5.5e-13° at
    # 89.1°S, 1.2e-10 m)
    assert (np.abs(np.radians(np.degrees(np.arctan2(y, x)) - lo)) * p).max() < 1e-8


def test_kappa6_bounds_the_sixth_coefficient_everywhere():
    lat = np.linspace(-90, 90, 1801)[:, None]
    az = np.radians(np.linspace(0, 360, 361))[None, :]
    r = 1000.0
    lat, east, north = np.broadcast_arrays(lat, r * np.sin(az), r * np.cos(az))
    cs = series(lat.ravel(), east.ravel(), north.ravel(), 7)
    c6 = np.linalg.norm(cs[6], axis=0) / r**6
    c7 = np.linalg.norm(cs[7], axis=0) / r**7
    assert TAYLOR_KAPPA6 >= 1.3 * c6.max()
    # the terms beyond the sixth are below 1% of the sixth's bound up to 100 km (what the factor 2 covers)
    assert c7.max() * TAYLOR_MAX_M < 0.01 * TAYLOR_KAPPA6


def test_the_band_is_far_above_the_polynomials_error_and_the_radius_leaves_a_negligible_tail():
    assert taylor_error(TAYLOR_MAX_M) + GEODESIC_ERROR_M < 0.1 * CELL_BAND_M
    for eps in (1e-5, 4.8e-4, 1e-3, 1.0):
        r = taylor_radius(eps)
        assert r == 0.0 or r <= TAYLOR_MAX_M
        if r:  # P(‖v‖ > r) = (1 + εr)e^{−εr} for the planar Laplace
            assert (1 + eps * r) * np.exp(-eps * r) < 2.0**-63
    assert taylor_radius(4.7e-4) == 0.0  # 48/ε beyond 100 km: GeographicLib for every point


def _points(g, n, max_r):
    lat = np.concatenate([g.uniform(-90, 90, n - 8), [89.99999, -89.99999, 0, 0, 45, -45, 89.9, -60]])
    lon = np.concatenate([g.uniform(-180, 180, n - 8), [0, 179.999999, 179.9999999, -180, -179.9999, 90, 12, 0]])
    r = np.concatenate([g.uniform(0, 1, n // 2) ** 3 * max_r, g.uniform(0, max_r, n - n // 2)])
    th = g.uniform(0, 2 * np.pi, n)
    return lat, lon, r * np.sin(th), r * np.cos(th)


@pytest.mark.parametrize("max_r", [100.0, 20_000.0, 100_000.0])
def test_the_taylor_end_point_is_within_its_error_estimate_of_geographiclib(max_r):
    lat, lon, east, north = _points(np.random.default_rng(2), 200_000, max_r)
    la, lo, _ = taylor_forward(lat, lon, east, north)
    lo_ref, la_ref = geodesic_forward(lon, lat, np.degrees(np.arctan2(east, north)), np.hypot(east, north))
    gap = geodesic_distance(la, lo, la_ref, lo_ref)
    err = taylor_error(np.hypot(east, north))
    assert (gap <= err + GEODESIC_ERROR_M).all()
    # and the estimate is not loose by orders of magnitude at the longest distances
    far = np.hypot(east, north) > 0.5 * max_r
    if max_r >= 20_000:
        assert gap[far].max() > 1e-3 * err[far].max()


def _cells_by_geographiclib(lat, lon, east, north, step):
    lo2, la2 = geodesic_forward(lon, lat, np.degrees(np.arctan2(east, north)), np.hypot(east, north))
    return output_lattice(la2, (lo2 + 180.0) % 360.0 - 180.0, step)


@pytest.mark.parametrize("step", [1e-7, 180 / 2**31, 1e-5])
@pytest.mark.parametrize("max_r", [5_000.0, 150_000.0])
def test_released_cells_are_geographiclibs_cells(step, max_r):
    lat, lon, east, north = _points(np.random.default_rng(3), 300_000, max_r)
    i, j = released_cells(lat, lon, east, north, step, radius_m=TAYLOR_MAX_M)
    i2, j2 = _cells_by_geographiclib(lat, lon, east, north, step)
    assert (i == i2).all() and (j == j2).all()


def _counting(monkeypatch):
    called = []
    real = planar_noise.geodesic_forward

    def counted(lon, *a, **k):
        called.append(len(lon))
        return real(lon, *a, **k)

    monkeypatch.setattr(planar_noise, "geodesic_forward", counted)
    return called


def test_the_points_near_a_boundary_are_computed_by_geographiclib(monkeypatch):
    """With the band widened to 2 mm most points are near a boundary of a 1.1 cm cell: they take the other path, and
    the cells are the same."""
    lat, lon, east, north = _points(np.random.default_rng(4), 50_000, 3_000.0)
    called = _counting(monkeypatch)
    monkeypatch.setattr(planar_noise, "CELL_BAND_M", 2e-3)
    i, j = released_cells(lat, lon, east, north, 1e-7, radius_m=TAYLOR_MAX_M)
    assert 0.2 * lat.size < sum(called) < lat.size
    i2, j2 = _cells_by_geographiclib(lat, lon, east, north, 1e-7)
    assert (i == i2).all() and (j == j2).all()


def test_which_points_geographiclib_computes_does_not_depend_on_the_displacement_length(monkeypatch):
    """An adversarial review found the work per point a function of ‖v‖ (the Taylor polynomial up to 100 km, and an
    error band growing with ‖v‖): two true points 1 m apart whose releases are the same cell took different paths, so
    the run time told whether the true point was within 100 km of the release. The choice now depends on the end point
    (a band of fixed width along the cell boundaries) and, beyond a radius of public ε with probability below 2⁻⁶³,
    on ‖v‖."""
    called = _counting(monkeypatch)
    radius = taylor_radius(1e-3)  # ε = 1/km: 48 km
    lat, lon = 0.3000000025, 10.0
    lon1, lat1, _ = Geod(ellps="WGS84").fwd(lon, lat, 0.0, 1.0)  # x': 1 m north of x, on the same meridian
    runs = []
    for la, lo, v in ((lat, lon, 40_000.5), (lat1, lon1, 40_000.5 - 1.0), (lat, lon, 3.0), (lat1, lon1, 2.0)):
        called.clear()
        cell = released_cells(np.array([la]), np.array([lo]), np.array([0.0]), np.array([v]), 1e-7, radius_m=radius)
        runs.append(((int(cell[0][0]), int(cell[1][0])), sum(called)))
    assert runs[0][0] == runs[1][0] and runs[2][0] == runs[3][0], "setup: pairs with the same released cell"
    assert runs[0][1] == runs[1][1] and runs[2][1] == runs[3][1]


@settings(max_examples=60, deadline=None)
@given(lat=st.floats(-90, 90), lon=st.floats(-180, 180, exclude_max=True), r=st.floats(0, 200_000),
       az=st.floats(0, 360), step=st.sampled_from([1e-7, 1e-6, 180 / 2**31]))
def test_released_cells_match_geographiclib_at_any_point(lat, lon, r, az, step):
    # a small cloud around the drawn point and direction, so that some land near boundaries
    g = np.random.default_rng(abs(hash((lat, lon, r, az))) % 2**32)
    n = 64
    la = np.full(n, lat)
    lo = np.full(n, lon)
    rr = r + g.uniform(-1e-3, 1e-3, n).clip(-r, None)
    a = np.radians(az) + g.uniform(-1e-9, 1e-9, n)
    east, north = rr * np.sin(a), rr * np.cos(a)
    i, j = released_cells(la, lo, east, north, step, radius_m=TAYLOR_MAX_M)
    i2, j2 = _cells_by_geographiclib(la, lo, east, north, step)
    assert (i == i2).all() and (j == j2).all()


def test_the_timing_bound_covers_the_lattice_counts_of_the_band_and_the_inside():
    """Which points GeographicLib computes is the end point's region in its cell: the band of CELL_BAND_M along the
    boundary or the inside. Counted exactly on the noise lattice ΛZ² shifted by random offsets (axis-aligned cells:
    points per interval by floor arithmetic), the counts of each region vary by less than the κ of the sidecar's
    timing bound (computed there with s widened by the geodesic's errors, so it is looser)."""
    from dprivacy.data.planar_noise import NOISE_LATTICE_M, geodesic_guarantee

    lam, b = NOISE_LATTICE_M, CELL_BAND_M
    kappa = np.exp(geodesic_guarantee(1e-3)["timing"]["log_kappa"])

    def count(lo, hi, off):  # lattice points k·Λ + off in [lo, hi)
        return np.floor((hi - off) / lam - 1e-12) - np.floor((lo - off) / lam - 1e-12)

    g = np.random.default_rng(6)
    for h, w in ((0.011, 0.001), (0.011, 0.002), (0.011, 0.0111)):
        ox, oy = g.uniform(0, lam, 2000), g.uniform(0, lam, 2000)
        cell = count(0, w, ox) * count(0, h, oy)
        inside = count(b, w - b, ox) * count(b, h - b, oy)
        band = cell - inside
        for region in (inside, band):
            assert region.max() / region.min() < kappa


def test_the_timing_bound_is_the_releases_when_geographiclib_computes_every_point():
    from dprivacy.data.planar_noise import geodesic_guarantee

    slow = geodesic_guarantee(1e-4)  # 48/ε = 480 km: every point GeographicLib's
    assert slow["timing"]["sigma"] == slow["sigma"]
    fast = geodesic_guarantee(1e-3)
    assert fast["sigma"] < fast["timing"]["sigma"] < fast["sigma"] + 0.01
