"""Comparisons of cells, rendered: a table per comparison and its notes, for the terminal,
Markdown (a pull request, a CI job summary) and JSON. The data and the gate's rule are
``results/comparison.py``'s."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import RenderableType
from rich.table import Table as RichTable

from stackwars.report.table import format_bytes, format_seconds
from stackwars.results.comparison import (
    ComparisonRow,
    Gate,
    GateVerdict,
    geometric_mean_ratio,
)
from stackwars.timing.compare import INCONCLUSIVE, UNDECIDED

# History of COMPARISON_FORMAT (what `compare --json` and `ab --json` write; its JSON Schema is
# results/comparison.schema.json):
# * 1 (2026-11-25): first versioned form: {"format", "rows", "gate"}; each row its medians,
#   note, broken (ok in the baseline, not in the candidate), comparison (with variance
#   components and workers_needed) and memory changes. Before: a bare list of rows.
# * 2 (2026-11-26, issue 34): "outcome" (pass, fail or underpowered; null without a gate),
#   "exit_status", "family" (procedure, alpha, hypotheses, looks), "undecided" lines; each
#   row its "gate_state"; a comparison's "unit" may be "round" (ab: paired by round) and its
#   "evidence" holds the test's parts; "gate" gains alpha and fail_on_undecided.
COMPARISON_FORMAT = 2


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
    if verdict is not None:
        notes.append(verdict.family.describe())
        notes.extend(verdict.failures)
        notes.extend(verdict.undecided)
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


def comparison_report(
    rows: list[ComparisonRow], title: str, verdict: GateVerdict | None
) -> list[RenderableType]:
    """The gate's outcome first, then the comparison table and its notes, for the terminal."""
    head = [verdict.headline()] if verdict is not None else []
    return [*head, comparison_table(rows, title), *comparison_notes(rows, verdict)]


def comparison_markdown(rows: list[ComparisonRow], title: str, verdict: GateVerdict | None) -> str:
    """The same report as Markdown (for pull requests and CI job summaries); its first line
    is the gate's outcome."""
    head = [f"**{verdict.headline()}**", ""] if verdict is not None else []
    lines = [*head, f"### {title}", "", "| " + " | ".join(HEADER) + " |"]
    lines.append("|" + " --- |" * len(HEADER))
    for row in rows:
        lines.append("| " + " | ".join(text.replace("|", "\\|") for text in _texts(row)) + " |")
    notes = comparison_notes(rows, verdict)
    return "\n".join([*lines, "", *(f"- {note}" for note in notes)]).rstrip() + "\n"


def comparison_json(
    rows: list[ComparisonRow], gate: Gate, verdict: GateVerdict | None, exit_status: int
) -> dict[str, Any]:
    """The comparison as data (COMPARISON_FORMAT): one dict per cell, the gate's outcome,
    family and lines."""
    states = verdict.states if verdict is not None else ("",) * len(rows)
    return {
        "format": COMPARISON_FORMAT,
        "outcome": verdict.outcome if verdict is not None else None,
        "exit_status": exit_status,
        "family": dataclasses.asdict(verdict.family) if verdict is not None else None,
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
            }
            for row, state in zip(rows, states, strict=True)
        ],
        "gate": {
            **dataclasses.asdict(gate),
            "failures": list(verdict.failures) if verdict is not None else [],
        },
        "undecided": list(verdict.undecided) if verdict is not None else [],
    }
