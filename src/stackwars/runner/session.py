"""The run loop: every batch's tasks (a run's cells, behave's probes) drawn from an executor,
each result kept the moment it ends.

An executor (runner/executors.py, runner/ray_executor.py) runs the tasks (runner/tasks.py) and
hands back each result as it ends; :func:`drain` is the one loop that takes them, and
:func:`execute` the one place that crosschecks, stores and reports a run's cells. Ctrl-C stops
the executor (its workers are killed or left to die with this process, outstanding Ray tasks
cancelled), keeps every finished result, and marks the run ``interrupted`` before the
interrupt goes on to the caller. A cell's task (:class:`CellTask`) measures it with
:func:`measure_cell` wherever it runs, so a cell means the same thing on every executor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any, Protocol, TypeVar

from stackwars.config import PER_STACK, RunOptions
from stackwars.frameworks.base import RunSettings
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, CellSpec
from stackwars.runner.child import Limits
from stackwars.runner.crosscheck import crosscheck
from stackwars.runner.isolate import failed_cell, run_in_shared_worker, run_in_worker
from stackwars.runner.plan import PlannedCell, shared_worker_key
from stackwars.runner.protocol import Request
from stackwars.runner.tasks import (
    CacheFolders,
    Caches,
    Executor,
    ExecutorLostError,
    Placement,
    Task,
    TaskReporter,
    Where,
)
from stackwars.runner.toolchain import MachineChecksFailed

__all__ = ["Executor"]  # re-exported: callers above the runner name it from here

R = TypeVar("R")

# The warm worker only needs its first run: a few blocks of steady state keep parity and the
# protocol intact at a small fraction of a cell's cost.
WARM_START_TIMING = {
    "steady_budget_s": 0.05,
    "min_steady_s": 0.01,
    "min_blocks": 3,
    "warmup_budget_s": 0.05,
    "latency_budget_s": 0.0,
}

Sink = Callable[[Run, Cell], None]


class Reporter(Protocol):
    def start_cell(self, label: str) -> None: ...

    def phase(self, text: str) -> None:
        """What the running cell's worker reports it is doing."""
        ...

    def end_cell(self, cell: Cell) -> None: ...


def wants_x64(spec: CellSpec, mode: str) -> bool:
    """64-bit JAX when asked, or (auto) when the cell's dtype parameter is 64-bit."""
    if mode != "auto":
        return mode == "on"
    return str(spec.params.get("dtype", "")).endswith("64")


def x64_from_inputs(spec: CellSpec, mode: str) -> bool:
    """Whether the worker decides 64-bit JAX from the inputs it makes: --x64 auto, and no
    dtype parameter says what precision the cell means (the parent makes no arrays)."""
    return mode == "auto" and "dtype" not in spec.params


def request_for(
    spec: CellSpec, options: RunOptions, cache_dir: Path, machine_checks: str = ""
) -> Request:
    settings = RunSettings(
        device=spec.device,
        threads=options.threads,
        cache=options.cache,
        cache_dir=str(cache_dir),
        machine_checks=machine_checks,
        x64=wants_x64(spec, options.x64),
        preallocate=options.preallocate,
        memory_fraction=options.memory_fraction,
        allocator_conf=options.allocator_conf,
        matmul_precision=options.matmul_precision,
        inputs=options.inputs,
    )
    return Request(
        cell=spec,
        settings=settings,
        timing=options.timing,
        seed=options.seed,
        workload_files=list(options.workload_files),
        x64_from_inputs=x64_from_inputs(spec, options.x64),
        rtol=options.rtol,
        atol=options.atol,
    )


def drain(
    executor: Executor,
    tasks: Sequence[Task[R]],
    *,
    caches: Caches,
    reporter: TaskReporter,
    keep: Callable[[R], None],
    run: Run | None = None,
) -> None:
    """The run loop: every task on ``executor``, each result handed to ``keep`` as it ends;
    ``run`` (if any) ends ``complete``, or ``interrupted`` when Ctrl-C stops it or the executor
    loses what runs its tasks (ExecutorLostError: a Ray cluster's head)."""
    results = executor.results(tasks, caches, reporter)
    try:
        for result in results:
            keep(result)
        if run is not None:
            run.status = "complete"
    except (KeyboardInterrupt, ExecutorLostError):
        if run is not None:
            run.status = "interrupted"
        raise
    finally:
        results.close()  # an interrupted executor stops its workers or cancels its tasks
        if run is not None:
            run.finished = now()


def execute(
    planned: Sequence[PlannedCell],
    options: RunOptions,
    run: Run,
    sinks: Sequence[Sink],
    reporter: Reporter,
    *,
    executor: Executor,
) -> Run:
    """Run every planned cell on ``executor``, feeding each result to every sink as it ends.
    This loop alone crosschecks, stores and reports; once the run ends its cells are put in
    plan order, whatever order an executor finished them in."""

    def keep(result: Cell | list[Cell]) -> None:
        for cell in result if isinstance(result, list) else [result]:
            crosscheck(cell, run.cells)
            run.cells.append(cell)
            for sink in sinks:
                sink(run, cell)
            reporter.end_cell(cell)

    tasks = cell_tasks(planned, options)
    try:
        caches = Caches(options.cache, options.cache_root)
        drain(executor, tasks, caches=caches, reporter=reporter, run=run, keep=keep)
    finally:
        _in_plan_order(run)
    return run


def cell_tasks(planned: Sequence[PlannedCell], options: RunOptions) -> list[CellTask | SharedTask]:
    """The run's tasks: a cell each, or with --workers per-stack, each run of consecutive
    cells to measure that can share a worker (plan.schedule put them together) as one."""
    tasks = [CellTask(item, options, index) for index, item in enumerate(planned)]
    if options.workers != PER_STACK:
        return list(tasks)

    def sharing(task: CellTask) -> tuple[Any, ...] | None:
        return None if task.item.skip_reason else _sharing(task, options)

    grouped: list[CellTask | SharedTask] = []
    for key, run in groupby(tasks, key=sharing):
        group = list(run)
        if key is None:  # cells not measured stand alone
            grouped.extend(group)
        else:
            grouped.append(_task_of(group))
    return grouped


def _sharing(task: CellTask, options: RunOptions) -> tuple[Any, ...]:
    """What the cells of one shared worker have in common: plan.shared_worker_key, and the
    64-bit setting the parent decides for them."""
    spec = task.item.spec
    return (*shared_worker_key(spec), wants_x64(spec, options.x64))


def _task_of(group: list[CellTask]) -> CellTask | SharedTask:
    return group[0] if len(group) == 1 else SharedTask(tuple(group))


@dataclass(frozen=True)
class CellTask:
    """A planned cell as a task: measured in a fresh worker wherever an executor runs it."""

    item: PlannedCell
    options: RunOptions
    index: int  # its place in the plan, naming its compile-cache folder

    def label(self) -> str:
        return self.item.spec.label()

    def placement(self) -> Placement | None:
        if self.item.skip_reason:
            return None
        return Placement(self.item.spec.device, self.item.predicted_bytes, force=self.options.force)

    def run(self, where: Where) -> Cell:
        cell = measure_cell(self.item, self.options, where.caches, self.index, where.on_progress)
        # A cell that ran nowhere names only the executor.
        skipped = {"executor": where.node.get("executor")}
        cell.node = skipped if self.item.skip_reason else dict(where.node)
        return cell

    def not_run(self, status: str, reason: str, node: dict[str, Any]) -> Cell:
        item = self.item
        if item.skip_reason:
            status, reason = item.skip_status, item.skip_reason
        cell = failed_cell(request_for(item.spec, self.options, Path()), status, reason)
        cell.memory.predicted_bytes = item.predicted_bytes
        cell.memory.predicted_device_bytes = item.predicted_device_bytes
        cell.node = dict(node)
        return cell


@dataclass(frozen=True)
class SharedTask:
    """Consecutive cells of one stack as a task (--workers per-stack): measured one after
    another in one shared worker wherever an executor runs it, its compile cache the first
    cell's folder."""

    cells: tuple[CellTask, ...]

    def label(self) -> str:
        first = self.cells[0].item.spec
        return f"{first.stack} @ {first.device}: {len(self.cells)} cells in one worker"

    def placement(self) -> Placement:
        first = self.cells[0]
        predicted = [task.item.predicted_bytes for task in self.cells]
        # The worker holds one cell at a time: its need is the largest cell's.
        need = None if None in predicted else max(p for p in predicted if p is not None)
        return Placement(first.item.spec.device, need, force=first.options.force)

    def run(self, where: Where) -> list[Cell]:
        first = self.cells[0]
        options, caches = first.options, where.caches
        folder = caches.for_cell(first.index)
        try:
            cells = _measured_together(self.cells, options, caches, folder, where.on_progress)
        finally:
            caches.release(folder)
        for task, cell in zip(self.cells, cells, strict=True):
            cell.memory.predicted_bytes = task.item.predicted_bytes
            cell.memory.predicted_device_bytes = task.item.predicted_device_bytes
            cell.node = dict(where.node)
        return cells

    def not_run(self, status: str, reason: str, node: dict[str, Any]) -> list[Cell]:
        return [task.not_run(status, reason, node) for task in self.cells]


def _measured_together(
    tasks: Sequence[CellTask],
    options: RunOptions,
    caches: CacheFolders,
    folder: Path,
    on_progress: Callable[[str], None] | None,
) -> list[Cell]:
    """The cells measured in one shared worker whose compile cache is ``folder``."""
    specs = [task.item.spec for task in tasks]
    try:
        limits = Limits(options.timeout_s, options.memory_budget)
        files = options.workload_files
        checked = caches.start_checked(specs[0].stack, folder, limits, on_progress, files)
    except MachineChecksFailed as exc:
        why = str(exc)
        return [failed_cell(request_for(spec, options, folder), "error", why) for spec in specs]
    requests = [request_for(spec, options, folder, checked) for spec in specs]
    return run_in_shared_worker(
        requests, options.timeout_s, options.memory_budget, on_progress=on_progress
    )


def measure_cell(
    item: PlannedCell,
    options: RunOptions,
    caches: CacheFolders,
    index: int,
    on_progress: Callable[[str], None] | None = None,
) -> Cell:
    """One planned cell's result: its skip status, or its measurement in a fresh worker (and,
    with --cache cold-then-warm, its first run again in a second worker)."""
    if item.skip_reason:
        request = request_for(item.spec, options, Path())
        cell = failed_cell(request, item.skip_status, item.skip_reason)
    else:
        folder = caches.for_cell(index)
        try:
            cell = _measured(item.spec, options, caches, folder, on_progress)
        finally:
            caches.release(folder)
    cell.memory.predicted_bytes = item.predicted_bytes
    cell.memory.predicted_device_bytes = item.predicted_device_bytes
    return cell


def _measured(
    spec: CellSpec,
    options: RunOptions,
    caches: CacheFolders,
    folder: Path,
    on_progress: Callable[[str], None] | None,
) -> Cell:
    """The cell measured in a fresh worker whose compile cache is ``folder``."""
    try:
        limits = Limits(options.timeout_s, options.memory_budget)
        files = options.workload_files
        checked = caches.start_checked(spec.stack, folder, limits, on_progress, files)
    except MachineChecksFailed as exc:
        return failed_cell(request_for(spec, options, folder), "error", str(exc))
    request = request_for(spec, options, folder, checked)
    cell = run_in_worker(request, options.timeout_s, options.memory_budget, on_progress=on_progress)
    if options.cache == "cold-then-warm" and cell.status == "ok":
        if on_progress is not None:
            on_progress("first run again, with the compile cache it filled")
        _measure_warm_start(cell, request, options)
    return cell


def _measure_warm_start(cell: Cell, request: Request, options: RunOptions) -> None:
    """The first run again in a fresh worker that finds the cache ``request``'s worker filled."""
    warm_request = dataclasses.replace(
        request, timing=dataclasses.replace(request.timing, **WARM_START_TIMING)
    )
    warm = run_in_worker(warm_request, options.timeout_s, options.memory_budget)
    start = cell.warm_start
    start.status, start.reason, start.wall_s = warm.status, warm.reason, warm.wall_s
    if warm.status == "ok":
        start.first_run_s = warm.times.first_run_s
        start.first_run_breakdown = warm.first_run_breakdown
        start.compiles_first_run = warm.compiles.first_run


def _in_plan_order(run: Run) -> None:
    position = {
        (CellSpec(**spec).key(), spec.get("repeat", 0)): index
        for index, spec in enumerate(run.planned)
    }
    run.cells.sort(key=lambda cell: position.get((cell.key(), cell.repeat), len(position)))
