"""The toy "energy" instrument: what it keeps (``keep``, as an instrument's service would) and
what it shows (``SECTIONS``, found by report/sections.py)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from stackwars.report.html.blocks import Block, TableBlock
from stackwars.report.sections import InstrumentSection
from stackwars.results.run import Run
from stackwars.results.schema import Cell
from stackwars.results.store import Store

INSTRUMENT = "energy"
ENERGY_FORMAT = 1  # {"cell": the cell's label, "joules": per call}


def keep(results: Store, record: Run, cell: Cell, joules: float) -> None:
    payload = {"cell": cell.label(), "joules": joules}
    record.keep(INSTRUMENT, ENERGY_FORMAT, payload)
    results.add_data(record, INSTRUMENT, ENERGY_FORMAT, payload)


def _rows(run: Run) -> list[tuple[str, str]]:
    return [(entry["cell"], f"{entry['joules']:g} J") for entry in run.entries(INSTRUMENT)]


def _shown(run: Run, details: bool) -> list[Table]:
    del details
    if not _rows(run):
        return []
    table = Table("cell", "energy per call", title="Energy per call")
    for row in _rows(run):
        table.add_row(*row)
    return [table]


def _markdown(run: Run) -> str:
    lines = [f"- {cell}: {joules}" for cell, joules in _rows(run)]
    return "\n## Energy per call\n\n" + "\n".join(lines) + "\n" if lines else ""


def _reported(inputs: Any) -> list[Block]:
    rows = tuple(row for run in inputs.runs for row in _rows(run))
    return [TableBlock(("Cell", "Energy per call"), rows)] if rows else []


SECTIONS = (
    InstrumentSection(
        id="energy",
        heading="Energy per call",
        after="workloads",
        console=_shown,
        report=_reported,
        markdown=_markdown,
        empty="no energy was measured in these runs",
    ),
)
