"""Grid mechanisms on real locations (issue 11): the equal-area grid, the planar Laplace grid sampler,
tight-constraints and optimal on the grid, the region-of-priors check, the distance remap, budgets."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

pyproj = pytest.importorskip("pyproj")
pa = pytest.importorskip("pyarrow")

from dprivacy.data.grid_release import build_grid_release, distance_remap  # noqa: E402
from dprivacy.data.location_grid import LocationGrid, parse_cell, parse_region  # noqa: E402
from dprivacy.data.locations import _within_budget  # noqa: E402
from dprivacy.mechanisms.planar_laplace import planar_laplace_grid, planar_laplace_grid_mechanism  # noqa: E402
from dprivacy.priors import regularity, sample_regular_priors  # noqa: E402
from dprivacy.spaces import GridSpace  # noqa: E402

PARIS = "2.22,48.81,2.47,48.91"


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    return subprocess.run([sys.executable, "-m", "dprivacy.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=180)


def _chi2_pvalue(counts, probs):
    """Pearson chi-square p-value of ``counts`` against ``probs``, cells with expected count < 5 pooled."""
    exp = probs * counts.sum()
    big = exp >= 5
    obs = np.r_[counts[big], counts[~big].sum()]
    ex = np.r_[exp[big], exp[~big].sum()]
    keep = ex > 0
    return stats.chisquare(obs[keep], ex[keep] * obs[keep].sum() / ex[keep].sum()).pvalue


# -- the grid ---------------------------------------------------------------------------------------

def test_each_cell_centre_lies_in_its_cell_and_cells_are_equal_area():
    g = LocationGrid.build(PARIS, "500m")
    idx = np.arange(g.n)
    lat, lon = g.centre_of(idx)
    assert np.array_equal(g.cell_of(lat, lon), idx)
    # LAEA is equal-area: the ground area of a cell is cell² up to rounding (pyproj geodesic polygon area)
    geod = pyproj.Geod(ellps="WGS84")
    t = pyproj.Transformer.from_crs(g.crs, "EPSG:4326", always_xy=True)
    for k in (0, g.n // 2, g.n - 1):
        r, c = divmod(k, g.width)
        xs = g.x0 + np.array([c, c + 1, c + 1, c]) * g.cell_m
        ys = g.y0 + np.array([r, r, r + 1, r + 1]) * g.cell_m
        # dense edges so the geodesic polygon follows the projected square
        s = np.linspace(0, 1, 50, endpoint=False)
        ex = np.concatenate([xs[i] + (xs[(i + 1) % 4] - xs[i]) * s for i in range(4)])
        ey = np.concatenate([ys[i] + (ys[(i + 1) % 4] - ys[i]) * s for i in range(4)])
        lo, la = t.transform(ex, ey)
        area, _ = geod.polygon_area_perimeter(lo, la)
        assert abs(abs(area) / g.cell_m**2 - 1) < 1e-6
    lo, hi = g.scale_range()
    assert 0.9999 < lo <= 1 <= hi < 1.0001  # a city-sized region: scale factors within 1e-4 of 1


@pytest.mark.parametrize("spec", ["1,2,3", "a,b,c,d", "10,50,5,60", "0,60,10,50", "0,-95,10,0", "170,0,190,10", "-170,-80,170,80"])
def test_bad_regions_are_refused_with_the_value(spec):
    with pytest.raises(ValueError, match="region"):
        parse_region(spec)


def test_cell_lengths():
    assert parse_cell("500m") == 500 and parse_cell("2km") == 2000 and parse_cell("250") == 250
    for bad in ("0m", "-1km", "abc", "1mi"):
        with pytest.raises(ValueError):
            parse_cell(bad)
    with pytest.raises(ValueError, match="cells"):
        LocationGrid.build("-10,35,30,60", "100m")


# -- mechanisms on the grid -------------------------------------------------------------------------

@pytest.mark.parametrize("eps", [0.4, 1.5])
def test_planar_laplace_grid_sampler_matches_its_exact_rows(eps):
    """Empirical cell frequencies of the snapped continuous sampler = the quadrature rows (chi-square);
    rows at 1.25ε are rejected by the same test (power)."""
    g = GridSpace(9, 7, step=1.0)
    m = planar_laplace_grid_mechanism(g, epsilon=eps)
    assert np.allclose(m.rows(np.arange(g.n)), planar_laplace_grid(g, epsilon=m.epsilon_used).channel.matrix, atol=1e-14)
    for y in (0, 31):
        counts = np.bincount(m.sample_indices(np.full(60_000, y), rng=7 + y), minlength=g.n).astype(float)
        assert _chi2_pvalue(counts, m.rows(y)) > 1e-4
        wrong = planar_laplace_grid(g, epsilon=1.25 * eps).channel.matrix[y]
        assert _chi2_pvalue(counts, wrong) < 1e-4


def test_tight_constraints_release_frequencies_match_the_rows():
    g = LocationGrid.build(PARIS, "2km")
    rel = build_grid_release(g, "tight-constraints", epsilon_m=1 / 1500, prior="uniform")
    y = g.n // 2 + 3
    lat, lon = g.centre_of(np.full(50_000, y))
    out_lat, out_lon = rel.apply(lat, lon, np.random.default_rng(3))
    cells = g.cell_of(out_lat, out_lon)
    ol, oo = g.centre_of(cells)
    assert np.array_equal(ol, out_lat) and np.array_equal(oo, out_lon)  # outputs are cell centres
    row = rel.mechanism.rows(y)
    counts = np.bincount(cells, minlength=g.n).astype(float)
    assert _chi2_pvalue(counts, row / row.sum()) > 1e-4
    # power: the same counts reject the row of the mechanism at 1.2·ε
    other = build_grid_release(g, "tight-constraints", epsilon_m=1.2 / 1500).mechanism.rows(y)
    assert _chi2_pvalue(counts, other / other.sum()) < 1e-4
    assert rel.info["optimal_for_prior"]["regular"] is True  # the uniform prior is regular when the mechanism exists


def test_tight_constraints_below_threshold_says_why_and_where_it_exists():
    g = LocationGrid.build("-10,35,30,60", "100km")
    with pytest.raises(ValueError, match=r"does not exist.*exists from ε\*"):
        build_grid_release(g, "tight-constraints", epsilon_m=0.005 / 1000)


def test_optimal_needs_a_prior_and_returns_a_certified_bracket():
    g = LocationGrid.build("-10,35,30,60", "500km")
    with pytest.raises(ValueError, match="prior"):
        build_grid_release(g, "optimal", epsilon_m=0.004 / 1000)
    rng = np.random.default_rng(0)
    p = rng.random(g.n) ** 3
    pfile = Path(os.environ.get("TMPDIR", "/tmp")) / f"prior-{os.getpid()}.npy"
    np.save(pfile, p.reshape(g.height, g.width))
    try:
        rel = build_grid_release(g, "optimal", epsilon_m=0.004 / 1000, prior=str(pfile))
    finally:
        pfile.unlink()
    o = rel.info["optimal"]
    assert o["utility"] <= o["bound"] * (1 + 1e-12) and o["gap"] <= 1e-6
    assert not o["stopped_by_time_limit"] and o["solver_message"]  # how the solve ended, in words
    import dprivacy as dp

    assert dp.check_privacy(rel.mechanism, g.space(), epsilon=0.004 / 1000).ok


@settings(max_examples=12, deadline=None)
@given(w=st.integers(2, 5), h=st.integers(2, 5), seed=st.integers(0, 10**6))
def test_distance_remap_is_the_bayes_argmin_and_never_worse(w, h, seed):
    rng = np.random.default_rng(seed)
    g = GridSpace(w, h, step=100.0)
    m = planar_laplace_grid_mechanism(g, epsilon=rng.uniform(0.002, 0.03))
    p = rng.random(g.n) * (rng.random(g.n) < 0.7)
    if p.sum() == 0:
        p[0] = 1.0
    p /= p.sum()
    remap, before, after = distance_remap(m, g, p)
    K, D = m.channel.matrix, g.distances
    loss = np.einsum("x,xz,xw->zw", p, K, D)  # expected distance of guessing w after output z (brute force)
    assert np.allclose(loss[np.arange(g.n), remap], loss.min(axis=1), rtol=1e-12, atol=1e-9)
    assert after <= before * (1 + 1e-12)
    assert np.isclose(after, loss.min(axis=1).sum(), rtol=1e-10)
    assert np.isclose(before, np.einsum("x,xz,xz->", p, K, D), rtol=1e-10)


# -- the region of priors on large grids (ElSalamouny et al. 2014 Def 4, Thm 4) -------------------------------------

@settings(max_examples=15, deadline=None)
@given(w=st.integers(4, 17), h=st.integers(4, 17), eps=st.floats(0.3, 3.0), kind=st.sampled_from(["regular", "random", "zero"]),
       seed=st.integers(0, 10**6))
def test_structured_regularity_agrees_with_the_dense_factorization(w, h, eps, kind, seed):
    g = GridSpace(w, h)
    rng = np.random.default_rng(seed)
    if kind == "regular":
        p = sample_regular_priors(g, epsilon=eps, rng=seed)
    else:
        p = rng.random(g.n) + (0.0 if kind == "zero" else 0.2)
        if kind == "zero":
            p[rng.integers(g.n)] = 0.0
        p /= p.sum()
    a = regularity(g, p, epsilon=eps, method="dense")
    b = regularity(g, p, epsilon=eps, method="structured")
    assert b.method == "cg"
    if not (a.boundary or b.boundary):
        assert a.regular == b.regular
    assert np.allclose(a.mu, b.mu, atol=1e-10 + 10 * (a.error_bound + b.error_bound))
    if kind == "zero":
        assert not b.regular and "Prop 2" in b.reason


def test_threshold_is_in_the_space_units():
    """ε* scales as 1/step: a grid measured in metres is bracketed as finely as one measured in cells."""
    from dprivacy.threshold import tight_threshold

    a = tight_threshold(GridSpace(6, 5, step=1.0), scan=0)
    b = tight_threshold(GridSpace(6, 5, step=1000.0), scan=0)
    assert a.certified and b.certified
    assert abs(a.epsilon_star - b.epsilon_star * 1000) <= 2e-4


# -- budgets ------------------------------------------------------------------------------------------

def test_budget_keeps_each_users_first_reports_across_batches():
    spent: dict = {}
    b1 = pa.array(["a", "b", "a", "a", "c"])
    b2 = pa.array(["b", "a", "b", "b", "c"])
    k1 = _within_budget(b1, spent, 2, 0)
    k2 = _within_budget(b2, spent, 2, 5)
    assert k1.tolist() == [True, True, True, False, True]
    assert k2.tolist() == [True, False, False, False, True]
    assert spent == {"a": 4, "b": 4, "c": 2}
    with pytest.raises(ValueError, match="row 8"):
        _within_budget(pa.array(["a", None]), {}, 1, 6)


def test_cli_grid_release_with_budget_and_bad_input(tmp_path):
    rng = np.random.default_rng(1)
    n = 300
    lat = 48.82 + 0.08 * rng.random(n)
    lon = 2.25 + 0.2 * rng.random(n)
    users = rng.integers(0, 20, n)
    src = tmp_path / "pts.csv"
    src.write_text("user,lat,lon,v\n" + "".join(f"u{u},{a:.8f},{b:.8f},{i}\n" for i, (u, a, b) in enumerate(zip(users, lat, lon))))
    p = _cli("obfuscate", str(src), "-o", "out.parquet", "--epsilon", "2", "--mechanism", "planar-laplace-grid", "--cell", "250m",
             "--region", PARIS, "--user", "user", "--budget", "10", "--prior", "uniform", "--remap", "--seed", "5", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    allowed = 5
    expected_kept = sum(min(c, allowed) for c in np.bincount(users))
    assert rep["rows_written"] == expected_kept and rep["rows_suppressed"] == n - expected_kept
    assert rep["budget"]["reports_per_user"] == allowed
    assert rep["grid"]["remap"]["expected_distance_m_with"] <= rep["grid"]["remap"]["expected_distance_m_without"]
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "out.parquet")
    assert t.column_names == ["user", "lat", "lon", "v"] and t.num_rows == expected_kept
    g = LocationGrid.build(PARIS, "250m")
    la, lo = t.column("lat").to_numpy(), t.column("lon").to_numpy()
    c = g.cell_of(la, lo)
    assert np.array_equal(np.c_[g.centre_of(c)], np.c_[la, lo])  # only cell centres are released
    # bad input: one line, exit 2, nothing written
    cases = [
        (["--mechanism", "tight-constraints", "--cell", "250m"], "--region"),
        (["--mechanism", "planar-laplace", "--remap"], "--remap"),
        (["--mechanism", "optimal", "--cell", "2km", "--region", PARIS], "prior"),
        (["--mechanism", "planar-laplace-grid", "--cell", "0m", "--region", PARIS], "--cell"),
        (["--mechanism", "planar-laplace-grid", "--cell", "1km", "--region", "-2,48,-3,49"], "LON_MIN"),
        (["--mechanism", "tight-constraints", "--cell", "250m", "--region", PARIS, "--epsilon", "0.001"], "does not exist"),
        (["--user", "user"], "--budget"),
        (["--user", "nobody", "--budget", "3"], "no user column"),
    ]
    for extra, needle in cases:
        args = ["obfuscate", str(src), "-o", "bad.csv", *extra]
        if "--epsilon" not in extra:
            args += ["--epsilon", "2"]
        p = _cli(*args, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and needle in p.stderr, (extra, p.stderr)
        assert not any(tmp_path.glob("bad.csv*")) and not any(tmp_path.glob(".bad.csv*"))


# -- evaluate: what a release costs and protects -----------------------------------------------------

def test_grid_measures_identities():
    """Tight-constraints with the uniform prior: the identity remap is optimal, so V(π, K) = Σ_z H[z, z]/n
    = Σz/n (H's diagonal is z, ElSalamouny et al. 2014 Def 6) and the leakage is log₂ Σz (the min-capacity, attained by
    the uniform prior); the adversary's error never exceeds the expected displacement (the identity is
    one of the remaps it optimises over)."""
    from dprivacy.data.evaluation import grid_measures
    from dprivacy.mechanisms.tight import tight_constraints

    g = LocationGrid.build(PARIS, "1km")
    pi = np.full(g.n, 1.0 / g.n)
    eps_m = 1 / 1000
    r = grid_measures(g, "tight-constraints", eps_m, pi)
    z = tight_constraints(g.space(), epsilon=eps_m).z
    assert np.isclose(r["posterior_vulnerability"], z.sum() / g.n, rtol=1e-9)
    assert np.isclose(r["min_entropy_leakage_bits"], np.log2(z.sum()), rtol=1e-9)
    for name in ("planar-laplace-grid", "tight-constraints"):
        for e in (0.3e-3, 1e-3, 3e-3):
            m = grid_measures(g, name, e, pi)
            if m["exists"]:
                assert m["adversary_error_m"] <= m["expected_displacement_m"] * (1 + 1e-12)
                assert m["prior_vulnerability"] <= m["posterior_vulnerability"] <= 1 + 1e-12
    low = grid_measures(g, "tight-constraints", 0.1e-3, pi)
    assert low["exists"] is False and "does not exist" in low["reason"]
    big = grid_measures(LocationGrid.build(PARIS, "100m"), "planar-laplace-grid", eps_m, np.ones(1))
    assert "skipped" in big


# -- every cell reachable (Mironov) ------------------------------------------------------------------

def test_tight_sampler_mixture_matches_the_mixed_rows_and_reaches_every_cell():
    """With γ = 1/4 (mixture_bits=2) the integer sampler's frequencies match (1−γ)H + γ/n (chi-square,
    power: the unmixed rows are rejected), and a cell that H makes (numerically) impossible is drawn."""
    import dprivacy as dp
    from dprivacy._kernels.sampling import KernelRejectionSampler

    g = GridSpace(30, 30)
    res = dp.tight_constraints(g, epsilon=4.0)  # ε·d ≥ 4·41 at the far corner: k = e^-164 → weight 0 in 62 bits
    assert res.ok
    s = KernelRejectionSampler(g, res.mechanism.z, 4.0, mixture_bits=2)
    y = 0
    draws = s.sample(np.full(200_000, y), rng=5)
    counts = np.bincount(draws, minlength=g.n).astype(float)
    row = res.mechanism.rows(y)
    mixed = 0.75 * row / row.sum() + 0.25 / g.n
    assert _chi2_pvalue(counts, mixed) > 1e-4
    assert _chi2_pvalue(counts, row / row.sum()) < 1e-4
    assert counts[g.n - 1] > 0  # the far corner, unreachable without the mixture
    assert s.to_dict()["every_cell_reachable"] and s.to_dict()["uniform_mixture"] == 0.25
    default = res.mechanism.sampler.to_dict()
    assert default["uniform_mixture"] == 2.0**-20 and 0 <= default["epsilon_excess_at_most"] < 1e-6


def test_planar_grid_sampler_is_exact_on_its_lattice_and_states_its_epsilon():
    """The grid sampler draws the exact discrete planar Laplace on (cell/K)Z² (K odd) and snaps it: its
    frequencies match the rows (chi-square, power at 1.25ε, including a corner secret whose boundary
    cells take the tails), and it reports the ε it delivers (≤ ε, exactly)."""
    g = GridSpace(40, 40)
    m = planar_laplace_grid_mechanism(g, epsilon=0.6)
    assert m.lattice_k % 2 == 1 and m.lattice_k >= 1025
    info = m.exact_sampler.to_dict()
    assert info["delivered_epsilon"] <= 0.6 and info["epsilon_slack"] <= 0 and info["every_cell_reachable"]
    for y in (0, 820):
        counts = np.bincount(m.sample_indices(np.full(100_000, y), rng=1 + y), minlength=g.n).astype(float)
        assert _chi2_pvalue(counts, m.rows(y)) > 1e-4
        assert _chi2_pvalue(counts, planar_laplace_grid(g, epsilon=0.75).channel.matrix[y]) < 1e-4


def test_the_scale_range_bounds_the_distortion_in_every_direction():
    """The guarantee's "scale factors lo–hi of the ground distance" came from the meridional and parallel
    scales only (0.993–1.007 on this region); off the projection's axes the distortion is Tissot's a, b:
    a short geodesic at azimuth 135° near the corner (−10°, 35°) projects to 1.0144 times its length."""
    import pyproj

    g = LocationGrid.build(parse_region("-10,35,30,60"), 25_000.0)
    lo, hi = g.scale_range()
    geod = pyproj.Geod(ellps="WGS84")
    t = pyproj.Transformer.from_crs("EPSG:4326", g.crs, always_xy=True)
    ratios = []
    for lon0, lat0 in [(-10, 35), (30, 35), (-10, 60), (30, 60), (10, 47.5), (10, 35), (-10, 47.5)]:
        for az in range(0, 180, 5):
            lon1, lat1, _ = geod.fwd(lon0, lat0, az, 1000.0)
            (x0, x1), (y0, y1) = t.transform([lon0, lon1], [lat0, lat1])
            ratios.append(math.hypot(x1 - x0, y1 - y0) / 1000.0)
    assert lo <= min(ratios) and max(ratios) <= hi
    assert max(ratios) > 1.014 and min(ratios) < 0.986  # the old h, k range (0.993–1.007) did not hold them


def test_a_prior_planar_laplace_grid_would_not_use_is_refused():
    """Found by a review: planar-laplace-grid --prior uniform without --remap was accepted, and the sidecar recorded
    the prior as the release's, unused."""
    g = LocationGrid.build(PARIS, "2km")
    with pytest.raises(ValueError, match="planar-laplace-grid uses a prior only with --remap"):
        build_grid_release(g, "planar-laplace-grid", epsilon_m=0.002, prior="uniform")
    assert build_grid_release(g, "planar-laplace-grid", epsilon_m=0.002, prior="uniform", remap=True).remap is not None
