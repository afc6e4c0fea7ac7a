"""The console commands print to."""

from __future__ import annotations

from rich.console import Console

# Wide enough for a whole results table in files and CI logs, where there is no terminal.
WIDE_OUTPUT = 200


def report_console() -> Console:
    """The terminal's width on a terminal; wide enough for whole tables elsewhere."""
    console = Console()
    return console if console.is_terminal else Console(width=WIDE_OUTPUT)
