"""Suites written in TOML files (``stackwars run --suite-file my_suite.toml``).

A file is one suite::

    name = "my-suite"                      # optional: the file's stem
    description = "GEMM sizes on two stacks"
    [timing]                               # optional: TimingConfig fields
    steady_budget_s = 2.0
    [[cells]]                              # one or more
    workload = "gemm"
    params = { n = [256, 1024], dtype = "float32" }   # a value or a list of values
    stacks = ["numpy:eager", "jax:jit"]    # optional: every stack
    to_host = [false, true]                # optional: [false]

Every name and value is checked against the registries (workloads, their parameters, stacks,
timing fields) before anything runs; a mistake is one line naming the file, what is allowed and
the fix.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stack
from stackwars.suites import Suite, SuiteEntry
from stackwars.timing.timer import TimingConfig

SUITE_KEYS = ("name", "description", "timing", "cells")
CELL_KEYS = ("workload", "params", "stacks", "to_host")


def load_suite_file(path: Path) -> Suite:
    """The suite a TOML file describes; UsageError naming the file and the fix otherwise."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"suite file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"suite file {path} is not valid TOML: {exc}") from None
    try:
        return _suite(data, path.stem)
    except UsageError as exc:
        raise UsageError(f"suite file {path}: {exc}") from None


def _unknown(kind: str, given: dict[str, Any], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(given) - set(allowed))
    if extra:
        raise UsageError(f"unknown {kind} key {extra[0]!r}; allowed: {', '.join(allowed)}")


def _suite(data: dict[str, Any], stem: str) -> Suite:
    _unknown("suite", data, SUITE_KEYS)
    cells = data.get("cells")
    if not isinstance(cells, list) or not cells:
        raise UsageError("no [[cells]]; add at least one with a workload")
    timing = data.get("timing", {})
    fields = tuple(field.name for field in dataclasses.fields(TimingConfig))
    _unknown("timing", timing, fields)
    return Suite(
        name=str(data.get("name", stem)),
        description=str(data.get("description", f"from {stem}.toml")),
        entries=tuple(_entry(cell, index) for index, cell in enumerate(cells, 1)),
        timing={name: float(value) for name, value in timing.items()},
    )


def _entry(cell: dict[str, Any], index: int) -> SuiteEntry:
    _unknown(f"cell {index}", cell, CELL_KEYS)
    if "workload" not in cell:
        raise UsageError(f'cell {index} names no workload; add workload = "gemm" (for example)')
    workload = workloads.get(str(cell["workload"]))
    params = {
        name: tuple(workload.param(name).parse(str(value)) for value in _listed(values))
        for name, values in cell.get("params", {}).items()
    }
    stacks = cell.get("stacks")
    return SuiteEntry(
        workload=workload.name,
        params=params,
        stacks=None if stacks is None else tuple(str(parse_stack(s)) for s in _listed(stacks)),
        to_host=tuple(bool(flag) for flag in _listed(cell.get("to_host", [False]))),
    )


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
