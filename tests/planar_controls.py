"""Negative controls and testers for planar Laplace samplers (imported by the tests; not a test module).

* :func:`textbook_planar_laplace` — the float sampler the library used before (θ = 2πU₁, r = C_ε⁻¹(U₂)
  with U on the 2^-53 grid, output x + r(cos θ, sin θ) in float64), kept here only as the negative
  control: it is *not* private as released (Mironov, CCS 2012).
* :func:`float_reachable` — Mironov's reachability test for it: can output y be produced at all from x?
* :func:`loss_lower_bound` — a stochastic privacy-loss tester in the style of Google's DP library: for
  every value of a feature of the output (any post-processing), a Clopper–Pearson lower confidence bound
  on |ln P(f = v | x) / P(f = v | x')|; the largest over v. If it exceeds ε, ε-privacy is refuted at the
  stated confidence.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from dprivacy.mechanisms.planar_laplace import planar_laplace_radius


def textbook_planar_laplace(points, *, epsilon: float, generator) -> np.ndarray:
    """The old float sampler, verbatim (negative control)."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    k = pts.shape[0]
    theta = generator.random(k) * (2.0 * math.pi)
    r = planar_laplace_radius(generator.random(k), epsilon=epsilon)
    return pts + np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1)


def _produce(x, k1, k2, epsilon):
    """The float sampler's output at x for U₁ = k1·2^-53, U₂ = k2·2^-53 (broadcast)."""
    theta = (k1 * 2.0**-53) * (2.0 * math.pi)
    r = planar_laplace_radius(np.clip(k2 * 2.0**-53, 0, 1 - 2.0**-53).ravel(), epsilon=epsilon).reshape(np.shape(k2))
    return x[0] + r * np.cos(theta), x[1] + r * np.sin(theta)


def float_reachable(outputs, x, *, epsilon: float, window: int = 24) -> np.ndarray:
    """For each output y of :func:`textbook_planar_laplace`, whether some (U₁, U₂) on the 2^-53 grid
    produces exactly y from input x. U₂ is found by bisection on the (monotone) radius function, U₁ from
    atan2; then every pair within ``window`` grid steps of both is tried."""
    y = np.asarray(outputs, dtype=np.float64).reshape(-1, 2)
    x = np.asarray(x, dtype=np.float64)
    d = y - x
    r_target = np.hypot(d[:, 0], d[:, 1])
    lo = np.zeros(len(y))
    hi = np.full(len(y), 2.0**53 - 1)
    for _ in range(60):  # largest k2 with r(k2) ≤ r_target
        mid = np.floor((lo + hi) / 2)
        r_mid = planar_laplace_radius(mid * 2.0**-53, epsilon=epsilon)
        below = r_mid <= r_target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    k2c = lo
    k1c = np.round(np.mod(np.arctan2(d[:, 1], d[:, 0]), 2 * math.pi) / (2 * math.pi) * 2.0**53)
    off = np.arange(-window, window + 1, dtype=np.float64)
    ok = np.zeros(len(y), dtype=bool)
    for i in range(len(y)):
        k1 = np.mod(k1c[i] + off, 2.0**53)[:, None]
        k2 = np.clip(k2c[i] + off, 0, 2.0**53 - 1)[None, :]
        px, py = _produce(x, k1, k2, epsilon)
        ok[i] = bool(np.any((px == y[i, 0]) & (py == y[i, 1])))
    return ok


def loss_lower_bound(feat_a, feat_b, *, alpha: float = 1e-6) -> float:
    """max over feature values v of a lower confidence bound on |ln(P_a(v)/P_b(v))| (Clopper–Pearson,
    Bonferroni over the values and the two directions; overall confidence 1 − alpha). 0 when no value
    has a ratio certainly away from 1."""
    va, ca = np.unique(np.asarray(feat_a), return_counts=True, axis=0)
    vb, cb = np.unique(np.asarray(feat_b), return_counts=True, axis=0)
    na, nb = len(feat_a), len(feat_b)
    values = {tuple(np.atleast_1d(v)): [0, 0] for v in list(va) + list(vb)}
    for v, c in zip(va, ca):
        values[tuple(np.atleast_1d(v))][0] = int(c)
    for v, c in zip(vb, cb):
        values[tuple(np.atleast_1d(v))][1] = int(c)
    a = alpha / (4 * len(values))
    best = 0.0
    for ka, kb in values.values():
        for (k1, n1), (k2, n2) in (((ka, na), (kb, nb)), ((kb, nb), (ka, na))):
            if k1 == 0:
                continue
            lo1 = stats.beta.ppf(a, k1, n1 - k1 + 1)  # lower bound on p1
            hi2 = 1.0 if k2 == n2 else stats.beta.ppf(1 - a, k2 + 1, n2 - k2)  # upper bound on p2
            if lo1 > 0 and hi2 > 0:
                best = max(best, math.log(lo1 / hi2))
    return best
