"""The ``dprivacy`` command line (DESIGN.md, Command line).

Every subcommand that reports figures accepts ``--json`` and then prints exactly one JSON object on
stdout. Errors print one line on stderr and exit with status 2, without a traceback.
"""

from __future__ import annotations
import argparse
import os
import sys

from .._system import COMMANDS_WITHOUT_PANDAS, memory_failure, pyarrow_without_pandas, reserve_blas_buffer
from ._signals import _LATE, interrupted, stopped  # noqa: F401 (_LATE: app._LATE, as before)
from .common import EXIT_PIPE, EXIT_USAGE, CliError, _Parser, _SolveStatus  # noqa: F401 (_SolveStatus: app._SolveStatus)


def make_parser() -> argparse.ArgumentParser:
    from . import design, locations, query, series, theory

    p = _Parser(prog="dprivacy", description="Metric differential privacy and quantitative information flow.")
    p.add_argument("--version", action="version", version=f"dprivacy {_version()}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    sub.required = True
    design.add_parsers(sub)
    theory.add_parsers(sub)
    locations.add_parsers(sub)
    series.add_parsers(sub)
    query.add_parsers(sub)
    p.commands = sub.choices  # (each command's own parser: its errors carry its name)
    return p


def _version() -> str:
    from .. import __version__

    return __version__


def _join_negative_values(argv: list) -> list:
    """``--region -10,35,30,60`` → ``--region=-10,35,30,60``: argparse would take a value starting with
    a minus sign for an option."""
    import re

    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--region" and i + 1 < len(argv) and re.fullmatch(r"\s*-[0-9.].*", str(argv[i + 1])):
            out.append(f"--region={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _prefix(args) -> str:
    """``dprivacy COMMAND: error: `` (argparse's form for a subcommand), ``dprivacy: error: `` before a command is known."""
    command = getattr(args, "command", None)
    return f"dprivacy {command}: error: " if command else "dprivacy: error: "


def _error_line(args, message: str) -> str:
    """The one line of an error: ``message`` prefixed with :func:`_prefix`, unless it already carries a
    ``dprivacy ...`` prefix (argparse's own errors, and messages written before the prefix was added here)."""
    import re

    first = message.splitlines()[0] if message else ""
    if re.match(r"dprivacy( [a-z-]+)?: ", first):
        return first
    return _prefix(args) + first


def _main(argv=None) -> int:
    args = None
    try:
        parser = make_parser()  # numpy is not imported before the arguments are parsed: --version stays fast
        args, extra = parser.parse_known_args(_join_negative_values(sys.argv[1:] if argv is None else list(argv)))
        if extra:  # (argparse's root parser would say it as "dprivacy: error:", without the command)
            parser.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
        if argv is None and args.command in COMMANDS_WITHOUT_PANDAS and getattr(args, "engine", "local") == "local":
            pyarrow_without_pandas()  # (the command line's own process: 0.2 s of start-up)
        import numpy as np

        # An overflow or an invalid operation (inf − inf, 0·inf) is a number the command cannot stand behind:
        # make it an error with one line rather than a multi-line warning followed by NaN in the output.
        np.seterr(over="raise", invalid="raise")
        reserve_blas_buffer()  # (under ulimit -v: OpenBLAS's buffer now, or one line; later it ended the process in C)
        code = args.func(args)
        return 0 if code is None else int(code)
    except CliError as exc:
        print(_error_line(args, str(exc)), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM/SIGHUP (_process._Terminated)
        return interrupted()
    except BrokenPipeError:
        # the reader closed the pipe (`dprivacy ... --json | head`): not an error of the command. Point
        # stdout at /dev/null so that Python's flush at exit does not report it either.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_PIPE
    except FloatingPointError as exc:
        # numpy's own words ("overflow encountered in multiply") named neither the value nor the range
        print(f"{_prefix(args)}a computation left the float64 range ({exc}): the inputs are too large or too small "
              "for it — use an ε and distances whose product ε·d stays well within 1e-300..1e300 (planar Laplace squares "
              "ε: within 1e150)", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, TypeError, FileNotFoundError, FileExistsError, MemoryError, KeyError, OSError, OverflowError, ArithmeticError) as exc:
        if stopped():  # (an error that follows a stop signal is its doing: _process.stopped)
            return interrupted()
        msg = memory_failure(exc) or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        detail = getattr(exc, "detail", "") if getattr(args, "owner", False) else ""
        print(_error_line(args, msg) + (f" [for the owner: {detail.splitlines()[0]}]" if detail else ""), file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: still one line and no traceback for the user, but say it is one
        if stopped():
            return interrupted()
        msg = str(exc).splitlines()[0] if str(exc) else ""
        if memory_failure(exc):  # DuckDB's OutOfMemoryException, a library not mapped, no thread: not a bug
            print(_prefix(args) + memory_failure(exc), file=sys.stderr)
            return EXIT_USAGE
        if isinstance(exc, RuntimeError) and "interrupted" in msg.lower():
            # DuckDB turns Ctrl-C during a scan into RuntimeError("Query interrupted") (seen on `query`
            # over an 8-million-row Parquet file): an interruption, not a bug
            return interrupted()
        print(f"{_prefix(args)}internal error ({type(exc).__name__}: {msg}); please report it", file=sys.stderr)
        return EXIT_USAGE
