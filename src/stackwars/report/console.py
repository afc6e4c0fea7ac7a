"""The consoles commands print to: tables on stdout, warnings on stderr."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

# Wide enough for a whole results table in files and CI logs, where there is no terminal.
WIDE_OUTPUT = 200


def report_console() -> Console:
    """The terminal's width on a terminal; wide enough for whole tables elsewhere."""
    console = Console()
    return console if console.is_terminal else Console(width=WIDE_OUTPUT)


def warn(text: str) -> None:
    """``warning: TEXT`` on stderr, so that output redirected to a file holds only results.

    Plain text: a warning quotes what the user gave (paths, variables), never markup."""
    Console(stderr=True).print(Text(f"warning: {text}"), highlight=False, soft_wrap=True)


def progress(text: str) -> None:
    """A line of progress on stderr, for logs where no status line shows (no terminal)."""
    Console(stderr=True).print(Text(text), highlight=False, soft_wrap=True)
