"""What a run's cells imply beyond their own rows, for ``run`` and ``show``: what compiling
buys (``results/compile.py``) and the Keras comparisons (``results/unified.py``), as terminal
tables and as Markdown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stackwars.report.compile import compile_markdown, compile_table
from stackwars.report.unified import unified_markdown, unified_tables
from stackwars.results.compile import compile_summaries
from stackwars.results.schema import Cell
from stackwars.results.unified import abstraction_costs, backend_races


def derived_tables(cells: Sequence[Cell]) -> tuple[list[Any], str]:
    """The tables that have rows (each worker's cell given, not merged repeats), and the same
    as Markdown."""
    summaries = compile_summaries(cells)
    costs, races = abstraction_costs(cells), backend_races(cells)
    tables: list[Any] = [compile_table(summaries)] if summaries else []
    tables.extend(unified_tables(costs, races))
    markdown = compile_markdown(summaries) if summaries else ""
    return tables, markdown + unified_markdown(costs, races)
