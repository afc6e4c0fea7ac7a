"""Workers in a Python environment of their own (``frameworks/environments.py``): the
interpreter that starts them there, and the check that the environment can run them.

A worker there imports the parent's own stackwars: the interpreter puts on its PYTHONPATH a
folder holding one link, ``stackwars``, to this package (made once per process, removed at
exit), and nothing else of the parent's (its PYTHONPATH and user site-packages are left out,
so the main environment's torch 2.13 can never shadow the environment's torch 2.9).

The check (:func:`problem`) runs ``runner/environment_worker.py`` there once per process and
environment: it imports what the stack needs and reports the versions it finds; a pinned
package at another version, a module that does not import, or a worker that cannot start at
all (stackwars' dependencies missing there) becomes one line with the fix.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stackwars.config import default_memory_budget
from stackwars.frameworks import (
    environments,
    needed_imports,
    split_stack,
    stack_environment,
    stack_missing_reason,
)
from stackwars.runner.child import Interpreter, Limits, run_child

WORKER = "stackwars.runner.environment_worker"
KIND = "environment"
# Importing torch 2.9 and torch_xla from a cold disk took 5 s here; a first import after the
# environment was made can take much longer.
CHECK_TIMEOUT_S = 180.0
PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def _import_folder() -> Path:
    """A folder whose only entry links to this stackwars package."""
    folder = Path(tempfile.mkdtemp(prefix="stackwars-import-"))
    (folder / "stackwars").symlink_to(PACKAGE, target_is_directory=True)
    atexit.register(shutil.rmtree, folder, True)
    return folder


def interpreter_for(environment: str) -> Interpreter:
    """The interpreter that runs a worker in ``environment`` ("" is this one)."""
    if not environment:
        return Interpreter()
    return Interpreter(
        python=str(environments.python_of(environment)),
        environment={"PYTHONPATH": str(_import_folder()), "PYTHONNOUSERSITE": "1"},
    )


def inspect(environment: str, imports: Sequence[str]) -> dict[str, Any]:
    """What a worker in ``environment`` finds: Python's version, the installed versions of
    every distribution, and for each of ``imports`` the error importing it gave ("" when it
    imported). Raises RuntimeError with the worker's last words when none could start."""
    end = run_child(
        WORKER,
        KIND,
        {"imports": list(imports)},
        Limits(CHECK_TIMEOUT_S, default_memory_budget()),
        interpreter=interpreter_for(environment),
    )
    if end.ok and end.result is not None:
        return end.result
    lines = [line for line in end.detail.strip().splitlines() if line.strip()]
    raise RuntimeError(lines[-1] if lines else end.status)


def problem(environment: str, imports: tuple[str, ...] = ()) -> str:
    """'' when ``environment`` can run a worker that imports ``imports`` (and holds its
    spec's pinned versions); else one line saying why, with the fix. Checked once a process
    for each folder it is looked for in (the root STACKWARS_ENVS names, when it is set):
    asking a Python in the environment takes seconds."""
    return _problem(environments.folder(environment), environment, imports)


def forget_problems() -> None:
    """Check every environment afresh: one was just made or removed."""
    _problem.cache_clear()


@functools.cache
def _problem(folder: Path, environment: str, imports: tuple[str, ...]) -> str:
    del folder  # the cache's key: the same name elsewhere is another environment
    absent = environments.absent_reason(environment)
    if absent:
        return absent
    spec = environments.spec_of(environment)
    needed = tuple(dict.fromkeys([*(spec.imports if spec else ()), *imports]))
    fix = f"fix: {environments.create_hint(environment)} --force"
    try:
        found = inspect(environment, needed)
    except RuntimeError as exc:
        return f"environment {environment!r} cannot run a stackwars worker ({exc}); {fix}"
    failed = {name: error for name, error in found["imports"].items() if error}
    if failed:
        name, error = next(iter(failed.items()))
        return f"environment {environment!r} cannot import {name} ({error}); {fix}"
    wrong = pin_mismatches(spec.packages if spec else (), found["versions"])
    if wrong:
        return f"environment {environment!r} holds {'; '.join(wrong)}; {fix}"
    return ""


def pin_mismatches(pins: Sequence[str], versions: dict[str, str]) -> list[str]:
    """``name==version`` pins that ``versions`` (distribution -> version) do not satisfy."""
    wrong = []
    for pin in pins:
        name, separator, wanted = pin.partition("==")
        if not separator:
            continue
        found = versions.get(normalise(name))
        if found is None:
            wrong.append(f"no {name} (pinned {wanted})")
        elif found.split("+")[0] != wanted:
            wrong.append(f"{name} {found}, not the pinned {wanted}")
    return wrong


def normalise(distribution: str) -> str:
    """A distribution's name as PEP 503 compares them (torch_xla and torch-xla are one)."""
    return distribution.lower().replace("_", "-").replace(".", "-")


def stack_problem(stack: str) -> str | None:
    """Why ``stack`` cannot run here, with the fix; None when it can. For a stack in an
    environment of its own, that environment is checked from inside (once a process)."""
    framework, mode, _ = split_stack(stack)
    environment = stack_environment(stack)
    missing = stack_missing_reason(framework, mode, environment)
    if missing or not environment:
        return missing
    return problem(environment, needed_imports(framework, mode)) or None
