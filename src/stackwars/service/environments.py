"""``stackwars env create`` / ``env remove`` and the environments ``stackwars env`` lists:
Python environments of their own for stacks that cannot share stackwars'
(``frameworks/environments.py`` says what one is; ``runner/environments.py`` runs and checks
workers there).

Creating one is ``python -m venv`` and one ``pip install`` of its pinned requirements, from the
package index pip is configured with, logged to ``<folder>/create.log``; then a worker there
proves it can import what the environment is for, and ``environment.json`` records the spec,
the versions found, the time it took and its size. A second call finds it ready and changes
nothing (``--force`` makes it again).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stackwars.errors import UsageError
from stackwars.frameworks import environments
from stackwars.frameworks.environments import EnvironmentSpec
from stackwars.results.jsonio import dump, write_atomically
from stackwars.runner import environments as running
from stackwars.runner.child import run_command

# pip downloading the CUDA build of torch 2.9 and its nvidia-* wheels (about 7 GB) took
# 1.5-4 minutes here; an hour covers a slow mirror, and a stuck pip is killed.
INSTALL_TIMEOUT_S = 3600.0
VENV_TIMEOUT_S = 300.0
Say = Callable[[str], None]


@dataclass(frozen=True)
class EnvironmentState:
    """An environment as ``stackwars env`` lists it."""

    name: str
    folder: Path
    problem: str  # "" when ready
    description: dict[str, Any] = field(default_factory=dict)

    @property
    def versions(self) -> dict[str, str]:
        return dict(self.description.get("versions", {}))


def states() -> list[EnvironmentState]:
    """Every known environment, checked from inside (a worker each, once a process)."""
    return [_state(name) for name in environments.known()]


def spec_for(name: str, pins: Sequence[str]) -> EnvironmentSpec:
    """The spec to create ``name`` from: the project's pins for a built-in environment, the
    pins given for any other (the same as when it was made, if none are given)."""
    environments.check_name(name)
    builtin = environments.BUILTIN.get(name)
    if builtin is not None:
        if pins:
            raise UsageError(
                f"{name!r} is built in with the project's pins ({', '.join(builtin.packages)}); "
                "give other pins to an environment of another name"
            )
        return builtin
    if not pins:
        recorded = environments.spec_of(name)
        if recorded is not None:
            return recorded
        raise UsageError(
            f"environment {name!r} is not built in ({', '.join(environments.BUILTIN)} are); "
            "say what it holds with --pin PACKAGE==VERSION (e.g. --pin jax==0.9.2 --pin "
            "jaxlib==0.9.2)"
        )
    for pin in pins:
        if "==" not in pin:
            raise UsageError(f"--pin {pin!r}: pin an exact version, e.g. jax==0.9.2")
    imports = tuple(pin.partition("==")[0].strip().replace("-", "_") for pin in pins)
    return EnvironmentSpec(name, tuple(pins), "made with stackwars env create --pin", imports)


@dataclass(frozen=True)
class Creation:
    """What ``create`` did: made the environment (in ``seconds``) or found it ready."""

    state: EnvironmentState
    made: bool
    seconds: float = 0.0


def create(name: str, pins: Sequence[str], *, force: bool, say: Say) -> Creation:
    """Make environment ``name`` (or find it ready); raises UsageError with the log's path
    when an install fails."""
    spec = spec_for(name, pins)
    folder = environments.folder(name)
    recorded = (environments.described(name) or {}).get("spec")
    spec_unchanged = recorded is not None and EnvironmentSpec.from_dict(recorded) == spec
    if not force and spec_unchanged and not running.problem(name):
        return Creation(_state(name), made=False)
    started = time.monotonic()
    _make(spec, folder, say)
    seconds = time.monotonic() - started
    found = running.inspect(name, spec.imports)
    _describe(spec, folder, found, seconds)
    running.forget_problems()
    state = _state(name)
    if state.problem:
        raise UsageError(f"{state.problem} (the install's log: {folder / 'create.log'})")
    return Creation(state, made=True, seconds=seconds)


def remove(name: str) -> Path:
    folder = environments.folder(name)
    if not folder.exists():
        raise UsageError(f"environment {name!r} does not exist (looked in {folder})")
    shutil.rmtree(folder)
    running.forget_problems()
    return folder


def _state(name: str) -> EnvironmentState:
    return EnvironmentState(
        name, environments.folder(name), running.problem(name), environments.described(name) or {}
    )


def _make(spec: EnvironmentSpec, folder: Path, say: Say) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    log = folder / "create.log"
    venv = folder / "venv"
    say(f"creating a virtual environment in {venv}")
    _must(
        run_command([sys.executable, "-m", "venv", str(venv)], timeout_s=VENV_TIMEOUT_S, log=log),
        "python -m venv",
        log,
    )
    requirements = list(spec.requirements())
    say(f"installing {' '.join(requirements)}")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    code = run_command([*pip, *requirements], timeout_s=INSTALL_TIMEOUT_S, log=log, on_line=say)
    _must(code, "pip install", log)


def _must(code: int, what: str, log: Path) -> None:
    if code != 0:
        raise UsageError(f"{what} ended with exit status {code}; what it printed is in {log}")


def _describe(spec: EnvironmentSpec, folder: Path, found: dict[str, Any], seconds: float) -> None:
    wanted = {running.normalise(req.partition("==")[0]) for req in spec.requirements()}
    description = {
        "format": environments.ENVIRONMENT_FORMAT,
        "spec": spec.to_dict(),
        "python": found["python"],
        "versions": {name: v for name, v in sorted(found["versions"].items()) if name in wanted},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "size_bytes": size_of(folder),
    }
    write_atomically(folder / environments.DESCRIPTION_FILE, dump(description))


def size_of(folder: Path) -> int:
    return sum(
        path.stat().st_size
        for path in folder.rglob("*")
        if path.is_file() and not path.is_symlink()
    )
