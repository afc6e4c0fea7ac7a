"""Changes injected into a candidate's cells, for the gate's A/B sessions (issue 54; kind
``recipe-ab`` of benchmarks/power/fresh_sessions.py).

Python imports this module at start-up when its folder is on ``PYTHONPATH``; ab gives it to
the candidate alone (``--candidate-env PYTHONPATH=...``), so it reaches the candidate's side
and every worker the side starts, as a change to the candidate's code would. It does nothing
unless ``STACKWARS_INJECT`` holds a JSON object of changes, each keyed by workload and stack::

    {"gemm numpy:eager": {"factor": 1.1}, "poly numpy:eager": {"factor": 4, "share": 0.1}}

A changed cell's prepared function costs ``factor`` times the original's (``slowed``: it spins
for the difference, measured on its first calls), in every mode (a compiled function is slowed
around its compiled call, not inside what the compiler sees). With ``share``, each worker
process draws once whether it is slow (that share of the candidate's processes are, as a
regression that strikes some processes does); without, every process is.

The change wraps ``CellRun._setup`` of ``stackwars.runner.worker`` once that module is first
imported (an import hook, so a process that never measures imports nothing more); a refactor
that renames it makes the sessions' check fail loudly (``_patch``), never run unchanged.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

TARGET = "stackwars.runner.worker"
CHANGES: dict[str, dict[str, float]] = json.loads(os.environ.get("STACKWARS_INJECT") or "{}")
# Drawn once a process: which of the changed cells are slow in this one.
SLOW_HERE = {key for key, change in CHANGES.items() if random.random() < change.get("share", 1.0)}
# Calls after the first (which compiles) whose cost sets what every later call adds.
CALIBRATION_CALLS = 5


def slowed(fn: Callable[..., Any], sync: Callable[[Any], None], factor: float) -> Callable:
    """``fn`` made ``factor`` times as costly: each of its first ``1 + CALIBRATION_CALLS``
    calls waits for its result and spins for ``factor - 1`` times what it took; every later
    call spins for ``factor - 1`` times the cheapest of the calibration calls, without
    waiting: an asynchronous framework keeps its calls in flight, as the timer's blocks let it
    (waiting on every call cost jax:jit's GEMM 256² another 10 % beyond its factor, 2026-11-29)."""
    costs: list[float] = []

    def call(*args: Any) -> Any:
        if len(costs) > CALIBRATION_CALLS:
            out = fn(*args)
            _spin((factor - 1) * min(costs[1:]))
            return out
        start = time.perf_counter()
        out = fn(*args)
        sync(out)
        costs.append(time.perf_counter() - start)
        _spin((factor - 1) * costs[-1])
        return out

    return call


def _spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def _patch(module: ModuleType) -> None:
    run = getattr(module, "CellRun", None)
    original = getattr(run, "_setup", None)
    if original is None:
        raise RuntimeError(f"{TARGET}.CellRun._setup is gone: update {__file__}")

    def _setup(self: Any, framework: Any, built: Any, inputs: Any) -> Any:
        fn, args, bound = original(self, framework, built, inputs)
        cell = self.request.cell
        key = f"{cell.workload} {cell.framework}:{cell.mode}"
        if key in SLOW_HERE:
            fn = slowed(fn, framework.sync, CHANGES[key]["factor"])
        return fn, args, bound

    run._setup = _setup  # type: ignore[union-attr]


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds ``TARGET`` as Python would, and patches it once its code has run."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if CHANGES:
    sys.meta_path.insert(0, _AfterImport())
