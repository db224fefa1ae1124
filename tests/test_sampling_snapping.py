"""Floating-point leaks (Mironov, CCS 2012): the textbook Laplace sampler fails the reachability test and
the stochastic privacy-loss test catches a mis-scaled sampler; the snapping mechanism passes both."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprivacy.sampling import random_source
from dprivacy.sampling.snapping import SnappedLaplace, reachable, textbook_laplace

EPS = 0.5
SCALE = 1 / EPS


def _textbook_produce(x, s, u):
    return x + s * SCALE * np.log(u)


def test_textbook_float_laplace_leaks_its_input():
    """Negative control: most outputs drawn at x = 1 cannot be produced at the neighbour x = 0."""
    y = textbook_laplace(np.ones(4000), scale=SCALE, generator=random_source(1).generator)
    assert reachable(y, 1.0, _textbook_produce, scale=SCALE).all()  # the test finds the true input's U
    frac = 1 - reachable(y, 0.0, _textbook_produce, scale=SCALE).mean()
    assert frac > 0.3, frac  # an observer tells x = 1 from x = 0 with certainty this often


def test_snapped_laplace_outputs_are_reachable_from_both_neighbours():
    mech = SnappedLaplace(EPS, 1.0, 64.0)
    lam, grid, b = 1 / EPS, mech.lattice, mech.bound

    def produce(x, s, u):
        return np.clip(np.round((np.clip(x, -b, b) + s * lam * np.log(u)) / grid) * grid, -b, b)

    y = mech.release(np.ones(4000), random_source(2).generator)
    assert np.all(np.abs(y / grid - np.round(y / grid)) == 0)  # on the lattice
    assert reachable(y, 1.0, produce, scale=lam).all()
    assert reachable(y, 0.0, produce, scale=lam).all()  # the same outputs are possible from the neighbour
    assert mech.delivered_epsilon - EPS < 1e-12


def _privacy_loss_bound(a, b, *, min_count=500, z=5.0):
    """Stochastic tester (in the style of Google's DP library): over output values seen at least
    ``min_count`` times from each input, the largest |ln(p̂_a/p̂_b)| minus a z-sigma confidence margin
    (a lower confidence bound on the true privacy loss)."""
    va, ca = np.unique(a, return_counts=True)
    vb, cb = np.unique(b, return_counts=True)
    common, ia, ib = np.intersect1d(va, vb, return_indices=True)
    ka, kb = ca[ia], cb[ib]
    keep = (ka >= min_count) & (kb >= min_count)
    ka, kb = ka[keep], kb[keep]
    loss = np.abs(np.log((ka / a.size) / (kb / b.size)))
    sigma = np.sqrt(1 / ka + 1 / kb)
    return float((loss - z * sigma).max())


@pytest.mark.parametrize("broken", [False, True])
def test_stochastic_privacy_loss_tester(broken):
    """Neighbours x = 0 and x = 1 (Δ = 1): the snapped mechanism's empirical privacy loss stays within ε;
    a sampler built with twice the ε it claims is caught."""
    claimed = EPS
    mech = SnappedLaplace(2 * claimed if broken else claimed, 1.0, 64.0)
    g = random_source(3).generator
    a = mech.release(np.zeros(400_000), g)
    b = mech.release(np.ones(400_000), g)
    lower = _privacy_loss_bound(a, b)
    if broken:
        assert lower > claimed  # the lower confidence bound on the loss exceeds the claim: refuted
    else:
        assert lower <= claimed


def test_snapping_needs_a_sane_bound():
    with pytest.raises(ValueError, match="λ < B/Δ"):
        SnappedLaplace(0.5, 1.0, 1.0)
    assert SnappedLaplace(0.3, 1.0, 100.0).lattice == 4.0  # smallest power of two ≥ 1/0.3
    assert math.isclose(SnappedLaplace(1.0, 2.0, 64.0).lattice, 2.0)


@pytest.mark.parametrize("broken", [False, True])
def test_stochastic_privacy_loss_tester_on_the_default_laplace_sampler(broken):
    """The default (exact discrete-lattice) 1-D Laplace sampler passes the same tester; the outputs are
    binned to width 1/4 first (post-processing, so a loss seen on bins is a loss of the mechanism)."""
    from dprivacy.mechanisms.laplace import laplace_sample

    claimed = EPS
    eps = 2 * claimed if broken else claimed
    a = laplace_sample(np.zeros(400_000), epsilon=eps, rng=4)
    b = laplace_sample(np.ones(400_000), epsilon=eps, rng=5)
    lower = _privacy_loss_bound(np.floor(a * 4), np.floor(b * 4))
    if broken:
        assert lower > claimed
    else:
        assert lower <= claimed
