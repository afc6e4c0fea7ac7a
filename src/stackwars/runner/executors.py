"""Where a run's cells execute: the executors session.py's run loop draws results from.

``local`` (the default) runs one cell at a time in a fresh worker on this machine. ``ray``
(runner/ray_executor.py, imported only when asked for: Ray is an optional extra) runs each cell
as a Ray task that starts the very same worker on the node the task lands on. Both measure a
cell with :func:`measure_cell` (the worker, its timeout and memory budget, the compile-cache
folder, the warm start), so a cell means the same thing wherever it ran, and both record in
each cell the machine it ran on (``Cell.node``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any

from stackwars.config import EXECUTORS, RunOptions, choose
from stackwars.errors import UsageError
from stackwars.results.metadata import node_info
from stackwars.results.schema import Cell
from stackwars.runner.isolate import failed_cell, run_in_worker
from stackwars.runner.plan import PlannedCell
from stackwars.runner.protocol import Request
from stackwars.runner.session import CacheFolders, Executor, Reporter, request_for

RAY_INSTALL = "pip install 'stackwars[ray]'"

# The warm worker only needs its first run: a few blocks of steady state keep parity and the
# protocol intact at a small fraction of a cell's cost.
WARM_START_TIMING = {
    "steady_budget_s": 0.05,
    "min_steady_s": 0.01,
    "min_blocks": 3,
    "warmup_budget_s": 0.05,
    "latency_budget_s": 0.0,
}


class RayMissingError(UsageError):
    """--executor ray without Ray installed."""


def open_executor(name: str, address: str | None, options: RunOptions) -> Executor:
    """The executor called ``name``, ready to run cells with ``options``: for ``ray``, connected
    to the cluster at ``address`` (None: a Ray instance of its own on this machine)."""
    choose("executor", name, EXECUTORS)
    if name == "local":
        if address is not None:
            raise UsageError(
                "--ray-address is where --executor ray sends cells; add --executor ray, or "
                "drop --ray-address to run here"
            )
        return LocalExecutor()
    if address is None and "ray" not in sys.modules:
        # A Ray instance of stackwars' own serves this machine only: it listens on loopback
        # (Ray reads this variable when imported) and reports no usage statistics.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        from stackwars.runner import ray_executor
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise
        raise RayMissingError(
            f"--executor ray needs Ray, which is not installed here: {RAY_INSTALL}"
        ) from None
    return ray_executor.RayExecutor.connect(address, options)


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
            request = request_for(item.spec, options, folder)
            cell = run_in_worker(
                request, options.timeout_s, options.memory_budget, on_progress=on_progress
            )
            if options.cache == "cold-then-warm" and cell.status == "ok":
                if on_progress is not None:
                    on_progress("first run again, with the compile cache it filled")
                _measure_warm_start(cell, request, options)
        finally:
            caches.release(folder)
    cell.memory.predicted_bytes = item.predicted_bytes
    cell.memory.predicted_device_bytes = item.predicted_device_bytes
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


def ran_on(executor: str, item: PlannedCell, node: dict[str, Any]) -> dict[str, Any]:
    """A cell's ``node``: the executor, and the machine, unless the cell ran nowhere."""
    return {"executor": executor} if item.skip_reason else {"executor": executor, **node}


class LocalExecutor:
    """Today's way: the cells one after another, each in a fresh worker on this machine."""

    def cells(
        self, planned: Sequence[PlannedCell], options: RunOptions, reporter: Reporter
    ) -> Generator[Cell, None, None]:
        node = node_info()
        caches = CacheFolders(options.cache, options.cache_root)
        try:
            for index, item in enumerate(planned):
                reporter.start_cell(item.spec.label())
                cell = measure_cell(item, options, caches, index, reporter.phase)
                cell.node = ran_on("local", item, node)
                yield cell
        finally:
            caches.close()

    def close(self) -> None:
        """Nothing to release: each worker ended with its cell."""
