r"""The 1-D Laplace mechanism without floating-point leaks: Mironov's snapping mechanism.

The textbook sampler x + s·λ·ln(U) in floating point (U uniform on a 2^-53 grid, s a random sign)
releases floats whose low-order bits depend on x: many outputs drawn at x are impossible at a
neighbouring x' (Mironov, "On significance of the least significant bits for differential privacy",
CCS 2012), so the float mechanism is not differentially private at all. The snapping mechanism

.. math:: \tilde f(x) = \mathrm{clamp}_B\bigl(\lfloor \mathrm{clamp}_B(x) + s\,\lambda \ln U \rceil_\Lambda\bigr)

clamps the input to [−B, B], adds the same noise, rounds to the nearest multiple of Λ (the smallest power
of two ≥ λ) and clamps again. Its outputs lie on the fixed lattice ΛZ ∩ [−B, B] whatever x is, and
Mironov's Theorem 1 gives (1/λ + 2^{−49}B/λ²)-differential privacy for sensitivity 1 when
λ < B < 2^{46}·λ, assuming a correctly rounded logarithm (the platform's ``log`` is within an ulp).
With sensitivity Δ we work in units of Δ: λ = 1/ε and B/Δ, so the delivered ε is
ε + 2^{−49}·(B/Δ)·ε².
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SnappedLaplace:
    """Snapping-mechanism parameters for ε, sensitivity Δ and clamp bound B (all in the data's units)."""

    epsilon: float
    sensitivity: float
    bound: float

    def __post_init__(self):
        from .._validate import check_epsilon

        check_epsilon(self.epsilon)
        check_epsilon(self.sensitivity, name="sensitivity")
        check_epsilon(self.bound, name="bound")
        lam = 1.0 / self.epsilon  # noise scale in units of Δ
        b = self.bound / self.sensitivity
        if not (lam < b < 2.0**46 * lam):
            raise ValueError(f"the snapping mechanism needs λ < B/Δ < 2^46·λ with λ = 1/ε = {lam:.6g}; got B/Δ = {b:.6g} "
                             "(choose a clamp bound B a few noise scales wider than the data's range)")

    @property
    def lattice(self) -> float:
        """Λ in the data's units: Δ times the smallest power of two ≥ λ = 1/ε."""
        return self.sensitivity * 2.0 ** math.ceil(math.log2(1.0 / self.epsilon))

    @property
    def delivered_epsilon(self) -> float:
        """ε + 2^{−49}·(B/Δ)·ε² (Mironov 2012, Thm 1, rescaled to sensitivity Δ)."""
        return self.epsilon + 2.0**-49 * (self.bound / self.sensitivity) * self.epsilon**2

    def release(self, values, generator: np.random.Generator) -> np.ndarray:
        """Snapped noisy values: multiples of :attr:`lattice` in [−B, B]."""
        x = np.asarray(values, dtype=np.float64) / self.sensitivity
        b = self.bound / self.sensitivity
        lam = 1.0 / self.epsilon
        grid = self.lattice / self.sensitivity
        u = (generator.integers(0, 1 << 53, size=x.shape, dtype=np.int64) + 1) * 2.0**-53  # (0, 1], 53-bit grid
        s = np.where(generator.integers(0, 2, size=x.shape) == 1, 1.0, -1.0)
        y = np.clip(x, -b, b) + s * lam * np.log(u)
        y = np.clip(np.round(y / grid) * grid, -b, b)
        return y * self.sensitivity


def textbook_laplace(values, *, scale: float, generator: np.random.Generator) -> np.ndarray:
    """The textbook float sampler x + s·scale·ln(U), U on the 2^-53 grid: kept as the negative control of
    the tests (its outputs leak x through their low-order bits). Not used by any command."""
    x = np.asarray(values, dtype=np.float64)
    u = (generator.integers(0, 1 << 53, size=x.shape, dtype=np.int64) + 1) * 2.0**-53
    s = np.where(generator.integers(0, 2, size=x.shape) == 1, 1.0, -1.0)
    return x + s * scale * np.log(u)


def reachable(outputs, x: float, produce, *, scale: float, radius: int = 64) -> np.ndarray:
    """Whether each output could have been produced from input ``x`` by a sampler
    ``produce(x, s, u)`` driven by U on the 2^-53 grid and a sign s: searches the U's within ``radius``
    grid steps of the inverse exp(−|y − x|/scale) (the noise is monotone in U, so a U producing y is
    there if anywhere) — the reachability test of Mironov (CCS 2012)."""
    y = np.asarray(outputs, dtype=np.float64)
    u0 = np.exp(-np.abs(y - x) / scale)
    k0 = np.round(u0 * 2.0**53)
    ok = np.zeros(y.shape, dtype=bool)
    for dk in range(-radius, radius + 1):
        k = np.clip(k0 + dk, 1, 2.0**53)
        u = k * 2.0**-53
        for s in (1.0, -1.0):
            ok |= produce(x, s, u) == y
    return ok
