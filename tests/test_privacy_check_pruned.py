"""The pruned all-pairs sweep of the d-privacy check (:mod:`dprivacy.channels._pruned`) against the definition.

The pruned sweep settles most pairs by an upper bound on max_z |ln H[y,z] − ln H[y',z]| and compares the rest
exactly; it must return exactly what the plain sweep returns: the same smallest ε (bit for bit), the same worst pair
(the first pair (y, y') in row order of largest ratio), the same verdict, and on an early "no" a witness that
really violates its constraint. The reference is a plain per-pair loop (the definition, ElSalamouny et al. 2014
Def 1), and the plain sweep itself. Here the pruned sweep runs on every size (its size threshold set to 0, and it
never hands over to the plain sweep for pruning too little), on grids (where the bound uses the triangle inequality)
and on arbitrary distance matrices (infinite, zero, non-metric, asymmetric), with zeros in the channel, tied rows
and tied ratios.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprivacy import MetricSpace, measures, spaces
from dprivacy.channels import _pruned


@contextmanager
def pruned(always: bool = True):
    """The pruned sweep on every size, never handing over for pruning too little, and with few sampled rows and
    seed pairs, so that on these small spaces most pairs go through the bound, and in blocks of 50 numbers, so that
    the blocked loops take several turns (``always``); or never."""
    names = ("PRUNE_MIN_WORK", "MAX_CANDIDATE_FRACTION", "_PROBE", "_SAMPLE", "_SEED", "_BLOCK")
    saved = tuple(getattr(_pruned, k) for k in names)
    for k, v in zip(names, (0, 1.0, 2, 3, 2, 50) if always else (1 << 62,) + saved[1:]):
        setattr(_pruned, k, v)
    try:
        yield
    finally:
        for k, v in zip(names, saved):
            setattr(_pruned, k, v)


@contextmanager
def spy():
    """Count the pruned sweep's calls and the ones it finished itself (not handed over to the plain sweep)."""
    calls = {"called": 0, "finished": 0}
    inner = _pruned.bounded_sweep

    def wrapped(*a, **k):
        calls["called"] += 1
        r = inner(*a, **k)
        calls["finished"] += r is not None
        return r

    _pruned.bounded_sweep = wrapped
    try:
        yield calls
    finally:
        _pruned.bounded_sweep = inner


def definition(h: np.ndarray, d: np.ndarray):
    """Per pair i < j: D = max_z |ln h_i − ln h_j| (0 where both are 0, ∞ where one is), ratio D / d (0/0 = 0, pairs
    at infinite distance skipped). Returns the largest ratio and the first pair (i, j) in row order attaining it."""
    with np.errstate(divide="ignore"):
        lg = np.log(h)
    best, pair = -1.0, None
    n = h.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            if np.isinf(d[i, j]):
                continue
            a, b = lg[i], lg[j]
            both = np.isneginf(a) & np.isneginf(b)
            if (np.isneginf(a) ^ np.isneginf(b)).any():
                top = np.inf
            else:
                with np.errstate(invalid="ignore"):
                    top = float(np.abs(np.where(both, 0.0, a - b)).max())
            with np.errstate(divide="ignore", invalid="ignore"):
                r = top / d[i, j]
            r = 0.0 if np.isnan(r) else float(r)
            if r > best:
                best, pair = r, (i, j)
    return max(best, 0.0), pair


def violates(h, d, r) -> bool:
    """Whether r's witness (y, y', z) breaks H[y,z] ≤ e^{ε d(y,y')} H[y',z] beyond the tolerance (d read above the
    diagonal, d[min, max], as the check reads it: the drawn matrices may be asymmetric)."""
    y, y2, z = r.worst
    with np.errstate(divide="ignore"):
        lr = np.log(h[y, z]) - np.log(h[y2, z])
    return bool(lr > r.epsilon * d[min(y, y2), max(y, y2)] * (1 + r.rtol) + r.atol)


def same(a, b) -> bool:
    """Two results equal field by field (NaN equal to NaN)."""
    fields = ("ok", "epsilon", "smallest_epsilon", "worst", "worst_ratio", "distance", "pairs_checked", "rtol", "atol",
              "complete")
    return all((getattr(a, f) == getattr(b, f)) or (getattr(a, f) != getattr(a, f) and getattr(b, f) != getattr(b, f))
               for f in fields)


def shape_channel(rng, logits: np.ndarray, zeros: str, ties: bool) -> np.ndarray:
    h = np.exp(logits - logits.max(axis=1, keepdims=True))
    n, m = h.shape
    if zeros == "entry" and m > 1:
        h[rng.integers(n), rng.integers(m)] = 0.0
    elif zeros == "column" and m > 1:
        h[:, rng.integers(m)] = 0.0  # an output never released: 0 beside 0 everywhere
    elif zeros == "shared" and m > 1:
        rows = rng.choice(n, size=max(1, n // 2), replace=False)
        h[np.ix_(rows, [rng.integers(m)])] = 0.0  # the same zero in several rows
    if ties and n > 2:
        src = rng.integers(n)
        h[rng.choice(n, size=2, replace=False)] = h[src]  # equal rows (ratio 0 for them, ties elsewhere)
    h[h.sum(axis=1) == 0, 0] = 1.0
    return h / h.sum(axis=1, keepdims=True)


@st.composite
def grid_cases(draw):
    """A Euclidean grid and a channel shaped like e^{−ε d(y, p(z))} (outputs at grid points, possibly other points
    than the secrets, possibly fewer or more), perturbed, with zeros and tied rows."""
    w, hgt = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    if w * hgt < 2:
        w = 2
    step = draw(st.sampled_from([1.0, 0.5, 0.1, 3.0]))
    g = spaces.grid(w, hgt, step=step)
    d = np.array(g.distances)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    outputs = draw(st.sampled_from(["points", "points", "subset", "more"]))
    p = (np.arange(g.n) if outputs == "points" else
         rng.integers(g.n, size=max(1, g.n // 2) if outputs == "subset" else 2 * g.n))
    e_true = draw(st.floats(0.05, 3.0))
    noise = draw(st.sampled_from([0.0, 0.0, 1e-9, 0.05, 0.5]))
    logits = -e_true * d[:, p] + noise * rng.standard_normal((g.n, p.size))
    h = shape_channel(rng, logits, draw(st.sampled_from(["none", "none", "entry", "column", "shared"])), draw(st.booleans()))
    return g, d, h, draw(st.floats(0.01, 4.0))


@st.composite
def matrix_cases(draw):
    """An arbitrary distance matrix (Euclidean, with infinite or zero distances, non-metric, asymmetric) as a
    MetricSpace that is not validated, and a channel."""
    n, m = draw(st.integers(2, 12)), draw(st.integers(1, 10))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["euclidean", "infinite", "zero", "non-metric", "asymmetric"]))
    pts = rng.uniform(0, 5, size=(n, 2))
    d = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(axis=2))
    if kind == "infinite":
        cut = rng.integers(1, n)
        d[:cut, cut:] = d[cut:, :cut] = np.inf
    elif kind == "zero":
        d[0, 1] = d[1, 0] = 0.0
    elif kind == "non-metric":
        d = rng.uniform(0.01, 5, size=(n, n)) ** 3
        d = np.triu(d, 1) + np.triu(d, 1).T
    elif kind == "asymmetric":
        d = rng.uniform(0.1, 5, size=(n, n))
        np.fill_diagonal(d, 0.0)
    outs = rng.uniform(0, 5, size=(m, 2))
    dz = np.sqrt(((pts[:, None] - outs[None]) ** 2).sum(axis=2))
    e_true = draw(st.one_of(st.just(0.0), st.floats(0.05, 3.0)))  # 0: rows near uniform, settled by the range bound
    logits = -e_true * dz + draw(st.sampled_from([0.0, 0.05, 0.5])) * rng.standard_normal((n, m))
    h = shape_channel(rng, logits, draw(st.sampled_from(["none", "entry", "column", "shared"])), draw(st.booleans()))
    return MetricSpace(d, validate=False), d, h, draw(st.floats(0.01, 4.0))


def check_against_the_definition(space, d, h, eps, data):
    want, pair = definition(h, d)
    if data.draw(st.booleans()) and np.isfinite(want) and want > 0:  # at ε*, a hair above or below it
        eps = want * data.draw(st.sampled_from([1.0, 1 - 1e-12, 1 + 1e-12, 1 - 1e-6]))
    atol = data.draw(st.sampled_from([None, None, 0.0, 0.05]))
    with pruned(False):
        plain = measures.check_privacy(h, space, epsilon=eps, atol=atol)
        plain_quick = measures.check_privacy(h, space, epsilon=eps, atol=atol, smallest=False)
    with pruned():
        r = measures.check_privacy(h, space, epsilon=eps, atol=atol)
        quick = measures.check_privacy(h, space, epsilon=eps, atol=atol, smallest=False)
    # the full check is exactly the plain sweep's, which is the definition
    assert same(r, plain)
    assert r.complete and r.pairs_checked == space.n * (space.n - 1) // 2
    assert r.smallest_epsilon == pytest.approx(want, rel=1e-12) or (np.isinf(want) and np.isinf(r.smallest_epsilon))
    if pair is not None:
        assert {r.worst[0], r.worst[1]} == set(pair)
    # the verdict only: the same verdict, and a witness that violates
    assert quick.ok == r.ok == plain_quick.ok
    if r.ok:
        assert same(quick, r)
    else:
        assert not quick.complete and np.isnan(quick.smallest_epsilon) and violates(h, d, quick)
        assert quick.pairs_checked <= r.pairs_checked


@settings(max_examples=300, deadline=None)
@given(grid_cases(), st.data())
def test_pruned_sweep_on_grids_is_the_definition(case, data):
    g, d, h, eps = case
    check_against_the_definition(g, d, h, eps, data)


@settings(max_examples=300, deadline=None)
@given(matrix_cases(), st.data())
def test_pruned_sweep_on_any_distance_matrix_is_the_definition(case, data):
    space, d, h, eps = case
    check_against_the_definition(space, d, h, eps, data)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(2, 6), st.floats(0.2, 3.0), st.integers(0, 2**32 - 1), st.data())
def test_pruned_sweep_on_logarithms_and_priors(w, hgt, e_true, seed, data):
    """check_privacy_log (with −∞ entries) and check_prior_privacy (one column) take the same sweep."""
    g = spaces.grid(w, hgt)
    d = g.distances
    rng = np.random.default_rng(seed)
    logh = -e_true * d + 0.1 * rng.standard_normal(d.shape)
    if data.draw(st.booleans()):
        logh[rng.integers(g.n), rng.integers(g.n)] = -np.inf
    eps = data.draw(st.floats(0.1, 4.0))
    with pruned(False):
        plain = measures.check_privacy_log(logh, g, epsilon=eps)
    with pruned():
        r = measures.check_privacy_log(logh, g, epsilon=eps)
    assert same(r, plain)
    prior = np.exp(-e_true * d[0] + 0.1 * rng.standard_normal(g.n))
    prior /= prior.sum()
    with pruned(False):
        plain = measures.check_prior_privacy(g, prior, epsilon=eps)
    with pruned():
        r = measures.check_prior_privacy(g, prior, epsilon=eps)
    assert same(r, plain)
    assert r.smallest_epsilon == pytest.approx(definition(prior[:, None], d)[0], rel=1e-12)


def test_the_bound_settles_a_grid_channel_and_the_early_exit_reads_few_rows():
    """A planar-Laplace-like channel on grid:20x20 (the issue's benchmark, smaller): the pruned sweep finishes by itself
    (it does not hand over to the plain sweep) with the plain sweep's answer, at its default thresholds."""
    g = spaces.grid(20, 20)
    d = g.distances
    h = np.exp(-d)
    h /= h.sum(axis=1, keepdims=True)
    with pruned(False):
        plain = measures.check_privacy(h, g, epsilon=1.0)
    with spy() as calls:
        r = measures.check_privacy(h, spaces.grid(20, 20), epsilon=1.0)
        quick = measures.check_privacy(h, spaces.grid(20, 20), epsilon=1.0, smallest=False)
        private = measures.check_privacy(h, spaces.grid(20, 20), epsilon=1.5, smallest=False)
    assert calls == {"called": 3, "finished": 3}
    assert same(r, plain) and not r.ok and r.smallest_epsilon == pytest.approx(definition(h, d)[0], rel=1e-12)
    assert not quick.ok and violates(h, d, quick) and quick.pairs_checked < 400  # stopped among the first pairs
    assert private.ok and private.complete and private.smallest_epsilon == r.smallest_epsilon


def test_ties_everywhere_hand_over_to_the_plain_sweep():
    """A tight-constraints-like channel, H[y,z] ∝ e^{−d(y,z)} z_z: every pair's ratio is 1 up to rounding, so no pair
    can be settled by a bound (the reported pair is decided by rounding): the plain sweep answers."""
    g = spaces.grid(12, 12)
    d = g.distances
    logh = -d + np.log(np.linspace(1, 2, g.n))[None, :]
    with pruned(False):
        plain = measures.check_privacy_log(logh, g, epsilon=1.0)
    with spy() as calls, pruned():
        r = measures.check_privacy_log(logh, g, epsilon=1.0)
    assert calls["called"] == 1 and same(r, plain) and r.smallest_epsilon == pytest.approx(1.0, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(matrix_cases(), st.data())
def test_a_negative_distance_is_left_to_the_plain_sweep(case, data):
    """An unvalidated space may hold a negative distance (no metric's): the pruned sweep declines, and both checks
    answer exactly as the plain sweep does."""
    space, d, h, eps = case
    d = d.copy()
    i, j = data.draw(st.integers(0, d.shape[0] - 2)), d.shape[0] - 1
    d[i, j] = -abs(d[i, j]) - 0.5
    space = MetricSpace(d, validate=False)
    with pruned(False):
        plain = [measures.check_privacy(h, space, epsilon=eps, smallest=s) for s in (True, False)]
    with spy() as calls, pruned():
        got = [measures.check_privacy(h, space, epsilon=eps, smallest=s) for s in (True, False)]
    assert calls == {"called": 2, "finished": 0} and all(same(a, b) for a, b in zip(got, plain))


def test_the_validation_still_names_the_fault():
    g = spaces.grid(3, 3)
    h = np.full((9, 9), 1 / 9)
    for bad, msg in [(np.nan, "NaN"), (np.inf, "infinite"), (-0.1, "non-negative")]:
        x = h.copy()
        x[4, 2] = bad
        with pytest.raises(ValueError, match=msg):
            measures.check_privacy(x, g, epsilon=1.0)
    x = h.copy()
    x[5] *= 1.01
    with pytest.raises(ValueError, match="row 5 sums"):
        measures.check_privacy(x, g, epsilon=1.0)
    with pytest.raises(ValueError, match="2-D"):
        measures.check_privacy(h[0], g, epsilon=1.0)
    with pytest.raises(TypeError):
        measures.check_privacy([["a"]], g, epsilon=1.0)
