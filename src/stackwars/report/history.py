"""``stackwars history``'s tables, Markdown and versioned JSON, from the series and steps of
``results/history.py``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from rich.table import Table as RichTable

from stackwars.report.table import format_seconds, format_steady
from stackwars.results.history import Point

# The format of ``stackwars history --json``. Readers ignore fields they do not know; a field is
# renamed or removed only with a new version.
#
# History of HISTORY_JSON_VERSION:
#
# * 1 (2026-11-23): no version written: the file was the series themselves, a mapping from a
#   series' title (cell, and machine when the runs come from several) to its points, each
#   ``run``, ``started``, ``status``, ``median_s`` and ``step`` (the comparison with the
#   previous ok point, null when it is no difference).
# * 2 (2026-11-25): ``{"schema_version": 2, "series": {...}}``, the series as in 1.
HISTORY_JSON_VERSION = 2


def history_table(title: str, points: list[Point]) -> RichTable:
    table = RichTable(title=title, title_justify="left", title_style="bold")
    for name in ("Run", "Started", "Status", "Steady median", "First run", "Step"):
        table.add_column(name, no_wrap=name != "Step")
    for point in points:
        cell, step = point.cell, point.step
        median = format_steady(cell) if cell.status == "ok" else cell.status
        change = f"STEP: {step.describe()}" if step else ""
        table.add_row(
            point.run_id,
            point.started,
            cell.status,
            median,
            format_seconds(cell.times.first_run_s),
            change,
        )
    return table


def history_markdown(title: str, points: list[Point]) -> str:
    lines = [f"### {title}", "", "| Run | Started | Status | Steady median | Step |"]
    lines.append("| --- | --- | --- | --- | --- |")
    for point in points:
        cell, step = point.cell, point.step
        median = format_steady(cell) if cell.status == "ok" else cell.status
        change = f"STEP: {step.describe()}" if step else ""
        lines.append(f"| {point.run_id} | {point.started} | {cell.status} | {median} | {change} |")
    return "\n".join(lines) + "\n"


def history_file(series: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What ``history --json`` writes: the series (``history_json`` each), versioned."""
    return {"schema_version": HISTORY_JSON_VERSION, "series": dict(series)}


def history_json(points: list[Point]) -> list[dict[str, Any]]:
    return [
        {
            "run": point.run_id,
            "started": point.started,
            "status": point.cell.status,
            "median_s": point.cell.steady.median_s,
            "step": dataclasses.asdict(point.step) if point.step else None,
        }
        for point in points
    ]
