"""A cell's results over time, and the step changes between consecutive runs, as data
(rendering, and ``history --json``'s format: ``report/history.py``).

A point is one run's result of the cell (same workload, parameters, stack, device): its
workers merged (``--repeat``). A step is a change between two consecutive points that the
gate's statistics (``timing/compare.py``: workers as the unit, the run-to-run drift added, as
for separate runs) call a difference: significant and above the practical threshold. A run
with fewer than ``MIN_WORKERS`` workers cannot show one: one process's blocks say how
precisely that process was measured, not whether the code changed (the project's own A/A
runs showed +68.5 % that way), so such a point says why it has no verdict instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackwars.results.aggregate import merge_repeats
from stackwars.results.machines import machine_of
from stackwars.results.schema import Cell
from stackwars.timing.compare import (
    DEFAULT_RUN_DRIFT,
    FASTER,
    FASTER_UNSURE,
    SLOWER,
    SLOWER_UNSURE,
    Comparison,
    compare,
)
from stackwars.timing.sample_size import MIN_WORKERS

TOO_FEW_WORKERS = (
    "fewer than {workers} workers in this run or the one before: one process per run cannot "
    "tell a step from the variation between processes; run with --repeat {workers}"
)


@dataclass(frozen=True)
class Point:
    run_id: str
    started: str
    cell: Cell  # the run's workers of this cell, merged
    step: Comparison | None = None  # against the previous ok point, when it is a difference
    workers: int = 1  # ok workers with samples
    no_verdict: str = ""  # why this point could not be compared with the previous one


def with_steps(
    rows: Sequence[tuple[str, str, Cell]],
    threshold: float,
    run_drift: float = DEFAULT_RUN_DRIFT,
) -> list[Point]:
    """One point per run, in order, each compared with the previous point that has ok
    workers (see the module docstring)."""
    result: list[Point] = []
    previous: list[Cell] = []
    for run_id, started, workers in _by_run(rows):
        usable = [cell for cell in workers if cell.status == "ok" and cell.steady.samples_s]
        step, why = None, ""
        if usable and previous:
            step, why = _step(previous, usable, threshold, run_drift)
        if usable:
            previous = usable
        shown = merge_repeats(usable)[0] if usable else workers[0]
        result.append(Point(run_id, started, shown, step, len(usable), why))
    return result


def _by_run(rows: Sequence[tuple[str, str, Cell]]) -> list[tuple[str, str, list[Cell]]]:
    """The rows grouped by run, in first-seen order: a run's workers of the cell together."""
    runs: dict[str, tuple[str, list[Cell]]] = {}
    for run_id, started, cell in rows:
        runs.setdefault(run_id, (started, []))[1].append(cell)
    return [(run_id, started, cells) for run_id, (started, cells) in runs.items()]


def _step(
    before: list[Cell], after: list[Cell], threshold: float, run_drift: float
) -> tuple[Comparison | None, str]:
    """The comparison when it is a step (None otherwise), or why there can be no verdict."""
    if min(len(before), len(after)) < MIN_WORKERS:
        return None, TOO_FEW_WORKERS.format(workers=MIN_WORKERS)
    comparison = compare(
        [cell.steady.samples_s for cell in before],
        [cell.steady.samples_s for cell in after],
        threshold=threshold,
        run_drift=run_drift,
    )
    beyond = abs(comparison.ratio - 1) > threshold
    shown = comparison.verdict in (SLOWER, FASTER, SLOWER_UNSURE, FASTER_UNSURE)
    return (comparison if shown and beyond else None), ""


def series_by_params(
    rows: Sequence[tuple[str, str, Cell]], machines: Mapping[str, str] | None = None
) -> dict[str, list[tuple[str, str, Cell]]]:
    """Rows grouped by everything that identifies a cell except the run, and by machine when
    the rows come from more than one (``machines``: run id -> fingerprint): times of different
    machines are never one series. A cell that records its own machine (``Cell.node``: a run on
    a Ray cluster spans several) is placed by that."""
    machines = machines or {}

    def machine(row: tuple[str, str, Cell]) -> str:
        return machine_of(row[2]) or machines.get(row[0], "unknown (an older run)")

    several = len({machine(row) for row in rows}) > 1
    series: dict[str, list[tuple[str, str, Cell]]] = {}
    for row in rows:
        cell = row[2]
        params = ", ".join(f"{k}={v}" for k, v in sorted(cell.params.items()))
        host = " →host" if cell.to_host else ""
        title = f"{cell.workload}({params}) {cell.stack}{host} @ {cell.device}"
        if several:
            title += f" on machine {machine(row)}"
        series.setdefault(title, []).append(row)
    return series
