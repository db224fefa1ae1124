"""The threshold ε* above which a tight-constraints mechanism exists (ElSalamouny et al. 2014 §6.1 after Prop 8, §7.1;
ElSalamouny et al. 2013 §5 after Lemma 4).

As ε grows, Φ = exp(−ε d) tends to the identity and the region of ε·d-regular priors to the whole
simplex, so for large ε the uniform prior is regular and a tight-constraints mechanism exists
(ElSalamouny et al. 2014 Prop 8). The papers call the smallest such ε the threshold ε* and assume existence for every
ε above it; they report ε* for the sum and 2-count queries "at 0.01 steps" (ElSalamouny et al. 2014 §7.1). Here ε* is
bracketed by bisection between an ε where non-existence is *certified* and one where existence is,
using the honest existence test of :func:`dprivacy.mechanisms.tight.tight_constraints`, and the
assumption of monotonicity is checked by scanning ε above the bracket. The search itself, with its result
types, is :mod:`dprivacy._kernels.threshold_search`, shared with the grid and sum-line solvers.
"""

from __future__ import annotations

import numpy as np

from ._kernels.phi_solve import solve_phi
from ._kernels.threshold_search import (MAX_DOUBLINGS, MonotoneCheck, Probe, ThresholdResult, _always_exists,
                                        bracket_threshold, check_search)
from ._validate import check_epsilon
from .mechanisms.tight import _ball_profile, _constraints
from .spaces import MetricSpace

__all__ = ["DEFAULT_TOL", "MAX_DOUBLINGS", "MonotoneCheck", "Probe", "ThresholdResult", "bracket_threshold",
           "check_search", "tight_threshold"]

#: How far down to look for an ε at which the mechanism does not exist, as a fraction of the first ε
#: tried (1 / min positive distance).
DEFAULT_EPS_MIN_FACTOR = 1e-3


class _Prober:
    """Existence tests on one space, reusing its distance matrix (Φ itself changes with ε, so no
    factorization can be shared between two ε). Each probe is the certified solve of
    :func:`dprivacy.tight_constraints` (``method="dense"``): :func:`dprivacy._kernels.phi_solve.solve_phi`."""

    def __init__(self, d: np.ndarray):
        self.d = d
        self.probes: list[Probe] = []

    def __call__(self, eps: float) -> str:
        sol = solve_phi(_constraints(self.d, eps))
        status = sol.status if sol.status in ("exists", "absent", "undecided") else "absent"
        self.probes.append(Probe(float(eps), status, float(sol.x.min())))
        return status


#: Default width of the threshold bracket, in units of ε·(smallest positive distance).
DEFAULT_TOL = 1e-4


def _min_positive_distance(space: MetricSpace) -> float:
    from .spaces import GridSpace, SumLineSpace

    if isinstance(space, GridSpace):
        return float(space.step)
    if isinstance(space, SumLineSpace):
        return 1.0
    d = np.asarray(space.distances)
    pos = d[np.isfinite(d) & (d > 0)]
    return float(pos.min()) if pos.size else 1.0


def tight_threshold(
    space: MetricSpace,
    *,
    method: str = "auto",
    lo: float | None = None,
    hi: float | None = None,
    tol: float | None = None,
    scan: int = 30,
    scan_factor: float = 3.0,
    eps_min: float | None = None,
    progress=None,
) -> ThresholdResult:
    """Bracket the threshold ε* above which a tight-constraints mechanism exists on ``space``.

    Existence at ε is decided by the certified test of ``tight_constraints`` (signs of the solution
    of Φ z = 1 compared with a forward-error bound; ElSalamouny et al. 2014 Prop 7–8). The search:

    1. ball-size symmetric spaces: the mechanism exists for every ε > 0 (ElSalamouny et al. 2014 Prop 9), no solve;
    2. find hi with certified existence, starting at ``hi`` or at 1/min d and doubling (Φ → I as
       ε → ∞, so this ends); find lo with certified non-existence, from ``lo`` or by halving from the
       first ε tried down to ``eps_min``;
    3. shrink [lo, hi] until hi − lo ≤ ``tol``, keeping lo certified absent and hi certified present
       (Illinois steps on the continuous function ε ↦ min z(ε), reusing the values already computed,
       with bisection as the fallback; a point the test cannot decide lies within rounding of a sign
       change, so the search probes next to it instead);
    4. scan ``scan`` values of ε, geometrically spaced in (hi, scan_factor·hi], and report every ε
       where the mechanism fails to exist (the papers assume it exists for all ε > ε*).

    Parameters
    ----------
    space : MetricSpace
    method : {"auto", "dense", "structured"}
        How each existence test is solved, as in :func:`dprivacy.tight_constraints`. ``"auto"``: the
        closed forms first (a line or a Manhattan grid, ball-size symmetric spaces: ε* = 0, no solve),
        then the structured FFT + CG probes (warm-started) on grids above
        :data:`~dprivacy._kernels.dispatch.STRUCTURED_MIN_CELLS` ``["threshold"]`` cells, else dense
        probes. ``"dense"``/``"structured"``: that solver for every probe, no closed form (``"structured"``
        needs a grid; its scan defaults to at most 10 values, each probe being a large solve).
    lo, hi : float, optional
        A starting bracket. ``lo`` must be an ε where the mechanism certainly does not exist and ``hi``
        one where it certainly does; otherwise ValueError.
    tol : float, optional
        Width of the final bracket. Default: 1e-4 / the smallest positive distance (1e-4 in units of
        ε·d_min, so that a space measured in metres gets as fine a bracket as one measured in cells).
    scan : int
        Number of ε values in the monotonicity scan (0 to skip it).
    scan_factor : float
        The scan covers (hi, scan_factor·hi].
    eps_min : float, optional
        Smallest ε tried when looking for non-existence (default: 1e-3 / min positive distance).
    progress : callable, optional
        ``progress(probe)`` after each existence test of the structured paths (grids and sum lines, whose
        probes are large solves), a :class:`Probe`.

    Returns
    -------
    ThresholdResult
        Not certified when no ε with certified non-existence was found (e.g. on a line, where the
        truncated geometric mechanism is tight-constraints for every ε, ElSalamouny et al. 2014 §6.1) or when the test
        could not decide near the threshold.

    References
    ----------
    .. [1] ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 6, Prop 7,
       Prop 8, §7.1.
    .. [2] ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
       private mechanism of optimal utility for a region of priors* (POST 2013), Lemma 4.
    """
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    if tol is None:
        tol = DEFAULT_TOL / _min_positive_distance(space)
    tol, scan, scan_factor, lo, hi = check_search(tol, scan, scan_factor, lo, hi)

    if method not in ("auto", "dense", "structured"):
        raise ValueError(f"method must be one of 'auto', 'dense', 'structured'; got {method!r}")
    from ._kernels.dispatch import takes_structured
    from .mechanisms.tight import path_structure
    from .spaces import GridSpace, SumLineSpace

    if method == "structured" and not isinstance(space, (GridSpace, SumLineSpace)):
        raise ValueError(f"method='structured' needs a grid (GridSpace) or a sum line (SumLineSpace), got {space.name}")
    if method == "auto":
        path = path_structure(space)
        if path is not None:
            what = "equally spaced points on a line" if path[0] == "line" else "a Manhattan grid"
            return _always_exists(tol, "closed form", f"{what}: Φz = 1 has a closed-form solution with z > 0 for every "
                                  "ε > 0, so a tight-constraints mechanism exists for every ε > 0 (the truncated "
                                  "geometric diagonal and its Kronecker products; ElSalamouny et al. 2014 §6.1, Prop 7-8)")
    if isinstance(space, SumLineSpace) and (method == "structured" or (method == "auto" and takes_structured(space, "threshold"))):
        from ._kernels.dispatch import SUM_LINE_DENSE_FALLBACK
        from ._kernels.sum_line import tight_threshold_sum_line

        r = tight_threshold_sum_line(space.n, space.delta, tol=tol, scan=min(scan, 10), scan_factor=scan_factor, lo=lo,
                                     hi=hi, eps_min=eps_min, progress=progress)
        if r.certified or r.always_exists or method == "structured" or space.n > SUM_LINE_DENSE_FALLBACK:
            return r
        method = "dense"  # a probe the sum-line certificates could not decide: the dense search decides
    if method == "structured" or (method == "auto" and takes_structured(space, "threshold")):
        from ._kernels.threshold import tight_threshold_grid

        return tight_threshold_grid(space, lo=lo, hi=hi, tol=tol, scan=min(scan, 10), scan_factor=scan_factor, eps_min=eps_min,
                                    progress=progress)
    d = space.distances
    if method == "auto" and _ball_profile(space) is not None:
        return _always_exists(tol, "by ElSalamouny et al. 2014 Prop 9", "the space is ball-size symmetric: a tight-constraints "
                              "mechanism exists for every ε > 0 (ElSalamouny et al. 2014 Prop 9)")
    pos = d[(d > 0) & np.isfinite(d)]
    start = 1.0 / float(pos.min()) if pos.size else 1.0
    if eps_min is None:
        # down to the scale of the largest distance, not the smallest: a 3×3 grid with a twin of its centre at 1e-6
        # (ε* ≈ 2.1), searched only down to the smallest distance's scale (1953), would get no ε*
        eps_min = DEFAULT_EPS_MIN_FACTOR / float(pos.max()) if pos.size else DEFAULT_EPS_MIN_FACTOR
    eps_min = check_epsilon(eps_min, name="eps_min")
    return bracket_threshold(_Prober(d), lo=lo, hi=hi, start=start, eps_min=eps_min, tol=tol, scan=scan,
                             scan_factor=scan_factor, certain_above=_dominance_epsilon(d))


def _dominance_epsilon(d: np.ndarray) -> float | None:
    """An ε from which the tight-constraints mechanism certainly exists: where every row of Φ = e^{−εd} has
    Σ_{j≠i} e^{−εd_ij} < 1/2, Φ = I + E with ‖E‖∞ < 1/2, so z = Φ⁻¹1 = Σ_k (−E)^k 1 has z_i ≥ 1 − ‖E‖/(1 − ‖E‖) > 0,
    and the sums only decrease as ε grows. None without positive finite distances. (Existence need not be monotone
    in ε: a graph can have its mechanism at ε = 0.001–0.003 and at 0.9 but not at 0.6–0.8, a gap that the scan of
    (hi, 3·hi] does not see.)"""
    pos = np.isfinite(d) & (d > 0)
    if not pos.any():
        return None
    dd = np.where(pos, d, np.inf)

    def row_sum(e: float) -> float:
        with np.errstate(under="ignore"):
            return float(np.exp(-e * dd).sum(axis=1).max())

    e = 1.0 / float(dd.min())
    for _ in range(2000):
        if row_sum(e) < 0.5:
            return e * (1 + 1e-12)
        e *= 1.5
    return None
