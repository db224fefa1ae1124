"""The threshold ε* above which a tight-constraints mechanism exists (seed 000 §6.1 after Prop 8, §7.1;
seed 004 §5 after Lemma 4).

As ε grows, Φ = exp(−ε d) tends to the identity and the region of ε·d-regular priors to the whole
simplex, so for large ε the uniform prior is regular and a tight-constraints mechanism exists
(seed 000 Prop 8). The papers call the smallest such ε the threshold ε* and assume existence for every
ε above it; they report ε* for the sum and 2-count queries "at 0.01 steps" (seed 000 §7.1). Here ε* is
bracketed by bisection between an ε where non-existence is *certified* and one where existence is,
using the honest existence test of :func:`dprivacy.mechanisms.tight.tight_constraints`, and the
assumption of monotonicity is checked by scanning ε above the bracket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .results import Result
from ._validate import check_epsilon, check_positive_int
from ._kernels.phi_solve import solve_phi
from .mechanisms.tight import _ball_profile, _constraints
from .spaces import MetricSpace

#: Largest number of doublings when looking for an ε at which the mechanism exists.
MAX_DOUBLINGS = 60

#: How far down to look for an ε at which the mechanism does not exist, as a fraction of the first ε
#: tried (1 / min positive distance).
DEFAULT_EPS_MIN_FACTOR = 1e-3


@dataclass(frozen=True)
class Probe:
    """One existence test: ε, the verdict ("exists", "absent", "undecided") and min z."""

    epsilon: float
    status: str
    min_z: float


@dataclass(frozen=True)
class MonotoneCheck:
    """A scan of existence at ε above the bracket (the papers assume existence for every ε > ε*).

    ``failures`` are the ε > hi where non-existence is certified (with min z); ``undecided`` those
    where the test could not decide; ``ok`` is True when the mechanism was verified to exist at
    every scanned ε.
    """

    epsilons: np.ndarray = field(repr=False)
    failures: tuple[tuple[float, float], ...]
    undecided: tuple[float, ...]
    ok: bool
    note: str = ""


@dataclass(frozen=True)
class ThresholdResult(Result):
    """Outcome of :func:`tight_threshold`.

    Attributes
    ----------
    epsilon_star : float or None
        The upper end of the bracket: the smallest ε found at which the mechanism is verified to
        exist. With ``certified`` it is the threshold within ``tol``. 0.0 when the mechanism exists for
        every ε > 0 by a theorem (ball-size symmetric spaces, seed 000 Prop 9). None when no ε with
        existence was found.
    bracket : (lo, hi) or None
        lo: an ε where non-existence is certified (None if none was found); hi: an ε where existence
        is certified. None when there is no transition (``always_exists``).
    certified : bool
        Both ends verified and hi − lo ≤ tol.
    solves : int
        Number of linear solves (existence tests) performed, monotonicity scan included.
    monotone_checked : MonotoneCheck or None
        Existence on a grid above hi; None when not run.
    always_exists : bool
        True when existence for every ε > 0 is known from the structure (Prop 9).
    reason : str
        What was found, in a sentence or two.
    tol : float
    probes : tuple of Probe
        Every existence test, in order.
    """

    epsilon_star: float | None
    bracket: tuple[float | None, float] | None
    certified: bool
    solves: int
    monotone_checked: MonotoneCheck | None
    always_exists: bool
    reason: str
    tol: float
    probes: tuple[Probe, ...] = field(repr=False, default=())

    @property
    def ok(self) -> bool:
        """The common flag of :class:`dprivacy.results.Result` (here: ``certified``)."""
        return bool(self.certified)

    def __bool__(self) -> bool:
        return bool(self.certified)


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
    of Φ z = 1 compared with a forward-error bound; seed 000 Prop 7–8). The search:

    1. ball-size symmetric spaces: the mechanism exists for every ε > 0 (seed 000 Prop 9), no solve;
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
        truncated geometric mechanism is tight-constraints for every ε, seed 000 §6.1) or when the test
        could not decide near the threshold.

    References
    ----------
    .. [1] ``000_455db39b8f235120.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *Generalized
       differential privacy: regions of priors that admit robust optimal mechanisms* (2014), Def 6, Prop 7,
       Prop 8, §7.1.
    .. [2] ``004_1b6b4e800ded7b68.txt``: ElSalamouny, Chatzikokolakis, Palamidessi, *A differentially
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
                                  "geometric diagonal and its Kronecker products; seed 000 §6.1, Prop 7-8)")
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
        return _always_exists(tol, "by seed 000 Prop 9", "the space is ball-size symmetric: a tight-constraints "
                              "mechanism exists for every ε > 0 (seed 000 Prop 9)")
    pos = d[(d > 0) & np.isfinite(d)]
    start = 1.0 / float(pos.min()) if pos.size else 1.0
    if eps_min is None:
        # down to the scale of the largest distance, not the smallest: a 3×3 grid with a twin of its centre at 1e-6
        # (ε* ≈ 2.1) was searched only down to 1953 and got no ε*
        eps_min = DEFAULT_EPS_MIN_FACTOR / float(pos.max()) if pos.size else DEFAULT_EPS_MIN_FACTOR
    eps_min = check_epsilon(eps_min, name="eps_min")
    return bracket_threshold(_Prober(d), lo=lo, hi=hi, start=start, eps_min=eps_min, tol=tol, scan=scan,
                             scan_factor=scan_factor, certain_above=_dominance_epsilon(d))


def _dominance_epsilon(d: np.ndarray) -> float | None:
    """An ε from which the tight-constraints mechanism certainly exists: where every row of Φ = e^{−εd} has
    Σ_{j≠i} e^{−εd_ij} < 1/2, Φ = I + E with ‖E‖∞ < 1/2, so z = Φ⁻¹1 = Σ_k (−E)^k 1 has z_i ≥ 1 − ‖E‖/(1 − ‖E‖) > 0,
    and the sums only decrease as ε grows. None without positive finite distances. (A graph had its mechanism at
    ε = 0.001–0.003 and at 0.9 but not at 0.6–0.8; the scan of (hi, 3·hi] never saw the gap: review.)"""
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


def check_search(tol, scan, scan_factor, lo, hi):
    """The threshold search's arguments, checked once for every solver: (tol, scan, scan_factor, lo, hi)."""
    tol = check_epsilon(tol, name="tol")
    scan = check_positive_int(scan, name="scan", minimum=0)
    scan_factor = check_epsilon(scan_factor, name="scan_factor")
    if scan > 0 and scan_factor <= 1:
        raise ValueError(f"scan_factor must exceed 1 to scan above hi, got {scan_factor}")
    lo = None if lo is None else check_epsilon(lo, name="lo")
    hi = None if hi is None else check_epsilon(hi, name="hi")
    if lo is not None and hi is not None and not lo < hi:
        raise ValueError(f"lo must be below hi, got lo={lo} and hi={hi}")
    return tol, scan, scan_factor, lo, hi


def _always_exists(tol: float, note: str, reason: str) -> ThresholdResult:
    """ε* = 0 by a theorem or a closed form: the mechanism exists for every ε > 0, no solve."""
    return ThresholdResult(
        epsilon_star=0.0, bracket=None, certified=True, solves=0,
        monotone_checked=MonotoneCheck(np.zeros(0), (), (), True, note), always_exists=True, tol=tol, reason=reason,
    )


def bracket_threshold(probe, *, lo, hi, start: float, eps_min: float, tol: float, scan: int, scan_factor: float,
                      suffix=None, certain_above: float | None = None) -> ThresholdResult:
    """The threshold search shared by the dense and the grid solvers (seed 000 Prop 8).

    ``probe(ε)`` decides existence at ε ("exists", "absent" or "undecided", certified by the solver)
    and keeps a :class:`Probe` per call in ``probe.probes``. ``lo``/``hi``: an optional starting
    bracket (checked: lo must be certified absent, hi certified present). Without ``hi``, ε doubles
    from ``start`` until the mechanism exists; without ``lo``, ε halves from hi down to ``eps_min``
    until it certainly does not; then :func:`_narrow` closes the bracket to ``tol`` and
    :func:`_finish` scans above hi. ``suffix(probe)`` adds solver figures to the reason.
    """
    for name, value, want, what in (("lo", lo, "absent", "a lower end: non-existence"),
                                    ("hi", hi, "exists", "an upper end: existence")):
        if value is not None and (s := probe(value)) != want:
            raise ValueError(f"{name}={value} is not {what} is not certified there "
                             f"({s}, min z = {probe.probes[-1].min_z:.3g})")
    if hi is None:
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
            return _finish(probe, None, None, tol, 0, scan_factor,
                           f"no ε up to {e / 2:.3g} where the mechanism is verified to exist", suffix)
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
            last = probe.probes[-1]
            why = (
                f"exists at every ε tried down to {hi:.3g}"
                + (f"; at ε = {last.epsilon:.3g} the test could not decide" if last.status == "undecided" else "")
                + "; no ε with certified non-existence was found, so hi is only an upper bound on ε*"
            )
            return _finish(probe, None, hi, tol, scan, scan_factor, why, suffix, certain_above)

    lo, hi, stuck = _narrow(probe, lo, hi, tol)
    a, b = _two_numbers(lo, hi)
    if stuck is None and hi - lo > tol:
        why = (f"ε* lies in ({a}, {b}] (certified non-existence at lo and existence at hi), two adjacent floats: "
               f"tol {tol:g} is below the spacing of float64 numbers here, so the bracket cannot be narrower")
    elif stuck is not None:
        why = (f"ε* lies in ({a}, {b}] (certified non-existence at lo and existence at hi), but the test could not "
               f"decide at ε = {stuck:.{max(len(a), 6)}g} inside it, within rounding of the sign change: bracket wider than tol")
    else:
        why = f"ε* lies in ({a}, {b}]: certified non-existence at lo and existence at hi"
    return _finish(probe, lo, hi, tol, scan, scan_factor, why, suffix, certain_above)


def _two_numbers(lo: float, hi: float) -> tuple[str, str]:
    """lo and hi with 6 significant digits, or as many more as it takes to tell them apart (a bracket of
    width 5e-11 was printed "(0.968133, 0.968133]")."""
    for digits in range(6, 18):
        a, b = f"{lo:.{digits}g}", f"{hi:.{digits}g}"
        if a != b:
            return a, b
    return repr(lo), repr(hi)


def _narrow(probe, lo: float, hi: float, tol: float) -> tuple[float, float, float | None]:
    """Shrink [lo, hi] to width ≤ tol keeping lo certified absent and hi certified present; return (lo, hi,
    None), or (lo, hi, ε) with ε a point inside that the test could not decide when it cannot shrink further.

    The next ε is the Illinois (modified regula falsi) root estimate of min z(ε), which is continuous
    in ε, kept at least tol/2 inside the bracket so that it closes; bisection whenever two steps have
    not halved the bracket or the min z values do not straddle 0. A point the test cannot decide lies
    within rounding of a sign change, so the search steps off it on both sides, by tol/4 and then by 4
    times more each time until a side is decided (with a tol below the rounding zone, stepping by tol/4
    only gave up at once and kept the wide bracket of that moment: (0.9389, 0.9681] for sum:150,5 at
    tol 1e-10, where tol 1e-6 certifies (0.96813319, 0.96813369]).
    """
    f = {p.epsilon: p.min_z for p in probe.probes}
    flo, fhi = f.get(lo, -1.0), f.get(hi, 1.0)
    widths = [hi - lo]
    side = 0
    while hi - lo > tol:
        use_bisection = len(widths) >= 3 and widths[-1] > 0.5 * widths[-3]
        if use_bisection or not (flo < 0 < fhi):
            x = 0.5 * (lo + hi)
        else:
            x = hi - fhi * (hi - lo) / (fhi - flo)
            x = min(max(x, lo + 0.5 * tol), hi - 0.5 * tol)
        if not lo < x < hi:
            # lo and hi are adjacent floats (a tol below their spacing: --tol 1e-16 at ε* ≈ 0.88 ran forever)
            x = 0.5 * (lo + hi)
            if not lo < x < hi:
                return lo, hi, None
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
            progressed = False
            while not progressed and w < hi - lo:
                for e in (x + w, x - w):
                    if not lo < e < hi:
                        continue
                    t = probe(e)
                    if t == "exists":
                        hi, fhi, progressed = e, probe.probes[-1].min_z, True
                    elif t == "absent":
                        lo, flo, progressed = e, probe.probes[-1].min_z, True
                w *= 4
            if not progressed:
                return lo, hi, x
            side = 0
        widths.append(hi - lo)
    return lo, hi, None


def _finish(probe, lo, hi, tol, scan, scan_factor, why, suffix=None, certain_above=None) -> ThresholdResult:
    mono = None
    if hi is not None and scan > 0:
        top = scan_factor * hi
        grid = np.geomspace(hi, top, scan + 1)[1:]
        if certain_above is not None and certain_above > top:
            # and as many again, geometrically, up to where existence is certain (a denser scan tripled the time of
            # the search on 800 points: review)
            grid = np.concatenate([grid, np.geomspace(top, certain_above, scan + 1)[1:]])
            top = certain_above
        count = grid.size
        fails, und = [], []
        for e in grid:
            s = probe(float(e))
            if s == "absent":
                fails.append((float(e), probe.probes[-1].min_z))
            elif s == "undecided":
                und.append(float(e))
        mono = MonotoneCheck(grid, tuple(fails), tuple(und), not fails and not und)
        sure = certain_above is not None and top >= certain_above
        if fails:
            why += (
                f"; NOT monotone: the mechanism does not exist at {len(fails)} scanned ε above hi "
                f"(first {fails[0][0]:.6g}, last {fails[-1][0]:.6g})"
            )
            # the threshold from which it exists is above the last failure: bracket it there
            last = fails[-1][0]
            above = grid[grid > last]
            if above.size and not any(u > last for u in und):
                old_hi = hi
                lo, hi, _ = _narrow(probe, last, float(above[0]), tol)
                a, b = _two_numbers(lo, hi)
                why += (f"; it also exists below, at {old_hi:.4g}, but from ε* in ({a}, {b}] it exists at every scanned ε"
                        + (f" up to {top:.4g}, and for every ε ≥ {top:.4g} (Φ diagonally dominant: certain)" if sure else ""))
        elif und:
            why += f"; monotonicity scan undecided at {len(und)} ε"
        else:
            why += f"; exists at all {count} scanned ε in ({hi:.4g}, {top:.4g}]"
            if sure:
                why += f", and for every ε ≥ {top:.4g} (Φ diagonally dominant: certain)"
    if suffix is not None:
        why += suffix(probe)
    certified = lo is not None and hi is not None and hi - lo <= tol
    return ThresholdResult(
        epsilon_star=hi, bracket=(lo, hi) if hi is not None else None, certified=certified,
        solves=len(probe.probes), monotone_checked=mono, always_exists=False, reason=why, tol=tol,
        probes=tuple(probe.probes),
    )
