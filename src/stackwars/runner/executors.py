"""Where a batch's tasks execute: the executors session.py's run loop draws results from.

``local`` (the default) runs the tasks on this machine, each in fresh workers, ``jobs`` at a
time (one by default for a run: cells timed side by side share the cores and disturb each
other). ``ray`` (runner/ray_executor.py, imported only when asked for: Ray is an optional
extra) runs each task as a Ray task that starts the very same workers on the node it lands on.
A task measures itself (runner/tasks.py; a cell with ``session.measure_cell``), so a result
means the same thing wherever it ran, and both record in each cell the machine it ran on
(``Cell.node``).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Generator, Sequence
from typing import Any, TypeVar

from stackwars.config import EXECUTORS, RunOptions, choose
from stackwars.errors import UsageError
from stackwars.results.metadata import node_info
from stackwars.runner.tasks import Caches, Executor, Task, TaskReporter, Where

R = TypeVar("R")

RAY_INSTALL = "pip install 'stackwars[ray]'"


class RayMissingError(UsageError):
    """--executor ray without Ray installed."""


def open_executor(
    name: str, address: str | None, options: RunOptions, kinds: Sequence[str] = ()
) -> Executor:
    """The executor called ``name``, ready to run cells with ``options``: for ``ray``, connected
    to the cluster at ``address`` (None: a Ray instance of its own on this machine), placing
    them only on nodes offering every resource in ``kinds``."""
    choose("executor", name, EXECUTORS)
    if name == "local":
        if address is not None or kinds:
            option = "--ray-address" if address is not None else "--ray-resource"
            raise UsageError(
                f"{option} says where --executor ray sends cells; add --executor ray, or "
                f"drop {option} to run here"
            )
        return LocalExecutor(options.jobs)
    if options.jobs > 1:
        raise UsageError(
            f"--jobs {options.jobs} is for --executor local; Ray runs as many cells at a time "
            "as the cluster's resources allow"
        )
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
    return ray_executor.RayExecutor.connect(address, options, tuple(kinds))


class LocalExecutor:
    """The tasks on this machine, each in fresh workers, ``jobs`` at a time."""

    def __init__(self, jobs: int = 1) -> None:
        if jobs < 1:
            raise UsageError(f"--jobs {jobs} must be at least 1")
        self.jobs = jobs

    def results(
        self, tasks: Sequence[Task[R]], caches: Caches, reporter: TaskReporter
    ) -> Generator[R, None, None]:
        folders = caches.open()
        node = {"executor": "local", **node_info()}
        try:
            if self.jobs == 1:
                for task in tasks:
                    reporter.start_cell(task.label())
                    yield task.run(Where(folders, node, reporter.phase))
            else:
                yield from _side_by_side(tasks, self.jobs, Where(folders, node), reporter)
        finally:
            folders.close()

    def close(self) -> None:
        """Nothing to release: each worker ended with its task."""


def _side_by_side(
    tasks: Sequence[Task[R]], jobs: int, where: Where, reporter: TaskReporter
) -> Generator[R, None, None]:
    """Each task in a thread of its own, ``jobs`` at a time, started from this thread (which
    alone talks to ``reporter``); phases are not reported, since several workers interleave.

    The threads only wait for their workers. They are daemons so that Ctrl-C ends the command
    at once: closing stops starting tasks, and the running workers die with this process
    (runner/child.py)."""
    done: queue.Queue[tuple[bool, Any]] = queue.Queue()

    def one(task: Task[R]) -> None:
        try:
            done.put((True, task.run(where)))
        except BaseException as exc:  # handed to the caller's thread, raised there
            done.put((False, exc))

    waiting, running = list(reversed(tasks)), 0
    while waiting or running:
        while waiting and running < jobs:
            task = waiting.pop()
            reporter.start_cell(task.label())
            threading.Thread(target=one, args=(task,), daemon=True).start()
            running += 1
        ended, value = done.get()
        running -= 1
        if not ended:
            raise value
        yield value
