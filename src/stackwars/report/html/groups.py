"""The per-workload part of the report's data: each group's stacks with their steady time
and interval, speed-up against the baseline, first-run phases, memory and warm-up; and the
sweeps across sizes with their crossovers. Pure, like ``data.py``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stackwars.report.table import Table, build_tables, stack_label
from stackwars.results.compile import Estimate
from stackwars.results.crossover import Sweep, crossovers
from stackwars.results.peak import Peak
from stackwars.results.schema import Cell, CellKey


@dataclass(frozen=True)
class StackCell:
    """One stack's numbers within a group, ready to draw."""

    stack: str
    status: str
    steady: Estimate | None  # the median and its 95 % interval
    speed_up: Estimate | None  # the baseline's median ÷ this one's
    first_run_s: float | None
    phases: tuple[tuple[str, float], ...]  # the first run's phases, in order
    memory: tuple[tuple[str, float | None], ...]  # what, bytes
    warmup_s: tuple[float, ...]
    runs_to_steady: int | None
    cell: Cell  # for the signals the explain section reads


@dataclass(frozen=True)
class Group:
    """One workload with one set of parameters on one device, in one run."""

    anchor: str
    title: str
    baseline: str | None
    table: Table
    stacks: tuple[StackCell, ...]


@dataclass(frozen=True)
class SweepLine:
    stack: str
    points: tuple[tuple[float, float, float, float], ...]  # value, median, low, high
    speed_up: tuple[tuple[float, float, float, float], ...]  # value, ratio, low, high


@dataclass(frozen=True)
class CrossoverMark:
    at: float
    label: str
    uncertain: bool
    text: str


@dataclass(frozen=True)
class SweepView:
    anchor: str
    title: str
    param: str
    baseline: str
    lines: tuple[SweepLine, ...]
    crossovers: tuple[CrossoverMark, ...]


def build_groups(
    cells: Sequence[Cell],
    baseline: str | None,
    peak: Peak | None,
    suffix: str,
    start: int = 0,
) -> list[Group]:
    """One group per (workload, parameters, device), anchors numbered from ``start``; the
    baseline stack first when given (the table's speed-up column is against its first row
    that has a median)."""
    keyed: dict[tuple[str, str, str], dict[CellKey, Cell]] = {}
    for cell in cells:
        workload, params, _stack, device, _to_host = key = cell.key()
        keyed.setdefault((workload, params, device), {})[key] = cell
    groups = []
    for members in keyed.values():
        ordered = sorted(members.values(), key=lambda cell: cell.stack != baseline)
        table = build_tables(ordered, peak)[0]
        base = next((cell for cell in ordered if usable(cell)), None)
        groups.append(
            Group(
                anchor=f"group-{start + len(groups)}",
                title=table.title + suffix,
                baseline=None if base is None else stack_label(base),
                table=table,
                stacks=tuple(stack_cell(cell, base) for cell in ordered),
            )
        )
    return groups


def usable(cell: Cell) -> bool:
    return cell.status == "ok" and bool(cell.steady.median_s) and cell.steady.median_s > 0


def steady_estimate(cell: Cell) -> Estimate | None:
    if not usable(cell):
        return None
    steady = cell.steady
    median = steady.median_s
    low = steady.ci95_low_s if steady.ci95_low_s is not None else median
    high = steady.ci95_high_s if steady.ci95_high_s is not None else median
    return Estimate(median, low, high)


def ratio(base: Estimate | None, other: Estimate | None) -> Estimate | None:
    """``base ÷ other`` with the interval the two 95 % intervals allow (conservative: their
    extremes against each other)."""
    if base is None or other is None or not other.value or not other.low:
        return None
    b_value, b_low, b_high = base.value or 0.0, base.low or 0.0, base.high or 0.0
    return Estimate(b_value / other.value, b_low / (other.high or other.value), b_high / other.low)


def stack_cell(cell: Cell, baseline: Cell | None) -> StackCell:
    steady = steady_estimate(cell)
    base = None if baseline is None else steady_estimate(baseline)
    memory = cell.memory
    return StackCell(
        stack=stack_label(cell),
        status=cell.status,
        steady=steady,
        speed_up=ratio(base, steady),
        first_run_s=cell.times.first_run_s,
        phases=phases(cell),
        memory=(
            ("after import", memory.rss_after_import_bytes),
            # The worker's own peak, as the table shows it (the tree's is polled, and misses
            # short peaks).
            ("measured peak", memory.peak_rss_bytes or memory.peak_tree_rss_bytes),
            ("predicted", memory.predicted_bytes),
            ("device peak", memory.device_peak_bytes),
            ("device reserved", memory.device_reserved_bytes),
        ),
        warmup_s=tuple(cell.warmup_s),
        runs_to_steady=cell.runs_to_steady,
        cell=cell,
    )


def phases(cell: Cell) -> tuple[tuple[str, float], ...]:
    """The first run's phases (nested ones such as ``of_compile.*`` left out), plus what
    they do not account for; the whole first run when the stack does not split it."""
    first = cell.times.first_run_s
    found = [
        (name.removesuffix("_s").replace("_and_", "+"), seconds)
        for name, seconds in cell.first_run_breakdown.items()
        if not name.startswith("of_")
    ]
    if first is None:
        return tuple(found)
    if not found:
        return (("first run (not split)", first),)
    rest = first - sum(seconds for _, seconds in found)
    # Below 1 % the remainder is the timer's own resolution, not a phase.
    if rest > 0.01 * first:
        found.append(("other", rest))
    return tuple(found)


def sweep_view(sweep: Sweep, baseline: str | None, anchor: str, suffix: str) -> SweepView:
    stacks = list(sweep.series)
    base = baseline if baseline in sweep.series else stacks[0]
    base_points = {v: steady_estimate(c) for v, c in sweep.series[base].items()}
    lines = []
    for stack, series in sweep.series.items():
        points, ups = [], []
        for value in sorted(series):
            estimate = steady_estimate(series[value])
            if estimate is None:
                continue
            points.append((value, estimate.value or 0.0, estimate.low or 0.0, estimate.high or 0.0))
            up = ratio(base_points.get(value), estimate)
            if up is not None:
                ups.append((value, up.value or 0.0, up.low or 0.0, up.high or 0.0))
        lines.append(SweepLine(stack, tuple(points), tuple(ups)))
    marks = tuple(
        CrossoverMark(
            found.at, f"{found.above} overtakes {found.below}", found.uncertain, found.describe()
        )
        for found in crossovers(sweep)
    )
    return SweepView(anchor, sweep.title() + suffix, sweep.param, base, tuple(lines), marks)
