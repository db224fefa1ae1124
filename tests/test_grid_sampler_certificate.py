"""The delivered ε of the 62-bit integer rejection sampler of a grid tight-constraints mechanism
(``dprivacy._kernels.sampling``): the certified bound it states holds for the channel it actually
samples, computed here exactly (rational arithmetic) from its integer tables on small grids.

References: ElSalamouny et al. 2014 (ElSalamouny et al. 2014) Def 6 and Prop 6 (the tight-constraints mechanism and
its privacy); Mironov, CCS 2012 (reachability of every output).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dprivacy import spaces
from dprivacy._kernels.implicit import ImplicitTightMechanism
from dprivacy._kernels.sampling import KernelRejectionSampler
from dprivacy.mechanisms.tight import tight_constraints


def _mixture_counts(n: int) -> list[int]:
    """How many 62-bit integers u the mixture maps to each cell (the sampler's float expression)."""
    def cell(u: int) -> int:
        return min(int(float(u) * (n * 2.0**-62)), n - 1)

    bounds = [0]
    for c in range(1, n):  # the least u with cell(u) ≥ c (cell is monotone in u)
        lo, hi = bounds[-1], 2**62
        while lo < hi:
            mid = (lo + hi) // 2
            if cell(mid) >= c:
                hi = mid
            else:
                lo = mid + 1
        bounds.append(lo)
    bounds.append(2**62)
    return [bounds[c + 1] - bounds[c] for c in range(n)]


def _sampled_channel(s: KernelRejectionSampler) -> list[list[Fraction]]:
    """P(output z | secret y) of the sampler, exactly: (1 − γ)·w̃(z−y)ã(z)/Σ + γ·μ(z)."""
    g = s.grid
    w, h, n = g.width, g.height, g.n
    one = 2**62
    weight = {}
    prev = 0
    for ady, adx, cum in zip(s._ady, s._adx, s._cum):  # quadrant table: |dy|, |dx| and cumulative weights
        q = int(cum) - prev
        prev = int(cum)
        for sy in (1, -1):  # two random sign bits: four patterns, which coincide on a zero component
            for sx in (1, -1):
                weight[(sy * int(ady), sx * int(adx))] = weight.get((sy * int(ady), sx * int(adx)), 0) + Fraction(q, 4)
    mix = [Fraction(c, one) for c in _mixture_counts(n)]
    gamma = Fraction(1, 2**s.mixture_bits)
    rows = []
    for y in range(n):
        yr, yc = divmod(y, w)
        num = []
        for z in range(n):
            zr, zc = divmod(z, w)
            num.append(weight.get((zr - yr, zc - yc), Fraction(0)) * Fraction(int(s._accept[z]), one))
        tot = sum(num)
        rows.append([(1 - gamma) * v / tot + gamma * mix[z] for z, v in enumerate(num)])
    return rows


@pytest.mark.parametrize("w, h, eps, metric", [(3, 3, 1.5, "euclidean"), (4, 3, 1.0, "manhattan"), (4, 4, 2.0, "chebyshev")])
def test_the_certified_delivered_epsilon_bounds_the_sampled_channel(w, h, eps, metric):
    space = spaces.grid(w, h, metric=metric)
    res = tight_constraints(space, epsilon=eps, method="dense")
    assert res.exists, res.reason  # these (space, ε) are above the threshold
    mech = ImplicitTightMechanism(space, res.z, epsilon=eps)
    s = KernelRejectionSampler(space, mech.z, eps)
    bound, how = s.certified_epsilon()
    assert math.isfinite(bound) and bound >= eps
    rows = _sampled_channel(s)
    d = space.distances
    worst = 0.0
    for y in range(space.n):
        for y2 in range(space.n):
            if y == y2:
                continue
            for z in range(space.n):
                assert rows[y2][z] > 0  # every output reachable from every secret
                worst = max(worst, math.log(rows[y][z] / rows[y2][z]) / d[y, y2])
    assert worst <= bound, how
    assert worst >= eps * (1 - 1e-6)  # the channel is the mechanism's, not a flattened one
