r"""What a location release costs and what it protects, measured on a grid (ElSalamouny et al. 2014 §3.4–3.5, §7.2).

For a mechanism K on the cells of a :class:`~dprivacy.data.location_grid.LocationGrid` and a prior π
on the cells (by default the data's own distribution binned on the grid: what an adversary who knows
the population faces):

* **Bayes vulnerability** V(π, K) = Σ_z max_x π_x K[x, z], the probability that the adversary's best
  guess is the true cell, against V(π) = max_x π_x before the release; **min-entropy leakage**
  log₂ V(π, K)/V(π) in bits (ElSalamouny et al. 2014 §3.5; Alvim et al. 2015 §2.2);
* the **expected displacement** Σ_x π_x Σ_z K[x, z] d(x, z) in metres (what the release costs a user of
  the data);
* the **adversary's expected error** after the Bayes-optimal remap for the distance,
  Σ_z min_w Σ_x π_x K[x, z] d(x, w) (what the release protects: Shokri et al.'s location privacy).

A continuous planar Laplace release is measured through its grid analogue (``planar-laplace-grid``: the
noise added to the true point's cell centre, the output snapped to the cells). That is neither a bound nor
the exact figure for the continuous release, whose noise starts from the true point itself: where the
points lie within their cells moves the figures either way (measured on the world cities at
100 km cells and 0.1 per km, a vulnerability of 0.79 by Monte Carlo where the analogue gives 0.97, and an
adversary's error of 22 km where it gives 2.6 km). A remapped release (``--remap``) is post-processing of
K: its vulnerability is at most K's and its adversary's error at least K's.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .evaluation_page import OWNER_ONLY, figure, html_page, land_mask_image  # noqa: F401  (the page and its figure)

#: Largest grid on which the dense measures run (the distance remap is |supp π|·n² multiply-adds).
EVAL_MAX_CELLS = 4096


@functools.lru_cache(maxsize=1)
def _prior_free_mechanism(grid, name: str, epsilon_m: float):
    """The mechanisms that do not depend on the prior, kept for the next call with the same grid and ε (a
    release with a distance remap measures the mechanism, then models the remap on it: it was built twice)."""
    from ..mechanisms.planar_laplace import planar_laplace_grid_mechanism
    from ..mechanisms.tight import tight_constraints

    space = grid.space()
    if name == "planar-laplace-grid":
        return planar_laplace_grid_mechanism(space, epsilon=epsilon_m), None
    res = tight_constraints(space, epsilon=epsilon_m)
    return (res.mechanism, None) if res.ok else (None, res.reason)


def grid_mechanism(grid, name: str, epsilon_m: float, prior, *, time_limit: float | None = None, lp: dict | None = None):
    """(mechanism, None) or (None, reason) for ``name`` on ``grid`` at ε per metre. The continuous
    planar Laplace is measured as ``planar-laplace-grid``. For ``optimal``, ``lp`` (a dict) receives the
    solve's ``gap`` and ``optimal`` (False when it stopped above the LP's gap, at the time limit)."""
    if name in ("planar-laplace", "planar-laplace-grid", "tight-constraints"):
        return _prior_free_mechanism(grid, "planar-laplace-grid" if name == "planar-laplace" else name, float(epsilon_m))
    space = grid.space()
    if name == "optimal":
        from ..mechanisms.optimal import optimal_mechanism
        from .grid_release import DEFAULT_OPTIMAL_TIME_LIMIT, check_optimal_size
        from .interruptible import call_in_child

        check_optimal_size(grid)
        # in a child process: Ctrl-C stops the LP at once (HiGHS runs in C++), and its memory goes with it
        res = call_in_child(optimal_mechanism, space, prior, epsilon=epsilon_m,
                            time_limit=DEFAULT_OPTIMAL_TIME_LIMIT if time_limit is None else time_limit)
        if lp is not None and res.ok:
            from ..mechanisms.lp_solve import DEFAULT_GAP

            lp.update(gap=res.gap, optimal=not (res.gap == res.gap and res.gap > DEFAULT_GAP * (1 + 1e-9)))
        return (res.mechanism, None) if res.ok else (None, res.reason)
    raise ValueError(f"unknown mechanism {name!r}: expected planar-laplace, planar-laplace-grid, tight-constraints or optimal")


def grid_measures(grid, name: str, epsilon_m: float, prior: np.ndarray, *, time_limit: float | None = None) -> dict:
    """Vulnerability, leakage, expected displacement and the adversary's expected error (module notes)
    of mechanism ``name`` at ε per metre on ``grid`` for ``prior``."""
    from ..measures.leakage import posterior_vulnerability, prior_vulnerability
    from .grid_release import distance_remap

    out = {"mechanism": name, "epsilon_per_km": epsilon_m * 1000.0}
    if grid.n > EVAL_MAX_CELLS:
        out["skipped"] = (f"the grid has {grid.n:,} cells, over the {EVAL_MAX_CELLS:,} of the dense measures: evaluate with "
                          "a larger --cell or a smaller --region")
        return out
    lp: dict = {}
    mech, why = grid_mechanism(grid, name, epsilon_m, prior, time_limit=time_limit, lp=lp)
    out.update(lp)  # optimal: its gap, and whether it reached it
    if mech is None:
        out["exists"] = False
        out["reason"] = why
        return out
    v0 = prior_vulnerability(prior)
    v = posterior_vulnerability(mech, prior)
    _, before, after = distance_remap(mech, grid.space(), prior)
    out.update(exists=True, prior_vulnerability=v0, posterior_vulnerability=v,
               min_entropy_leakage_bits=float(math.log2(v / v0)), expected_displacement_m=before, adversary_error_m=after,
               distances="between cell centres (a released point's measured displacement also includes its snapping to the cell)")
    return out


def _model_remap(m: dict, grid, base: str, epsilon_m: float, pi: np.ndarray, release_prior, time_limit,
                 near=None) -> None:
    """Rewrite the at-release measures ``m`` of a release that applied the distance remap: its expected
    displacement is that of the mechanism followed by the release's remap (rebuilt from the prior the
    sidecar names), averaged over the evaluation's prior ``pi``."""
    from .grid_release import distance_remap, prior_of_release, remapped_displacement

    m["mechanism"] = f"{base} + distance remap"
    m["expected_displacement_m_without_remap"] = m.pop("expected_displacement_m")
    rel_prior = prior_of_release(grid, release_prior, near)
    if rel_prior is None:
        m["note"] = (f"the release applied a distance remap built for its prior ({release_prior!r}), which cannot be "
                     "rebuilt here: its expected displacement is not modelled (the figure without the remap is given)")
        return
    mech, _ = grid_mechanism(grid, base, epsilon_m, rel_prior, time_limit=time_limit)
    remap, _, _ = distance_remap(mech, grid.space(), rel_prior)
    m["expected_displacement_m"] = remapped_displacement(mech, grid.space(), pi, remap)
    m["note"] = (f"the release applied the distance remap optimal for its prior ({release_prior}); the expected "
                 "displacement is the remapped mechanism's, over the prior used here")


def parse_sweep(spec: str) -> np.ndarray:
    """'LO:HI:N' → N values of ε geometrically spaced from LO to HI (same unit as the release)."""
    try:
        lo, hi, n = spec.split(":")
        lo, hi, n = float(lo), float(hi), int(n)
    except (ValueError, AttributeError):
        raise ValueError(f"bad --sweep {spec!r}: expected LO:HI:N, e.g. 0.1:10:12") from None
    if not (0 < lo < hi and math.isfinite(hi)) or not 2 <= n <= 100:
        raise ValueError(f"bad --sweep {spec!r}: need 0 < LO < HI and 2 ≤ N ≤ 100")
    return np.geomspace(lo, hi, n)


def _base_name(mechanism: str | None) -> str | None:
    if not mechanism:
        return None
    name = mechanism.replace(" + distance remap", "")
    return "planar-laplace" if name.startswith("planar-laplace (geodesic") else name


def evaluate_release(original, released, *, lat=None, lon=None, key=None, coords=None, cell=None, region=None,
                     prior=None, prior_from=None, sweep=None, mechanisms=None, png=None, html=None,
                     time_limit=None, progress=None, force: bool = False) -> dict:
    """``dprivacy evaluate``: the displacement between the two files; on a grid (the release's own, or
    ``cell``/``region``) the measures of :func:`grid_measures` at the release's ε and over ``sweep``
    (ε values in the release's unit) for ``mechanisms`` (default: the release's); a PNG and a
    self-contained HTML page on request (an existing PNG or HTML file is replaced only with ``force``).
    The prior is ``prior``/``prior_from``, else the original points binned on the grid. ``optimal`` runs
    with a default time limit of 300 s and is refused above 600 cells (:data:`~dprivacy.data.grid_release.OPTIMAL_MAX_CELLS`)."""
    import io
    from pathlib import Path

    from .grid_release import load_grid_prior
    from .io import write_bytes_atomic
    from .location_grid import LocationGrid
    from .locations import UNITS, evaluate_files
    from .memory import display_name, in_memory

    files = [f for f in (original, released) if not in_memory(f)]

    if png is not None and html is not None and Path(png).resolve() == Path(html).resolve():
        raise ValueError(f"--png and --html are both {png}: give two files (the page would replace the figure)")
    for out_path, flag in ((png, "--png"), (html, "--html")):
        if out_path is not None and Path(out_path).exists() and not force:
            raise FileExistsError(f"{flag} {out_path} exists; use --force to replace it")
        if out_path is not None and any(Path(out_path).resolve() == Path(f).resolve() for f in files):
            raise ValueError(f"{flag} {out_path} is one of the input files")
        if out_path is not None and not Path(out_path).parent.exists():
            # refused before the measures, which can take minutes (checked again when writing)
            raise FileNotFoundError(f"output folder {Path(out_path).parent} does not exist")
    res, meta, (la0, lo0), (la1, lo1), d = evaluate_files(original, released, lat=lat, lon=lon, key=key, coords=coords,
                                                          return_points=True)
    eps_m = meta.get("epsilon_per_metre")
    unit = meta.get("unit", "km")
    base = _base_name(meta.get("mechanism"))
    g_info = (meta.get("grid") or {}).get("grid") or {}
    cell = cell if cell is not None else g_info.get("cell_m")
    region = region if region is not None else g_info.get("region")
    want_grid = cell is not None or region is not None or sweep is not None or mechanisms
    if want_grid:
        if cell is None or region is None:
            raise ValueError("the grid measures need --cell and --region (the release's sidecar has no grid)")
        if not eps_m and sweep is None:
            side = f"{released}.dprivacy.json" if not in_memory(released) else f"given with {released}"
            raise ValueError(f"no sidecar {side} with ε: give --sweep LO:HI:N to evaluate on the grid")
        grid = LocationGrid.build(region, cell)
        other_grid = bool(g_info) and (not math.isclose(grid.cell_m, float(g_info.get("cell_m") or 0), rel_tol=1e-9)
                                       or not np.allclose(grid.region, g_info.get("region") or [np.nan] * 4))
        if prior is not None or prior_from is not None:
            pi, pinfo = load_grid_prior(grid, prior, prior_from, lat=lat, lon=lon)
        else:
            # binned as a grid release maps them: a point outside the region in the cell nearest it
            counts = grid.counts(la0, lo0, clamp=True)
            pi = counts / counts.sum()
            pinfo = {"prior": f"the points of {original} binned on the grid (the data's own distribution; a point outside "
                              "the region in the cell nearest it, as the release treats it)",
                     "points_used": int(counts.sum()), "points_outside_region": int((~grid.inside(la0, lo0)).sum())}
        names = list(mechanisms) if mechanisms else [base or "planar-laplace-grid"]
        out = {"grid": grid.to_dict(), **pinfo}
        if eps_m and base:
            if progress:
                progress(f"measuring {base} on the grid")
            out["at_release"] = grid_measures(grid, base, float(eps_m), pi, time_limit=time_limit)
            if other_grid:
                out["at_release"]["grid_note"] = (f"measured on the grid given here ({grid.cell_m:g} m cells), not the "
                                                  f"release's ({g_info.get('cell_m'):g} m cells): the release's ε on "
                                                  "another grid, not the release itself")
            if "+ distance remap" in (meta.get("mechanism") or "") and out["at_release"].get("exists"):
                # the release moved each output z to its remap's cell: model that, not the bare mechanism
                # (3,137 m was predicted beside 475 km measured)
                _model_remap(out["at_release"], grid, base, float(eps_m), pi, (meta.get("grid") or {}).get("prior"),
                             time_limit, near=None if in_memory(released) else Path(released).parent)
            if base == "planar-laplace":
                out["at_release"]["note"] = ("the continuous release measured through its grid analogue (noise from the cell "
                                             "centre, output snapped to the cells): an approximation, not a bound — the "
                                             "continuous noise starts from the true point, and where the points lie in "
                                             "their cells moves the figures either way")
        if sweep is not None:
            rows = []
            for name in names:
                for i, e in enumerate(sweep):
                    if progress:
                        progress(f"sweep: {name}, ε = {e:.4g} per {unit} ({i + 1}/{len(sweep)})")
                    r = grid_measures(grid, name, float(e) / UNITS[unit], pi, time_limit=time_limit)
                    r["epsilon"] = float(e)
                    rows.append(r)
            out["sweep"] = rows
            out["sweep_unit"] = unit
        res["grid"] = out
    # the map shows true points beside released ones: a figure for the data owner, and it says so (the
    # natural attachment to a release carried 1,500 true locations unmarked): the PNG in its own title (it can
    # travel alone), the page once at its top (its embedded figure is drawn without the mark)
    title = f"{display_name(released)} against {display_name(original)}"
    if png or html:
        res["notes"] = res.get("notes", []) + [f"the --png/--html figure shows true locations: {OWNER_ONLY}"]
    drawing = dict(original=(la0, lo0), released=(la1, lo1), displacement=d,
                   epsilon_m=float(eps_m) if eps_m and base == "planar-laplace" else None,
                   sweep=(res.get("grid") or {}).get("sweep"), at_release=(res.get("grid") or {}).get("at_release"))

    def render(owner_mark: bool) -> bytes:
        # drawn in memory: the figure shows the true points, and a temporary file of it would outlive a killed process
        buf = io.BytesIO()
        figure(buf, title=f"dprivacy evaluate: {title}" if owner_mark else "", owner_mark=owner_mark, **drawing)
        return buf.getvalue()

    if png:
        write_bytes_atomic(png, render(True), force=force)  # (without --force: never over a file made meanwhile)
        res["png"] = str(png)
    if html:
        page = html_page(res, render(False), "What the release costs and protects", f"dprivacy evaluate: {title}")
        write_bytes_atomic(html, page.encode("utf-8"), force=force)
        res["html"] = str(html)
    return res


