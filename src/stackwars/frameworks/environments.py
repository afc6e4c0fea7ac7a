"""Python environments of their own: where a stack's workers run when they cannot share
stackwars' (torch_xla needs torch 2.9, the main environment has 2.13), or when one framework
is compared with itself at another version in one run (``--stacks jax:jit,jax:jit@jax-0.9``).

An environment is a virtual environment under :func:`root` (``$STACKWARS_ENVS``, default
``~/.cache/stackwars/environments``), one folder a name:

    <root>/<name>/venv/              the virtual environment: its spec's pinned packages
    <root>/<name>/environment.json   what it is (ENVIRONMENT_FORMAT): the spec, the versions
                                     installed, when it was made and how long it took

It never holds stackwars itself: a worker there imports the parent's own stackwars (a folder on
its PYTHONPATH that links to the parent's package, ``runner/environments.py``), so the code a
worker runs is always the code of the run that started it, whichever checkout made the
environment. What it must hold are stackwars' own dependencies (:data:`BASE_PINS`, the versions
of constraints.txt) and the spec's packages.

Nothing here imports a framework or starts a process: creating one is
``stackwars env create NAME`` (``service/environments.py``), checking one runs a worker in it.

History of ENVIRONMENT_FORMAT:

* 1 (2026-11-26): spec (name, packages, description, frameworks), versions, created,
  seconds, python.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackwars.errors import UsageError

ENVIRONMENT_FORMAT = 1
ROOT_VARIABLE = "STACKWARS_ENVS"
DESCRIPTION_FILE = "environment.json"
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

# stackwars' own dependencies at the versions constraints.txt pins (tests/test_environments.py
# keeps the two equal): a worker in the environment imports stackwars, so it needs them.
BASE_PINS = (
    "numpy==2.4.6",
    "scipy==1.17.1",
    "psutil==7.2.2",
    "rich==15.0.0",
    "pandas==3.1.1",
    "threadpoolctl==3.8.0",
)


@dataclass(frozen=True)
class EnvironmentSpec:
    """What an environment holds: pinned requirements (pip's syntax) on top of
    :data:`BASE_PINS`, and the modules a worker there must be able to import."""

    name: str
    packages: tuple[str, ...]
    description: str
    imports: tuple[str, ...] = ()

    def requirements(self) -> tuple[str, ...]:
        return (*self.packages, *BASE_PINS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "packages": list(self.packages),
            "description": self.description,
            "imports": list(self.imports),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EnvironmentSpec:
        return cls(
            name=data["name"],
            packages=tuple(data["packages"]),
            description=data.get("description", ""),
            imports=tuple(data.get("imports", ())),
        )


# The environments the project keeps pins for; a user makes others with --pin.
BUILTIN: dict[str, EnvironmentSpec] = {
    spec.name: spec
    for spec in (
        EnvironmentSpec(
            name="torch-xla",
            # torch_xla 2.9.0 is the newest release and needs exactly torch 2.9.0. PyPI's torch
            # 2.9.0 for Linux is the CUDA build: it pulls the nvidia-* wheels (about 7 GB in
            # all), which torch needs to import even on a CPU.
            packages=("torch==2.9.0", "torch_xla==2.9.0"),
            description="PyTorch/XLA (torch_xla's lazy tensors), the torch-xla:lazy stack",
            imports=("torch", "torch_xla"),
        ),
    )
}


def root() -> Path:
    """The folder environments live in."""
    configured = os.environ.get(ROOT_VARIABLE)
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "stackwars" / "environments"


def check_name(name: str) -> str:
    if not NAME.match(name):
        raise UsageError(
            f"environment name {name!r}: use lower-case letters, digits, '.', '_' and '-' "
            "(e.g. torch-xla, jax-0.9.2)"
        )
    return name


def folder(name: str) -> Path:
    return root() / check_name(name)


def python_of(name: str) -> Path:
    return folder(name) / "venv" / "bin" / "python"


def create_hint(name: str) -> str:
    if name in BUILTIN:
        return f"stackwars env create {name}"
    return f"stackwars env create {name} --pin PACKAGE==VERSION (the packages it should hold)"


def described(name: str) -> dict[str, Any] | None:
    """The environment's description file as written when it was made; None if absent."""
    path = folder(name) / DESCRIPTION_FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def absent_reason(name: str) -> str:
    """Why environment ``name`` cannot be used, judged from its files alone ('' when they are
    all there), with the command that fixes it."""
    if described(name) is None:
        return f"environment {name!r} is not created; fix: {create_hint(name)}"
    if not python_of(name).exists():
        return (
            f"environment {name!r} has no Python at {python_of(name)} (the interpreter it was "
            f"made with is gone?); fix: {create_hint(name)} --force"
        )
    return ""


def known() -> list[str]:
    """The built-in environments and every other one made under :func:`root`."""
    made = sorted(path.parent.name for path in root().glob(f"*/{DESCRIPTION_FILE}"))
    return list(dict.fromkeys([*BUILTIN, *made]))


def spec_of(name: str) -> EnvironmentSpec | None:
    """The spec of a built-in environment, or the one recorded when ``name`` was made."""
    if name in BUILTIN:
        return BUILTIN[name]
    data = described(name)
    return None if data is None else EnvironmentSpec.from_dict(data["spec"])
