"""ElSalamouny et al. 2014 §7.2 / Fig 7 experiment: its helpers against definitions, and the quick run's report.

The helper tests compare with brute-force dense computations on small grids (distance matrices built
here from coordinates, the utility of ``dprivacy.measures``); the slow test runs the experiment through
``report.run`` and checks the summary's shape, the figure files and the claims that follow from
theorems (Thm 2, Prop 6, the privacy of an integrated planar Laplace density).
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from conftest import stochastic_matrices
from hypothesis import given, settings
from hypothesis import strategies as st

from dprivacy import measures, spaces
from dprivacy.experiments import report
from dprivacy.experiments.seed000_fig7 import (
    EPS_RANGE,
    QUICK_POINTS,
    RATIO_EPS,
    SWEEP_STEP,
    farthest_distances,
    rows_privacy,
    signed_diagonal_utility,
    spot_cells,
    sweep,
    uniform_utility_from_matrix,
)
from dprivacy.mechanisms.planar_laplace import planar_laplace_grid
from dprivacy.mechanisms.tight import tight_constraints

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
METRICS = ("euclidean", "manhattan", "chebyshev")


def _dense_distances(w, h, metric, step):
    """All-pairs distances from cell coordinates (col, row)·step, independent of GridSpace."""
    cols, rows = np.meshgrid(np.arange(w), np.arange(h))
    x, y = cols.ravel() * step, rows.ravel() * step
    dx, dy = np.abs(x[:, None] - x[None, :]), np.abs(y[:, None] - y[None, :])
    return {"euclidean": np.hypot(dx, dy), "manhattan": dx + dy, "chebyshev": np.maximum(dx, dy)}[metric]


grids = st.tuples(st.integers(1, 7), st.integers(1, 7), st.sampled_from(METRICS), st.sampled_from([0.5, 1.0, 3.0]))


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def test_sweep_is_the_authors_grid_and_quick_is_a_subset():
    full, quick = sweep(False), sweep(True)
    assert full.size == 46 and full[0] == EPS_RANGE[0] and full[-1] == EPS_RANGE[1]
    assert np.allclose(np.diff(full), SWEEP_STEP)
    assert quick.size == QUICK_POINTS and quick[0] == EPS_RANGE[0] and quick[-1] == EPS_RANGE[1]
    assert set(quick.tolist()) <= set(full.tolist())
    # The ratio claim reads points that both runs compute.
    assert set(RATIO_EPS) <= set(quick.tolist())


@given(grids)
@settings(max_examples=30)
def test_farthest_distances_are_row_maxima_of_the_distance_matrix(g):
    w, h, metric, step = g
    grid = spaces.grid(w, h, metric=metric, step=step)
    assert np.allclose(farthest_distances(grid), _dense_distances(w, h, metric, step).max(axis=1))


@given(grids, st.floats(0.05, 3.0), st.integers(0, 2**32 - 1))
@settings(max_examples=30)
def test_signed_diagonal_utility_is_the_column_max_formula(g, eps, seed):
    w, h, metric, step = g
    grid = spaces.grid(w, h, metric=metric, step=step)
    z = np.random.default_rng(seed).normal(size=grid.n)
    phi = np.exp(-eps * _dense_distances(w, h, metric, step))
    brute = (phi * z[None, :]).max(axis=0).sum() / grid.n
    assert signed_diagonal_utility(grid, z, eps) == pytest.approx(brute, rel=1e-12, abs=1e-15)
    # For z ≥ 0 it is Σz/n (Φ's diagonal is 1, its other entries below 1).
    assert signed_diagonal_utility(grid, np.abs(z), eps) == pytest.approx(np.abs(z).sum() / grid.n, rel=1e-12)


def test_signed_diagonal_utility_rejects_a_wrong_length():
    with pytest.raises(ValueError, match="expected 6"):
        signed_diagonal_utility(spaces.grid(3, 2), np.ones(5), 1.0)


@given(st.integers(1, 8).flatmap(lambda n: stochastic_matrices(n, n)))
@settings(max_examples=40)
def test_uniform_utility_from_column_maxima_equals_measures_utility(h):
    n = h.shape[0]
    value, diag = uniform_utility_from_matrix(h)
    assert value == pytest.approx(measures.utility(h, np.full(n, 1.0 / n)).value, rel=1e-12)
    assert 0.0 <= diag <= 1.0


def test_uniform_utility_diagonal_fraction():
    assert uniform_utility_from_matrix(np.eye(4)) == (1.0, 1.0)
    h = np.zeros((4, 4))
    h[0, :] = 1.0
    h[1:, 0] = 1.0  # rows 1..3 put all mass on output 0; row 0 spreads it evenly
    value, diag = uniform_utility_from_matrix(h / h.sum(axis=1, keepdims=True))
    # Column 0's maximum (1) is on row 1, columns 1..3's (1/4) on row 0: never on the diagonal.
    assert diag == 0.0 and value == pytest.approx((1.0 + 3 * 0.25) / 4)
    with pytest.raises(ValueError, match="square"):
        uniform_utility_from_matrix(np.ones((2, 3)) / 3)


def test_planar_laplace_uniform_utility_matches_measures_on_a_small_grid():
    grid = spaces.grid(9, 7, metric="euclidean", step=1.0)
    for eps in (0.4, 1.3):
        h = planar_laplace_grid(grid, epsilon=eps).channel
        value, diag = uniform_utility_from_matrix(h.matrix)
        ref = measures.utility(h, np.full(grid.n, 1.0 / grid.n))
        assert value == pytest.approx(ref.value, rel=1e-12)
        assert diag == pytest.approx(np.mean(ref.remap == np.arange(grid.n)))


@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 20), st.integers(0, 1000))
@settings(max_examples=30)
def test_spot_cells(w, h, k, seed):
    grid = spaces.grid(w, h)
    cells = spot_cells(grid, k, seed)
    assert cells.size == min(k, grid.n)
    assert np.all(np.diff(cells) > 0) and cells.min() >= 0 and cells.max() < grid.n
    corners = {0, w - 1, (h - 1) * w, h * w - 1}
    if k >= 8:
        assert corners <= set(cells.tolist())
    assert np.array_equal(cells, spot_cells(grid, k, seed))


def test_rows_privacy_accepts_private_rows_and_rejects_a_larger_epsilon():
    grid = spaces.grid(8, 8, metric="euclidean")
    cells = spot_cells(grid, 10, 1)
    h = planar_laplace_grid(grid, epsilon=1.0).channel.matrix
    ok = rows_privacy(h[cells], grid, cells, 1.0)
    assert ok.ok and ok.smallest_epsilon <= 1.0 + 1e-9
    # The same rows are not 0.5·d-private: the integrated density is only ε-private, not better, near
    # the source (negative control).
    assert not rows_privacy(h[cells], grid, cells, 0.5).ok


def test_corner_effect_on_a_small_grid_with_the_dense_solver():
    """What the experiment reports on 100×100 by CG holds on 10×10 by the dense solver: no mechanism at
    ε = 0.6, the only negative entries of z = Φ⁻¹1 are the four cells diagonally next to the corners,
    and a mechanism at 0.7 whose utility beats the planar Laplace one (Thm 2: the latter is private)."""
    grid = spaces.grid(10, 10, metric="euclidean")
    low = tight_constraints(grid, epsilon=0.6)
    assert not low.exists
    neg = set(np.flatnonzero(low.z < 0).tolist())
    assert neg == {11, 18, 81, 88}  # (1,1), (1,8), (8,1), (8,8)
    high = tight_constraints(grid, epsilon=0.7)
    assert high.exists
    u = np.full(grid.n, 1.0 / grid.n)
    tight_u = measures.utility(high.channel, u).value
    pl_u = uniform_utility_from_matrix(planar_laplace_grid(grid, epsilon=0.7).channel.matrix)[0]
    assert tight_u == pytest.approx(high.z.sum() / grid.n, rel=1e-10)
    assert tight_u > pl_u


# ---------------------------------------------------------------------------------------------
# The quick run through the report writer
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_report_fig7_quick(tmp_path):
    summary = report.run(tmp_path, quick=True, only=["000-fig7"], progress=False)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["counts"] == summary["counts"] and on_disk["quick"] is True
    (exp,) = on_disk["experiments"]
    assert exp["id"] == "000-fig7" and exp["error"] is None, exp["error"]
    assert exp["paper"] == "ElSalamouny et al. 2014" and exp["quick_note"]
    (fig,) = exp["figures"]
    assert (tmp_path / fig["png"]).read_bytes()[:8] == PNG_MAGIC
    with (tmp_path / fig["csv"]).open() as fh:
        rows = list(csv.reader(fh))
    header, data = rows[0], rows[1:]
    assert len(header) == 4 and header[0].startswith("ε")
    assert any("planar Laplace" in c for c in header) and any("negative entries" in c for c in header)
    assert len(data) == QUICK_POINTS + 1  # the sweep and the certified threshold
    eps = [float(r[0]) for r in data]
    assert eps == sorted(eps) and eps[0] == EPS_RANGE[0] and eps[-1] == EPS_RANGE[1]
    tight_col = header.index(next(c for c in header if c.startswith("tight")))
    dashed_col = header.index(next(c for c in header if "negative entries" in c))
    pl_col = header.index(next(c for c in header if "planar Laplace" in c))
    for r in data:
        assert r[pl_col] != "" and 0 < float(r[pl_col]) < 1
        # Exactly one of the solid and dashed lines where they do not meet; both at the meeting point.
        assert r[tight_col] != "" or r[dashed_col] != ""
        if r[tight_col] != "":
            assert float(r[tight_col]) > float(r[pl_col])  # Thm 2: planar Laplace is private
    claims = {c["id"]: c for c in on_disk["claims"]}
    assert set(claims) == {"000-fig7-threshold", "000-fig7-exists-above", "000-fig7-tight-better", "000-fig7-ratio",
                           "000-fig7-attains-thm2", "000-fig7-tight-private", "000-fig7-pl-private"}
    for c in claims.values():
        assert c["paper"] == "ElSalamouny et al. 2014" and c["where"]
        for r in c["readings"]:
            assert set(r) == {"reading", "value"}
    # Facts that follow from theorems must agree.
    for cid in ("000-fig7-exists-above", "000-fig7-tight-better", "000-fig7-attains-thm2", "000-fig7-tight-private",
                "000-fig7-pl-private"):
        assert claims[cid]["verdict"] == "agrees", claims[cid]
    # The paper gives no ratio: never reported as agreeing.
    assert claims["000-fig7-ratio"]["verdict"] == "not comparable"
    assert all(r is None or r > 1 for r in claims["000-fig7-ratio"]["computed"])
    th = claims["000-fig7-threshold"]
    lo, hi = next(r["value"] for r in th["readings"] if r["reading"].startswith("certified bracket"))
    assert lo < hi <= lo + 1e-4 and th["computed"] == hi
    assert th["verdict"] == ("agrees" if hi <= th["published"] + th["tolerance"] else "differs")
