"""``dprivacy series``: release a series of readings under d1 or d∞ on values."""

from __future__ import annotations

import sys

from .common import JSON_HELP, CliError, _ascii_float, _emit, _SolveStatus, examples


def cmd_series(args) -> int:
    from ..api import OptionError, release_series
    from ..data.io import sidecar_path

    status = _SolveStatus(sys.stderr.isatty(), True, "releasing")
    try:  # the library writes the sidecar with the release (one step: io.signals_held)
        _, res = release_series(args.input, args.output, column=args.column, time=args.time, epsilon=args.epsilon,
                                metric=args.metric, unit=args.unit, per=args.per, seed=args.seed, force=args.force,
                                skip_invalid=args.skip_invalid, progress=lambda rows: status.update(f"{rows:,} readings"),
                                time_format=args.time_format)
        rep = res.report
    except OptionError as exc:
        raise CliError(f"dprivacy series: error: {exc}") from None
    finally:
        status.stop()
    report = rep.to_dict()
    report["sidecar"] = str(sidecar_path(args.output))
    _emit(report, args.json, f"released {rep.readings:,} readings of {rep.column}", kind="series")
    return 0


def add_parsers(sub) -> None:
    se = sub.add_parser("series", help="release a series of readings (smart meter, glucose) under d1 or d∞ on values (Chatzikokolakis et al. 2013 §6.1)",
                        **examples(
                            "meter readings in steps of 0.1 kWh, at ε = 1 per 0.1 kWh of total change",
                            "dprivacy series meter.csv -o meter_released.csv --column kwh --time time --epsilon 1 --unit 0.1",
                            "the same, with the noise of daily sums and means, as JSON",
                            "dprivacy series meter.csv -o meter_daily.csv --column kwh --time time --epsilon 1 --unit 0.1 "
                            "--per day --json"))
    se.add_argument("input", metavar="INPUT", help="a .csv, .csv.gz or .parquet file with one reading per row")
    se.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="the released series (time and reading columns only); a sidecar OUTPUT.dprivacy.json is written beside it")
    se.add_argument("--column", required=True, help="the readings' column")
    se.add_argument("--time", help="the time column (kept in the output; needed for --per): dates/times, ISO 8601 text "
                    "(with T or a space; a UTC offset or Z is converted to UTC), 2010/03/24 09:51, or seconds since 1970 "
                    "(a numeric column)")
    se.add_argument("--time-format", metavar="FORMAT", help="read the --time text with this strptime format, for forms "
                    "that are ambiguous or not ISO, e.g. '%%d/%%m/%%Y %%H:%%M' for 01/02/2010 10:00 as 1 February")
    se.add_argument("--epsilon", type=_ascii_float, required=True, help="ε per --unit of reading difference")
    se.add_argument("--metric", choices=["d1", "dinf"], default="d1", help="d1: total change over the readings; dinf: every reading at once (ε/n per reading)")
    se.add_argument("--unit", type=_ascii_float, help="resolution of the readings: they are rounded to multiples of it, and "
                    "distance 1 = one unit (default: the readings must be whole numbers, unit 1)")
    se.add_argument("--per", choices=["hour", "day"], help="also report sums and means of the released readings per period")
    se.add_argument("--seed", type=int, help="reproducible research mode (NOT for release); default: cryptographic randomness")
    se.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    se.add_argument("--skip-invalid", action="store_true", help="drop rows whose reading is missing or not a number, and count them")
    se.add_argument("--json", action="store_true", help=JSON_HELP)
    se.set_defaults(func=cmd_series)
