"""The command line: ``dprivacy COMMAND ...`` (one line and exit 2 on bad input, see :mod:`.app`).

Command-line glue lives here and nowhere else: the parser and the commands (:mod:`.app`), the space
specifications of the command line (:mod:`.specs`: ``grid:10x10``, ``count:100``, ...), and the
registry that maps ``--mechanism`` names to the library's constructors (:mod:`.registry`). The library
never imports from this package.
"""

from .app import main, make_parser

__all__ = ["main", "make_parser"]
