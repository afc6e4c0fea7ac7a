"""What an executor runs: tasks, each one unit of work in fresh workers (a run's cell, a
behave probe on a stack), and the Executor protocol that runs them.

A task knows how to run itself (:meth:`Task.run`, here or on a Ray node), what its worker needs
of a machine (:meth:`Task.placement`, for Ray), and what it answers when it could not run
(:meth:`Task.not_run`). An executor knows only where tasks run, so every kind of batch
(``run``, ``behave``) gets every executor (``--executor local --jobs N``, ``ray``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from stackwars.errors import UsageError
from stackwars.runner.child import Limits
from stackwars.runner.toolchain import MachineChecks

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class CacheFolders:
    """Compile-cache folders: fresh per cell (cold, pristine) or one shared folder (warm). A
    cold cell's folder starts from its stack's checks of the machine (runner/toolchain.py),
    made once per batch; a pristine one from nothing."""

    def __init__(self, mode: str, root: Path | None) -> None:
        self.mode = mode
        self.root = root or Path(tempfile.mkdtemp(prefix="stackwars-cache-"))
        self._owns_root = root is None
        starts_checked = mode in ("cold", "cold-then-warm")
        self._machine_checks = MachineChecks(self.root) if starts_checked else None

    def for_cell(self, index: int) -> Path:
        folder = self.root / ("shared" if self.mode == "warm" else f"cell-{index}")
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def start_checked(
        self,
        stack: str,
        folder: Path,
        limits: Limits,
        on_progress: Callable[[str], None] | None = None,
        workload_files: Sequence[str] = (),
    ) -> str:
        """Start cell ``folder`` from ``stack``'s machine checks where the mode wants it;
        what they are ("": none). Raises MachineChecksFailed when they cannot be made."""
        if self._machine_checks is None:
            return ""
        return self._machine_checks.copy_into(stack, folder, limits, on_progress, workload_files)

    def release(self, folder: Path) -> None:
        if self.mode != "warm":
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)


@dataclass(frozen=True)
class Caches:
    """A batch's compile caches: the mode and the folder they live in (None: a temporary one,
    per executor: one for a local batch, one per task on a Ray node)."""

    mode: str = "cold"
    root: Path | None = None

    def open(self) -> CacheFolders:
        return CacheFolders(self.mode, self.root)


@dataclass(frozen=True)
class Placement:
    """What a task's worker needs of the machine it runs on."""

    device: str = "cpu"
    memory_bytes: int | None = None  # the predicted peak; None: unknown
    # Every CPU of a node: a timed cell never shares its cores. A probe observes behaviour,
    # not time, and takes one.
    whole_node: bool = True
    force: bool = False  # run even where no node offers memory_bytes


@dataclass
class Where:
    """Where a task runs: its compile caches, the machine (``{"executor": name, ...}``) and
    who hears what its worker reports it is doing."""

    caches: CacheFolders
    node: dict[str, Any] = field(default_factory=dict)
    on_progress: Callable[[str], None] | None = None


class Task(Protocol[R_co]):
    def label(self) -> str: ...

    def placement(self) -> Placement | None:
        """What its worker needs; None when it starts none and ends at once (a skipped cell)."""
        ...

    def run(self, where: Where) -> R_co:
        """Its result, from fresh workers started here (this machine or a Ray node)."""
        ...

    def not_run(self, status: str, reason: str, node: dict[str, Any]) -> R_co:
        """Its result when no worker ran it: refused by a cluster, or lost with its node."""
        ...


class TaskReporter(Protocol):
    """Who hears that a task starts and what its worker is doing (the run's progress line)."""

    def start_cell(self, label: str) -> None: ...

    def phase(self, text: str) -> None:
        """What the running task's worker reports it is doing."""
        ...


class _Quiet:
    def start_cell(self, label: str) -> None:
        del label

    def phase(self, text: str) -> None:
        del text


QUIET: TaskReporter = _Quiet()  # for a batch whose progress nobody follows


class ExecutorLostError(UsageError):
    """An executor lost what runs its tasks (a Ray cluster's head): nothing more can run or be
    heard of, so the run stops as if interrupted, its finished results kept."""


class Executor(Protocol):
    """Where tasks run: runner/executors.py's local executor (``jobs`` workers at a time,
    here) or runner/ray_executor.py's (Ray tasks, each starting the same workers on a node)."""

    def results(
        self, tasks: Sequence[Task[R]], caches: Caches, reporter: TaskReporter
    ) -> Generator[R, None, None]:
        """Each task's result as it ends, in any order; closing the generator stops what still
        runs (Ctrl-C)."""
        ...

    def close(self) -> None:
        """Release what the executor holds (a Ray connection)."""
        ...
