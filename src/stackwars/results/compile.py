"""What compiling buys, per compiled cell: its first run split into phases, its speed-up over
its framework's eager stack, the calls after which compiling pays off, and (``--cache
cold-then-warm``) the first run again with a warm persistent cache.

Break-even: over ``k`` calls a compiled stack costs ``F_c + (k-1)·S_c`` and its eager stack
``F_e + (k-1)·S_e`` (first run ``F``, steady median ``S``), so compiling pays off from call
``k = 1 + ceil((F_c - F_e) / (S_e - S_c))``: the first-run excess divided by the per-call
saving. When the compiled stack is not faster per call it never pays off (``None``, with the
reason). The interval combines the 95 % intervals of both steady medians with the range of the
first runs over ``--repeat`` workers; with one worker per cell the first runs are single
values and their variation between processes is not in it (the note says so).

Everything here is recomputed from the cells; nothing is stored twice.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stackwars.frameworks import FRAMEWORKS, Stack, split_stack
from stackwars.results.aggregate import merge_repeats
from stackwars.results.schema import Cell, CellKey


@dataclass(frozen=True)
class Estimate:
    """A value with its 95 % interval; ``high`` None means unbounded."""

    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class CompileSummary:
    workload: str
    params: dict[str, Any]
    device: str
    to_host: bool
    stack: str
    first_run_s: float | None
    first_run_breakdown: dict[str, float]
    eager_stack: str | None = None  # the framework's eager stack on the same cell, when run
    speed_up: Estimate | None = None  # eager steady median ÷ this stack's
    break_even_calls: Estimate | None = None
    note: str = ""  # why there is no break-even, or what its interval leaves out
    persistent_cache: str = ""  # the cache a later process can reload compiled code from
    warm_first_run_s: float | None = None  # --cache cold-then-warm
    warm_first_run_breakdown: dict[str, float] = field(default_factory=dict)
    warm_status: str | None = None
    warm_reason: str = ""
    second_run_s: float | None = None
    # Compilations during the first run, the second run and steady state (the framework's
    # own count: XLA executables, Dynamo graphs, torch_xla's uncached graph compiles).
    compiles: dict[str, int | None] = field(default_factory=dict)
    # Graphs the framework executed per steady call, where it counts them (torch_xla's lazy
    # tensors cut one graph a step; a program with a CPU fallback runs several); None: not
    # counted.
    graphs_per_call: float | None = None


def compile_summaries(cells: Iterable[Cell]) -> list[CompileSummary]:
    """One summary per compiled cell that ended ok, and per cell with a warm start measured."""
    raw = list(cells)
    merged = {cell.key(): cell for cell in merge_repeats(raw) if cell.status == "ok"}
    first_runs: dict[CellKey, list[float]] = {}
    for cell in raw:
        if cell.status == "ok" and cell.times.first_run_s is not None:
            first_runs.setdefault(cell.key(), []).append(cell.times.first_run_s)
    return [
        _summary(cell, merged, first_runs)
        for cell in merged.values()
        if _mode(cell) != "eager" or cell.warm_start.status is not None
    ]


def persistent_cache(stack: str) -> str:
    framework, mode, _ = split_stack(stack)
    info = FRAMEWORKS.get(framework)
    caches = info.compile_caches if info else {}
    if mode in caches:
        return caches[mode]
    if mode == "eager":
        return "none: an eager stack compiles nothing ahead"
    return f"none: {stack} keeps no compile cache between processes"


def _mode(cell: Cell) -> str:
    return split_stack(cell.stack)[1]


def _eager_of(stack: str) -> str:
    """The eager stack of the same framework, in the same environment."""
    framework, _, environment = split_stack(stack)
    return str(Stack(framework, "eager", environment))


def _eager_key(cell: Cell) -> CellKey:
    workload, params, stack, device, to_host = cell.key()
    return (workload, params, _eager_of(stack), device, to_host)


def _summary(
    cell: Cell, merged: dict[CellKey, Cell], first_runs: dict[CellKey, list[float]]
) -> CompileSummary:
    warm = cell.warm_start
    summary = CompileSummary(
        workload=cell.workload,
        params=dict(cell.params),
        device=cell.device,
        to_host=cell.to_host,
        stack=cell.stack,
        first_run_s=cell.times.first_run_s,
        first_run_breakdown=dict(cell.first_run_breakdown),
        persistent_cache=persistent_cache(cell.stack),
        warm_first_run_s=warm.first_run_s,
        warm_first_run_breakdown=dict(warm.first_run_breakdown),
        warm_status=warm.status,
        warm_reason=warm.reason,
        second_run_s=cell.times.second_run_s,
        compiles={
            "first_run": cell.compiles.first_run,
            "second_run": cell.compiles.second_run,
            "steady": cell.compiles.steady,
        },
        graphs_per_call=graphs_per_call(cell),
    )
    eager = merged.get(_eager_key(cell))
    if _mode(cell) == "eager" or eager is None:
        return summary
    compiled_firsts = first_runs.get(cell.key(), [])
    eager_firsts = first_runs.get(eager.key(), [])
    speed_up = _speed_up(eager, cell)
    break_even, note = _break_even(eager, cell, eager_firsts, compiled_firsts)
    return dataclasses.replace(
        summary, eager_stack=eager.stack, speed_up=speed_up, break_even_calls=break_even, note=note
    )


def graphs_per_call(cell: Cell) -> float | None:
    """Graphs executed per steady call, from the framework's counters; None where it keeps
    no such count."""
    steady = cell.counters.get("steady", {})
    if "graphs_executed" not in steady or not steady.get("calls"):
        return None
    return steady["graphs_executed"] / steady["calls"]


def _bounds(cell: Cell) -> tuple[float, float, float] | None:
    """The steady median and its 95 % interval (the median itself where none was computed)."""
    steady = cell.steady
    if steady.median_s is None or steady.median_s <= 0:
        return None
    low = steady.ci95_low_s if steady.ci95_low_s is not None else steady.median_s
    high = steady.ci95_high_s if steady.ci95_high_s is not None else steady.median_s
    return steady.median_s, low, high


def _speed_up(eager: Cell, compiled: Cell) -> Estimate | None:
    e, c = _bounds(eager), _bounds(compiled)
    if e is None or c is None or c[1] <= 0:
        return None
    return Estimate(e[0] / c[0], e[1] / c[2], e[2] / c[1])


def _break_even(
    eager: Cell, compiled: Cell, eager_firsts: list[float], compiled_firsts: list[float]
) -> tuple[Estimate | None, str]:
    e, c = _bounds(eager), _bounds(compiled)
    if e is None or c is None or not eager_firsts or not compiled_firsts:
        return None, "no steady median or first run to compare"
    excess = (compiled.times.first_run_s or 0.0) - (eager.times.first_run_s or 0.0)
    excess_low = min(compiled_firsts) - max(eager_firsts)
    excess_high = max(compiled_firsts) - min(eager_firsts)
    saving, saving_low, saving_high = e[0] - c[0], e[1] - c[2], e[2] - c[1]
    if saving <= 0:
        return None, f"never: {compiled.stack} is not faster per call than {eager.stack}"
    estimate = Estimate(
        _calls(excess, saving),
        _calls(excess_low, saving_high) if saving_high > 0 else None,
        _calls(excess_high, saving_low) if saving_low > 0 else None,
    )
    one_worker = len(eager_firsts) == 1 or len(compiled_firsts) == 1
    note = "first runs of one worker each: their variation is not in the interval" * one_worker
    return estimate, note


def _calls(excess_s: float, saving_s: float) -> float:
    """The call from which the compiled stack's total time is no more than eager's."""
    return float(1 + max(0, math.ceil(excess_s / saving_s)))


def summaries_as_data(summaries: Iterable[CompileSummary]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(summary) for summary in summaries]
