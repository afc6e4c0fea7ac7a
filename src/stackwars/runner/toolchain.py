"""Checks a compiler makes of the machine once per compile cache folder, not once per program
(``FrameworkInfo.machine_checks``; the parent half of ``toolchain_worker.py``).

Inductor probes the CPU's vector instruction sets by compiling a small program for each and
keeps the results in its cache folder: about 5 s on this project's machine (2026-11-27). A
user pays that once per machine; a cold cell, whose cache folder is fresh, would pay it in
every first run, as if each program were the machine's first. So each stack that makes such
checks makes them once per batch, in a toolchain worker, into a folder that every cold cell's
fresh cache folder then starts from: the first run pays what a program new to a machine that
has compiled before pays (the checks' results loaded, not made). ``--cache pristine`` leaves
every cell to make them itself.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from stackwars.frameworks import FRAMEWORKS, split_stack, stack_environment
from stackwars.runner.child import Limits, run_child
from stackwars.runner.environments import interpreter_for

WORKER = "stackwars.runner.toolchain_worker"


class MachineChecksFailed(Exception):
    """A stack's machine checks could not be made: its cells end ``error`` with this reason."""


def checks_of(stack: str) -> str:
    """What ``stack``'s compiler checks of the machine once per cache folder ("": nothing)."""
    framework, mode, _ = split_stack(stack)
    info = FRAMEWORKS.get(framework)
    return info.machine_checks.get(mode, "") if info else ""


class MachineChecks:
    """A batch's machine checks under ``root``: per stack, made once, copied into each cell."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._made: dict[str, Path | MachineChecksFailed] = {}
        self._lock = threading.Lock()  # cells of one batch may start side by side (--jobs)

    def copy_into(
        self,
        stack: str,
        folder: Path,
        limits: Limits,
        on_progress: Callable[[str], None] | None = None,
        workload_files: Sequence[str] = (),
    ) -> str:
        """Start cache ``folder`` from ``stack``'s machine checks, made the first time they
        are asked for; what they are ("": the stack makes none). ``workload_files``: files
        that register the framework, if it is not a built-in one."""
        checked = checks_of(stack)
        if not checked:
            return ""
        with self._lock:
            made = self._made.get(stack)
            if made is None:
                if on_progress is not None:
                    on_progress(f"{checked}, once for the run")
                made = self._make(stack, checked, limits, workload_files)
                self._made[stack] = made
        if isinstance(made, MachineChecksFailed):
            raise made
        shutil.copytree(made, folder, dirs_exist_ok=True)
        return checked

    def _make(
        self, stack: str, checked: str, limits: Limits, workload_files: Sequence[str]
    ) -> Path | MachineChecksFailed:
        folder = self.root / "machine-checks" / re.sub(r"[^\w.-]", "_", stack)
        folder.mkdir(parents=True, exist_ok=True)
        request = {"stack": stack, "cache_dir": str(folder), "workload_files": [*workload_files]}
        end = run_child(
            WORKER,
            "toolchain",
            request,
            limits,
            interpreter=interpreter_for(stack_environment(stack)),
        )
        if end.ok:
            return folder
        return MachineChecksFailed(
            f"{stack}'s checks of the machine ({checked}) failed in a process of their own: "
            f"{end.detail}; fix: --cache pristine, where each cell makes them itself"
        )
