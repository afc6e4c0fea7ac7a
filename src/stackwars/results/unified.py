"""The unified stack's two questions, derived from a run's cells (nothing is stored twice).

* **What the abstraction costs**: per cell and per Keras stack whose native counterpart ran on
  the same cell (the native stack of its backend in the same mode: ``keras-jax:jit`` against
  ``jax:jit``), the ratio Keras ÷ native of the steady medians with its 95 % interval and
  verdict from ``timing/compare.py`` (across fresh workers with ``--repeat 3`` or more, else
  within the one process, which the row says), and the ratios of the first runs and of the
  peak resident memory (medians over workers).
* **Which backend is best**: per model cell, each Keras backend at its fastest mode, the
  fastest backend, and the margin by which the slowest trails it (slowest ÷ fastest − 1),
  against Keras 3's published claim that the right backend speeds a model up by 20 % to
  350 %.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from stackwars.frameworks import FRAMEWORKS, split_stack
from stackwars.results.schema import Cell
from stackwars.timing.compare import MIN_WORKERS, Comparison, compare

# Keras 3's release notes: picking the best backend speeds models up "from 20% to 350%".
PUBLISHED_SPEED_UP = (0.20, 3.50)
Key = tuple[str, str, str, bool]  # workload, parameters, device, to host


@dataclass(frozen=True)
class AbstractionCost:
    workload: str
    params: dict[str, Any]
    device: str
    keras_stack: str
    native_stack: str
    steady: Comparison | None  # candidate Keras, baseline native; above 1: Keras is slower
    first_run_ratio: float | None
    memory_ratio: float | None


@dataclass(frozen=True)
class BackendRace:
    workload: str
    params: dict[str, Any]
    device: str
    fastest_by_backend: dict[str, tuple[str, float]]  # backend -> (stack, steady median)
    fastest: str
    slowest: str
    margin: float  # slowest ÷ fastest − 1

    @property
    def within_published(self) -> bool:
        low, high = PUBLISHED_SPEED_UP
        return low <= self.margin <= high


def native_counterpart(stack: str) -> str | None:
    """``keras-jax:jit`` -> ``jax:jit``; None for a stack that is no layer over another."""
    framework, mode, _ = split_stack(stack)
    info = FRAMEWORKS.get(framework)
    return None if info is None or info.runs_on is None else f"{info.runs_on}:{mode}"


def _groups(cells: Iterable[Cell]) -> dict[Key, dict[str, list[Cell]]]:
    """Cells that ended ok, by cell and then by stack (several workers with --repeat)."""
    grouped: dict[Key, dict[str, list[Cell]]] = defaultdict(lambda: defaultdict(list))
    for cell in cells:
        if cell.status == "ok" and cell.steady.samples_s:
            key = (
                cell.workload,
                json.dumps(cell.params, sort_keys=True),
                cell.device,
                cell.to_host,
            )
            grouped[key][cell.stack].append(cell)
    return grouped


def abstraction_costs(cells: Iterable[Cell]) -> list[AbstractionCost]:
    costs = []
    for (workload, params, device, _), stacks in _groups(cells).items():
        for stack, workers in stacks.items():
            native = native_counterpart(stack)
            if native is None or native not in stacks:
                continue
            costs.append(
                AbstractionCost(
                    workload,
                    json.loads(params),
                    device,
                    stack,
                    native,
                    _steady(stacks[native], workers),
                    _ratio(stacks[native], workers, lambda c: c.times.first_run_s),
                    _ratio(stacks[native], workers, lambda c: c.memory.peak_rss_bytes),
                )
            )
    return costs


def _steady(native: Sequence[Cell], keras: Sequence[Cell]) -> Comparison:
    within = min(len(native), len(keras)) < MIN_WORKERS
    return compare(
        [c.steady.samples_s for c in native],
        [c.steady.samples_s for c in keras],
        within_process=within,
    )


def _ratio(native: Sequence[Cell], keras: Sequence[Cell], value: Any) -> float | None:
    ours = [v for v in map(value, keras) if v]
    theirs = [v for v in map(value, native) if v]
    if not ours or not theirs:
        return None
    return statistics.median(ours) / statistics.median(theirs)


def backend_races(cells: Iterable[Cell]) -> list[BackendRace]:
    """Per cell run on two or more Keras backends (the models, in the unified suite)."""
    races = []
    for (workload, params, device, _), stacks in _groups(cells).items():
        best: dict[str, tuple[str, float]] = {}
        for stack, workers in stacks.items():
            info = FRAMEWORKS.get(split_stack(stack)[0])
            if info is None or info.family != "keras" or info.runs_on is None:
                continue
            median = statistics.median(c.steady.median_s or 0.0 for c in workers)
            if median > 0 and (info.runs_on not in best or median < best[info.runs_on][1]):
                best[info.runs_on] = (stack, median)
        if len(best) < 2:
            continue
        fastest = min(best, key=lambda backend: best[backend][1])
        slowest = max(best, key=lambda backend: best[backend][1])
        margin = best[slowest][1] / best[fastest][1] - 1
        races.append(
            BackendRace(workload, json.loads(params), device, best, fastest, slowest, margin)
        )
    return races
