"""``dp.obfuscate`` and ``dp.evaluate``: release locations from a DataFrame, a GeoDataFrame, an Arrow table or a file,
and measure what a release costs and protects. The command line's ``obfuscate`` and ``evaluate`` call these."""

from __future__ import annotations

from pathlib import Path

from .frames import ROW, OptionError, kind_of, label
from .points import like_input, location_result, points_table

MECHANISMS = ("planar-laplace", "planar-laplace-grid", "tight-constraints", "optimal")


def _same_file(a, b) -> bool:
    """True when paths a and b name the same file (or folder), existing or not."""
    import os

    pa_, pb = Path(a), Path(b)
    try:
        if pa_.exists() and pb.exists():
            return os.path.samefile(pa_, pb)
    except OSError:
        pass
    return pa_.resolve() == pb.resolve()


def _keep_list(keep) -> list:
    if keep is None:
        return []
    if isinstance(keep, str):
        return [c for c in keep.split(",") if c]
    return list(keep)


class _NoStatus:
    def update(self, r) -> None:
        pass

    def tick(self) -> None:
        pass

    def stop(self) -> None:
        pass


def obfuscate(data, output=None, *, epsilon: float | None = None, accuracy: str | None = None, unit: str = "km",
              lat: str | None = None, lon: str | None = None, mechanism: str = "planar-laplace", cell=None, region=None,
              prior=None, prior_from=None, remap: bool = False, time_limit: float | None = None, seed: int | None = None,
              user: str | None = None, budget: float | None = None, key: str | None = None, shuffle: bool = False,
              keep=None, coords: str = "degrees", skip_invalid: bool = False, force: bool = False,
              engine: str = "local", scheduler: str | None = None, workers: int | None = None, progress=None,
              status=None):
    """Release the locations of ``data`` under geo-indistinguishability (planar Laplace, or a mechanism on a grid).

    Parameters
    ----------
    data : pandas.DataFrame, geopandas.GeoDataFrame, polars.DataFrame, pyarrow.Table, dask.dataframe.DataFrame or path
        The points: latitude and longitude columns in degrees (found by their usual names, or given by ``lat`` and
        ``lon``), or a GeoDataFrame's point geometry in any CRS (moved to WGS84 for the noise and back to the
        input's CRS after). A path (``str`` or ``os.PathLike``) is a CSV, Parquet or GeoJSON file, released to
        ``output`` as the command line does.
    output : str or os.PathLike, optional
        Where a path's release is written (with its sidecar ``OUTPUT.dprivacy.json``); required for a path,
        refused for in-memory data (its release is returned).
    epsilon : float, optional
        ε per ``unit`` of distance. Give exactly one of ``epsilon`` and ``accuracy``.
    accuracy : str, optional
        Instead of ``epsilon``: a radius and a probability, e.g. ``"500m@95%"``: the ε whose displacement is at most
        that radius with that probability (continuous planar Laplace only).
    unit : {"km", "m"}
        The unit of distance of ``epsilon``.
    lat, lon : str, optional
        The coordinate columns (default: found by name, as the command line finds them).
    mechanism : {"planar-laplace", "planar-laplace-grid", "tight-constraints", "optimal"}
        The continuous geodesic planar Laplace (default), or a mechanism on a grid of ``cell`` over ``region``
        that releases cell centres.
    cell, region, prior, prior_from, remap, time_limit
        The grid mechanisms' options, as ``dprivacy obfuscate``'s ``--cell``, ``--region``, ``--prior``,
        ``--prior-from``, ``--remap`` and ``--time-limit``.
    seed : int, optional
        Reproducible research mode, NOT for release (the result says so); default: cryptographic randomness.
    user, budget : optional
        A column identifying each row's person and a total ε per person: rows beyond ⌊budget/ε⌋ per person are
        suppressed and counted.
    key : str, optional
        With ``seed``: a column of unique record keys; each record's noise then depends on the seed and its key
        only, whatever the batching, partitioning or engine.
    shuffle : bool
        Release the rows in a random order (a file sorted by location gives each row's location away by its
        rank). A pandas index is then replaced by 0..n−1, which would otherwise give the order away.
    keep : list of str or str, optional
        Columns that hold no location although their name or type looks like one: released as they are.
    coords : {"degrees", "semicircles"}
        The unit of the coordinate columns (Garmin semicircles: 2^31 per 180°, read and written as such).
    skip_invalid : bool
        Drop and count the rows whose coordinates cannot be read, instead of refusing the data.
    force : bool
        Replace ``output`` if it exists (a path's release).
    engine, scheduler, workers
        ``engine="dask"`` releases a Parquet path on a Dask cluster (``scheduler``: its address; ``workers``: the
        LocalCluster's size otherwise). A Dask DataFrame is released on its own scheduler.
    progress : callable, optional
        ``progress(rows_done, total=None)`` after each batch (for a Dask path: ``progress(tasks_done, tasks)``).
    status : callable, optional
        ``status(text, timed)`` returns an object with ``update(report)``, ``tick()`` and ``stop()``, shown while a
        grid mechanism is built (the command line's status line).

    Returns
    -------
    released : same kind as ``data``, or the output path
        The data with the coordinate columns (or the geometry) replaced by the released points; every other column,
        its dtype, the index and the row order are kept (the rows dropped by ``skip_invalid`` or ``budget`` are
        left out; ``shuffle`` draws a new order). Released coordinates are float64 in degrees (integers in the
        input's dtype for semicircles). A Dask DataFrame comes back computed once (persisted): recomputing a lazy
        release would draw new noise each time, and two releases of the same points spend ε twice.
    result : DataResult
        The guarantee, the random source, the counts and the sidecar (``result.to_dict()``, ``result.write(path)``).

    Raises
    ------
    ValueError
        Every refusal of ``dprivacy obfuscate``, with the same sentence (the command line adds its prefix).

    Examples
    --------
    >>> import pandas as pd, dprivacy as dp
    >>> df = pd.DataFrame({"lat": [48.8566, 51.5072], "lon": [2.3522, -0.1276], "visits": [3, 5]})
    >>> released, result = dp.obfuscate(df, epsilon=1.0)          # ε = 1 per km
    >>> list(released.columns), released["visits"].tolist()
    (['lat', 'lon', 'visits'], [3, 5])
    """
    from ..data.locations import check_sane_epsilon, epsilon_for_accuracy, epsilon_per_metre, parse_accuracy

    if (epsilon is None) == (accuracy is None):
        raise OptionError("give exactly one of --epsilon E or --accuracy R@P (e.g. 500m@95%)")
    if accuracy is not None and mechanism != "planar-laplace":
        # the ε for an accuracy is the continuous planar Laplace's: a grid mechanism's snap to cell centres and its own
        # noise are not in it (20 km at 95% on 50 km cells measured a 95% radius of 30.6 km)
        raise OptionError(f"--accuracy gives the ε of the continuous planar Laplace; --mechanism {mechanism} releases cell "
                         "centres, whose accuracy it does not state: give --epsilon, and measure the accuracy with "
                         "dprivacy evaluate")
    if accuracy is not None:
        # ε per unit, like --epsilon (a per-metre ε here would read --budget per metre, 1000 times looser than km)
        radius, prob = parse_accuracy(accuracy)
        eps = epsilon_for_accuracy(radius, prob) / epsilon_per_metre(1.0, unit)
    else:
        eps = epsilon
    kind = kind_of(data)
    if kind == "path":
        from .._system import check_input_file

        if output is None:
            raise OptionError("a file's release is written to a file: give output=PATH (in-memory data is returned)")
        check_input_file(data, "input file", folder=True, expected="a CSV, Parquet or GeoJSON file")  # (before a grid is built)
        if _same_file(data, output):
            raise OptionError(f"OUTPUT {output} is the input file: write the release to a new file (--force never "
                             "overwrites the input)")
        # the input itself, by identity (path, link): a comparison of contents would answer whether a guessed point is
        # in the input, a question about one person that no ε pays for
        if prior_from is not None and _same_file(prior_from, data):
            raise OptionError(f"--prior-from {prior_from} is the input file: a prior estimated from the points being "
                             "released makes the remap and the optimal mechanism depend on them, outside the ε guarantee; "
                             "estimate it from public data (e.g. another period or a public dataset)")
    elif output is not None:
        raise OptionError(f"output= is for a file's release; the release of {label(kind)} is returned (write it yourself, "
                         "e.g. released.to_parquet(...), with result.write(...) for its sidecar)")
    check_sane_epsilon(epsilon_per_metre(eps, unit), what="--accuracy" if accuracy is not None else "--epsilon")
    if mechanism not in MECHANISMS:
        raise OptionError(f"--mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    grid_flags = [f for f, v in (("--cell", cell), ("--region", region), ("--prior", prior), ("--prior-from", prior_from),
                                 ("--remap", remap or None)) if v is not None]
    if mechanism == "planar-laplace":
        if grid_flags:
            raise OptionError(f"{grid_flags[0]} applies to the grid mechanisms (--mechanism planar-laplace-grid, "
                             "tight-constraints or optimal), not to planar-laplace")
    elif cell is None or region is None:
        raise OptionError(f"--mechanism {mechanism} needs --cell (e.g. 500m) and --region LON_MIN,LAT_MIN,LON_MAX,LAT_MAX "
                         "(a public bounding box, not the data's own)")
    if time_limit is not None and mechanism != "optimal":
        raise OptionError(f"--time-limit applies to --mechanism optimal, not {mechanism}")
    if kind == "path" and mechanism != "planar-laplace" and Path(output).exists() and not force:
        raise OptionError(f"{output} exists (use --force to replace it)")
    release = _grid_release(mechanism, eps, unit, cell=cell, region=region, prior=prior, prior_from=prior_from,
                            remap=remap, lat=lat, lon=lon, time_limit=time_limit, status=status)
    if progress is not None:
        progress(0)  # the release starts (a caller's progress display can start with it, after a grid's status)
    common = dict(epsilon=eps, unit=unit, lat=lat, lon=lon, rng=seed, skip_invalid=skip_invalid, release=release,
                  user=user, budget=budget, key=key, coords=coords, accuracy=accuracy, keep=_keep_list(keep))
    if kind == "dask":
        from .dask import obfuscate_dask_frame

        if engine != "local" or scheduler is not None or workers is not None:
            raise OptionError("engine=, scheduler= and workers= are for a Parquet path: a Dask DataFrame is released on "
                             "its own scheduler")
        return obfuscate_dask_frame(data, shuffle=shuffle, **common)
    if engine not in ("local", "dask"):
        raise OptionError(f"--engine must be local or dask, got {engine!r}")
    if engine == "dask":
        from ..data.dask_engine import obfuscate_dask

        if kind != "path":
            raise OptionError(f"engine='dask' releases a Parquet path; {label(kind)} is released here (for a Dask "
                             "cluster pass a Dask DataFrame)")
        if scheduler is not None and workers is not None:  # (the cluster's own workers are used)
            raise OptionError("--workers sizes a LocalCluster: with --scheduler the cluster's own workers are used; drop "
                         "--workers")
        rep = obfuscate_dask(data, output, scheduler=scheduler, shuffle=shuffle, force=force,
                             workers=2 if workers is None else workers, progress=progress, **common)
        return output, location_result(rep)
    if scheduler is not None:
        raise OptionError("--scheduler needs --engine dask")
    if workers is not None:
        raise OptionError("--workers needs --engine dask")
    if kind == "path":
        from ..data.locations import obfuscate_file

        rep = obfuscate_file(data, output, progress=progress, shuffle=shuffle, force=force, **common)
        return output, location_result(rep)
    return _obfuscate_frame(data, kind, shuffle=shuffle, progress=progress, **common)


def _grid_release(mechanism, eps, unit, *, cell, region, prior, prior_from, remap, lat, lon, time_limit, status):
    """The grid mechanism's release object (None for the continuous planar Laplace), built under ``status``."""
    if mechanism == "planar-laplace":
        return None
    from ..data.grid_release import DEFAULT_OPTIMAL_TIME_LIMIT, build_grid_release, check_optimal_size
    from ..data.location_grid import LocationGrid
    from ..data.locations import epsilon_per_metre

    status = status or (lambda text, timed: _NoStatus())
    grid = LocationGrid.build(region, cell)
    build = dict(epsilon_m=epsilon_per_metre(eps, unit), prior=prior, prior_from=prior_from, remap=remap, lat=lat, lon=lon)
    if mechanism == "optimal":
        from ..data.interruptible import call_in_child

        check_optimal_size(grid)
        limit = time_limit if time_limit is not None else DEFAULT_OPTIMAL_TIME_LIMIT
        st = status(f"optimal mechanism on {grid.n:,} cells (time limit {limit:g} s)", True)
        try:
            return call_in_child(build_grid_release, grid, mechanism, time_limit=limit, progress=st.update, tick=st.tick,
                                 **build)
        finally:
            st.stop()
    st = status(f"building {mechanism} on the grid", False)
    try:
        return build_grid_release(grid, mechanism, **build)
    finally:
        st.stop()


def _obfuscate_frame(data, kind: str, *, shuffle: bool, progress, **common):
    from ..data.locations import obfuscate_file
    from ..data.memory import ArrowInput, MemoryRelease
    from .frames import add_row_numbers, rebuild, without_row_column

    name = label(kind)
    with without_row_column():
        table, lat_c, lon_c, geo = points_table(data, kind, common.pop("lat"), common.pop("lon"))
        n = table.num_rows
        rows = shuffle or common["skip_invalid"] or common["user"] is not None
        if rows:
            table = add_row_numbers(table)
        # the frame's Arrow form is read in batches and the released coordinates are kept in memory: nothing is
        # written to disk (a temporary file of the true points would outlive a killed process)
        out = MemoryRelease(name, [lat_c, lon_c] + ([ROW] if rows else []))
        rep = obfuscate_file(ArrowInput(table, name), out, lat=lat_c, lon=lon_c, progress=progress, shuffle=shuffle,
                             **common)
        del table
        got = out.columns()
    rep.input = rep.output = name
    positions = got[ROW] if rows else None
    if positions is None and len(got[lat_c]) != n:  # (every row is released, in order, or refused)
        raise RuntimeError(f"the release has {len(got[lat_c])} rows for {n}")
    if geo is not None:
        import geopandas as gpd

        pts = gpd.GeoSeries(gpd.points_from_xy(got[lon_c], got[lat_c]), crs="EPSG:4326")
        if not geo["crs"].equals("EPSG:4326"):
            pts = pts.to_crs(geo["crs"])
        replaced = {geo["column"]: pts.values}
    elif common["coords"] == "semicircles":
        replaced = {c: like_input(got[c], data, kind, c) for c in (lat_c, lon_c)}
    else:
        replaced = {lat_c: got[lat_c], lon_c: got[lon_c]}
    released = rebuild(data, kind, positions, replaced, reset_index=shuffle)
    return released, location_result(rep)


# -------------------------------------------------------------------------------------------------
# evaluate
# -------------------------------------------------------------------------------------------------


def evaluate(original, released, *, sidecar=None, lat: str | None = None, lon: str | None = None, key: str | None = None,
             coords: str | None = None, cell=None, region=None, prior=None, prior_from=None, sweep=None, mechanisms=None,
             png=None, html=None, time_limit: float | None = None, force: bool = False, progress=None):
    """Measure what a release costs and protects: the displacement between the true and the released points and,
    on a grid, the mechanism's expected error and the adversary's success.

    The result holds the true locations' statistics: it is for the data owner, not for publication.

    Parameters
    ----------
    original, released : DataFrame, GeoDataFrame, polars DataFrame, pyarrow Table or path
        The true points and their release (as :func:`dprivacy.obfuscate` returned it, or its output file). Rows are
        matched by ``key`` or by position.
    sidecar : DataResult or dict, optional
        For in-memory ``released`` data: the release's result (its ε, mechanism and grid); a released file's
        sidecar is read from beside it.
    lat, lon, key, coords, cell, region, prior, prior_from, time_limit, png, html, force
        As ``dprivacy evaluate``'s options.
    sweep : str or sequence of float, optional
        ``"LO:HI:N"`` or the ε values (in the release's unit) at which to measure the grid mechanisms.
    mechanisms : str or sequence of str, optional
        The mechanisms of the sweep (names among planar-laplace, planar-laplace-grid, tight-constraints, optimal).
    progress : callable, optional
        ``progress(text)`` on each step.

    Returns
    -------
    DataResult
        ``result.report`` (and ``result.to_dict()``) is the evaluation: displacement statistics, predicted figures
        and, on a grid, the measures at the release's ε and over the sweep.

    Raises
    ------
    ValueError
        Every refusal of ``dprivacy evaluate``, with the same sentence.
    """
    import numpy as np

    from ..data.evaluation import evaluate_release, parse_sweep

    if isinstance(sweep, str):
        sweep = parse_sweep(sweep)
    elif sweep is not None:
        sweep = np.asarray(sweep, dtype=float)
    text = mechanisms if isinstance(mechanisms, str) else (",".join(mechanisms) if mechanisms is not None else None)
    names = [m.strip() for m in text.split(",") if m.strip()] if text else None
    if names is not None:  # named before any work
        if sweep is None:
            raise OptionError("--mechanisms names the mechanisms of --sweep: give --sweep LO:HI:N too")
        bad = [m for m in names if m not in MECHANISMS]
        if bad or not names:
            raise OptionError(f"--mechanisms {text!r}: expected names among {', '.join(MECHANISMS)}")
    kinds = kind_of(original), kind_of(released)
    options = dict(lat=lat, lon=lon, key=key, coords=coords, cell=cell, region=region, prior=prior, prior_from=prior_from,
                   sweep=sweep, mechanisms=names, png=png, html=html, time_limit=time_limit, progress=progress, force=force)
    if kinds[1] == "path" and sidecar is not None:
        raise OptionError("sidecar= is for in-memory released data; a released file's sidecar is read from beside it")
    if kinds == ("path", "path"):
        rep = evaluate_release(original, released, **options)
        return _evaluation(rep)
    from ..data.memory import ArrowInput

    # in-memory data is read from its Arrow form, and the sidecar given is passed as it is: nothing is written to disk
    inputs = []
    for data, kind, role in ((original, kinds[0], "original"), (released, kinds[1], "released")):
        if kind == "path":
            inputs.append(data)
            continue
        if kind == "dask":
            raise OptionError("evaluate reads the points into memory: give a pandas DataFrame (ddf.compute()) or "
                             "the released Parquet folder")
        table, _, _, _ = points_table(data, kind, lat if kind != "geopandas" else None,
                                      lon if kind != "geopandas" else None)
        side = None
        if role == "released" and sidecar is not None:
            side = sidecar.to_dict() if hasattr(sidecar, "to_dict") else dict(sidecar)
        inputs.append(ArrowInput(table, f"the {role} {label(kind)[4:]}", sidecar=side))
        if kind == "geopandas":
            options.update(lat="lat", lon="lon")
    rep = evaluate_release(inputs[0], inputs[1], **options)
    return _evaluation(rep)


def _evaluation(rep: dict):
    from .results import DataResult

    counts = {k: rep[k] for k in ("rows", "rows_skipped", "rows_not_released") if isinstance(rep.get(k), int)}
    return DataResult("evaluate", str(rep.get("guarantee", "")), dict(rep.get("random_source") or {}), counts, rep, rep)
