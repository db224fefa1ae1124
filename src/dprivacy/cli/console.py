"""The console the commands print their tables to."""

from __future__ import annotations


def stdout_console():
    """A rich Console on standard output whose closed pipe (`dprivacy ... | head -1`) is the BrokenPipeError the
    command line answers with 141, as it does for --json (rich's own handler exits with 1, which `check` uses for
    "not private")."""
    from rich.console import Console

    class _PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _PipeConsole()
