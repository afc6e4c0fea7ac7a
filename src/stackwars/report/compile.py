"""What compiling buys, as a table: first run and its phases, speed-up over eager, break-even
calls, and the warm-cache first run (data from ``results/compile.py``, drawn here)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table as RichTable

from stackwars.report.glyphs import TIMES
from stackwars.report.markdown_text import escape, table_row
from stackwars.report.table import format_seconds, shorten
from stackwars.results.compile import CompileSummary, Estimate

COLUMNS = (
    "Cell",
    "Stack",
    "First run",
    "Second run",
    "Compiles 1st/2nd/steady",
    "Graphs a call",
    "Phases of the first run",
    "Warm-cache first run",
    "Speed-up vs eager",
    "Break-even calls",
)
NOTES = (
    "Compiles 1st/2nd/steady: compilations the framework counted in the first run, the second "
    "run and steady state (a second-run compile: the second call's program differed, e.g. an "
    "optimizer state created by the first step); Graphs a call: graphs executed per steady "
    "call, where the framework counts them (torch_xla)",
    "Phases: what each framework lets us see; a name joined with + is two phases it does "
    "not separate",
    "Break-even calls: from this call on, compile-then-run has cost no more than the "
    "framework's eager stack (first-run excess ÷ per-call saving); [95 % interval]",
    "Warm-cache first run: a fresh worker whose persistent compile cache the cell's worker "
    "filled (--cache cold-then-warm)",
)


def compile_rows(summaries: Sequence[CompileSummary]) -> list[tuple[str, ...]]:
    """Display strings, one tuple per summary, in the order of ``COLUMNS``."""
    return [
        (
            _cell(summary),
            summary.stack,
            format_seconds(summary.first_run_s),
            format_seconds(summary.second_run_s),
            _compiles(summary.compiles),
            "" if summary.graphs_per_call is None else f"{summary.graphs_per_call:.3g}",
            format_phases(summary.first_run_breakdown),
            _warm(summary),
            _speed_up(summary.speed_up),
            _break_even(summary),
        )
        for summary in summaries
    ]


def _compiles(compiles: dict[str, int | None]) -> str:
    """``1/1/0``: compilations in the first run, the second run and steady state."""
    if not compiles:
        return ""
    phases = ("first_run", "second_run", "steady")
    return "/".join("?" if compiles.get(name) is None else str(compiles[name]) for name in phases)


def _cell(summary: CompileSummary) -> str:
    params = ", ".join(f"{key}={value}" for key, value in summary.params.items())
    return f"{summary.workload}({params})"


def format_phases(phases: dict[str, float]) -> str:
    """``trace 12 ms · compile 210 ms (cache read 3 ms) · execute 1 ms``."""
    parts = []
    for name, seconds in phases.items():
        if name.startswith("of_compile."):
            continue
        label = name.removesuffix("_s").replace("_and_", "+")
        parts.append(f"{label} {format_seconds(seconds)}")
    cache_read = phases.get("of_compile.cache_read_s")
    if cache_read:
        parts.append(f"(of compile: cache read {format_seconds(cache_read)})")
    return " · ".join(parts)


def _warm(summary: CompileSummary) -> str:
    if summary.warm_status is None:
        return ""
    if summary.warm_status != "ok":
        return shorten(f"{summary.warm_status.upper()}: {summary.warm_reason}", 40)
    if summary.persistent_cache.startswith("none"):
        return f"{format_seconds(summary.warm_first_run_s)} (no persistent cache)"
    text = format_seconds(summary.warm_first_run_s)
    if summary.first_run_s and summary.warm_first_run_s:
        text += f" (cold ÷ warm {summary.first_run_s / summary.warm_first_run_s:.2f})"
    return text


def _speed_up(estimate: Estimate | None) -> str:
    if estimate is None or estimate.value is None:
        return ""
    low, high = estimate.low or 0.0, estimate.high or 0.0
    return f"{estimate.value:.3g}{TIMES} [{low:.3g}–{high:.3g}]"


def _break_even(summary: CompileSummary) -> str:
    estimate = summary.break_even_calls
    if summary.eager_stack is None:
        return ""
    if estimate is None or estimate.value is None:
        return summary.note
    low = "?" if estimate.low is None else f"{estimate.low:.0f}"
    high = "∞" if estimate.high is None else f"{estimate.high:.0f}"
    return f"{estimate.value:.0f} [{low}–{high}]"


def shown_columns(summaries: Sequence[CompileSummary]) -> list[int]:
    """Column indices to draw: the warm-cache column only when a warm start was measured, the
    graphs column only when a framework counted its graphs."""
    warm = any(summary.warm_status for summary in summaries)
    graphs = any(summary.graphs_per_call is not None for summary in summaries)
    hidden = {"Warm-cache first run": not warm, "Graphs a call": not graphs}
    return [i for i, name in enumerate(COLUMNS) if not hidden.get(name, False)]


def compile_table(summaries: Sequence[CompileSummary]) -> RichTable:
    table = RichTable(
        title="What compiling buys",
        title_justify="left",
        title_style="bold",
        caption="\n".join(compile_notes(summaries)),
        caption_justify="left",
    )
    shown = shown_columns(summaries)
    for i in shown:
        table.add_column(COLUMNS[i], justify="left" if i < 2 else "right")
    for row in compile_rows(summaries):
        table.add_row(*(row[i] for i in shown))
    return table


def compile_markdown(summaries: Sequence[CompileSummary]) -> str:
    shown = shown_columns(summaries)
    header = [COLUMNS[i] for i in shown]
    lines = ["### What compiling buys", "", table_row(header), table_row(["---"] * len(header))]
    lines.extend(table_row([row[i] for i in shown]) for row in compile_rows(summaries))
    lines.append("")
    lines.extend(f"- {escape(note)}" for note in compile_notes(summaries))
    return "\n".join(lines) + "\n"


def compile_notes(summaries: Sequence[CompileSummary]) -> list[str]:
    warm = any(summary.warm_status for summary in summaries)
    notes = [note for note in NOTES if warm or not note.startswith("Warm-cache")]
    notes.extend(sorted({s.note for s in summaries if s.break_even_calls and s.note}))
    return notes
