"""The threshold ε* of a grid: the smallest ε at which a tight-constraints mechanism exists
(ElSalamouny et al. 2014 Prop 8, §7.2), by certified existence tests of :func:`.solve.tight_constraints_grid`.

Same contract, result type and search as :func:`dprivacy.threshold.tight_threshold` (the search is
:func:`.threshold_search.bracket_threshold`, shared): a bracket (lo, hi] with non-existence
*certified* at lo and existence certified at hi, narrowed by Illinois steps on the continuous function
ε ↦ min z(ε), then a scan above hi that checks the papers' assumption that existence persists for
every ε > ε*. What is specific to grids:

* every probe is a conjugate-gradient solve, warm-started from the z of the nearest ε already
  probed (z(ε) is smooth in ε, so near the threshold a few iterations suffice).

Closed forms (a Manhattan grid: ε* = 0) are the front door's business (:func:`dprivacy.tight_threshold`),
written once there.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .._validate import check_epsilon
from ..spaces import GridSpace
from .solve import DEFAULT_TOL, tight_constraints_grid
from .threshold_search import Probe, ThresholdResult, bracket_threshold, check_search

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

    Parameters and result as :func:`dprivacy.threshold.tight_threshold` (ElSalamouny et al. 2014 Prop 8: existence
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
        ``progress(probe)`` after each existence test (a :class:`.threshold_search.Probe`).

    Returns
    -------
    dprivacy.threshold.ThresholdResult
    """
    if not isinstance(grid, GridSpace):
        raise TypeError(f"grid must be a GridSpace, got {type(grid).__name__}")
    tol, scan, scan_factor, lo, hi = check_search(tol, scan, scan_factor, lo, hi)
    start = 1.0 / grid.step
    eps_min = check_epsilon(DEFAULT_EPS_MIN_FACTOR * start if eps_min is None else eps_min, name="eps_min")
    probe = _GridProber(grid, dict(tol=solver_tol, max_iter=max_iter, workers=workers), progress)

    return bracket_threshold(probe, lo=lo, hi=hi, start=start, eps_min=eps_min, tol=tol, scan=scan,
                             scan_factor=scan_factor,
                             suffix=lambda p: f" ({len(p.probes)} solves, {p.iterations} CG iterations in all)")
