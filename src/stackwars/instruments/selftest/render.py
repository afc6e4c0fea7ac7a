"""``stackwars selftest`` as a table: each stack's checks and their numbers."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from stackwars.instruments.selftest.data import StackResult

PASSED = {True: ("yes", "green"), False: ("FAILED", "bold red"), None: ("n/a", "dim")}


def result_table(results: list[StackResult], device: str) -> Table:
    table = Table("stack", "check", "passed", "numbers", title=f"selftest on {device}")
    for result in results:
        if not result.checks:
            last_line = result.reason.strip().splitlines()[-1:] or [""]
            status = Text(result.status, style="dim" if result.status == "unsupported" else "red")
            table.add_row(result.stack, "-", status, Text(last_line[0]))
        for check in result.checks:
            text, style = PASSED[check.passed]
            table.add_row(result.stack, check.name, Text(text, style=style), Text(check.message))
    return table
