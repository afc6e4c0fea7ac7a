"""Adaptive sampling (``--repeat auto``): workers added where the variance is, until each
question is answered or the time budget ends.

Kalibera & Jones ("Rigorous Benchmarking in Reasonable Time", ISMM 2013) spend repetitions
at the level where the variance is. Here the expensive level is the fresh worker (a process,
its imports and compiles); blocks within a worker are cheap and the timer already stops them
at its interval target. So a run starts with ``min_workers`` interleaved workers per cell,
then asks which cells still need an answer (``Wanting``: for claims, those whose interval
straddles the claimed bound and that more workers would likely decide, each look at
``Adaptive.alpha``, its share of the error budget; for a plain run, those
whose interval across workers is still wider than the target), and measures one more round of
only those cells, into the same run, until none is wanting, ``max_workers`` is reached, or the
next round would pass ``time_budget_s``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stackwars.errors import UsageError
from stackwars.results.aggregate import workers_disagree
from stackwars.results.run import Run
from stackwars.results.schema import Cell
from stackwars.runner import plan
from stackwars.runner.protocol import CellSpec
from stackwars.service import api
from stackwars.timing.compare import DEFAULT_ALPHA, MIN_WORKERS

AUTO = "auto"
# A plain run's target: the 95 % interval of the cell's time across workers within ±3 %
# (the interval of the mean log worker median; the blocks' own target is --target-ci's).
ACROSS_WORKERS_TARGET = 0.03

Wanting = Callable[[Run], list[CellSpec]]


@dataclass(frozen=True)
class Adaptive:
    min_workers: int = MIN_WORKERS
    max_workers: int = 10
    time_budget_s: float = 1200.0

    @property
    def looks(self) -> int:
        """The times a question may be asked: after the first workers and after each round."""
        return self.max_workers - self.min_workers + 1

    @property
    def alpha(self) -> float:
        """The level of each look's interval when a verdict stops the sampling (claims): the
        false-verdict budget shared over every look (Bonferroni), because stopping at the
        first decisive interval makes any look's error count (simulated before: 4.1 % and
        4.2 % where 2.5 % each was nominal)."""
        return DEFAULT_ALPHA / self.looks

    def __post_init__(self) -> None:
        if self.max_workers < self.min_workers:
            raise UsageError(
                f"--max-workers {self.max_workers} is below the {self.min_workers} workers a "
                f"verdict needs; give {self.min_workers} or more (10 by default)"
            )
        if self.time_budget_s <= 0:
            raise UsageError(
                f"--time-budget {self.time_budget_s:g} must be a positive number of seconds"
            )


def parse_repeat(text: str) -> int | None:
    """``--repeat N`` or ``--repeat auto`` (None)."""
    if text == AUTO:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--repeat {text!r}: give a number of workers or 'auto'") from None
    if value < 1:
        raise UsageError(f"--repeat {value} must be at least 1 (or 'auto')")
    return value


def extend(planned: api.PlannedRun, specs: Sequence[CellSpec], index: int) -> api.PlannedRun:
    """One more worker (repeat ``index``) of each of ``specs``, in the same run."""
    cells = [dataclasses.replace(spec, repeat=index) for spec in specs]
    record = planned.record
    record.planned.extend(dataclasses.asdict(cell) for cell in cells)
    record.status, record.finished = "running", None
    options = planned.options
    return api.PlannedRun(
        record, plan.plan(cells, options.memory_budget, options.force), options, []
    )


def grow(
    planned: api.PlannedRun,
    execute: Callable[[api.PlannedRun], Run],
    wanting: Wanting,
    *,
    settings: Adaptive,
    clock: Callable[[], float],
    on_round: Callable[[Sequence[str]], None] = lambda stacks: None,
) -> Run:
    """Measure ``planned`` (its cells at ``min_workers`` each) with ``execute`` (the caller's
    ``api.execute``: its store, reporter, executor), then add rounds (module docstring),
    telling ``on_round`` the stacks of each round's cells first (a progress bar's total); the
    run, with every worker."""
    start = clock()
    record = execute(planned)
    for index in range(settings.min_workers, settings.max_workers):
        specs = wanting(record)
        if not specs:
            break
        if clock() - start + round_estimate(record.cells, specs) > settings.time_budget_s:
            break
        more = extend(planned, specs, index)
        on_round([cell.spec.stack for cell in more.cells if not cell.skip_reason])
        record = execute(more)
    return record


# At --repeat 1, a second worker of the cheapest cells, within this many seconds: enough for
# most of the quick suite's cells (1-3 s a worker here, compiled torch cells 12 s), so that a
# default run shows the processes that land at different speeds (jax:jit SELU: 1.1 ms or
# 4.6 ms) without doubling its time.
SECOND_LOOK_S = 20.0


def second_look(
    record: Run,
    planned: api.PlannedRun,
    again: Callable[[api.PlannedRun], Sequence[Cell]],
    budget_s: float,
    on_round: Callable[[Sequence[str]], None] = lambda stacks: None,
) -> list[Cell]:
    """After a run of one worker a cell: a second worker of its ok cells, cheapest first by
    the first worker's wall time, as many as fit ``budget_s``, measured by ``again`` (not
    stored: a check, not a measurement of the run). Each cell checked keeps what the second
    worker saw in ``settings.second_look`` and, when the two workers disagree far beyond their
    own intervals, ``settings.workers_disagree`` (the tables' ≋); the cells annotated."""
    chosen, spent = [], 0.0
    for cell in sorted(_ok(record.cells), key=lambda cell: cell.wall_s or 0.0):
        if spent + (cell.wall_s or 0.0) > budget_s:
            break
        spent += cell.wall_s or 0.0
        chosen.append(cell)
    if not chosen:
        return []
    specs = [CellSpec(c.workload, c.params, c.stack, c.device, c.to_host, 1) for c in chosen]
    part = api.PlannedRun(
        record, plan.plan(specs, planned.options.memory_budget), planned.options, []
    )
    on_round([spec.stack for spec in specs])
    seconds = {cell.key(): cell for cell in again(part)}
    for first in chosen:
        _annotate(first, seconds.get(first.key()))
    return chosen


def _ok(cells: Sequence[Cell]) -> list[Cell]:
    return [cell for cell in cells if cell.status == "ok" and cell.steady.samples_s]


def _annotate(first: Cell, second: Cell | None) -> None:
    if second is None or second.status != "ok" or not second.steady.samples_s:
        status = "missing" if second is None else second.status
        first.settings["second_look"] = {"status": status, "reason": second and second.reason}
        return
    first.settings["second_look"] = {
        "status": "ok",
        "median_s": statistics.median(second.steady.samples_s),
        "blocks": second.steady.blocks,
        "wall_s": second.wall_s,
    }
    why = workers_disagree([first.steady.samples_s, second.steady.samples_s])
    if why:
        first.settings["workers_disagree"] = f"{why} (a second worker: --second-look)"


def round_estimate(cells: Sequence[Cell], specs: Sequence[CellSpec]) -> float:
    """Seconds one more worker of each spec would take, at the mean wall time so far."""
    walls: dict[tuple[str, str, str, str, bool], list[float]] = {}
    for cell in cells:
        walls.setdefault(cell.key(), []).append(cell.wall_s or 0.0)
    return sum(statistics.mean(walls.get(spec.key(), [0.0])) for spec in specs)


def wide_cells(target: float = ACROSS_WORKERS_TARGET) -> Wanting:
    """A plain run's question: which ok cells' interval across workers is still wider than
    ``target`` (relative half-width of the 95 % interval of the mean log worker median)."""

    def wanting(record: Run) -> list[CellSpec]:
        groups: dict[tuple[str, str, str, str, bool], list[Cell]] = {}
        for cell in record.cells:
            groups.setdefault(cell.key(), []).append(cell)
        return [
            CellSpec(c[0].workload, c[0].params, c[0].stack, c[0].device, c[0].to_host)
            for c in groups.values()
            if across_workers_half_width(c) > target
        ]

    return wanting


def across_workers_half_width(cells: Sequence[Cell]) -> float:
    """Relative half-width of the 95 % t interval of the mean log worker median (0 when a
    cell failed: more workers of a failed cell answer nothing)."""
    from scipy.stats import t as student

    if any(cell.status != "ok" or not cell.steady.samples_s for cell in cells) or len(cells) < 2:
        return 0.0
    logs = [math.log(statistics.median(cell.steady.samples_s)) for cell in cells]
    half = float(student.ppf(0.975, len(logs) - 1)) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.expm1(half)
