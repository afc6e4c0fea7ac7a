"""An in-process measurement (``stackwars.measure``) as a terminal table and as HTML."""

from __future__ import annotations

import html

from rich.table import Table

from stackwars.report.table import format_seconds
from stackwars.timing.timer import Measurement


def result_rows(m: Measurement) -> list[tuple[str, str]]:
    summary = m.summary()
    rows = [
        ("first run", format_seconds(m.first_run_s)),
        ("second run", format_seconds(m.second_run_s)),
        ("runs to steady", str(m.runs_to_steady)),
        (
            "steady median",
            f"{format_seconds(summary.median)} (95 % CI {format_seconds(summary.ci95_low)}"
            f"–{format_seconds(summary.ci95_high)}, {m.calls} calls in {len(m.block_s)} blocks)",
        ),
        ("stable", "yes" if m.stable else "no: the CI target was not reached in the budget"),
        ("compiles", f"{m.compiles_first_run} in the first run, {m.compiles_steady} after"),
    ]
    if m.latency_s:
        latency = sorted(m.latency_s)[len(m.latency_s) // 2]
        rows.append(("call+sync", f"{format_seconds(latency)} (single calls, each waited for)"))
    return rows


def result_table(stack: str, m: Measurement, note: str) -> Table:
    table = Table(title=f"{stack}, in-process", caption=note, show_header=False)
    table.add_column(style="cyan")
    table.add_column()
    for name, value in result_rows(m):
        table.add_row(name, value)
    return table


def result_html(stack: str, m: Measurement, note: str) -> str:
    cell = "<tr><th style='text-align:left'>{}</th><td>{}</td></tr>"
    body = "".join(
        cell.format(html.escape(name), html.escape(value)) for name, value in result_rows(m)
    )
    caption = html.escape(f"{stack}, in-process. {note}")
    return f"<table><caption>{caption}</caption>{body}</table>"
