"""Planning: expand a suite or a workload with parameter lists into cells, and decide which
cells cannot run here (and why) before any worker starts."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackwars import workloads
from stackwars.config import PER_STACK, RunOptions
from stackwars.errors import ParameterError
from stackwars.frameworks import (
    FRAMEWORKS,
    Stack,
    all_stacks,
    default_stacks,
    device_memory_share,
)
from stackwars.results.schema import CellSpec
from stackwars.runner import environments
from stackwars.suites import Suite
from stackwars.workloads.base import Workload

MAX_SWEEP_VALUES = 10_000
GIB = 2**30
_RANGE = re.compile(r"^(-?[\d.e+_]+)\.\.(-?[\d.e+_]+)(?::([x+*])([\d.e+_]+))?$")


@dataclass(frozen=True)
class PlannedCell:
    spec: CellSpec
    skip_reason: str = ""  # non-empty: the cell ends with skip_status without a worker
    skip_status: str = "unsupported"
    predicted_bytes: int | None = None
    predicted_device_bytes: int | None = None  # accelerator cells only


@dataclass(frozen=True)
class DeviceBudget:
    """What an accelerator cell's predicted device peak must fit: ``budget``
    (--device-memory-budget, by default 90 % of the GPU's memory) and, where it is smaller,
    the share of the GPU's memory (``total``) the cell's framework lets one process take:
    ``fraction`` (--memory-fraction) where the framework applies it, else its own default
    (``frameworks.device_memory_share``: JAX's client stops at 75 %)."""

    budget: int | None  # None: the device's size is unknown, and nothing is checked
    total: int | None = None
    fraction: float | None = None

    @classmethod
    def of(cls, options: RunOptions) -> DeviceBudget:
        """The device budget a run's options hold."""
        return cls(
            options.device_memory_budget, options.device_memory_total, options.memory_fraction
        )

    def for_cell(self, spec: CellSpec) -> tuple[int | None, str]:
        """The bytes ``spec`` may hold on its device, and what sets that limit."""
        budget = self.budget, "the device memory budget"
        share = device_memory_share(spec.framework, spec.mode, self.fraction)
        if self.budget is None or self.total is None or share is None:
            return budget
        limit = int(share * self.total)
        if limit >= self.budget:
            return budget
        setting = "--memory-fraction" if self.fraction is not None else "its default"
        return limit, f"{spec.stack}'s allocator limit, {share:.0%} of the GPU ({setting})"


def parse_values(workload: Workload, name: str, text: str) -> list[Any]:
    """One ``--param`` value list: ``a,b,c`` or a range ``lo..hi:x2`` / ``lo..hi:+step``."""
    param = workload.param(name)
    values: list[Any] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _RANGE.match(item)
        if match:
            values.extend(param.parse(str(v)) for v in _expand_range(name, item, match))
        else:
            values.append(param.parse(item))
    if not values:
        raise ParameterError(f"{name}= has no value; example: {name}={param.default}")
    return list(dict.fromkeys(values))


def _expand_range(name: str, text: str, match: re.Match[str]) -> list[Any]:
    low, high = float(match.group(1)), float(match.group(2))
    op, step = match.group(3) or "+", float(match.group(4) or 1)
    if high < low or (op == "+" and step <= 0) or (op in "x*" and step <= 1):
        raise ParameterError(
            f"{name}={text!r} is not a valid range; write lo..hi:x2 (factor > 1) or "
            "lo..hi:+step (step > 0) with lo <= hi"
        )
    values, value = [], low
    while value <= high * (1 + 1e-12):
        values.append(int(value) if value.is_integer() else value)
        value = value * step if op in "x*" else value + step
        if len(values) > MAX_SWEEP_VALUES:
            raise ParameterError(f"{name}={text!r} expands to over {MAX_SWEEP_VALUES} values")
    return values


def parse_param_args(workload: Workload, args: Sequence[str]) -> dict[str, list[Any]]:
    """``["n=256,512", "dtype=float32"]`` -> ``{"n": [256, 512], "dtype": ["float32"]}``."""
    parsed: dict[str, list[Any]] = {}
    for arg in args:
        name, sep, text = arg.partition("=")
        if not sep or not name.strip():
            raise ParameterError(f"--param {arg!r} is not KEY=VALUE; example: --param n=256,512")
        parsed[name.strip()] = parse_values(workload, name.strip(), text)
    return parsed


def combinations(values: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    names = list(values)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values.values())]


def cells_for(
    workload: Workload,
    values: Mapping[str, Sequence[Any]],
    stacks: Iterable[Stack],
    device: str,
    to_host: Sequence[bool] = (False,),
) -> list[CellSpec]:
    stack_list = list(stacks)
    return [
        CellSpec(workload.name, workload.resolve(params), str(stack), device, host)
        for params in combinations(values)
        for stack in stack_list
        for host in to_host
    ]


def workload_cells(
    names: str, args: Sequence[str], stacks: Iterable[Stack], device: str
) -> list[CellSpec]:
    """``--workload gemm,selu``: each workload's cells in turn. With one workload every
    ``--param`` must be its own; with several, each goes to those that have it."""
    chosen = [workloads.get(name.strip()) for name in names.split(",")]
    repeated = sorted({w.name for w in chosen if chosen.count(w) > 1})
    if repeated:
        raise ParameterError(f"--workload {names!r} names {', '.join(repeated)} twice; once each")
    stack_list = list(stacks)
    if len(chosen) == 1:
        return cells_for(chosen[0], parse_param_args(chosen[0], args), stack_list, device)
    for arg in args:
        name = arg.partition("=")[0].strip()
        if not any(name in workload.defaults() for workload in chosen):
            raise ParameterError(
                f"--param {arg!r}: none of the workloads {names!r} has a parameter {name!r}"
            )
    cells: list[CellSpec] = []
    for workload in chosen:
        own = [arg for arg in args if arg.partition("=")[0].strip() in workload.defaults()]
        cells.extend(cells_for(workload, parse_param_args(workload, own), stack_list, device))
    return cells


def suite_param_args(suite: Suite, args: Sequence[str]) -> dict[str, list[Any]]:
    """``--param`` values that override a suite's, for every entry whose workload has them
    (e.g. ``scale=tiny`` for the model suites); a name no entry has is refused."""
    parsed: dict[str, list[Any]] = {}
    for arg in args:
        name = arg.partition("=")[0].strip()
        owners = [
            workloads.get(entry.workload)
            for entry in suite.entries
            if name in workloads.get(entry.workload).defaults()
        ]
        if not owners:
            raise ParameterError(
                f"--param {arg!r}: no workload of suite {suite.name!r} has a parameter {name!r}"
            )
        parsed.update(parse_param_args(owners[0], [arg]))
    return parsed


def suite_cells(
    suite: Suite,
    stacks: Sequence[Stack] | None,
    device: str,
    overrides: Mapping[str, Sequence[Any]] | None = None,
) -> list[CellSpec]:
    # An entry that names its stacks runs them all unless --stacks narrows them (the unified
    # suite names Keras stacks, which runs naming no stacks otherwise leave out).
    chosen = list(stacks) if stacks is not None else all_stacks()
    cells: list[CellSpec] = []
    for entry in suite.entries:
        if entry.stacks is None:
            allowed = chosen if stacks is not None else default_stacks()
        else:
            allowed = [s for s in chosen if str(s) in entry.stacks]
        workload = workloads.get(entry.workload)
        mine = {k: v for k, v in (overrides or {}).items() if k in workload.defaults()}
        cells.extend(cells_for(workload, {**entry.params, **mine}, allowed, device, entry.to_host))
    return cells


def schedule(
    cells: Sequence[CellSpec], repeat: int, seed: int, workers: str = "per-cell"
) -> list[CellSpec]:
    """Each cell ``repeat`` times in fresh workers: in rounds, each round a random order of
    every cell (reproducible under ``seed``), so that drift over the run is spread over all
    stacks instead of favouring the ones measured first. With ``workers`` per-stack, a
    round's cells of one stack follow each other (they share a worker), in a drawn order."""
    if repeat < 1:
        raise ParameterError(f"--repeat {repeat} must be at least 1")
    rng = random.Random(seed)
    if repeat == 1:
        rounds = list(cells)
    else:
        rounds = []
        for index in range(repeat):
            order = [dataclasses.replace(cell, repeat=index) for cell in cells]
            rng.shuffle(order)
            rounds.extend(order)
    return by_stack(rounds, rng) if workers == PER_STACK else rounds


def by_stack(cells: Sequence[CellSpec], rng: random.Random) -> list[CellSpec]:
    """The cells of each repetition and stack together, in the order each group first appears,
    each group's own order drawn by ``rng``: which cell a shared worker measures first (and
    so with nothing compiled before it) changes from one draw to the next, instead of always
    favouring one."""
    groups: dict[tuple[int, str, str], list[CellSpec]] = {}
    for cell in cells:
        groups.setdefault(shared_worker_key(cell), []).append(cell)
    ordered: list[CellSpec] = []
    for group in groups.values():
        rng.shuffle(group)
        ordered.extend(group)
    return ordered


def shared_worker_key(cell: CellSpec) -> tuple[int, str, str]:
    """What cells sharing a worker (--workers per-stack) have in common: the repetition, the
    stack (its Python environment with it) and the device."""
    return cell.repeat, cell.stack, cell.device


def skip_reason(spec: CellSpec) -> str:
    """Why a cell cannot run here, decided without importing any framework ('' if it can)."""
    info = FRAMEWORKS[spec.framework]
    missing = environments.stack_problem(spec.stack)
    if missing:
        return missing
    devices = info.devices_for(spec.mode)
    if spec.device.partition(":")[0] not in devices:
        why = info.not_on.get(spec.device.partition(":")[0])
        runs_on = f"it runs on {', '.join(devices)}"
        return f"{spec.stack} does not run on {spec.device}: {why or runs_on}"
    workload = workloads.get(spec.workload)
    if workload.builder(spec.framework) is None:
        return f"workload {spec.workload!r} has no {spec.framework} implementation"
    return workload.unsupported(spec.params, spec.framework, spec.mode)


def on_accelerator(spec: CellSpec) -> bool:
    return not spec.device.startswith("cpu")


def prediction(spec: CellSpec) -> tuple[int, str]:
    """Predicted peak resident (host) bytes of a cell's worker, and how they add up; on an
    accelerator, what the device holds is left out (:func:`device_prediction`)."""
    workload = workloads.get(spec.workload)
    baseline = FRAMEWORKS[spec.framework].baseline_bytes
    if workload.memory_for is not None:
        need, detail = workload.memory_for(spec.params, spec.framework)
        if on_accelerator(spec) and workload.device_memory_for is not None:
            need -= workload.device_memory_for(spec.params, spec.framework)[0]
            detail = f"{detail}, less what the device holds"
    else:
        need, detail = workload.memory_bytes(spec.params), "inputs, results and temporaries"
    return baseline + need, f"{spec.framework} runtime {baseline / GIB:.2f} GiB + {detail}"


def device_prediction(spec: CellSpec) -> tuple[int, str] | None:
    """Predicted peak bytes on the cell's accelerator and how they add up; None on the cpu.
    The framework's own device footprint (its context, kernels) is not known here."""
    if not on_accelerator(spec):
        return None
    workload = workloads.get(spec.workload)
    if workload.device_memory_for is None:
        return workload.memory_bytes(spec.params), "inputs, results and temporaries"
    need, detail = workload.device_memory_for(spec.params, spec.framework)
    if workload.device_slack_for is not None:
        slack, why = workload.device_slack_for(spec.params, spec.framework)
        if slack:
            need, detail = need + slack, f"{detail} + {slack / GIB:.2f} GiB {why}"
    return need, detail


def too_big(spec: CellSpec, budget: int, device_budget: DeviceBudget | None) -> str:
    """Why a cell's predicted peak does not fit (host, or device when it has a budget);
    '' when it fits."""
    need, detail = prediction(spec)
    if need > budget:
        return (
            f"predicted peak {need / GIB:.2f} GiB exceeds the memory budget of "
            f"{budget / GIB:.2f} GiB ({detail}); not run: --force runs it anyway under the "
            "watchdog, --memory-budget changes the budget"
        )
    on_device = device_prediction(spec)
    limit, what = device_budget.for_cell(spec) if device_budget else (None, "")
    if on_device is None or limit is None or on_device[0] <= limit:
        return ""
    return (
        f"predicted {spec.device} peak {on_device[0] / GIB:.2f} GiB exceeds {what} of "
        f"{limit / GIB:.2f} GiB ({on_device[1]}); not run: --force runs it anyway (the "
        "framework then reports its own out-of-memory), --device-memory-budget and "
        "--memory-fraction change the limit"
    )


def plan(
    cells: Sequence[CellSpec],
    budget: int,
    force: bool = False,
    device_budget: DeviceBudget | None = None,
) -> list[PlannedCell]:
    """Each cell with the reason it cannot run here, if any: ``unsupported`` when its stack is
    missing, ``oom`` when its predicted peak exceeds ``budget``, or on an accelerator its
    predicted device peak exceeds ``device_budget`` (None: not checked), unless ``force``."""
    planned = []
    for spec in cells:
        reason = skip_reason(spec)
        if reason:
            planned.append(PlannedCell(spec, reason))
            continue
        need = prediction(spec)[0]
        on_device = device_prediction(spec)
        device_need = None if on_device is None else on_device[0]
        why = "" if force else too_big(spec, budget, device_budget)
        status = "oom" if why else "unsupported"
        planned.append(PlannedCell(spec, why, status, need, device_need))
    return planned


def plan_for(cells: Sequence[CellSpec], options: RunOptions) -> list[PlannedCell]:
    """The one way a run's cells are planned or planned again (a new run, a rerun, a resume,
    added rounds, the second look): :func:`plan` under every budget the run's options hold,
    the host's memory, ``--force`` and the device's."""
    return plan(cells, options.memory_budget, options.force, DeviceBudget.of(options))
