"""The run loop: one worker per cell, each result stored the moment it ends.

An executor (runner/executors.py) runs the cells and hands back each result as it ends; this
loop is the one place that crosschecks, stores and reports them. Ctrl-C stops the executor
(the current worker is killed, outstanding Ray tasks cancelled), keeps every finished cell,
and marks the run ``interrupted`` before the interrupt goes on to the caller.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Protocol

from stackwars.config import RunOptions
from stackwars.frameworks.base import RunSettings
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell
from stackwars.runner.crosscheck import crosscheck
from stackwars.runner.plan import PlannedCell
from stackwars.runner.protocol import CellSpec, Request

Sink = Callable[[Run, Cell], None]


class Reporter(Protocol):
    def start_cell(self, label: str) -> None: ...

    def phase(self, text: str) -> None:
        """What the running cell's worker reports it is doing."""
        ...

    def end_cell(self, cell: Cell) -> None: ...


def wants_x64(spec: CellSpec, mode: str) -> bool:
    """64-bit JAX when asked, or (auto) when the cell's inputs are 64-bit."""
    if mode != "auto":
        return mode == "on"
    return str(spec.params.get("dtype", "")).endswith("64")


class CacheFolders:
    """Compile-cache folders: fresh per cell (cold, pristine) or one shared folder (warm)."""

    def __init__(self, mode: str, root: Path | None) -> None:
        self.mode = mode
        self.root = root or Path(tempfile.mkdtemp(prefix="stackwars-cache-"))
        self._owns_root = root is None

    def for_cell(self, index: int) -> Path:
        folder = self.root / ("shared" if self.mode == "warm" else f"cell-{index}")
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def release(self, folder: Path) -> None:
        if self.mode != "warm":
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)


def request_for(spec: CellSpec, options: RunOptions, cache_dir: Path) -> Request:
    settings = RunSettings(
        device=spec.device,
        threads=options.threads,
        cache=options.cache,
        cache_dir=str(cache_dir),
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
    )


class Executor(Protocol):
    """Where cells run: runner/executors.py's local executor (one worker at a time, here) or
    runner/ray_executor.py's (Ray tasks, each starting the same worker on a cluster node)."""

    def cells(
        self, planned: Sequence[PlannedCell], options: RunOptions, reporter: Reporter
    ) -> Generator[Cell, None, None]:
        """Each planned cell's result as it ends, in any order; closing the generator stops
        what still runs (Ctrl-C)."""
        ...

    def close(self) -> None:
        """Release what the executor holds (a Ray connection)."""
        ...


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
    results = executor.cells(planned, options, reporter)
    try:
        for cell in results:
            crosscheck(cell, run.cells)
            run.cells.append(cell)
            for sink in sinks:
                sink(run, cell)
            reporter.end_cell(cell)
        run.status = "complete"
    except KeyboardInterrupt:
        run.status = "interrupted"
        raise
    finally:
        results.close()  # an interrupted executor kills its workers or cancels its tasks
        run.finished = now()
        _in_plan_order(run)
    return run


def _in_plan_order(run: Run) -> None:
    position = {
        (CellSpec(**spec).key(), spec.get("repeat", 0)): index
        for index, spec in enumerate(run.planned)
    }
    run.cells.sort(key=lambda cell: position.get((cell.key(), cell.repeat), len(position)))
