"""A sweep as a terminal table (``show``); the sweeps and crossovers themselves are
``results/crossover.py``'s."""

from __future__ import annotations

from rich.table import Table as RichTable

from stackwars.report.table import format_seconds
from stackwars.results.crossover import Sweep, value_text


def sweep_table(sweep: Sweep) -> RichTable:
    """Steady medians: a row per stack, a column per value of the swept parameter."""
    values = sorted({v for series in sweep.series.values() for v in series})
    table = RichTable(title=sweep.title(), title_justify="left", title_style="bold")
    table.add_column("Stack", no_wrap=True)
    for value in values:
        table.add_column(f"{sweep.param}={value_text(value)}", justify="right", no_wrap=True)
    for stack, series in sweep.series.items():
        cells = [series.get(value) for value in values]
        table.add_row(stack, *(format_seconds(c.steady.median_s) if c else "" for c in cells))
    return table
