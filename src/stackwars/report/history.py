"""``stackwars history``'s tables, Markdown and versioned JSON, from the series and steps of
``results/history.py``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from rich.table import Table as RichTable

from stackwars.report.markdown_text import escape, table_row
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
# * 3 (2026-11-26): a point is a run (its ``--repeat`` workers merged, ``median_s`` theirs),
#   with ``workers`` and ``no_verdict`` (why it could not be compared: too few workers), and
#   ``step`` judged by the gate's statistics across workers, not within one process.
HISTORY_JSON_VERSION = 3
NO_VERDICT_NOTE = "no step shown where a run has fewer than 3 workers: {why}"


def history_table(title: str, points: list[Point]) -> RichTable:
    table = RichTable(
        title=title, title_justify="left", title_style="bold", caption=history_note(points)
    )
    for name in ("Run", "Started", "Status", "Workers", "Steady median", "First run", "Step"):
        table.add_column(name, no_wrap=name != "Step")
    for point in points:
        table.add_row(*point_texts(point))
    return table


def point_texts(point: Point) -> tuple[str, ...]:
    """Run, started, status, workers, steady median, first run, step: one history row."""
    cell, step = point.cell, point.step
    median = format_steady(cell) if cell.status == "ok" else cell.status
    change = f"STEP: {step.describe()}" if step else ""
    first = format_seconds(cell.times.first_run_s)
    return (point.run_id, point.started, cell.status, str(point.workers), median, first, change)


def history_note(points: list[Point]) -> str | None:
    """Why some points have no verdict (once for the series), or None."""
    why = next((point.no_verdict for point in points if point.no_verdict), "")
    return NO_VERDICT_NOTE.format(why=why) if why else None


def history_markdown(title: str, points: list[Point]) -> str:
    header = "| Run | Started | Status | Workers | Steady median | First run | Step |"
    lines = [f"### {escape(title)}", "", header, "| --- | --- | --- | ---: | --- | ---: | --- |"]
    lines.extend(table_row(point_texts(point)) for point in points)
    note = history_note(points)
    return "\n".join([*lines, *(["", f"- {escape(note)}"] if note else [])]) + "\n"


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
            "workers": point.workers,
            "step": dataclasses.asdict(point.step) if point.step else None,
            "no_verdict": point.no_verdict,
        }
        for point in points
    ]
