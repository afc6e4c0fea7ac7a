"""The unified stack's two tables (data from ``results/unified.py``, drawn here): what the
Keras abstraction costs against each backend's native stack, and which Keras backend is
fastest per cell, against Keras's published 20 %–350 %."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table as RichTable

from stackwars.report.glyphs import TIMES
from stackwars.report.markdown_text import escape, table_row
from stackwars.report.table import format_seconds
from stackwars.results.unified import PUBLISHED_SPEED_UP, AbstractionCost, BackendRace

COST_TITLE = "What the Keras abstraction costs"
COST_COLUMNS = ("Cell", "Keras stack", "Native stack", "Steady Keras ÷ native", "Verdict")
COST_COLUMNS += ("First run Keras ÷ native", "Peak memory Keras ÷ native")
COST_NOTES = (
    "Keras ÷ native: above 1× the Keras stack is slower (needs more) than its backend's own "
    "stack in the same mode; [95 % interval]",
    "Verdict: across fresh workers with --repeat 3 or more; 'within one process' when fewer "
    "(the variation between processes is then not in the interval)",
)
RACE_TITLE = "Which Keras backend is fastest"
RACE_COLUMNS = ("Cell", "Fastest mode per backend", "Fastest", "Slowest trails by", "Published")
_LOW, _HIGH = (f"{share * 100:.0f} %" for share in PUBLISHED_SPEED_UP)
RACE_NOTES = (
    f"Published: Keras 3 says picking the right backend speeds a model up by {_LOW} to {_HIGH}; "
    "'within' when the slowest backend trails the fastest by that much",
)


def _cell(workload: str, params: dict[str, object]) -> str:
    return f"{workload}({', '.join(f'{key}={value}' for key, value in params.items())})"


def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}{TIMES}"


def cost_rows(costs: Sequence[AbstractionCost]) -> list[tuple[str, ...]]:
    rows = []
    for cost in costs:
        steady, verdict = "", ""
        if cost.steady is not None:
            c = cost.steady
            steady = f"{c.ratio:.3g}{TIMES} [{c.ci_low:.3g}–{c.ci_high:.3g}]"
            verdict = c.verdict + (", within one process" if c.unit == "block" else "")
        rows.append(
            (
                _cell(cost.workload, cost.params),
                cost.keras_stack,
                cost.native_stack,
                steady,
                verdict,
                _ratio(cost.first_run_ratio),
                _ratio(cost.memory_ratio),
            )
        )
    return rows


def race_rows(races: Sequence[BackendRace]) -> list[tuple[str, ...]]:
    rows = []
    for race in races:
        per_backend = " · ".join(
            f"{stack} {format_seconds(median)}"
            for stack, median in sorted(race.fastest_by_backend.values(), key=lambda sm: sm[1])
        )
        rows.append(
            (
                _cell(race.workload, race.params),
                per_backend,
                race.fastest,
                f"{race.margin * 100:.0f} % ({race.slowest})",
                "within" if race.within_published else "outside",
            )
        )
    return rows


def _rich(title: str, columns: Sequence[str], rows: list[tuple[str, ...]], notes: Sequence[str]):
    table = RichTable(
        title=title,
        title_justify="left",
        title_style="bold",
        caption="\n".join(notes),
        caption_justify="left",
    )
    for i, name in enumerate(columns):
        table.add_column(name, justify="left" if i < 3 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def unified_tables(costs: Sequence[AbstractionCost], races: Sequence[BackendRace]) -> list:
    """The rich tables that have rows (none when the run had no Keras stack to compare)."""
    tables = []
    if costs:
        tables.append(_rich(COST_TITLE, COST_COLUMNS, cost_rows(costs), COST_NOTES))
    if races:
        tables.append(_rich(RACE_TITLE, RACE_COLUMNS, race_rows(races), RACE_NOTES))
    return tables


def unified_markdown(costs: Sequence[AbstractionCost], races: Sequence[BackendRace]) -> str:
    parts = []
    for title, columns, rows, notes in (
        (COST_TITLE, COST_COLUMNS, cost_rows(costs), COST_NOTES),
        (RACE_TITLE, RACE_COLUMNS, race_rows(races), RACE_NOTES),
    ):
        if not rows:
            continue
        lines = [f"### {escape(title)}", "", table_row(columns), table_row(["---"] * len(columns))]
        lines.extend(table_row(row) for row in rows)
        lines.append("")
        lines.extend(f"- {escape(note)}" for note in notes)
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)
