"""Comparisons of cells, rendered: a table per comparison and its notes, for the terminal,
Markdown (a pull request, a CI job summary) and JSON. The data and the gate's rule are
``results/comparison.py``'s; the verdict rendered, with its format version, is
``results/verdict.py``'s."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import RenderableType
from rich.table import Table as RichTable

from stackwars.report.markdown_text import table_row
from stackwars.report.table import format_bytes, format_seconds
from stackwars.results.comparison import ComparisonRow, GateVerdict, geometric_mean_ratio
from stackwars.results.verdict import COMPARISON_FORMAT, Verdict
from stackwars.timing.compare import INCONCLUSIVE, UNDECIDED

HEADER = ("Cell", "Baseline", "Candidate", "Change", "95% CI of ratio", "p", "Workers", "Verdict")


def _texts(row: ComparisonRow) -> tuple[str, ...]:
    if row.result is None:
        return (row.label, "", "", "", "", "", "", row.broken or row.note)
    return (row.label, *measured_texts(row), _verdict_text(row))


def measured_texts(row: ComparisonRow) -> tuple[str, ...]:
    """Baseline, candidate, change, interval, p and workers of a compared row, as text (the
    terminal's and the report's tables alike)."""
    result = row.result
    assert result is not None  # callers show an uncompared row by its note
    unit = {"block": " within-process", "round": " paired rounds", "run": " runs"}.get(
        result.unit, ""
    )
    return (
        format_seconds(row.baseline_median),
        format_seconds(row.candidate_median),
        f"{(result.ratio - 1) * 100:+.1f}%",
        f"{result.ci_low:.3f}–{result.ci_high:.3f}",
        f"{result.p_value:.2g}",
        f"{result.workers[0]}{unit}"
        if result.unit == "round"
        else f"{result.workers[0]}+{result.workers[1]}{unit}",
    )


def _verdict_text(row: ComparisonRow) -> str:
    assert row.result is not None
    text = row.result.verdict
    if text == UNDECIDED and row.result.workers_needed:
        text += f" (~{row.result.workers_needed} workers a side)"
    components = row.result.components
    if components is not None and components.run_drift:
        text += " †"
    return text


def comparison_table(rows: list[ComparisonRow], title: str) -> RichTable:
    table = RichTable(title=title, title_justify="left", title_style="bold")
    for name in HEADER:
        table.add_column(name, justify="left" if name in ("Cell", "Verdict") else "right")
    for row in rows:
        table.add_row(*_texts(row))
    return table


def comparison_notes(rows: list[ComparisonRow], verdict: GateVerdict | None) -> list[str]:
    """The geometric mean, what each memory measure did, the gate's family, a line per reason
    the gate fails, and a line per cell it could not judge or left undecided."""
    notes = [f"not judged: {row.label}: {row.note}" for row in rows if row.result and row.note]
    geomean = geometric_mean_ratio(rows)
    if geomean is not None:
        notes.append(f"geometric mean of ratios: {geomean:.3f} ({(geomean - 1) * 100:+.1f}%)")
    drift = next(
        (r.result.components.run_drift for r in rows if r.result and r.result.components), 0.0
    )
    if drift:
        notes.append(
            f"† two single runs: each interval includes a run-to-run drift of {drift * 100:.1f} "
            "% (--run-drift; the default is an estimate from six runs, counted with its "
            "uncertainty); several runs a side are compared run by run, and an interleaved "
            "session ('stackwars ab') pairs its rounds"
        )
    if any(r.result is not None and r.result.unit == "run" for r in rows):
        notes.append(
            "runs as units: each cell's interval is over the runs' mean log times (their "
            "spread holds the run-to-run component), not over their pooled workers"
        )
    notes.extend(_memory_notes(rows))
    notes.extend(f"speeds: {row.label}: {row.speeds.describe()}" for row in rows if row.speeds)
    notes.extend(
        f"count changed: {row.label}: {'; '.join(change.describe() for change in row.counts)}"
        for row in rows
        if row.counts
    )
    if verdict is not None:
        notes.append(verdict.family.describe())
        notes.extend(verdict.failures)
        notes.extend(verdict.undecided)
        notes.extend(verdict.not_gated)
        return notes
    for row in rows:
        result = row.result
        if result is None or row.note:
            continue
        if result.verdict == INCONCLUSIVE:
            notes.append(f"not judged: {row.label}: {result.reason}")
        elif result.verdict == UNDECIDED:
            notes.append(f"undecided: {row.label}: {result.reason}")
    return notes


def _memory_notes(rows: list[ComparisonRow]) -> list[str]:
    lines = []
    for row in rows:
        for change in row.memory:
            ratio = change.result.ratio
            if abs(ratio - 1) < 0.005:
                continue
            lines.append(
                f"memory: {row.label}: {change.what} {format_bytes(int(change.baseline_bytes))}"
                f" → {format_bytes(int(change.candidate_bytes))} ({(ratio - 1) * 100:+.1f}%, "
                f"{change.result.verdict})"
            )
    return lines


def comparison_report(verdict: Verdict, title: str) -> list[RenderableType]:
    """The gate's outcome first, then the comparison table and its notes, for the terminal."""
    rows = list(verdict.rows)
    head = [verdict.headline()] if verdict.decision is not None else []
    return [*head, comparison_table(rows, title), *comparison_notes(rows, verdict.decision)]


def comparison_markdown(verdict: Verdict, title: str) -> str:
    """The same report as Markdown (for pull requests and CI job summaries); its first line
    is the gate's outcome."""
    rows = list(verdict.rows)
    head = [f"**{verdict.headline()}**", ""] if verdict.decision is not None else []
    lines = [*head, f"### {title}", "", "| " + " | ".join(HEADER) + " |"]
    lines.append("|" + " --- |" * len(HEADER))
    for row in rows:
        lines.append(table_row(_texts(row)))
    notes = comparison_notes(rows, verdict.decision)
    return "\n".join([*lines, "", *(f"- {note}" for note in notes)]).rstrip() + "\n"


def comparison_json(verdict: Verdict) -> dict[str, Any]:
    """The verdict as data (``COMPARISON_FORMAT``, results/verdict.py): one dict per cell, the
    gate's outcome, exit status, family and lines."""
    decision = verdict.decision
    states = decision.states if decision is not None else ("",) * len(verdict.rows)
    return {
        "format": COMPARISON_FORMAT,
        "outcome": verdict.outcome,
        "exit_status": verdict.exit_status,
        "family": dataclasses.asdict(decision.family) if decision is not None else None,
        "rows": [
            {
                "cell": row.label,
                "baseline_median_s": row.baseline_median,
                "candidate_median_s": row.candidate_median,
                "note": row.note,
                "broken": row.broken,
                "gate_state": state,
                "comparison": dataclasses.asdict(row.result) if row.result else None,
                "memory": [dataclasses.asdict(change) for change in row.memory],
                "counts": [dataclasses.asdict(change) for change in row.counts],
                "speeds": dataclasses.asdict(row.speeds) if row.speeds else None,
            }
            for row, state in zip(verdict.rows, states, strict=True)
        ],
        "gate": {**dataclasses.asdict(verdict.gate), "failures": list(verdict.failures)},
        "undecided": list(verdict.undecided),
        "not_gated": list(verdict.not_gated),
    }
