"""Sweeps and crossovers: the size at which one stack overtakes another (seed 002: "there are
sizes where NumPy beats JAX").

A sweep is a set of ok cells of one workload that differ in exactly one numeric parameter.
For each pair of stacks measured at two or more common values, the crossover is where the
ratio of their medians passes 1, interpolated linearly in log(value) and log(ratio) between
the two measured values that bracket it. When the 95 % intervals of the two medians overlap at
either bracketing value, the crossover is flagged uncertain: there, the measurements cannot
tell the stacks apart.

Rendering is ``report/crossover.py``'s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stackwars.results.schema import Cell

Point = tuple[float, float, float, float]  # value, median, ci low, ci high


@dataclass(frozen=True)
class Sweep:
    workload: str
    param: str
    fixed: tuple[tuple[str, object], ...]  # the other parameters, and device/host
    series: dict[str, dict[float, Cell]]  # stack -> value -> cell

    def title(self) -> str:
        fixed = ", ".join(f"{k}={v}" for k, v in self.fixed)
        return f"{self.workload}({fixed}) over {self.param}"


@dataclass(frozen=True)
class Crossover:
    sweep: Sweep
    below: str  # the faster stack below the crossover
    above: str  # the faster stack above it
    at: float
    between: tuple[float, float]
    uncertain: bool

    def describe(self) -> str:
        low, high = (value_text(v) for v in self.between)
        text = (
            f"{self.sweep.title()}: {self.above} is faster than {self.below} above "
            f"{self.sweep.param} ≈ {value_text(self.at)} (between {low} and {high})"
        )
        if self.uncertain:
            text += "; the 95% CIs overlap there, so the crossing is within the noise"
        return text


def value_text(value: float) -> str:
    """A swept parameter's value as titles and tables write it."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.3g}"


def _usable(cell: Cell) -> bool:
    return cell.status == "ok" and bool(cell.steady.median_s)


def find_sweeps(cells: Iterable[Cell]) -> list[Sweep]:
    """Every (workload, varying numeric parameter, fixed rest) with two or more values."""
    ok = [cell for cell in cells if _usable(cell)]
    sweeps: list[Sweep] = []
    for workload in dict.fromkeys(cell.workload for cell in ok):
        mine = [cell for cell in ok if cell.workload == workload]
        numeric = {
            k
            for cell in mine
            for k, v in cell.params.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        for param in sorted(numeric):
            sweeps.extend(_sweeps_along(workload, param, mine))
    return sweeps


def _sweeps_along(workload: str, param: str, cells: list[Cell]) -> list[Sweep]:
    groups: dict[tuple[tuple[str, object], ...], dict[str, dict[float, Cell]]] = {}
    for cell in cells:
        if param not in cell.params:
            continue
        fixed = tuple(sorted((k, v) for k, v in cell.params.items() if k != param))
        fixed += (("device", cell.device), ("to_host", cell.to_host))
        series = groups.setdefault(fixed, {}).setdefault(cell.stack, {})
        series[float(cell.params[param])] = cell
    return [
        Sweep(workload, param, fixed, series)
        for fixed, series in groups.items()
        if len({value for values in series.values() for value in values}) >= 2
    ]


def crossovers(sweep: Sweep) -> list[Crossover]:
    found = []
    for first, second in itertools.combinations(sorted(sweep.series), 2):
        found.extend(_pair_crossovers(sweep, first, second))
    return found


def _points(series: dict[float, Cell], values: Sequence[float]) -> list[Point]:
    points = []
    for value in values:
        steady = series[value].steady
        median = steady.median_s or 0.0
        low = steady.ci95_low_s if steady.ci95_low_s is not None else median
        high = steady.ci95_high_s if steady.ci95_high_s is not None else median
        points.append((value, median, low, high))
    return points


def _pair_crossovers(sweep: Sweep, first: str, second: str) -> list[Crossover]:
    common = sorted(set(sweep.series[first]) & set(sweep.series[second]))
    a = _points(sweep.series[first], common)
    b = _points(sweep.series[second], common)
    found = []
    for i in range(len(common) - 1):
        ratio_low = math.log(a[i][1] / b[i][1])
        ratio_high = math.log(a[i + 1][1] / b[i + 1][1])
        if ratio_low == 0 or ratio_low * ratio_high >= 0:
            continue
        fraction = ratio_low / (ratio_low - ratio_high)
        log_at = math.log(common[i]) + fraction * (math.log(common[i + 1]) - math.log(common[i]))
        # ratio_low > 0: the first stack is slower below the crossing, so faster above it.
        below, above = (second, first) if ratio_low > 0 else (first, second)
        uncertain = _overlap(a[i], b[i]) or _overlap(a[i + 1], b[i + 1])
        found.append(
            Crossover(sweep, below, above, math.exp(log_at), (common[i], common[i + 1]), uncertain)
        )
    return found


def _overlap(a: Point, b: Point) -> bool:
    return a[2] <= b[3] and b[2] <= a[3]
