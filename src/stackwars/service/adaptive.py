"""Adaptive sampling (``--repeat auto``): workers added where the variance is, until each
question is answered or the time budget ends.

Kalibera & Jones ("Rigorous Benchmarking in Reasonable Time", ISMM 2013) spend repetitions
at the level where the variance is. Here the expensive level is the fresh worker (a process,
its imports and compiles); blocks within a worker are cheap and the timer already stops them
at its interval target. So a run starts with ``min_workers`` interleaved workers per cell,
then asks which cells still need more (``Wanting``), and measures one more round of only
those cells, into the same run, until none is wanting, ``max_workers`` is reached, or the
next round would pass ``time_budget_s``.

Two questions decide the rounds:

* a plain run (``pilot_then_grow``): how many workers each cell needs for its interval across
  workers to be within ±3 %, planned once from a pilot of ``min_workers`` workers that the run
  does not report. Stopping on the run's own spread instead (the rule before) stopped where
  its workers happened to agree and kept 0.78-0.91 of the true variance for spreads near the
  target (benchmarks/power/repeat_auto_bias.py); workers counted by a pilot they are not part
  of keep an unbiased spread, at the cost of ``min_workers`` more workers a cell.
* a claim (instruments/claims): whose interval straddles the claimed bound and would likely
  be decided by more workers, each look at ``Adaptive.alpha``, its share of the error budget.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stackwars.errors import UsageError
from stackwars.results.aggregate import workers_by_cell, workers_disagree
from stackwars.results.run import Run
from stackwars.results.schema import Cell, CellKey, CellSpec
from stackwars.runner import plan
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
    return api.PlannedRun(record, plan.plan_for(cells, options), options, [])


def grow(
    planned: api.PlannedRun,
    execute: Callable[[api.PlannedRun], Run],
    wanting: Wanting,
    *,
    settings: Adaptive,
    clock: Callable[[], float],
    on_round: Callable[[Sequence[str]], None] = lambda stacks: None,
    start: float | None = None,
) -> Run:
    """Measure ``planned`` (its cells at ``min_workers`` each) with ``execute`` (the caller's
    ``api.execute``: its store, reporter, executor), then add rounds (module docstring),
    telling ``on_round`` the stacks of each round's cells first (a progress bar's total); the
    run, with every worker. The time budget counts from ``start`` (now by default)."""
    start = clock() if start is None else start
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
    specs = [cell.spec(repeat=1) for cell in chosen]
    part = api.PlannedRun(record, plan.plan_for(specs, planned.options), planned.options, [])
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
    walls: dict[CellKey, list[float]] = {}
    for cell in cells:
        walls.setdefault(cell.key(), []).append(cell.wall_s or 0.0)
    return sum(statistics.mean(walls.get(spec.key(), [0.0])) for spec in specs)


def pilot_then_grow(
    planned: api.PlannedRun,
    execute: Callable[[api.PlannedRun], Run],
    again: Callable[[api.PlannedRun], Sequence[Cell]],
    *,
    settings: Adaptive,
    clock: Callable[[], float],
    on_round: Callable[[Sequence[str]], None] = lambda stacks: None,
    target: float = ACROSS_WORKERS_TARGET,
) -> tuple[Run, list[Cell]]:
    """A plain ``run --repeat auto`` (module docstring): the pilot, ``planned``'s cells
    measured by ``again`` (not stored), plans each cell's workers (``workers_for``); ``grow``
    then measures that many, none of them the pilot's. The run, and its first workers, each
    annotated with its pilot (``settings.pilot``: to be stored again)."""
    start = clock()
    on_round([cell.spec.stack for cell in planned.cells if not cell.skip_reason])
    pilots = workers_by_cell(again(planned))
    needs = {key: workers_for(cells, settings, target) for key, cells in pilots.items()}
    record = grow(
        planned, execute, planned_workers(needs), settings=settings, clock=clock,
        on_round=on_round, start=start,
    )  # fmt: skip
    annotated = [cell for cell in record.cells if cell.repeat == 0 and cell.key() in pilots]
    for cell in annotated:
        cell.settings["pilot"] = {
            "workers": len(pilots[cell.key()]),
            "medians_s": [_median(pilot) for pilot in pilots[cell.key()]],
            "planned_workers": needs[cell.key()],
        }
    return record, annotated


def workers_for(pilot: Sequence[Cell], settings: Adaptive, target: float) -> int:
    """The fewest workers (``min_workers`` to ``max_workers``) whose 95 % t interval of the
    mean log worker median is within ±``target`` at the pilot's spread; ``min_workers`` where
    a pilot worker failed (more workers of a failed cell answer nothing)."""
    from scipy.stats import t as student

    medians = [_median(cell) for cell in pilot]
    if len(medians) < 2 or not all(medians):
        return settings.min_workers
    spread = statistics.stdev(math.log(median) for median in medians)
    for count in range(settings.min_workers, settings.max_workers + 1):
        half = float(student.ppf(0.975, count - 1)) * spread / math.sqrt(count)
        if half <= math.log1p(target):
            return count
    return settings.max_workers


def planned_workers(needs: dict[CellKey, int]) -> Wanting:
    """The cells with fewer workers in the run than ``needs`` plans for them."""

    def wanting(record: Run) -> list[CellSpec]:
        measured = workers_by_cell(record.cells)
        return [
            cells[0].spec(repeat=0)
            for key, cells in measured.items()
            if len(cells) < needs.get(key, 0)
        ]

    return wanting


def _median(cell: Cell) -> float:
    """The worker's median, 0.0 when it measured nothing."""
    if cell.status != "ok" or not cell.steady.samples_s:
        return 0.0
    return statistics.median(cell.steady.samples_s)
