"""Planar Laplace mechanism (Chatzikokolakis et al. 2013 §6.2; ElSalamouny et al. 2014 §7.2; CCS 2013): sampler and exact grid channel.

Reference values come from code paths independent of the library's edge quadrature: scipy's adaptive
2-D cubature of the density ε²/(2π) e^{−ε‖z‖} in Cartesian coordinates, and the 1-D marginal of the
planar Laplace, f_X(t) = (ε²/π) |t| K₁(ε|t|) (Bessel K₁), integrated with scipy.integrate.quad.
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from dprivacy import spaces
from dprivacy.measures import check_privacy
from dprivacy.mechanisms import _quadrature
from dprivacy.mechanisms.planar_laplace import (
    SAMPLER_DELTA_THETA,
    ccs_adjusted_epsilon,
    nearest_cell,
    planar_laplace_channel,
    planar_laplace_grid,
    planar_laplace_radius,
    planar_laplace_sample,
)


def _cell_region(space, z):
    """The region remapped to cell z, in absolute coordinates (±inf on the boundary)."""
    w, h, s = space.width, space.height, space.step
    col, row = z % w, z // w
    x0 = -np.inf if col == 0 else (col - 0.5) * s
    x1 = np.inf if col == w - 1 else (col + 0.5) * s
    y0 = -np.inf if row == 0 else (row - 0.5) * s
    y1 = np.inf if row == h - 1 else (row + 0.5) * s
    return x0, x1, y0, y1


def _brute_force_mass(space, x, z, epsilon):
    """P(centre of x + noise ∈ region of z) by scipy dblquad on the Cartesian density (pieces split at
    the centre, where the density has a cusp)."""
    w, s = space.width, space.step
    cx, cy = (x % w) * s, (x // w) * s
    x0, x1, y0, y1 = _cell_region(space, z)
    dens = lambda v, u: epsilon**2 / (2 * np.pi) * np.exp(-epsilon * np.hypot(u, v))  # noqa: E731
    xs = sorted({x0 - cx, x1 - cx} | ({0.0} if x0 < cx < x1 else set()))
    ys = sorted({y0 - cy, y1 - cy} | ({0.0} if y0 < cy < y1 else set()))
    total = 0.0
    for a, b in zip(xs[:-1], xs[1:]):
        for c, d in zip(ys[:-1], ys[1:]):
            total += integrate.dblquad(dens, a, b, c, d, epsabs=0.0, epsrel=1e-12)[0]
    return total


# ----------------------------------------------------------------------------------------------
# The exact channel
# ----------------------------------------------------------------------------------------------


@settings(max_examples=30)
@given(
    w=st.integers(1, 9),
    h=st.integers(1, 9),
    epsilon=st.floats(0.02, 8.0),
    step=st.floats(0.1, 10.0),
)
def test_rows_sum_to_one(w, h, epsilon, step):
    space = spaces.grid(w, h, step=step)
    res = planar_laplace_grid(space, epsilon=epsilon)
    H = res.channel.matrix
    assert H.shape == (w * h, w * h)
    assert (H >= 0).all()
    np.testing.assert_allclose(H.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_single_cell_grid_is_the_constant_channel():
    H = planar_laplace_channel(spaces.grid(1, 1), epsilon=0.3).matrix
    assert H.shape == (1, 1) and H[0, 0] == 1.0


@pytest.mark.parametrize(
    "w, h, step, epsilon, pairs",
    [
        # interior source and outputs: own cell, neighbours, a diagonal, a far cell
        (7, 6, 1.5, 0.8, [(15, 15), (15, 16), (15, 23), (15, 22), (8, 33)]),
        # boundary strips and a corner quadrant seen from interior and boundary sources
        (5, 4, 1.0, 1.3, [(6, 9), (6, 0), (6, 19), (0, 0), (12, 4), (0, 14)]),
        # tiny and large ε·step: masses ~1e-6 and ~1e-30
        (4, 4, 1.0, 0.01, [(5, 5), (5, 6), (0, 15)]),
        (4, 4, 2.0, 6.0, [(5, 5), (5, 6), (5, 10), (0, 15)]),
    ],
)
def test_masses_match_brute_force_cubature(w, h, step, epsilon, pairs):
    space = spaces.grid(w, h, step=step)
    res = planar_laplace_grid(space, epsilon=epsilon)
    H = res.channel.matrix
    for x, z in pairs:
        ref = _brute_force_mass(space, x, z, epsilon)
        assert H[x, z] == pytest.approx(ref, rel=1e-10), (x, z)
    # the reported error estimate is small and consistent with these comparisons
    assert res.max_abs_error < 1e-13
    assert res.max_rel_error < 1e-10


@pytest.mark.parametrize("epsilon, step", [(0.5, 1.0), (2.0, 0.7), (0.05, 3.0), (1e-6, 1.0)])
def test_one_row_grid_matches_the_bessel_marginal(epsilon, step):
    """A W×1 grid only sees the x-coordinate: its channel is the 1-D marginal of the planar Laplace,
    f_X(t) = (ε²/π)|t| K₁(ε|t|), integrated over the remap intervals."""
    w = 6
    H = planar_laplace_channel(spaces.grid(w, 1, step=step), epsilon=epsilon).matrix

    def marginal(t):
        t = abs(t)
        return epsilon / np.pi if t == 0 else epsilon**2 / np.pi * t * special.k1(epsilon * t)

    def quad(a, b):
        return integrate.quad(marginal, a, b, epsabs=0, epsrel=1e-13, limit=200)[0]

    def upper(t):  # P(X > t) for t ≥ 0; by symmetry P(X > 0) = 1/2
        return 0.5 - quad(0.0, t) if epsilon * t < 1 else quad(t, np.inf)

    for x in range(w):
        for z in range(w):
            lo = -np.inf if z == 0 else (z - x - 0.5) * step
            hi = np.inf if z == w - 1 else (z - x + 0.5) * step
            if np.isinf(lo) and np.isinf(hi):
                ref = 1.0
            elif np.isinf(lo):
                ref = upper(-hi) if hi <= 0 else 1.0 - upper(hi)
            elif np.isinf(hi):
                ref = upper(lo) if lo >= 0 else 1.0 - upper(-lo)
            else:  # split at the cusp of the density at 0
                ref = quad(lo, 0.0) + quad(0.0, hi) if lo < 0 < hi else quad(lo, hi)
            assert H[x, z] == pytest.approx(ref, rel=1e-10, abs=1e-300), (x, z)


def test_interior_masses_depend_only_on_the_offset():
    w, h = 8, 7
    space = spaces.grid(w, h, step=1.0)
    H = planar_laplace_channel(space, epsilon=0.6).matrix
    col, row = np.arange(w * h) % w, np.arange(w * h) // w
    interior = (col > 0) & (col < w - 1) & (row > 0) & (row < h - 1)
    seen = {}
    for x in range(w * h):
        for z in np.flatnonzero(interior):
            key = (col[z] - col[x], row[z] - row[x])
            seen.setdefault(key, []).append(H[x, z])
    for key, vals in seen.items():
        np.testing.assert_allclose(vals, vals[0], rtol=1e-14, err_msg=str(key))
    # and the offset mass is invariant under the 8 symmetries of the square lattice
    for (dx, dy), vals in seen.items():
        for image in [(-dx, dy), (dx, -dy), (dy, dx), (-dy, -dx)]:
            if image in seen:
                assert seen[image][0] == pytest.approx(vals[0], rel=1e-13)


def test_reflection_symmetry_including_the_boundary():
    w, h = 6, 5
    space = spaces.grid(w, h, step=1.3)
    H = planar_laplace_channel(space, epsilon=0.9).matrix.reshape(h, w, h, w)
    np.testing.assert_allclose(H, H[:, ::-1, :, ::-1], rtol=1e-13, atol=0)  # x ↦ W−1−x
    np.testing.assert_allclose(H, H[::-1, :, ::-1, :], rtol=1e-13, atol=0)  # y ↦ H−1−y
    sq = planar_laplace_channel(spaces.grid(5, 5), epsilon=0.9).matrix.reshape(5, 5, 5, 5)
    np.testing.assert_allclose(sq, sq.transpose(1, 0, 3, 2), rtol=1e-13, atol=0)  # x ↔ y


@pytest.mark.parametrize(
    "w, h, epsilon, step",
    [(6, 6, 1.0, 1.0), (9, 4, 0.4, 1.0), (7, 7, 1.3, 0.5), (5, 5, 0.02, 1.0), (5, 4, 1e-7, 1.0), (4, 4, 30.0, 1.0)],
)
def test_channel_is_epsilon_geo_indistinguishable(w, h, epsilon, step):
    """Integrating a pointwise ε-private density over cells and remapping (post-processing) keeps ε·d₂."""
    space = spaces.grid(w, h, metric="euclidean", step=step)
    res = check_privacy(planar_laplace_channel(space, epsilon=epsilon), space, epsilon=epsilon)
    assert res.ok
    # log-ratios carry rounding of ~1e-14 (relative error of the masses), spread over distances ≥ step
    assert 0.0 < res.smallest_epsilon <= epsilon + 1e-13 / step


def test_ccs_adjustment_is_tiny_and_still_private():
    space = spaces.grid(10, 10, step=1.0)
    res = planar_laplace_grid(space, epsilon=0.8, adjust="ccs")
    assert res.epsilon == 0.8
    assert 0.0 < 0.8 - res.epsilon_used < 1e-10
    # u = step, r_max = the grid's diameter (corner to corner), δθ = the sampler's angular resolution
    expected = ccs_adjusted_epsilon(0.8, step=1.0, r_max=9 * math.sqrt(2), delta_theta=SAMPLER_DELTA_THETA)
    assert res.epsilon_used == pytest.approx(expected, rel=1e-15)
    pr = check_privacy(res.channel, space, epsilon=res.epsilon_used)
    assert pr.ok
    plain = planar_laplace_channel(space, epsilon=0.8).matrix
    np.testing.assert_allclose(res.channel.matrix, plain, rtol=1e-8)


def test_ccs_adjusted_epsilon_properties():
    e, u, rmax = 1.0, 1.0, 100.0
    coarse = ccs_adjusted_epsilon(e, step=u, r_max=rmax, delta_theta=1e-4)
    fine = ccs_adjusted_epsilon(e, step=u, r_max=rmax, delta_theta=1e-8)
    assert 0 < coarse < fine < e  # finer angles need less adjustment
    assert ccs_adjusted_epsilon(e, step=u, r_max=2 * rmax, delta_theta=1e-8) < fine  # a larger region needs more
    # first order in 1/q: ε − ε' ≈ (2e^{εu} + 1) / (q u), q = u / (r_max δθ)
    q = u / (rmax * 1e-8)
    assert e - fine == pytest.approx((2 * math.exp(e * u) + 1) / (q * u), rel=1e-5)
    assert e - ccs_adjusted_epsilon(e, step=u, r_max=rmax) < 1e-11  # double-precision sampler
    with pytest.raises(ValueError, match="q ="):
        ccs_adjusted_epsilon(e, step=1.0, r_max=100.0, delta_theta=0.02)  # q = 0.5
    with pytest.raises(ValueError, match="no positive"):
        ccs_adjusted_epsilon(0.01, step=1.0, r_max=100.0, delta_theta=0.009)  # q ≈ 1.1


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="GridSpace"):
        planar_laplace_channel(spaces.line(4), epsilon=1.0)
    with pytest.raises(ValueError, match="adjust"):
        planar_laplace_channel(spaces.grid(3, 3), epsilon=1.0, adjust="CCS13")
    with pytest.raises(ValueError, match="epsilon"):
        planar_laplace_channel(spaces.grid(3, 3), epsilon=0.0)
    with pytest.raises(ValueError, match="shape"):
        planar_laplace_sample(np.zeros((4, 3)), epsilon=1.0)
    with pytest.raises(ValueError, match="finite"):
        planar_laplace_sample([[0.0, np.nan]], epsilon=1.0)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        planar_laplace_radius([1.0], epsilon=1.0)


def test_radial_cdf_to_full_relative_precision():
    decimal.getcontext().prec = 60
    r = np.concatenate([np.logspace(-9, 0, 25), np.linspace(1.0, 60.0, 25)])
    ref = np.array([float(1 - (-decimal.Decimal(float(v))).exp() * (1 + decimal.Decimal(float(v)))) for v in r])
    np.testing.assert_allclose(_quadrature.radial_cdf(r), ref, rtol=4e-16, atol=0)
    np.testing.assert_allclose(_quadrature.radial_cdf(r) + _quadrature.radial_sf(r), 1.0, rtol=0, atol=2e-16)


# ----------------------------------------------------------------------------------------------
# The sampler
# ----------------------------------------------------------------------------------------------


def test_radius_inverts_the_radial_cdf():
    eps = 0.7
    p = np.linspace(0.0, 0.999999, 101)
    r = planar_laplace_radius(p, epsilon=eps)
    cdf = 1 - (1 + eps * r) * np.exp(-eps * r)
    np.testing.assert_allclose(cdf, p, rtol=0, atol=1e-12)
    assert r[0] == 0.0 and np.all(np.diff(r) > 0)


def test_sampled_radius_and_angle_follow_the_planar_laplace():
    """KS of the radius against Gamma(2, 1/ε) and of the angle against uniform, with power: the same
    sample rejects a radius law 4% off in ε and an angle law stretched by 3%."""
    eps = 1.7
    centre = np.array([3.0, -2.0])
    out = planar_laplace_sample(np.tile(centre, (40_000, 1)), epsilon=eps, rng=12345)
    d = out - centre
    r = np.hypot(d[:, 0], d[:, 1])
    cdf = lambda e: (lambda t: 1 - (1 + e * t) * np.exp(-e * t))  # noqa: E731
    assert stats.kstest(r, cdf(eps)).pvalue > 1e-4
    assert stats.kstest(r, cdf(1.04 * eps)).pvalue < 1e-4
    theta = np.mod(np.arctan2(d[:, 1], d[:, 0]), 2 * np.pi)
    assert stats.kstest(theta, stats.uniform(0, 2 * np.pi).cdf).pvalue > 1e-4
    assert stats.kstest(theta, stats.uniform(0, 2 * np.pi * 1.03).cdf).pvalue < 1e-4
    # Gamma(2, 1/ε): mean 2/ε, sd √2/ε
    assert abs(r.mean() - 2 / eps) < 5 * (math.sqrt(2) / eps) / math.sqrt(r.size)


def test_sampler_shapes_and_reproducibility():
    pts = np.array([[0.0, 0.0], [10.0, 5.0], [-1.0, 2.0]])
    a = planar_laplace_sample(pts, epsilon=1.0, rng=7)
    b = planar_laplace_sample(pts, epsilon=1.0, rng=7)
    assert a.shape == (3, 2) and np.array_equal(a, b)
    one = planar_laplace_sample([1.0, 2.0], epsilon=1.0, rng=3)
    assert one.shape == (2,)


def test_nearest_cell_clamps_to_the_grid():
    space = spaces.grid(4, 3, step=2.0)
    centres = space.coordinates
    np.testing.assert_array_equal(nearest_cell(centres, space), np.arange(12))
    far = np.array([[-100.0, -100.0], [100.0, 1.0], [2.9, 100.0], [3.1, 2.2]])
    np.testing.assert_array_equal(nearest_cell(far, space), [0, 3, 9, 6])


@pytest.mark.parametrize("source", [0, 9, 14])
def test_sampling_then_remapping_agrees_with_the_channel(source):
    """Draws snapped to the nearest cell match the exact channel row (chi-square); the same counts reject
    the row of the channel at 1.1·ε (power)."""
    w, h, step, eps = 6, 5, 1.0, 0.9
    space = spaces.grid(w, h, step=step)
    n = 200_000
    pts = planar_laplace_sample(np.tile(space.coordinates[source], (n, 1)), epsilon=eps, rng=2024 + source)
    counts = np.bincount(nearest_cell(pts, space), minlength=w * h)

    def pvalue(row):
        expected = n * row
        big = expected >= 5
        obs = np.append(counts[big], counts[~big].sum())
        exp = np.append(expected[big], expected[~big].sum())
        if exp[-1] == 0:
            obs, exp = obs[:-1], exp[:-1]
        return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue

    assert pvalue(planar_laplace_channel(space, epsilon=eps).matrix[source]) > 1e-6
    assert pvalue(planar_laplace_channel(space, epsilon=1.1 * eps).matrix[source]) < 1e-6


def test_planar_laplace_is_refused_where_the_metric_is_shorter_than_euclid():
    """ε·d₂-privacy gives ε·d-privacy where d ≥ d₂: on a Manhattan grid the channel passes the check; on a
    Chebyshev grid it did not (smallest ε 1.41 at ε = 1 on 6×6, saved with exit 0) and is now refused."""
    from dprivacy.mechanisms.planar_laplace import planar_laplace_channel

    man = spaces.grid(6, 6, metric="manhattan")
    assert check_privacy(planar_laplace_channel(man, epsilon=1.0), man, epsilon=1.0).ok
    with pytest.raises(ValueError, match="not ε·d-private on a chebyshev grid"):
        planar_laplace_channel(spaces.grid(6, 6, metric="chebyshev"), epsilon=1.0)


# -- masses that underflow in float64: their logarithms ----------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 40.0), st.floats(-40.0, 40.0), st.floats(0.01, 5.0), st.floats(0.01, 5.0),
       st.sampled_from(["bounded", "right", "down"]))
def test_log_masses_equal_the_masses_where_both_are_representable(x0, y0, w, h, kind):
    """x0 > 0 keeps the rectangle off the centre; the masses (≥ e^-60) are normal doubles. The horizontal
    sides stay 1e-3 off the line through the centre (a side on it is refused; rectangle_masses loses its
    precision for sides 1e-260 from it, which grids never have: their sides are half-steps apart)."""
    from hypothesis import assume

    x1, y1, ylo = x0 + w, y0 + h, y0
    assume(abs(y0) >= 1e-3 and abs(y1) >= 1e-3)
    if kind == "right":
        x1 = np.inf
    elif kind == "down":
        ylo = -np.inf
    m, err = _quadrature.rectangle_masses(x0, x1, ylo, y1)
    lm, rel = _quadrature.log_rectangle_masses(x0, x1, ylo, y1)
    # within both error estimates (the G form is the less accurate one close to the centre, where masses never
    # underflow; CI found a 1.6e-2 square at 0.05 off by 1.1e-12, inside its estimate)
    assert m[0] > 0 and rel[0] < 1e-10
    assert abs(lm[0] - math.log(m[0])) <= rel[0] + err[0] / m[0] + 1e-15


@pytest.mark.parametrize("r", [700.0, 800.0, 5000.0, 1e5])
def test_log_mass_of_a_far_half_plane_matches_the_bessel_marginal(r):
    """P(X > R) = (1/π) ∫_R^∞ x K₁(x) dx for the planar Laplace of scale 1 (its marginal density is
    |x| K₁(|x|)/π), computed with the exponentially scaled Bessel function: no underflow at R = 1e5."""
    v, _ = integrate.quad(lambda u: (r + u) * special.kve(1, r + u) * np.exp(-u), 0, np.inf, epsabs=0, epsrel=1e-13)
    lm, rel = _quadrature.log_rectangle_masses(np.array([r]), np.array([np.inf]), np.array([-np.inf]), np.array([np.inf]))
    assert lm[0] == pytest.approx(-r + math.log(v / math.pi), rel=1e-14, abs=1e-11)
    assert rel[0] < 1e-10
    with pytest.raises(ValueError, match="contains the centre"):
        _quadrature.log_rectangle_masses(-1.0, 1.0, -1.0, 1.0)


def test_a_planar_laplace_channel_whose_entries_underflow_is_held_by_its_logarithms():
    """Found open in a stop note: grid:30x30 at ε = 20 (ε × diameter 820) said exists, not private: its
    float64 matrix has zeros beside positive entries. The far masses' logarithms make it checkable."""
    from dprivacy.mechanisms.base import LogMechanism

    g = spaces.grid(30, 30)
    mech = planar_laplace_channel(g, epsilon=20.0)
    assert isinstance(mech, LogMechanism)
    r = check_privacy(mech)
    assert r.ok and r.smallest_epsilon <= 20.0 * (1 + 1e-9)
    grid = planar_laplace_grid(g, epsilon=20.0)
    assert (grid.channel.matrix == 0).any() and not check_privacy(grid.channel.matrix, g, epsilon=20.0).ok
    lg = mech.log_rows(np.arange(g.n))
    normal = grid.channel.matrix > np.finfo(np.float64).tiny
    assert np.allclose(np.exp(lg[normal]), grid.channel.matrix[normal], rtol=1e-12, atol=0)
    assert np.all(np.isfinite(lg))  # every cell reachable from every cell
    # a grid whose masses do not underflow stays dense, with no logarithms
    assert planar_laplace_grid(spaces.grid(6, 6), epsilon=2.0).log_matrix is None
