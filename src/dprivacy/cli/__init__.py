"""The command line: ``dprivacy COMMAND ...`` (one line and exit 2 on bad input, see :mod:`.app`).

Command-line glue lives here and nowhere else: the parser and the commands (:mod:`.app`), the process — its stop
signals from the first instruction, its exit status (:mod:`._process`) —, the space specifications of the command
line (:mod:`.specs`: ``grid:10x10``, ``count:100``, ...), and the registry that maps ``--mechanism`` names to the
library's constructors (:mod:`.registry`). The library never imports from this package.

Importing it loads nothing else (the console script ``dprivacy.cli:main`` installs the signal handlers before argparse
or numpy load); :mod:`.app` loads on first use of ``make_parser``.
"""

from ._process import main

__all__ = ["main", "make_parser"]


def __getattr__(name):
    if name == "make_parser":
        from .app import make_parser

        return make_parser
    raise AttributeError(f"module 'dprivacy.cli' has no attribute {name!r}")
