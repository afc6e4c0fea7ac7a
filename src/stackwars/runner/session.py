"""The run loop: one worker per cell, each result stored the moment it ends.

Ctrl-C kills the current worker (isolate.py guarantees it), keeps every finished cell, and
marks the run ``interrupted`` before the interrupt goes on to the caller.
"""

from __future__ import annotations

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
        finally:
            caches.release(folder)
    cell.memory.predicted_bytes = item.predicted_bytes
    return cell
