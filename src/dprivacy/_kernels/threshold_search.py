"""The search for the threshold ε* above which a tight-constraints mechanism exists (ElSalamouny et al. 2014 §6.1 after
Prop 8, §7.1; ElSalamouny et al. 2013 §5 after Lemma 4), shared by the dense, grid and sum-line solvers.

A *probe* decides existence at one ε ("exists", "absent" or "undecided", certified by its solver); the
search brackets ε* between an ε where non-existence is certified and one where existence is, narrows the
bracket by Illinois steps on ε ↦ min z(ε), and checks the papers' assumption of monotonicity by scanning ε
above it. The front door is :func:`dprivacy.tight_threshold`; the probes are its dense solve and the grid and
sum-line solvers of this package.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import check_epsilon, check_positive_int
from ..results import Result

#: Largest number of doublings when looking for an ε at which the mechanism exists.
MAX_DOUBLINGS = 60


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
        every ε > 0 by a theorem (ball-size symmetric spaces, ElSalamouny et al. 2014 Prop 9). None when no ε with
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
    """The threshold search shared by the dense and the grid solvers (ElSalamouny et al. 2014 Prop 8).

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
    """lo and hi with 6 significant digits, or as many more as it takes to tell them apart (with 6 alone a
    bracket of width 5e-11 reads "(0.968133, 0.968133]")."""
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
    times more each time until a side is decided (with a tol below the rounding zone, steps of tol/4 alone
    would give up at once and keep the wide bracket of that moment: (0.9389, 0.9681] for sum:150,5 at
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
            # lo and hi are adjacent floats (a tol below their spacing, e.g. 1e-16 at ε* ≈ 0.88): stop there
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
            # and as many again, geometrically, up to where existence is certain (rather than a denser scan of
            # (hi, top], which triples the time of the search on 800 points)
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
