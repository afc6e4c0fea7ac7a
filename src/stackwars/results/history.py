"""A cell's results over time, and the step changes between consecutive runs, as data
(rendering, and ``history --json``'s format: ``report/history.py``).

A step is a change between two consecutive results of the same cell (same workload,
parameters, stack, device) that the comparison statistics call a difference: significant and
above the practical threshold. Noise between runs is not a step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackwars.results.machines import machine_of
from stackwars.results.schema import Cell
from stackwars.timing.compare import (
    FASTER,
    FASTER_UNSURE,
    SLOWER,
    SLOWER_UNSURE,
    Comparison,
    compare,
)


@dataclass(frozen=True)
class Point:
    run_id: str
    started: str
    cell: Cell
    step: Comparison | None = None  # against the previous ok point, when it is a difference


def with_steps(points: Sequence[tuple[str, str, Cell]], threshold: float) -> list[Point]:
    """The points in order, each ok point compared with the previous ok one."""
    result: list[Point] = []
    previous: Cell | None = None
    for run_id, started, cell in points:
        step = None
        usable = cell.status == "ok" and bool(cell.steady.samples_s)
        if usable and previous is not None:
            # One worker per run and point: a step is within-process evidence, and says so.
            comparison = compare(
                [previous.steady.samples_s],
                [cell.steady.samples_s],
                threshold=threshold,
                within_process=True,
            )
            # A step: a significant change whose size passes the threshold.
            beyond = abs(comparison.ratio - 1) > threshold
            shown = comparison.verdict in (SLOWER, FASTER, SLOWER_UNSURE, FASTER_UNSURE)
            step = comparison if shown and beyond else None
        if usable:
            previous = cell
        result.append(Point(run_id, started, cell, step))
    return result


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
