"""Checks a compiler makes of the machine once per compile cache folder, not once per program
(``FrameworkInfo.machine_checks``; the parent half of ``toolchain_worker.py``).

Inductor probes the CPU's vector instruction sets by compiling a small program for each and
keeps the results in its cache folder: about 5 s on this project's machine (2026-11-27). A
user pays that once per machine; a cold cell, whose cache folder is fresh, would pay it in
every first run, as if each program were the machine's first. So each stack's checks are kept
between runs in a folder of the machine (:func:`home`, one per stack), brought up to date once
per batch by a toolchain worker (its compiler finds what it checked before and checks what it
has not: a new CPU, compiler or release), and copied from there into every cold cell's fresh
cache folder: the first run pays what a program new to a machine that has compiled before pays
(the checks' results loaded, not made). ``--cache pristine`` leaves every cell to make them.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from stackwars.frameworks import FRAMEWORKS, split_stack, stack_environment
from stackwars.runner.child import Limits, run_child
from stackwars.runner.environments import interpreter_for

WORKER = "stackwars.runner.toolchain_worker"
HOME_VARIABLE = "STACKWARS_MACHINE_CHECKS"


def home() -> Path:
    """Where the machine's checks are kept between runs, a folder per stack."""
    configured = os.environ.get(HOME_VARIABLE)
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "stackwars" / "machine-checks"


class MachineChecksFailed(Exception):
    """A stack's machine checks could not be made: its cells end ``error`` with this reason."""


def checks_of(stack: str) -> str:
    """What ``stack``'s compiler checks of the machine once per cache folder ("": nothing)."""
    framework, mode, _ = split_stack(stack)
    info = FRAMEWORKS.get(framework)
    return info.machine_checks.get(mode, "") if info else ""


class MachineChecks:
    """A batch's machine checks under ``root``: per stack, brought up to date once (in the
    machine's folder, then copied under ``root``), copied into each cell's cache folder."""

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
        """Start cache ``folder`` from ``stack``'s machine checks, brought up to date the first
        time they are asked for; what they are ("": the stack makes none). ``workload_files``: files
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
        """The machine's checks for ``stack`` brought up to date, and this batch's copy of them
        (another run may update the machine's folder while this batch's cells copy theirs)."""
        name = re.sub(r"[^\w.-]", "_", stack)
        kept, copy = home() / name, self.root / "machine-checks" / name
        request = {"stack": stack, "cache_dir": str(kept), "workload_files": [*workload_files]}
        try:
            kept.mkdir(parents=True, exist_ok=True)
            with (home() / f"{name}.lock").open("w") as lock:  # one run updates it at a time
                fcntl.flock(lock, fcntl.LOCK_EX)
                end = run_child(
                    WORKER,
                    "toolchain",
                    request,
                    limits,
                    interpreter=interpreter_for(stack_environment(stack)),
                )
                if end.ok:
                    shutil.copytree(kept, copy, dirs_exist_ok=True)
                    return copy
        except OSError as exc:
            return MachineChecksFailed(
                f"{stack}'s checks of the machine ({checked}) cannot be kept in {home()}: "
                f"{exc}; fix: ${HOME_VARIABLE} naming a folder you can write, or --cache pristine"
            )
        return MachineChecksFailed(
            f"{stack}'s checks of the machine ({checked}) failed in a process of their own: "
            f"{end.detail}; fix: --cache pristine, where each cell makes them itself"
        )
