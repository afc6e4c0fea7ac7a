"""The run loop: one worker per cell, each result stored the moment it ends.

Ctrl-C kills the current worker (isolate.py guarantees it), keeps every finished cell, and
marks the run ``interrupted`` before the interrupt goes on to the caller.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from stackwars.config import RunOptions
from stackwars.frameworks.base import RunSettings
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell
from stackwars.runner.crosscheck import crosscheck
from stackwars.runner.isolate import failed_cell, run_in_worker
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
    )
    return Request(
        cell=spec,
        settings=settings,
        timing=options.timing,
        seed=options.seed,
        workload_files=list(options.workload_files),
    )


def execute(
    planned: Sequence[PlannedCell],
    options: RunOptions,
    run: Run,
    sinks: Sequence[Sink],
    reporter: Reporter,
) -> Run:
    """Run every planned cell in order, feeding each result to every sink as it ends."""
    caches = CacheFolders(options.cache, options.cache_root)
    try:
        for index, item in enumerate(planned):
            reporter.start_cell(item.spec.label())
            cell = _run_one(item, options, caches, index, reporter)
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
        run.finished = now()
        caches.close()
    return run


def _run_one(
    item: PlannedCell, options: RunOptions, caches: CacheFolders, index: int, reporter: Reporter
) -> Cell:
    if item.skip_reason:
        request = request_for(item.spec, options, Path())
        cell = failed_cell(request, item.skip_status, item.skip_reason)
    else:
        folder = caches.for_cell(index)
        try:
            request = request_for(item.spec, options, folder)
            cell = run_in_worker(
                request, options.timeout_s, options.memory_budget, on_progress=reporter.phase
            )
            if options.cache == "cold-then-warm" and cell.status == "ok":
                reporter.phase("first run again, with the compile cache it filled")
                _measure_warm_start(cell, request, options)
        finally:
            caches.release(folder)
    cell.memory.predicted_bytes = item.predicted_bytes
    return cell


# The warm worker only needs its first run: a few blocks of steady state keep parity and the
# protocol intact at a small fraction of a cell's cost.
WARM_START_TIMING = {
    "steady_budget_s": 0.05,
    "min_steady_s": 0.01,
    "min_blocks": 3,
    "warmup_budget_s": 0.05,
    "latency_budget_s": 0.0,
}


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
