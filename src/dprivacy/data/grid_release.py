r"""Grid mechanisms applied to real points: true point → its cell → mechanism → (remap) → cell centre.

A true point outside the region is not refused or dropped (the missing rows, or the refusal, would say
who lies outside): it is mapped to the cell nearest it (:meth:`~dprivacy.data.location_grid.LocationGrid.locate`,
clamping) and released through the mechanism like any other, every row kept in its place. The guarantee
then holds between the cells the true points are mapped to (:func:`grid_guarantee`).

The secrets are the cells of a :class:`~dprivacy.data.location_grid.LocationGrid` (ElSalamouny et al. 2014 §7.2):
a mechanism that is ε·d-private on the grid (d the distance in projected metres between cell centres)
gives, for two true points x, x' in cells c, c', output probabilities within a factor
e^{ε d(c, c')} ≤ e^{ε (d(x, x') + √2·cell)} of each other (the cell's diagonal is what snapping can
add), and d is the ground distance up to the projection's scale factors over the region (reported).

Mechanisms (all the library's Mechanism objects):

* ``planar-laplace-grid`` — :class:`~dprivacy.mechanisms.planar_laplace.PlanarLaplaceGridMechanism`
  (ElSalamouny et al. 2014 §7.2; Chatzikokolakis et al. 2013 §6.2), any grid size;
* ``tight-constraints`` — the tight-constraints mechanism of the grid (ElSalamouny et al. 2014 Def 6, Prop 6), the FFT
  solver above 256 cells; it exists only from a threshold ε (ElSalamouny et al. 2014 Prop 8), reported when it does
  not; with a prior, the region-of-priors check (ElSalamouny et al. 2014 Thm 4: optimal for every ε·d-regular prior);
* ``optimal`` — the linear program for the prior and the binary gain (ElSalamouny et al. 2014 §3.4, Eq. 6), with its
  certified bracket (small grids: the LP has n² variables).

``remap``: the Bayes-optimal post-processing for the prior and the expected distance: output z is
replaced by argmin_w Σ_x π_x K[x, z] d(x, w) (ElSalamouny et al. 2014 §3.4's optimal remap with the gain −d). It keeps
ε (post-processing) and lowers the expected error for that prior.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .location_grid import LocationGrid

GRID_MECHANISMS = ("planar-laplace-grid", "tight-constraints", "optimal")

#: The optimal mechanism's linear program on a grid of n cells has n² variables and grows fast: on the
#: shared 2-core machine 130 cells took 3 s and 0.2 GB, 285 cells 30 s and 0.7 GB (time ~ n³, memory
#: ~ n²); 1,110 cells ran over 12 minutes at 3.7 GB. Grids above this many cells are refused.
OPTIMAL_MAX_CELLS = 600
#: Default time limit of the optimal LP from the data commands (seconds): the best certified mechanism
#: found by then is used, with its gap recorded.
DEFAULT_OPTIMAL_TIME_LIMIT = 300.0


def check_optimal_size(grid) -> None:
    """Refuse the optimal mechanism on a grid too large for its linear program, with the estimate."""
    n = grid.n
    if n <= OPTIMAL_MAX_CELLS:
        return
    mem = 0.7 * (n / 285) ** 2
    secs = 30 * (n / 285) ** 3
    when = f"{secs / 60:.0f} minutes" if secs < 5400 else f"{secs / 3600:.1f} hours"
    raise ValueError(f"the optimal mechanism on this {grid.width}×{grid.height} grid ({n:,} cells) is a linear program of "
                     f"{n * n:,} variables, estimated at {mem:.1f} GB and {when} on a 2-core machine (from 285 cells: 30 s, "
                     f"0.7 GB); the limit is {OPTIMAL_MAX_CELLS} cells: use a larger --cell, a smaller --region, or "
                     "tight-constraints / planar-laplace-grid")


#: Largest work |support(π)| · n² (multiply-adds) of the exact distance remap (~10 s at the 50 GFLOP/s
#: measured on the 2-core machine), and largest |support(π)| · n (two float64 arrays of that size).
REMAP_WORK = 5e11
REMAP_ENTRIES = 6e7


@dataclass
class GridRelease:
    """A mechanism on a location grid, ready to apply to points; ``info`` goes to the sidecar."""

    grid: LocationGrid
    mechanism: object
    remap: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def apply(self, lat: np.ndarray, lon: np.ndarray, generator, stats: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Released (lat, lon) of valid points (cell centres, never the true points): each point's cell, the cell
        nearest it for a point outside the grid (clamping), through the mechanism. ``stats``: counts added there —
        ``draws``, ``outside_region`` (true points outside the lon/lat box), ``clamped`` (outside the grid's cells,
        moved to the nearest one) and the sampler's own under ``sampler`` (:func:`sampling_counts` says which of
        them depend on the true points)."""
        if lat.size == 0:
            return lat.astype(np.float64), lon.astype(np.float64)
        cells, clamped = self.grid.locate(lat, lon)
        smp = None
        if stats is not None:
            for k, v in (("draws", lat.size), ("outside_region", int((~self.grid.inside(lat, lon)).sum())),
                         ("clamped", int(clamped.sum()))):
                stats[k] = stats.get(k, 0) + v
            smp = stats.setdefault("sampler", {})
        if smp is not None and "stats" in inspect.signature(self.mechanism.sample_indices).parameters:
            out = self.mechanism.sample_indices(cells, rng=generator, stats=smp)
        else:
            out = self.mechanism.sample_indices(cells, rng=generator)
        if self.remap is not None:
            out = self.remap[out]
        return self.grid.centre_of(out)

    def sampling_counts(self, stats: dict) -> tuple[dict, dict]:
        """(public, owner's) counts of a release from the ``stats`` :meth:`apply` filled. Public — for the sidecar,
        independent of the true points given the number of rows: ``draws``; ``draws_from_the_mixture`` (kernel
        rejection sampler: one Bernoulli(γ) per draw, drawn before the secret is used); ``lattice_proposals``
        (planar-laplace-grid: its offsets are drawn without the secrets). The owner's — they depend on the true
        points, outside ε: ``rows_outside_region``, ``rows_clamped`` and the kernel rejection sampler's proposals and
        acceptance rate (a round accepts with probability (1 + r_y)/(K·z_max): the same for every cell y but for the
        solver's residual r_y, so their law depends on the true cells, if only slightly; they would tell the public
        nothing the sampler's certificate does not, and are not written)."""
        smp = stats.get("sampler") or {}
        public = {"draws": int(stats.get("draws", 0))}
        owner = {"rows_outside_region": int(stats.get("outside_region", 0)), "rows_clamped": int(stats.get("clamped", 0))}
        if hasattr(self.mechanism, "sampler"):
            public["draws_from_the_mixture"] = int(smp.get("mixed", 0))
            prop = int(smp.get("proposals", 0))
            owner["sampler_proposals"] = prop
            owner["sampler_acceptance_rate"] = smp.get("accepted", 0) / prop if prop else None
        elif hasattr(self.mechanism, "lattice_sampler"):
            public["lattice_proposals"] = int(smp.get("proposals", 0))
        return public, owner


def load_grid_prior(grid: LocationGrid, prior=None, prior_from=None, *, lat=None, lon=None) -> tuple[np.ndarray, dict]:
    """The public prior on the grid's cells and a description of it.

    ``prior``: ``"uniform"`` or a file (.npy, .csv, .txt) of ``height × width`` weights (row 0 = the
    southernmost row of cells) or of ``n`` weights in cell order, normalised. ``prior_from``: a file of
    public points (same formats as the data; coordinate columns found as for the data), counted per cell;
    points outside the region are counted and reported, not used.
    """
    from .._validate import as_prior

    if prior is not None and prior_from is not None:
        raise ValueError("give at most one of --prior and --prior-from")
    if prior_from is not None:
        from .io import check_input_file, find_coordinate_columns, read_batches
        from .coordinates import _as_numbers

        check_input_file(prior_from, "--prior-from file", folder=True, expected="a CSV, Parquet or GeoJSON file of points")
        schema, batches = read_batches(prior_from)
        la_c, lo_c = find_coordinate_columns(schema, lat, lon)
        counts = np.zeros(grid.n)
        used = outside = invalid = 0
        for b in batches:
            la, lo = (_as_numbers(b.column(c)).to_numpy(zero_copy_only=False) for c in (la_c, lo_c))
            with np.errstate(invalid="ignore"):
                ok = np.isfinite(la) & np.isfinite(lo)
            invalid += int((~ok).sum())
            la, lo = la[ok], lo[ok]
            ins = grid.inside(la, lo)
            outside += int((~ins).sum())
            used += int(ins.sum())
            counts += grid.counts(la[ins], lo[ins])
        if used == 0:
            raise ValueError(f"--prior-from {prior_from}: none of its points lies in the region {list(grid.region)}")
        p = counts / counts.sum()
        # (the file's name only: its folder names the owner's machine, and the sidecar travels with the release)
        return p, {"prior": f"estimated from {Path(prior_from).name}", "points_used": used, "points_outside_region": outside,
                   "points_invalid": invalid, "cells_with_points": int((counts > 0).sum())}
    if prior is None or prior == "uniform":
        return np.full(grid.n, 1.0 / grid.n), {"prior": "uniform"}
    from ..spaces import read_prior

    # (the one reader of --prior: a height×width array or n weights in cell order, normalised, the normalisation said)
    p, note = read_prior(prior, grid.n, shape=(grid.height, grid.width))
    return as_prior(p, grid.n, name=f"prior from {prior}"), {"prior": f"from {Path(prior).name}",
                                                               **({"prior_normalised": note} if note else {})}


def distance_remap(mechanism, space, prior: np.ndarray, *, block: int = 1024) -> tuple[np.ndarray, float, float]:
    """The Bayes-optimal remap for the expected distance: output z ↦ argmin_w Σ_x π_x K[x, z] d(x, w)
    (the optimal remap of ElSalamouny et al. 2014 §3.4 with the gain −d, as :func:`dprivacy.measures.utility` computes
    it for a gain matrix; here in blocks of outputs so that memory stays at O(|support(π)|·n) instead
    of n²). Returns (remap, expected distance without it, with it), in the space's units."""
    supp = np.flatnonzero(prior > 0)
    n = space.n
    work = float(supp.size) * n * n
    if work > REMAP_WORK or supp.size * n > REMAP_ENTRIES:
        raise ValueError(f"--remap on {n:,} cells with a prior on {supp.size:,} of them needs {work:.2g} multiply-adds and "
                         f"{supp.size * n * 16 / 2**30:.1f} GiB, over the limits of {REMAP_WORK:.0e} and "
                         f"{REMAP_ENTRIES * 16 / 2**30:.0f} GiB: use larger cells, a smaller region or a sparser prior")
    p = prior[supp] / prior[supp].sum()
    joint = p[:, None] * np.asarray(mechanism.rows(supp), dtype=np.float64)  # π_x K[x, z]
    d = space.distances_from(supp)  # d(x, w), x in the support
    before = float((joint * d).sum())
    remap = np.empty(n, dtype=np.int64)
    after = 0.0
    for a in range(0, n, block):
        loss = joint[:, a:a + block].T @ d  # [z, w] = Σ_x π_x K[x, z] d(x, w)
        best = loss.argmin(axis=1)
        remap[a:a + block] = best
        after += float(loss[np.arange(best.size), best].sum())
    return remap, before, after


def remapped_displacement(mechanism, space, prior: np.ndarray, remap: np.ndarray) -> float:
    """Σ_x π_x Σ_z K[x, z] d(x, remap[z]): the expected displacement of a release that moved output z to
    ``remap[z]``, for the secrets drawn from ``prior`` (in the space's units)."""
    supp = np.flatnonzero(prior > 0)
    p = prior[supp] / prior[supp].sum()
    joint = p[:, None] * np.asarray(mechanism.rows(supp), dtype=np.float64)
    return float((joint * space.distances_from(supp)[:, remap]).sum())


def prior_of_release(grid: LocationGrid, text: str | None, near=None):
    """The prior a release was built with, from its sidecar's description (``uniform``, ``from FILE``,
    ``estimated from FILE``), or None when it cannot be rebuilt (no description, a file gone). The sidecar names the
    file by its name only: it is looked for in the folder ``near`` (the release's), then as given (the current folder;
    an older sidecar's full path)."""
    import os

    if text == "uniform":
        return np.full(grid.n, 1.0 / grid.n)
    for head, kw in (("estimated from ", "prior_from"), ("from ", "prior")):
        if not (isinstance(text, str) and text.startswith(head)):
            continue
        name = text[len(head):]
        found = next((c for c in ([os.path.join(near, name)] if near is not None else []) + [name] if os.path.isfile(c)),
                     None)
        if found is None:
            return None
        try:
            return load_grid_prior(grid, **{kw: found})[0]
        except (ValueError, OSError):  # its columns not found by their usual names, another grid, ...
            return None
    return None


def build_grid_release(grid: LocationGrid, mechanism: str, *, epsilon_m: float, prior=None, prior_from=None,
                       remap: bool = False, lat=None, lon=None, time_limit: float | None = None,
                       progress=None) -> GridRelease:
    """Build the named mechanism on ``grid`` at ε per metre (see the module notes); raise ValueError with
    the reason when it cannot be built (e.g. tight-constraints below its threshold)."""
    from ..mechanisms.planar_laplace import planar_laplace_grid_mechanism
    from ..mechanisms.tight import tight_constraints

    if mechanism not in GRID_MECHANISMS:
        raise ValueError(f"grid mechanism must be one of {', '.join(GRID_MECHANISMS)}; got {mechanism!r}")
    space = grid.space()
    has_prior = prior is not None or prior_from is not None
    if (remap or mechanism == "optimal") and not has_prior:
        what = "--remap" if remap else "--mechanism optimal"
        raise ValueError(f"{what} needs a public prior: --prior uniform|FILE or --prior-from FILE")
    if has_prior and mechanism == "planar-laplace-grid" and not remap:
        # (accepted, it would be recorded in the sidecar as the release's prior, unused)
        raise ValueError("planar-laplace-grid uses a prior only with --remap: drop --prior/--prior-from, or add --remap")
    pi, prior_info = load_grid_prior(grid, prior, prior_from, lat=lat, lon=lon) if has_prior else (None, {})
    info = {"grid": grid.to_dict(), **prior_info}
    if mechanism == "planar-laplace-grid":
        mech = planar_laplace_grid_mechanism(space, epsilon=epsilon_m)
    elif mechanism == "tight-constraints":
        res = tight_constraints(space, epsilon=epsilon_m)
        if not res.ok:
            from ..threshold import tight_threshold

            thr = tight_threshold(space)
            raise ValueError(f"the tight-constraints mechanism does not exist on this {grid.width}×{grid.height} grid at "
                             f"ε = {epsilon_m * 1000:g} per km ({res.reason}); it exists from ε* ≈ "
                             f"{thr.epsilon_star * 1000:.6g} per km at --cell {grid.cell_m:g} m (ElSalamouny et al. 2014 Prop 8): raise ε or "
                             "the cell size, or use planar-laplace-grid")
        mech = res.mechanism
        if pi is not None:
            from ..priors import regularity

            reg = regularity(space, pi, epsilon=epsilon_m)
            info["optimal_for_prior"] = {
                "regular": bool(reg.regular), "method": reg.method,
                "meaning": ("the prior is ε·d-regular: the tight-constraints mechanism is optimal for it (ElSalamouny et al. 2014 Thm 4)"
                            if reg.regular else "not shown optimal for this prior: " + (reg.reason or "not regular"))}
    else:
        from ..mechanisms.optimal import optimal_mechanism

        check_optimal_size(grid)
        from ..mechanisms.lp_solve import DEFAULT_GAP

        res = optimal_mechanism(space, pi, epsilon=epsilon_m, time_limit=time_limit, progress=progress)
        if not res.ok:
            raise ValueError(f"no certified optimal mechanism: {res.reason}")
        mech = res.mechanism
        info["optimal"] = {"method": res.method, "utility": res.value, "bound": res.bound, "gap": res.gap,
                           "time_limit_s": time_limit, "stopped_by_time_limit": res.status == 1,
                           # False: stopped above the LP's gap (at the time limit), private but not shown optimal
                           "optimal": not (res.gap == res.gap and res.gap > DEFAULT_GAP * (1 + 1e-9)),
                           "solver_message": res.solver_message,
                           "meaning": "binary gain (probability that the Bayes adversary guesses the cell), ElSalamouny et al. 2014 §3.4"
                                      + ("; the time limit stopped the solve: the mechanism is certified private, its "
                                         "utility is within the gap of optimal" if res.status == 1 else "")}
    cert = mech.certificate
    info["certificate"] = {"basis": cert.basis, "rigorous": cert.rigorous, "reason": cert.reason}
    if hasattr(mech, "sampler"):  # tight-constraints on a grid: the kernel rejection sampler
        smp = mech.sampler.to_dict()
        smp["delivered_epsilon"] = smp["delivered_epsilon_at_most"]
        smp["epsilon_slack"] = (f"certified: at most {smp['epsilon_excess_at_most']:.3g} per metre over ε, from the solver's "
                                "residual (rows H = Φ·diag(z), sampled normalised), the 62-bit integer tables and the "
                                f"uniform mixture at 2^-{mech.sampler.mixture_bits} ({smp['delivered_epsilon_certified_by']}; "
                                "module notes of dprivacy._kernels.sampling)")
        info["sampler"] = smp
    elif hasattr(mech, "exact_sampler"):  # dense mechanisms (optimal, small tight-constraints) and planar-laplace-grid
        smp = mech.exact_sampler.to_dict()
        if getattr(mech, "is_dense", False):
            smp = {"method": "exact inverse CDF on integer-quantised rows (dprivacy.sampling.exact): rows of 62-bit integer "
                             "weights, the quantised channel's ε measured on the integers", **smp}
            if smp.get("delivered_epsilon") is None:
                smp["delivered_epsilon_note"] = "the space is too large for the exact check of the quantised channel"
        info["sampler"] = smp
    rel = GridRelease(grid, mech, None, info)
    if remap:
        r, before, after = distance_remap(mech, space, pi)
        rel.remap = r
        info["remap"] = {"loss": "expected distance (m) for the prior", "expected_distance_m_without": before,
                         "expected_distance_m_with": after}
    return rel


def grid_guarantee(grid: LocationGrid, epsilon: float, unit: str, mechanism: str) -> str:
    """The guarantee of a grid release in words, points outside the region included (mapped to the nearest cell)."""
    lo, hi = grid.scale_range()
    diag = math.sqrt(2.0) * grid.cell_m
    return (f"{mechanism} on a {grid.width}×{grid.height} grid of {grid.cell_m:g} m cells over the region "
            f"{list(grid.region)}. Each true point is mapped to a cell: its own, or, for a point outside the grid, the cell "
            "nearest it in the grid's equal-area projection (its projected coordinates clamped to the grid); ε·d holds "
            "between the cells the true points are mapped to: for true points x, x' mapped to cells c, c', the probability "
            f"of any released cell differs by at most a factor e^(ε·d(c, c')) ≤ e^(ε·(d(x, x') + {diag:.4g} m)), ε = "
            f"{epsilon:g} per {unit}, d the distance in the projection, which clamping never lengthens (over the grid it is "
            f"the ground distance to scale factors {lo:.6f}–{hi:.6f}; farther out the projection distorts it more). Points "
            "mapped to one cell are indistinguishable. A point outside the region is protected as the cell nearest it: two "
            "points outside near the same border cell cannot be told apart, and a point's distance beyond the region gives "
            "it no extra protection — its release has the law of a release from that border cell, and says nothing of how "
            "far beyond it the point lies. The grid tiles the projected bounding rectangle of the region, so "
            f"{grid.extent()['cells_with_centre_outside_region']} of its cells have centres outside the lon/lat box and can be "
            "released; each row is one report and reports compose (ε adds up)")
