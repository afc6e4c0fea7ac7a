"""Comparisons of cells, as data: the same cells in two sets of runs (several runs a side are
pooled), or every stack against a baseline stack within one run; and the gate's rule.

Statistics come from ``timing/compare.py``; rendering is ``report/comparison.py``'s.

The gate (``gate_failures``) fails a comparison for any of:

* a cell significantly slower by more than ``--fail-above`` percent (``Comparison.fails_gate``);
* a cell ``ok`` in the baseline that is not ``ok`` in the candidate, or absent from it (a
  crash, a timeout, a parity mismatch, a lost cell): a broken candidate never passes, unless
  ``--allow-failures`` says so;
* with ``--fail-memory-above``, a cell whose peak memory (the worker tree's resident peak, and
  the device peak where one was measured) grew significantly by more than that percentage.

Cells on different machines are shown, never judged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from stackwars.results.machines import mixed_machines
from stackwars.results.schema import Cell
from stackwars.timing.compare import (
    DEFAULT_ALPHA,
    INCONCLUSIVE,
    Comparison,
    compare,
    geometric_mean,
)

Key = tuple[str, str, str, str, bool]


@dataclass(frozen=True)
class MemoryChange:
    """One memory measure (``what``) compared across workers, larger is worse."""

    what: str  # "peak RSS" or "device peak"
    baseline_bytes: float
    candidate_bytes: float
    result: Comparison


@dataclass(frozen=True)
class ComparisonRow:
    label: str
    baseline_median: float | None
    candidate_median: float | None
    result: Comparison | None
    note: str = ""  # why there is no result, or why the result is not judged
    broken: str = ""  # ok in the baseline, not in the candidate (or absent): what happened
    memory: tuple[MemoryChange, ...] = ()

    def regression_above(self, percent: float) -> bool:
        return self.result is not None and not self.note and self.result.fails_gate(percent)

    def memory_above(self, percent: float) -> list[MemoryChange]:
        return [change for change in self.memory if change.result.fails_gate(percent)]


def _workers(cells: Iterable[Cell]) -> dict[Key, list[Cell]]:
    groups: dict[Key, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.key(), []).append(cell)
    return groups


def _ok(cell: Cell) -> bool:
    return cell.status == "ok" and bool(cell.steady.samples_s)


def _broken(base: list[Cell], cand: list[Cell]) -> str:
    """What went wrong in the candidate when every baseline worker was fine ('' otherwise)."""
    if not all(_ok(c) for c in base):
        return ""
    failed = [c for c in cand if not _ok(c)]
    if not failed:
        return ""
    first = failed[0]
    lines = first.reason.strip().splitlines()
    # A traceback's last line names the exception; other reasons lead with their point.
    line = lines[-1] if lines and lines[0].startswith("Traceback") else lines[0] if lines else ""
    reason = f": {line}" if line else ""
    return f"ok in the baseline, {first.status} in the candidate{reason}"


def _row(
    label: str,
    base: list[Cell],
    cand: list[Cell],
    threshold: float,
    *,
    within_process: bool,
    run_drift: float,
    alpha: float = DEFAULT_ALPHA,
) -> ComparisonRow:
    failed = [c for c in base + cand if not _ok(c)]
    if failed:
        statuses = ", ".join(sorted({f"{c.stack} {c.status}" for c in failed}))
        note = f"not comparable: {statuses}"
        return ComparisonRow(label, None, None, None, note, _broken(base, cand))
    result = compare(
        [c.steady.samples_s for c in base],
        [c.steady.samples_s for c in cand],
        threshold=threshold,
        within_process=within_process,
        run_drift=run_drift,
        alpha=alpha,
    )
    base_median = _pooled_median(base)
    mixed = mixed_machines(base + cand)
    if mixed:
        result = dataclasses.replace(result, verdict=INCONCLUSIVE, reason=mixed)
    memory = () if mixed else _memory(base, cand, threshold)
    return ComparisonRow(label, base_median, base_median * result.ratio, result, mixed, "", memory)


def _peak_rss(cell: Cell) -> int | None:
    return cell.memory.peak_tree_rss_bytes or cell.memory.peak_rss_bytes


def _device_peak(cell: Cell) -> int | None:
    return cell.memory.device_peak_bytes


MEASURES: tuple[tuple[str, Callable[[Cell], int | None]], ...] = (
    ("peak RSS", _peak_rss),
    ("device peak", _device_peak),
)


def _memory(base: list[Cell], cand: list[Cell], threshold: float) -> tuple[MemoryChange, ...]:
    """Each memory measure every worker of both sides recorded, compared like times (the
    worker's one value as its only sample). No run-to-run drift is added: a peak is an amount
    of memory, which a neighbour's load or the clock does not move."""
    changes = []
    for what, read in MEASURES:
        values_b = [float(read(c) or 0) for c in base]
        values_c = [float(read(c) or 0) for c in cand]
        if not all(values_b) or not all(values_c):
            continue
        result = compare([[v] for v in values_b], [[v] for v in values_c], threshold=threshold)
        median_b = sorted(values_b)[len(values_b) // 2]
        changes.append(MemoryChange(what, median_b, median_b * result.ratio, result))
    return tuple(changes)


def _pooled_median(cells: list[Cell]) -> float:
    pooled = sorted(value for cell in cells for value in cell.steady.samples_s)
    middle = len(pooled) // 2
    return pooled[middle] if len(pooled) % 2 else (pooled[middle - 1] + pooled[middle]) / 2


def label(cell: Cell) -> str:
    params = ", ".join(f"{k}={v}" for k, v in cell.params.items())
    host = " →host" if cell.to_host else ""
    return f"{cell.workload}({params}) {cell.stack}{host} @ {cell.device}"


def compare_runs(
    baseline: Iterable[Cell],
    candidate: Iterable[Cell],
    threshold: float,
    within_process: bool = False,
    run_drift: float = 0.0,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> list[ComparisonRow]:
    """The cells both sides measured, baseline first (each side the cells of one or more
    runs, pooled by cell); cells on one side only are noted, and a baseline cell missing from
    the candidate is a broken candidate."""
    base, cand = _workers(baseline), _workers(candidate)
    rows = []
    for key, cells in base.items():
        if key in cand:
            rows.append(
                _row(
                    label(cells[0]), cells, cand[key], threshold,
                    within_process=within_process, run_drift=run_drift, alpha=alpha,
                )
            )  # fmt: skip
            continue
        lost = "absent from the candidate" if all(_ok(c) for c in cells) else ""
        rows.append(ComparisonRow(label(cells[0]), None, None, None, "only in the baseline", lost))
    rows.extend(
        ComparisonRow(label(cells[0]), None, None, None, "only in the candidate run")
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
                text = f"{label(other[0])} vs {baseline}"
                row = _row(text, base, other, threshold, within_process=within_process, run_drift=0)
                # Another stack failing where the baseline stack ran is a finding, not a
                # broken candidate.
                rows.append(dataclasses.replace(row, broken=""))
    return rows


def geometric_mean_ratio(rows: Iterable[ComparisonRow]) -> float | None:
    # Rows with a note are not judged (their cells ran on different machines).
    ratios = [row.result.ratio for row in rows if row.result is not None and not row.note]
    return geometric_mean(ratios) if ratios else None


@dataclass(frozen=True)
class Gate:
    """What fails a comparison (module docstring); None/False leave a rule out."""

    fail_above: float | None = None
    fail_memory_above: float | None = None
    allow_failures: bool = False

    @property
    def active(self) -> bool:
        return self.fail_above is not None or self.fail_memory_above is not None


def gate_failures(rows: Iterable[ComparisonRow], gate: Gate) -> list[str]:
    """One line per reason the gate fails; empty when it passes or no gate was asked for."""
    if not gate.active:
        return []
    lines = []
    for row in rows:
        if row.broken and not gate.allow_failures:
            lines.append(f"BROKEN: {row.label}: {row.broken}")
        if gate.fail_above is not None and row.regression_above(gate.fail_above):
            assert row.result is not None
            lines.append(
                f"REGRESSION above {gate.fail_above:g}%: {row.label}: {row.result.describe()}"
            )
        if gate.fail_memory_above is not None:
            lines.extend(
                f"MEMORY above {gate.fail_memory_above:g}%: {row.label}: {change.what} "
                f"{change.result.describe()}"
                for change in row.memory_above(gate.fail_memory_above)
            )
    return lines
