"""The parent half of ``stackwars ab``'s side worker (``stackwars/ab_worker.py``): one side's
round, a ``stackwars run`` under the side's Python and environment, through ``child.py``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stackwars.errors import UsageError
from stackwars.runner.child import Interpreter, Limits, run_child

MODULE = "stackwars.instruments.ab.side"
KIND = "side"
CHECK_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class SideEnd:
    """How a side's round ended: the command's exit status, or why there is none."""

    exit: int | None
    detail: str = ""


def side_version(interpreter: Interpreter, memory_budget: int) -> str:
    """The stackwars version the side's Python imports; a UsageError naming the fix when it
    imports none (or another protocol)."""
    end = run_child(
        MODULE, KIND, {"argv": []}, Limits(CHECK_TIMEOUT_S, memory_budget), interpreter=interpreter
    )
    if end.ok and end.result is not None:
        return str(end.result["version"])
    python = interpreter.python or "this Python"
    raise UsageError(
        f"{python} cannot run a stackwars worker ({end.detail.strip().splitlines()[-1:]}); "
        f"install this stackwars there ({python} -m pip install -e PATH_TO_STACKWARS, with the "
        "frameworks the cells need) or pass the Python of an environment that has it"
    )


def run_side(
    interpreter: Interpreter,
    argv: list[str],
    limits: Limits,
    folder: Path,
    cpus: tuple[int, ...] = (),
) -> SideEnd:
    """``stackwars ARGV`` under ``interpreter``, in ``folder`` (kept: its output.txt says
    what the round printed), on ``cpus`` only when given (its workers too)."""
    folder.mkdir(parents=True, exist_ok=True)
    request = {"argv": argv, "cwd": str(Path.cwd()), "cpus": list(cpus)}
    end = run_child(MODULE, KIND, request, limits, scratch=folder, interpreter=interpreter)
    if end.ok and end.result is not None:
        return SideEnd(int(end.result["exit"]))
    return SideEnd(None, f"{end.status}: {end.detail}")
