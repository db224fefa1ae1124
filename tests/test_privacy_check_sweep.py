"""The d-privacy check's blocked sweep and its early exit (``check_privacy(..., smallest=False)``).

The full sweep is compared with a plain loop over every pair (the definition: ε* = max over pairs at finite
distance of max_z |ln H[y,z] − ln H[y',z]| / d(y, y')), and the early exit with the full sweep: the same
verdict on every channel, and when the verdict is "not private" a witness that really violates the constraint.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprivacy import MetricSpace, measures, spaces


def brute_smallest(h: np.ndarray, d: np.ndarray) -> float:
    """max over i < j at finite distance of max_z |ln h_i − ln h_j| / d(i, j), one pair at a time."""
    with np.errstate(divide="ignore"):
        lg = np.log(h)
    best = 0.0
    n = h.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if not np.isfinite(d[i, j]):
                continue
            a, b = lg[i], lg[j]
            both_zero = np.isneginf(a) & np.isneginf(b)
            one_zero = np.isneginf(a) ^ np.isneginf(b)
            if one_zero.any():
                return np.inf
            diff = np.abs(np.where(both_zero, 0.0, a - b))
            best = max(best, float(diff.max()) / d[i, j])
    return best


def violates(h: np.ndarray, d: np.ndarray, r) -> bool:
    """Whether r's witness (y, y', z) breaks H[y,z] ≤ e^{ε d(y,y')} H[y',z] beyond the check's tolerance."""
    y, y2, z = r.worst
    with np.errstate(divide="ignore"):
        lr = np.log(h[y, z]) - np.log(h[y2, z])
    return bool(lr > r.epsilon * d[y, y2] * (1 + r.rtol) + r.atol)


@st.composite
def channels(draw):
    """A channel on random points of the plane (Euclidean distances, no structure known): rows of a planar
    Laplace at a random ε', perturbed, some entries possibly zero."""
    n = draw(st.integers(2, 14))
    m = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 5, size=(n, 2))
    d = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(axis=2))
    outs = rng.uniform(0, 5, size=(m, 2))
    dz = np.sqrt(((pts[:, None, :] - outs[None, :, :]) ** 2).sum(axis=2))
    e_true = draw(st.floats(0.1, 2.0))
    h = np.exp(-e_true * dz) * np.exp(draw(st.floats(0.0, 0.5)) * rng.standard_normal((n, m)))
    if draw(st.booleans()) and m > 1:
        h[rng.integers(n), rng.integers(m)] = 0.0
    h /= h.sum(axis=1, keepdims=True)
    return h, d, draw(st.floats(0.05, 3.0))


@settings(max_examples=150, deadline=None)
@given(channels())
def test_full_sweep_is_the_definition(case):
    h, d, eps = case
    space = MetricSpace(d, validate=False)
    r = measures.check_privacy(h, space, epsilon=eps)
    assert r.complete
    want = brute_smallest(h, d)
    assert r.smallest_epsilon == pytest.approx(want, rel=1e-12) or (np.isinf(want) and np.isinf(r.smallest_epsilon))
    # the worst triple attains it
    y, y2, z = r.worst
    assert r.worst_ratio / r.distance == pytest.approx(r.smallest_epsilon, rel=1e-12) or np.isinf(r.worst_ratio)
    assert h[y, z] >= h[y2, z]


@settings(max_examples=200, deadline=None)
@given(channels())
def test_early_exit_agrees_with_the_full_sweep(case):
    h, d, eps = case
    space = MetricSpace(d, validate=False)
    full = measures.check_privacy(h, space, epsilon=eps)
    quick = measures.check_privacy(h, space, epsilon=eps, smallest=False)
    assert quick.ok == full.ok
    if full.ok:  # a private channel is swept whole either way: the same result
        assert quick.complete and quick.smallest_epsilon == full.smallest_epsilon and quick.worst == full.worst
    else:
        assert not quick.complete and np.isnan(quick.smallest_epsilon)
        assert violates(h, d, quick)  # the witness is a true violation
        assert quick.pairs_checked <= full.pairs_checked
        assert quick.excess > 0


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7), st.integers(2, 7), st.floats(0.2, 2.0), st.floats(0.2, 2.0), st.integers(0, 2**32 - 1))
def test_early_exit_on_listed_pairs(w, hgt, e_true, eps, seed):
    """A Manhattan grid checks only its essential (adjacent) pairs: the early exit there too."""
    g = spaces.grid(w, hgt, metric="manhattan")
    d = g.distances
    rng = np.random.default_rng(seed)
    h = np.exp(-e_true * d + 0.2 * rng.standard_normal(d.shape))
    h /= h.sum(axis=1, keepdims=True)
    full = measures.check_privacy(h, g, epsilon=eps)
    quick = measures.check_privacy(h, g, epsilon=eps, smallest=False)
    assert quick.ok == full.ok
    assert full.smallest_epsilon == pytest.approx(brute_smallest(h, d), rel=1e-12)
    if not full.ok:
        assert violates(h, d, quick)


def test_threaded_blocks_match_the_definition():
    """A channel large enough for two threads and scipy's blocks (and an early exit that stops before the end)."""
    rng = np.random.default_rng(7)
    pts = rng.uniform(0, 10, size=(260, 2))
    d = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(axis=2))
    h = np.exp(-0.7 * d)
    h /= h.sum(axis=1, keepdims=True)
    space = MetricSpace(d, validate=False)
    # the definition, vectorised one row at a time
    lg = np.log(h)
    want = max(float((np.abs(lg[i] - lg[i + 1:]).max(axis=1) / d[i, i + 1:]).max()) for i in range(259))
    r = measures.check_privacy(h, space, epsilon=0.7)
    assert r.smallest_epsilon == pytest.approx(want, rel=1e-13)
    assert r.pairs_checked == 260 * 259 // 2
    bad = measures.check_privacy(h, space, epsilon=0.5 * want, smallest=False)
    assert not bad.ok and not bad.complete and violates(h, d, bad)
    assert bad.pairs_checked < 260 * 259 // 2


def test_is_private_uses_the_verdict_only():
    g = spaces.grid(6, 6)
    d = g.distances
    h = np.exp(-d)
    h /= h.sum(axis=1, keepdims=True)
    assert measures.is_private(h, g, epsilon=2.0)
    assert not measures.is_private(h, g, epsilon=0.5)
    assert measures.smallest_epsilon(h, g) == pytest.approx(brute_smallest(h, d), rel=1e-12)


def test_cli_check_stops_at_the_first_violation_unless_smallest(capsys, tmp_path):
    import json

    from dprivacy.cli import main

    g = spaces.grid(8, 8)
    d = g.distances
    h = np.exp(-1.5 * d)
    h /= h.sum(axis=1, keepdims=True)
    np.save(tmp_path / "h.npy", h)
    want = brute_smallest(h, d)

    def run(*argv, code):
        assert main(["check", str(tmp_path / "h.npy"), "grid:8x8", *argv, "--json"]) == code
        return json.loads(capsys.readouterr().out)

    quick = run("--epsilon", "1", code=1)
    assert quick["stopped_early"] and quick["smallest_epsilon"] is None
    w = quick["worst"]
    assert np.log(h[w["y"], w["z"]] / h[w["y_prime"], w["z"]]) > 1.0 * d[w["y"], w["y_prime"]]
    full = run("--epsilon", "1", "--smallest", code=1)
    assert not full["stopped_early"] and full["smallest_epsilon"] == pytest.approx(want, rel=1e-12)
    assert full["pairs_checked"] == 64 * 63 // 2 > quick["pairs_checked"]
    private = run("--epsilon", repr(float(want) * 1.01), code=0)  # private: every pair seen, the smallest ε exact anyway
    assert not private["stopped_early"] and private["smallest_epsilon"] == pytest.approx(want, rel=1e-12)
