"""``dprivacy obfuscate`` and ``dprivacy evaluate``: release a file of locations, and measure what a release costs
and protects."""

from __future__ import annotations

import sys

from .common import JSON_HELP, CliError, _ascii_float, _emit, _RowProgress, _SolveStatus, examples


def cmd_obfuscate(args) -> int:
    from ..api import OptionError, obfuscate

    show = not args.json and sys.stderr.isatty()
    bar = _RowProgress(args.input, "obfuscating") if show else None
    # not a terminal (or --json, whose report is on stdout): a plain line after 5 s and every 30 s
    plain = None if show else _SolveStatus(False, True, "obfuscating")
    started = []

    def progress(done, total=None):  # the bar starts with the release (after a grid mechanism's own status line)
        if bar is not None:
            if not started:
                started.append(bar.start())
                if args.engine == "dask":
                    bar.update("obfuscating on Dask (tasks)")
            bar.update(done, total)
        elif args.engine == "dask":
            plain.update(f"{done:,} of {total:,} tasks" if total else "starting the tasks")
        else:
            plain.update(f"{done:,} rows" + (f" of {total:,}" if total else ""))

    try:
        output, res = obfuscate(args.input, args.output, epsilon=args.epsilon, accuracy=args.accuracy, unit=args.unit,
                                lat=args.lat, lon=args.lon, mechanism=args.mechanism, cell=args.cell, region=args.region,
                                prior=args.prior, prior_from=args.prior_from, remap=args.remap, time_limit=args.time_limit,
                                seed=args.seed, user=args.user, budget=args.budget, key=args.key, shuffle=args.shuffle,
                                keep=args.keep, coords=args.coords, skip_invalid=args.skip_invalid, force=args.force,
                                engine=args.engine, scheduler=args.scheduler, workers=args.workers, progress=progress,
                                status=lambda text, timed: _SolveStatus(show, timed, text))
    except OptionError as exc:
        raise CliError(f"dprivacy obfuscate: error: {exc}") from None
    finally:
        if started:
            bar.stop()
        if plain is not None:
            plain.stop()
    rep = res.report
    report = rep.to_dict()
    report["sidecar"] = str(args.output) + ".dprivacy.json"
    if args.owner and (rep.owner_only or rep.owner_notes):
        # counts and notes that depend on the true locations (rows outside --region, the rejection sampler's proposals,
        # rows sorted by location): printed for the data owner on request, never in the sidecar
        report["not_private"] = {**rep.owner_only, **({"notes": rep.owner_notes} if rep.owner_notes else {})}
    _emit(report, args.json, f"obfuscated {rep.rows_written:,} points", kind="obfuscate")
    return 0


def cmd_evaluate(args) -> int:
    from ..api import OptionError, evaluate

    status = _SolveStatus(not args.json and sys.stderr.isatty(), True, "evaluating", heartbeat=1.0)
    try:
        rep = evaluate(args.original, args.released, lat=args.lat, lon=args.lon, key=args.key, coords=args.coords,
                       cell=args.cell, region=args.region, prior=args.prior, prior_from=args.prior_from, sweep=args.sweep,
                       mechanisms=args.mechanisms, png=args.png, html=args.html, time_limit=args.time_limit,
                       progress=status.update, force=args.force).report
    except OptionError as exc:
        raise CliError(f"dprivacy evaluate: error: {exc}") from None
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
                    "number, out of range, a fraction of a semicircle) and count them; a point outside --region is not invalid")
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
    ob.add_argument("--user", metavar="COL", help="the column identifying the person of each row (with --budget); in a CSV "
                    "its ids are compared as written (007 and 7 are two users); a blank id is refused")
    ob.add_argument("--budget", type=_ascii_float, help="total ε per user (units of --epsilon): rows beyond ⌊budget/ε⌋ per user are suppressed and counted")
    ob.add_argument("--coords", choices=["degrees", "semicircles"], default="degrees",
                    help="unit of the coordinate columns: degrees (default) or Garmin/FIT semicircles (2^31 per 180°), read and "
                    "written as such: whole numbers (a fraction is an invalid coordinate, as a non-number is)")
    ob.add_argument("--key", metavar="COL", help="with --seed: each record's noise depends only on the seed and its (unique) key, "
                    "so any batching, partitioning or engine gives the same output; in a CSV a key written as a whole number "
                    "is that integer, as in Parquet (007 repeats 7), any other text a key as written")
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
    ev.add_argument("--key", help="join rows by this column (default: by position); a CSV's keys are compared as written")
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
