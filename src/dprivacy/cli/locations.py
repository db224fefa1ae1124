"""``dprivacy obfuscate`` and ``dprivacy evaluate``: release a file of locations, and measure what a release costs
and protects."""

from __future__ import annotations

import sys
from pathlib import Path

from .common import JSON_HELP, CliError, _ascii_float, _emit, examples, _RowProgress, _same_file, _SolveStatus


def cmd_obfuscate(args) -> int:
    from ..data.locations import check_sane_epsilon, epsilon_for_accuracy, epsilon_per_metre, obfuscate_file, parse_accuracy

    if (args.epsilon is None) == (args.accuracy is None):
        raise CliError("dprivacy obfuscate: error: give exactly one of --epsilon E or --accuracy R@P (e.g. 500m@95%)")
    unit = args.unit
    if args.accuracy is not None and args.mechanism != "planar-laplace":
        # the ε for an accuracy is the continuous planar Laplace's: a grid mechanism's snap to cell centres and its own
        # noise are not in it (20km@95% on 50 km cells measured a 95% radius of 30.6 km: review)
        raise CliError(f"dprivacy obfuscate: error: --accuracy gives the ε of the continuous planar Laplace; --mechanism "
                       f"{args.mechanism} releases cell centres, whose accuracy it does not state: give --epsilon, and "
                       "measure the accuracy with dprivacy evaluate")
    if args.accuracy is not None:
        # ε per --unit, like --epsilon: a per-metre ε here read --budget (and evaluate --sweep) per metre,
        # 1000 times looser than the km the user gave
        radius, prob = parse_accuracy(args.accuracy)
        eps = epsilon_for_accuracy(radius, prob) / epsilon_per_metre(1.0, unit)
    else:
        eps = args.epsilon
    from .._system import check_input_file

    check_input_file(args.input, "input file", folder=True, expected="a CSV, Parquet or GeoJSON file")  # (a FIFO or a device: before a grid is built for it)
    if _same_file(args.input, args.output):
        raise CliError(f"dprivacy obfuscate: error: OUTPUT {args.output} is the input file: write the release to a new file "
                       "(--force never overwrites the input)")
    # the input itself, by identity (path, link): a comparison of contents would answer whether a guessed point is in
    # the input, a question about one person that no ε pays for; a prior derived from the data is the owner's mistake
    if args.prior_from is not None and _same_file(args.prior_from, args.input):
        raise CliError(f"dprivacy obfuscate: error: --prior-from {args.prior_from} is the input file: a prior estimated from "
                       "the points being released makes the remap and the optimal mechanism depend on them, outside "
                       "the ε guarantee; estimate it from public data (e.g. another period or a public dataset)")
    check_sane_epsilon(epsilon_per_metre(eps, unit), what="--accuracy" if args.accuracy is not None else "--epsilon")
    show = not args.json and sys.stderr.isatty()
    grid_flags = [f for f, v in (("--cell", args.cell), ("--region", args.region), ("--prior", args.prior),
                                 ("--prior-from", args.prior_from), ("--remap", args.remap or None)) if v is not None]
    release = None
    if args.mechanism == "planar-laplace":
        if grid_flags:
            raise CliError(f"dprivacy obfuscate: error: {grid_flags[0]} applies to the grid mechanisms "
                           "(--mechanism planar-laplace-grid, tight-constraints or optimal), not to planar-laplace")
    else:
        if args.cell is None or args.region is None:
            raise CliError(f"dprivacy obfuscate: error: --mechanism {args.mechanism} needs --cell (e.g. 500m) and --region "
                           "LON_MIN,LAT_MIN,LON_MAX,LAT_MAX (a public bounding box, not the data's own)")
    if args.time_limit is not None and args.mechanism != "optimal":
        raise CliError(f"dprivacy obfuscate: error: --time-limit applies to --mechanism optimal, not {args.mechanism}")
    if args.mechanism != "planar-laplace" and args.output and Path(args.output).exists() and not args.force:
        raise CliError(f"dprivacy obfuscate: error: {args.output} exists (use --force to replace it)")
    if args.mechanism != "planar-laplace":
        from ..data.grid_release import DEFAULT_OPTIMAL_TIME_LIMIT, build_grid_release, check_optimal_size
        from ..data.location_grid import LocationGrid

        grid = LocationGrid.build(args.region, args.cell)
        build = dict(epsilon_m=epsilon_per_metre(eps, unit), prior=args.prior, prior_from=args.prior_from, remap=args.remap,
                     lat=args.lat, lon=args.lon)
        if args.mechanism == "optimal":
            from ..data.interruptible import call_in_child

            check_optimal_size(grid)
            limit = args.time_limit if args.time_limit is not None else DEFAULT_OPTIMAL_TIME_LIMIT
            status = _SolveStatus(show, True, f"optimal mechanism on {grid.n:,} cells (time limit {limit:g} s)")
            try:
                release = call_in_child(build_grid_release, grid, args.mechanism, time_limit=limit, progress=status.update,
                                        tick=status.tick, **build)
            finally:
                status.stop()
        else:
            status = _SolveStatus(show, False, f"building {args.mechanism} on the grid")
            try:
                release = build_grid_release(grid, args.mechanism, **build)
            finally:
                status.stop()
    progress = None
    plain = None
    if show:
        bar = _RowProgress(args.input, "obfuscating")
        bar.start()
        progress = bar.update
    else:  # not a terminal (or --json, whose report is on stdout): a plain line after 5 s and every 30 s
        plain = _SolveStatus(False, True, "obfuscating")
        progress = lambda done, total=None: plain.update(f"{done:,} rows" + (f" of {total:,}" if total else ""))  # noqa: E731
    try:
        common = dict(epsilon=eps, unit=unit, lat=args.lat, lon=args.lon, rng=args.seed, force=args.force,
                      skip_invalid=args.skip_invalid, release=release, user=args.user, budget=args.budget, key=args.key,
                      coords=args.coords, accuracy=args.accuracy,
                      keep=[c for c in (args.keep or "").split(",") if c])
        if args.engine == "dask":
            from ..data.dask_engine import obfuscate_dask

            if args.scheduler is not None and args.workers is not None:  # (the cluster's own workers are used)
                raise CliError("dprivacy obfuscate: error: --workers sizes a LocalCluster: with --scheduler the cluster's "
                               "own workers are used; drop --workers")
            if show:
                bar.update("obfuscating on Dask (tasks)")
                progress = lambda done, total: bar.update(done, total)  # noqa: E731
            elif plain is not None:
                progress = lambda done, total: plain.update(f"{done:,} of {total:,} tasks")  # noqa: E731
            rep = obfuscate_dask(args.input, args.output, scheduler=args.scheduler, shuffle=args.shuffle,
                                 workers=2 if args.workers is None else args.workers, progress=progress, **common)
        else:
            if args.scheduler is not None:
                raise CliError("dprivacy obfuscate: error: --scheduler needs --engine dask")
            if args.workers is not None:  # (was accepted and ignored: review)
                raise CliError("dprivacy obfuscate: error: --workers needs --engine dask")
            rep = obfuscate_file(args.input, args.output, progress=progress, shuffle=args.shuffle, **common)
    finally:
        if show:
            bar.stop()
        if plain is not None:
            plain.stop()
    report = rep.to_dict()
    report["sidecar"] = str(args.output) + ".dprivacy.json"
    if args.owner and (rep.owner_only or rep.owner_notes):
        # counts and notes that depend on the true locations (rows outside --region, the rejection sampler's proposals,
        # rows sorted by location): printed for the data owner on request, never in the sidecar
        report["not_private"] = {**rep.owner_only, **({"notes": rep.owner_notes} if rep.owner_notes else {})}
    _emit(report, args.json, f"obfuscated {rep.rows_written:,} points", kind="obfuscate")
    return 0


def cmd_evaluate(args) -> int:
    from ..data.evaluation import evaluate_release, parse_sweep

    sweep = parse_sweep(args.sweep) if args.sweep is not None else None
    mechanisms = [m.strip() for m in args.mechanisms.split(",") if m.strip()] if args.mechanisms else None
    if mechanisms is not None:
        # named before any work (an unknown name passed when no sweep ran: review)
        if sweep is None:
            raise CliError("dprivacy evaluate: error: --mechanisms names the mechanisms of --sweep: give --sweep LO:HI:N too")
        known = ("planar-laplace", "planar-laplace-grid", "tight-constraints", "optimal")
        bad = [m for m in mechanisms if m not in known]
        if bad or not mechanisms:
            raise CliError(f"dprivacy evaluate: error: --mechanisms {args.mechanisms!r}: expected names among {', '.join(known)}")
    status = _SolveStatus(not args.json and sys.stderr.isatty(), True, "evaluating")
    try:
        rep = evaluate_release(args.original, args.released, lat=args.lat, lon=args.lon, key=args.key, coords=args.coords,
                               cell=args.cell, region=args.region, prior=args.prior, prior_from=args.prior_from, sweep=sweep,
                               mechanisms=mechanisms, png=args.png, html=args.html, time_limit=args.time_limit,
                               progress=status.update, force=args.force)
    finally:
        status.stop()
    _emit(rep, args.json, "what the release costs and protects", kind="evaluate")
    return 0


def add_parsers(sub) -> None:
    ob = sub.add_parser("obfuscate", help="obfuscate the points of a CSV/Parquet/GeoJSON file with geodesic planar Laplace",
                        **examples(
                            "release a file of points (columns lat, lon) at ε = 1 per km",
                            "dprivacy obfuscate points.csv -o released.csv --epsilon 1",
                            "the ε whose displacement is at most 500 m with probability 95% (seeded: research only)",
                            "dprivacy obfuscate points.csv -o released_500m.csv --accuracy 500m@95% --seed 7",
                            "cell centres of a 1 km grid, remapped for a prior estimated from public points",
                            "dprivacy obfuscate points.csv -o cells.csv --epsilon 1 --mechanism planar-laplace-grid "
                            "--cell 1km --region 2.25,48.8,2.45,48.9 --prior-from public.csv --remap"))
    ob.add_argument("input", metavar="INPUT", help="a .csv, .csv.gz, .parquet or .geojson file of points in degrees")
    ob.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="the obfuscated file (format by extension); a sidecar OUTPUT.dprivacy.json is written beside it")
    ob.add_argument("--epsilon", type=_ascii_float, help="ε per --unit of distance (geo-indistinguishability)")
    ob.add_argument("--unit", choices=["m", "km"], default="km", help="unit of distance for --epsilon (default km)")
    ob.add_argument("--accuracy", metavar="R@P", help="instead of --epsilon: the ε whose displacement is at most R with probability P, e.g. 500m@95%%")
    ob.add_argument("--lat", help="latitude column (default: found by name)")
    ob.add_argument("--lon", help="longitude column (default: found by name)")
    ob.add_argument("--seed", type=int, help="reproducible research mode (NOT for release); default: cryptographic randomness")
    ob.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    ob.add_argument("--skip-invalid", action="store_true", help="drop rows whose coordinates cannot be read (missing, not a "
                    "number, out of range) and count them; a point outside --region is not invalid")
    ob.add_argument("--mechanism", choices=["planar-laplace", "planar-laplace-grid", "tight-constraints", "optimal"],
                    default="planar-laplace", help="planar-laplace (continuous, geodesic; default) or a mechanism on a grid of "
                    "--cell metres over --region, which releases cell centres")
    ob.add_argument("--cell", help="grid mechanisms: the side of a cell, e.g. 500m or 1km")
    ob.add_argument("--region", metavar="LON_MIN,LAT_MIN,LON_MAX,LAT_MAX", help="grid mechanisms: the public bounding box "
                    "of the grid, in degrees (a point outside it is released as the cell nearest it; its row is kept)")
    ob.add_argument("--prior", help="grid mechanisms: the public prior on the cells, 'uniform' or a .npy/.csv/.txt file of "
                    "height×width weights (row 0 the southernmost) or of one weight per cell; normalised, and the output "
                    "says so (needed by optimal and --remap; with tight-constraints, says whether it is optimal)")
    ob.add_argument("--prior-from", metavar="FILE", help="instead of --prior: estimate it from a public file of points")
    ob.add_argument("--remap", action="store_true", help="grid mechanisms: replace each output by the cell that minimises "
                    "the expected distance for the prior (post-processing: same ε, smaller error)")
    ob.add_argument("--time-limit", type=_ascii_float, help="optimal: stop the linear program after this many seconds (default 300) "
                    "and use the best certified mechanism found, its gap recorded; grids over 600 cells are refused")
    ob.add_argument("--user", metavar="COL", help="the column identifying the person of each row (with --budget)")
    ob.add_argument("--budget", type=_ascii_float, help="total ε per user (units of --epsilon): rows beyond ⌊budget/ε⌋ per user are suppressed and counted")
    ob.add_argument("--coords", choices=["degrees", "semicircles"], default="degrees",
                    help="unit of the coordinate columns: degrees (default) or Garmin/FIT semicircles (2^31 per 180°), read and written as such")
    ob.add_argument("--key", metavar="COL", help="with --seed: each record's noise depends only on the seed and its (unique) key, "
                    "so any batching, partitioning or engine gives the same output")
    ob.add_argument("--shuffle", action="store_true", help="release the rows in a random order (a file sorted by "
                    "location gives each row's location away by its rank); the local engine holds the release in memory, "
                    "--engine dask sorts the rows by random keys over all its parts")
    ob.add_argument("--keep", metavar="COL[,COL]", help="columns that hold no location although their name or type looks "
                    "like one (lat_err, LatAm, a binary id): released as they are; every other such column is refused")
    ob.add_argument("--engine", choices=["local", "dask"], default="local", help="dask: one task per Parquet row group "
                    "(pip install 'dprivacy[dask]'); OUTPUT is then a folder of Parquet parts")
    ob.add_argument("--scheduler", metavar="ADDRESS", help="--engine dask: an existing cluster (default: a LocalCluster)")
    ob.add_argument("--workers", type=int, help="--engine dask without --scheduler: LocalCluster workers (default 2)")
    ob.add_argument("--owner", action="store_true", help="also show the data owner's exact counts, NOT private and never "
                    "to be published (they are not in the sidecar): grid mechanisms, how many rows lay outside --region "
                    "(released as the nearest cell) and the rejection sampler's proposals")
    ob.add_argument("--json", action="store_true", help=JSON_HELP)
    ob.set_defaults(func=cmd_obfuscate)

    ev = sub.add_parser("evaluate", help="displacement (metres) between an original file of points and its obfuscated release",
                        **examples(
                            "measured against predicted displacement of a release (rows joined by position)",
                            "dprivacy evaluate points.csv released.csv",
                            "a grid release: the adversary's measures and a privacy–utility sweep, as an HTML page",
                            "dprivacy evaluate points.csv cells.csv --sweep 0.5:4:4 --html evaluation.html"))
    ev.add_argument("original", metavar="ORIGINAL", help="the file of true points that was released (the data owner's)")
    ev.add_argument("released", metavar="RELEASED", help="the output of `dprivacy obfuscate` (its sidecar gives ε)")
    ev.add_argument("--key", help="join rows by this column (default: by position)")
    ev.add_argument("--lat", help="latitude column (default: found by name)")
    ev.add_argument("--lon", help="longitude column (default: found by name)")
    ev.add_argument("--coords", choices=["degrees", "semicircles"], help="unit of both files' coordinates (default: as the release's sidecar says)")
    ev.add_argument("--cell", help="grid measures: cell side (default: the release's grid)")
    ev.add_argument("--region", metavar="LON_MIN,LAT_MIN,LON_MAX,LAT_MAX", help="grid measures: region (default: the release's grid)")
    ev.add_argument("--prior", help="grid measures: the adversary's prior on the cells, 'uniform' or a file of height×width "
                    "weights or one weight per cell, normalised (default: the original points binned)")
    ev.add_argument("--prior-from", metavar="FILE", help="grid measures: the prior estimated from a file of points")
    ev.add_argument("--sweep", metavar="LO:HI:N", help="privacy–utility curve over N values of ε from LO to HI (the release's unit)")
    ev.add_argument("--mechanisms", metavar="A,B", help="mechanisms of the sweep: planar-laplace-grid, tight-constraints, optimal (default: the release's)")
    ev.add_argument("--time-limit", type=_ascii_float, help="optimal: seconds per linear program (default 300; the best certified "
                    "mechanism found by then is measured); grids over 600 cells are refused")
    ev.add_argument("--png", metavar="FILE", help="write the figure (map on a land/sea base layer, displacement, sweep)")
    ev.add_argument("--html", metavar="FILE", help="write a self-contained HTML page (figure embedded, no network needed)")
    ev.add_argument("--force", action="store_true", help="replace existing --png/--html files")
    ev.add_argument("--json", action="store_true", help=JSON_HELP)
    ev.set_defaults(func=cmd_evaluate)
