"""Comparisons of cells: the same cells in two runs, or every stack against a baseline stack
within one run. Data first (``ComparisonRow``), rendering after. Cells that ran on different
machines are shown but not judged: their verdict is inconclusive and a note says why."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.console import RenderableType
from rich.table import Table as RichTable

from stackwars.report.table import format_seconds
from stackwars.results.machines import mixed_machines
from stackwars.results.schema import Cell
from stackwars.timing.compare import INCONCLUSIVE, Comparison, compare, geometric_mean

Key = tuple[str, str, str, str, bool]


@dataclass(frozen=True)
class ComparisonRow:
    label: str
    baseline_median: float | None
    candidate_median: float | None
    result: Comparison | None
    note: str = ""  # why there is no result, or why the result is not judged

    def regression_above(self, percent: float) -> bool:
        result = self.result
        return (
            result is not None
            and result.verdict == "slower"
            and ((result.ratio - 1) * 100 > percent)
        )


def _workers(cells: Iterable[Cell]) -> dict[Key, list[Cell]]:
    groups: dict[Key, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.key(), []).append(cell)
    return groups


def _row(
    label: str, base: list[Cell], cand: list[Cell], threshold: float, within_process: bool
) -> ComparisonRow:
    failed = [c for c in base + cand if c.status != "ok" or not c.steady.samples_s]
    if failed:
        statuses = ", ".join(sorted({f"{c.stack} {c.status}" for c in failed}))
        return ComparisonRow(label, None, None, None, f"not comparable: {statuses}")
    result = compare(
        [c.steady.samples_s for c in base],
        [c.steady.samples_s for c in cand],
        threshold=threshold,
        within_process=within_process,
    )
    base_median = _pooled_median(base)
    mixed = mixed_machines(base + cand)
    if mixed:
        result = dataclasses.replace(result, verdict=INCONCLUSIVE, reason=mixed)
    return ComparisonRow(label, base_median, base_median * result.ratio, result, mixed)


def _pooled_median(cells: list[Cell]) -> float:
    pooled = sorted(value for cell in cells for value in cell.steady.samples_s)
    middle = len(pooled) // 2
    return pooled[middle] if len(pooled) % 2 else (pooled[middle - 1] + pooled[middle]) / 2


def _label(cell: Cell) -> str:
    params = ", ".join(f"{k}={v}" for k, v in cell.params.items())
    host = " →host" if cell.to_host else ""
    return f"{cell.workload}({params}) {cell.stack}{host} @ {cell.device}"


def compare_runs(
    baseline: Iterable[Cell],
    candidate: Iterable[Cell],
    threshold: float,
    within_process: bool = False,
) -> list[ComparisonRow]:
    """The cells both runs measured, baseline run first; cells in one run only are noted."""
    base, cand = _workers(baseline), _workers(candidate)
    rows = []
    for key, cells in base.items():
        if key in cand:
            rows.append(_row(_label(cells[0]), cells, cand[key], threshold, within_process))
        else:
            rows.append(ComparisonRow(_label(cells[0]), None, None, None, "only in the baseline"))
    rows.extend(
        ComparisonRow(_label(cells[0]), None, None, None, "only in the candidate run")
        for key, cells in cand.items()
        if key not in base
    )
    return rows


def compare_stacks(
    cells: Iterable[Cell], baseline: str, threshold: float, within_process: bool = False
) -> list[ComparisonRow]:
    """Every stack against ``baseline`` for each workload, parameters, device and host setting."""
    groups = _workers(cells)
    rows = []
    for key, base in groups.items():
        if key[2] != baseline:
            continue
        for other_key, other in groups.items():
            if other_key[2] != baseline and other_key[:2] + other_key[3:] == key[:2] + key[3:]:
                label = f"{_label(other[0])} vs {baseline}"
                rows.append(_row(label, base, other, threshold, within_process))
    return rows


def geometric_mean_ratio(rows: Iterable[ComparisonRow]) -> float | None:
    # Rows with a note are not judged (their cells ran on different machines).
    ratios = [row.result.ratio for row in rows if row.result is not None and not row.note]
    return geometric_mean(ratios) if ratios else None


HEADER = ("Cell", "Baseline", "Candidate", "Change", "95% CI of ratio", "p", "Workers", "Verdict")


def _texts(row: ComparisonRow) -> tuple[str, ...]:
    result = row.result
    if result is None:
        return (row.label, "", "", "", "", "", "", row.note)
    unit = " within-process" if result.unit == "block" else ""
    return (
        row.label,
        format_seconds(row.baseline_median),
        format_seconds(row.candidate_median),
        f"{(result.ratio - 1) * 100:+.1f}%",
        f"{result.ci_low:.3f}–{result.ci_high:.3f}",
        f"{result.p_value:.2g}",
        f"{result.workers[0]}+{result.workers[1]}{unit}",
        result.verdict,
    )


def comparison_table(rows: list[ComparisonRow], title: str) -> RichTable:
    table = RichTable(title=title, title_justify="left", title_style="bold")
    for name in HEADER:
        table.add_column(name, justify="left" if name in ("Cell", "Verdict") else "right")
    for row in rows:
        table.add_row(*_texts(row))
    return table


def regressions(rows: Iterable[ComparisonRow], fail_above: float) -> list[ComparisonRow]:
    """Rows significantly slower by more than ``fail_above`` percent."""
    return [row for row in rows if row.regression_above(fail_above)]


def comparison_notes(rows: list[ComparisonRow], fail_above: float | None) -> list[str]:
    """The geometric mean, a line per regression past the limit, and a line per cell the
    limit could not judge."""
    notes = [f"not judged: {row.label}: {row.note}" for row in rows if row.result and row.note]
    geomean = geometric_mean_ratio(rows)
    if geomean is not None:
        notes.append(f"geometric mean of ratios: {geomean:.3f} ({(geomean - 1) * 100:+.1f}%)")
    if fail_above is None:
        return notes
    for row in regressions(rows, fail_above):
        assert row.result is not None
        notes.append(f"REGRESSION above {fail_above:g}%: {row.label}: {row.result.describe()}")
    for row in rows:
        result = row.result
        if result is not None and result.verdict == INCONCLUSIVE and not row.note:
            notes.append(f"not judged against --fail-above: {row.label}: {result.reason}")
    return notes


def comparison_report(
    rows: list[ComparisonRow], title: str, fail_above: float | None
) -> list[RenderableType]:
    """The comparison table and its notes, for the terminal."""
    return [comparison_table(rows, title), *comparison_notes(rows, fail_above)]


def comparison_markdown(rows: list[ComparisonRow], title: str, fail_above: float | None) -> str:
    """The same report as Markdown (for pull requests and CI job summaries)."""
    lines = [f"### {title}", "", "| " + " | ".join(HEADER) + " |"]
    lines.append("|" + " --- |" * len(HEADER))
    for row in rows:
        lines.append("| " + " | ".join(text.replace("|", "\\|") for text in _texts(row)) + " |")
    notes = comparison_notes(rows, fail_above)
    return "\n".join([*lines, "", *(f"- {note}" for note in notes)]).rstrip() + "\n"


def comparison_json(rows: list[ComparisonRow]) -> list[dict[str, Any]]:
    """One dict per cell: medians, and the comparison's fields when there is one."""
    return [
        {
            "cell": row.label,
            "baseline_median_s": row.baseline_median,
            "candidate_median_s": row.candidate_median,
            "note": row.note,
            "comparison": dataclasses.asdict(row.result) if row.result else None,
        }
        for row in rows
    ]
