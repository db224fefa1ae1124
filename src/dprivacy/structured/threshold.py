"""The threshold ε* of a grid: the smallest ε at which a tight-constraints mechanism exists
(seed 000 Prop 8, §7.2), by certified existence tests of :func:`.solve.tight_constraints_grid`.

Same contract and result type as :func:`dprivacy.threshold.tight_threshold` (the dense version):
a bracket (lo, hi] with non-existence *certified* at lo and existence certified at hi, narrowed by
Illinois steps on the continuous function ε ↦ min z(ε), then a scan above hi that checks the papers'
assumption that existence persists for every ε > ε*. What is specific to grids:

* every probe is a conjugate-gradient solve, warm-started from the z of the nearest ε already
  probed (z(ε) is smooth in ε, so near the threshold a few iterations suffice);
* Manhattan grids need no search: z is positive for every ε in closed form
  (:mod:`.closed_form`), so ε* = 0.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .._validate import check_epsilon, check_positive_int
from ..spaces import GridSpace
from ..threshold import MonotoneCheck, Probe, ThresholdResult
from .solve import DEFAULT_TOL, tight_constraints_grid

#: Largest number of doublings when looking for an ε at which the mechanism exists.
MAX_DOUBLINGS = 40

#: Default lower limit of the downward search, as a fraction of the first ε tried (1/step).
DEFAULT_EPS_MIN_FACTOR = 1e-3

#: Warm-start from a probed ε only when it is within this factor of the new one.
WARM_RATIO = 1.5


class _GridProber:
    """Existence tests at several ε on one grid, keeping a few solutions for warm starts."""

    def __init__(self, grid: GridSpace, solver_kw: dict, progress, keep: int = 4):
        self.grid = grid
        self.kw = solver_kw
        self.progress = progress
        self.keep = keep
        self.probes: list[Probe] = []
        self.iterations = 0
        self._z: dict[float, np.ndarray] = {}

    def __call__(self, eps: float) -> str:
        x0 = None
        if self._z:
            near = min(self._z, key=lambda e: abs(math.log(e / eps)))
            if abs(math.log(near / eps)) <= math.log(WARM_RATIO):
                x0 = self._z[near]
        res = tight_constraints_grid(self.grid, epsilon=eps, x0=x0, **self.kw)
        self.iterations += res.iterations
        status = "exists" if res.exists else ("absent" if res.decided else "undecided")
        probe = Probe(float(eps), status, res.min_z)
        self.probes.append(probe)
        self._z[float(eps)] = res.z
        if len(self._z) > self.keep:
            # Forget the solution farthest from the latest ε.
            far = max(self._z, key=lambda e: abs(math.log(e / eps)))
            del self._z[far]
        if self.progress is not None:
            self.progress(probe)
        return status


def tight_threshold_grid(
    grid: GridSpace,
    *,
    lo: float | None = None,
    hi: float | None = None,
    tol: float = 1e-4,
    scan: int = 10,
    scan_factor: float = 3.0,
    eps_min: float | None = None,
    solver_tol: float = DEFAULT_TOL,
    max_iter: int = 5000,
    workers: int | None = None,
    progress: Callable[[Probe], None] | None = None,
) -> ThresholdResult:
    """Bracket the threshold ε* above which a tight-constraints mechanism exists on ``grid``.

    Parameters and result as :func:`dprivacy.threshold.tight_threshold` (seed 000 Prop 8: existence
    ⇔ the uniform prior is ε·d-regular), with the grid solver's options:

    Parameters
    ----------
    grid : GridSpace
    lo, hi : float, optional
        A starting bracket; ``lo`` must be certified absent and ``hi`` certified present (ValueError
        otherwise).
    tol : float
        Width of the final bracket.
    scan : int
        ε values in the monotonicity scan above hi (default 10, fewer than the dense default of 30
        because each probe is a large solve; 0 skips it).
    scan_factor : float
        The scan covers (hi, scan_factor·hi].
    eps_min : float, optional
        Smallest ε tried when looking for non-existence (default 1e-3 / step).
    solver_tol, max_iter, workers
        Passed to :func:`.solve.tight_constraints_grid` (which refines an undecided answer itself).
    progress : callable, optional
        ``progress(probe)`` after each existence test (a :class:`dprivacy.threshold.Probe`).

    Returns
    -------
    dprivacy.threshold.ThresholdResult
    """
    if not isinstance(grid, GridSpace):
        raise TypeError(f"grid must be a GridSpace, got {type(grid).__name__}")
    tol = check_epsilon(tol, name="tol")
    scan = check_positive_int(scan, name="scan", minimum=0)
    scan_factor = check_epsilon(scan_factor, name="scan_factor")
    if scan > 0 and scan_factor <= 1:
        raise ValueError(f"scan_factor must exceed 1 to scan above hi, got {scan_factor}")
    lo = None if lo is None else check_epsilon(lo, name="lo")
    hi = None if hi is None else check_epsilon(hi, name="hi")
    if lo is not None and hi is not None and not lo < hi:
        raise ValueError(f"lo must be below hi, got lo={lo} and hi={hi}")
    if grid.metric == "manhattan":
        return ThresholdResult(
            epsilon_star=0.0, bracket=None, certified=True, solves=0,
            monotone_checked=MonotoneCheck(np.zeros(0), (), (), True, "by the closed form"),
            always_exists=True, tol=tol,
            reason="Manhattan grid: Φ = T_H ⊗ T_W and z = (T_H⁻¹1) ⊗ (T_W⁻¹1) > 0 in closed form, so a "
            "tight-constraints mechanism exists for every ε > 0 (dprivacy.structured.closed_form)",
        )
    start = 1.0 / grid.step
    eps_min = check_epsilon(DEFAULT_EPS_MIN_FACTOR * start if eps_min is None else eps_min, name="eps_min")
    probe = _GridProber(grid, dict(tol=solver_tol, max_iter=max_iter, workers=workers), progress)

    if lo is not None and (s := probe(lo)) != "absent":
        raise ValueError(
            f"lo={lo} is not a lower end: non-existence is not certified there ({s}, min z = {probe.probes[-1].min_z:.3g})"
        )
    if hi is not None:
        if (s := probe(hi)) != "exists":
            raise ValueError(
                f"hi={hi} is not an upper end: existence is not certified there ({s}, min z = {probe.probes[-1].min_z:.3g})"
            )
    else:
        e = start if lo is None else max(start, 2 * lo)
        for _ in range(MAX_DOUBLINGS):
            s = probe(e)
            if s == "exists":
                hi = e
                break
            if s == "absent" and (lo is None or e > lo):
                lo = e
            e *= 2
        if hi is None:
            return _finish(probe, None, None, tol, 0, scan_factor, f"no ε up to {e / 2:.3g} where the mechanism is verified to exist")
    if lo is None:
        e = hi / 2
        while e >= eps_min:
            s = probe(e)
            if s == "exists":
                hi = e
            elif s == "absent":
                lo = e
                break
            else:
                break
            e /= 2
        if lo is None:
            why = (
                f"exists at every ε tried down to {hi:.3g}; no ε with certified non-existence was found, "
                "so hi is only an upper bound on ε*"
            )
            return _finish(probe, None, hi, tol, scan, scan_factor, why)
    lo, hi, stuck = _narrow(probe, lo, hi, tol)
    if stuck:
        why = f"the test could not decide near ε = {0.5 * (lo + hi):.6g}; bracket wider than tol"
    else:
        why = f"ε* lies in ({lo:.6g}, {hi:.6g}]: certified non-existence at lo and existence at hi"
    return _finish(probe, lo, hi, tol, scan, scan_factor, why)


def _narrow(probe: _GridProber, lo: float, hi: float, tol: float):
    """Illinois steps on min z(ε) inside [lo, hi], bisection when they stall; lo stays certified
    absent, hi certified present. An undecided point is within rounding of the sign change: probe
    tol/4 on each side of it."""
    f = {p.epsilon: p.min_z for p in probe.probes}
    flo, fhi = f.get(lo, -1.0), f.get(hi, 1.0)
    widths = [hi - lo]
    side = 0
    while hi - lo > tol:
        stalled = len(widths) >= 3 and widths[-1] > 0.5 * widths[-3]
        if stalled or not (flo < 0 < fhi):
            x = 0.5 * (lo + hi)
        else:
            x = hi - fhi * (hi - lo) / (fhi - flo)
            x = min(max(x, lo + 0.5 * tol), hi - 0.5 * tol)
        s = probe(x)
        fx = probe.probes[-1].min_z
        if s == "exists":
            hi, fhi = x, fx
            if side == 1:
                flo *= 0.5
            side = 1
        elif s == "absent":
            lo, flo = x, fx
            if side == -1:
                fhi *= 0.5
            side = -1
        else:
            w = min(tol / 4, (hi - lo) / 4)
            moved = False
            for e in (x + w, x - w):
                if lo < e < hi:
                    t = probe(e)
                    if t == "exists":
                        hi, fhi, moved = e, probe.probes[-1].min_z, True
                    elif t == "absent":
                        lo, flo, moved = e, probe.probes[-1].min_z, True
            if not moved:
                return lo, hi, True
            side = 0
        widths.append(hi - lo)
    return lo, hi, False


def _finish(probe: _GridProber, lo, hi, tol, scan, scan_factor, why) -> ThresholdResult:
    mono = None
    if hi is not None and scan > 0:
        eps = np.geomspace(hi, scan_factor * hi, scan + 1)[1:]
        fails, und = [], []
        for e in eps:
            s = probe(float(e))
            if s == "absent":
                fails.append((float(e), probe.probes[-1].min_z))
            elif s == "undecided":
                und.append(float(e))
        mono = MonotoneCheck(eps, tuple(fails), tuple(und), not fails and not und)
        if fails:
            why += f"; NOT monotone: the mechanism does not exist at {len(fails)} scanned ε above hi (first {fails[0][0]:.6g})"
        elif und:
            why += f"; monotonicity scan undecided at {len(und)} ε"
        else:
            why += f"; exists at all {scan} scanned ε in ({hi:.4g}, {scan_factor * hi:.4g}]"
    why += f" ({len(probe.probes)} solves, {probe.iterations} CG iterations in all)"
    certified = lo is not None and hi is not None and hi - lo <= tol
    return ThresholdResult(
        epsilon_star=hi, bracket=(lo, hi) if hi is not None else None, certified=certified,
        solves=len(probe.probes), monotone_checked=mono, always_exists=False, reason=why, tol=tol,
        probes=tuple(probe.probes),
    )
