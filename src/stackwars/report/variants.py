"""Variants (``results/variants.py``) as a table: a column per value, then each later value's
speed-up over the first."""

from __future__ import annotations

from rich.table import Table as RichTable

from stackwars.report.glyphs import TIMES
from stackwars.report.table import format_seconds
from stackwars.results.variants import Variants


def variant_rows(variants: Variants) -> list[tuple[str, ...]]:
    """Per stack: each value's steady median, then each later value's speed-up over the first
    (the first value's median ÷ that value's; above 1 is faster)."""
    first = variants.values[0]
    rows = []
    for stack, by_value in variants.rows.items():
        medians = {value: cell.steady.median_s or 0.0 for value, cell in by_value.items()}
        times = [
            format_seconds(medians.get(value)) if value in medians else ""
            for value in variants.values
        ]
        base = medians.get(first)
        ratios = [
            f"{base / medians[value]:.3g}{TIMES}" if base and medians.get(value) else ""
            for value in variants.values[1:]
        ]
        rows.append((stack, *times, *ratios))
    return rows


def variants_table(variants: Variants) -> RichTable:
    first = variants.values[0]
    table = RichTable(title=variants.title(), title_justify="left")
    table.add_column("Stack")
    for value in variants.values:
        table.add_column(value, justify="right")
    for value in variants.values[1:]:
        table.add_column(f"{value} over {first}", justify="right")
    for row in variant_rows(variants):
        table.add_row(*row)
    return table
