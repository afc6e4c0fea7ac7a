"""``run --find-max-batch``: the largest batch each cell's predicted peak lets fit the budget.

A prediction, not a measurement: the batch found is the largest for which the plan would run
the cell. Run that batch to measure its real peak (``memory.peak_tree_rss_bytes``, and on an
accelerator ``memory.device_peak_bytes``). On an accelerator both budgets bind: the host's for
what stays on the host, the device's for what the device holds (when its size is known).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from stackwars import workloads
from stackwars.errors import UsageError
from stackwars.instruments.maxbatch.data import MAX_BATCH, MaxBatch
from stackwars.results.schema import CellSpec
from stackwars.runner import plan


def _fits(spec: CellSpec, batch: int, budget: int, device_budget: plan.DeviceBudget | None) -> bool:
    return not plan.too_big(_with_batch(spec, batch), budget, device_budget)


def max_batch(spec: CellSpec, budget: int, device_budget: plan.DeviceBudget | None = None) -> int:
    """Largest batch whose predictions fit ``budget`` and, on an accelerator, ``device_budget``
    (0 when even batch 1 does not)."""

    def fits(batch: int) -> bool:
        return _fits(spec, batch, budget, device_budget)

    if not fits(1):
        return 0
    low, high = 1, 2
    while high <= MAX_BATCH and fits(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _device_limit(spec: CellSpec, device_budget: plan.DeviceBudget | None) -> str:
    """What bounds ``spec`` on its device when it is not the budget itself ('' when it is)."""
    if device_budget is None or not plan.on_accelerator(spec):
        return ""
    limit, what = device_budget.for_cell(spec)
    if limit is None or limit == device_budget.budget:
        return ""
    return f"{what}: {limit / plan.GIB:.2f} GiB"


def _with_batch(spec: CellSpec, batch: int) -> CellSpec:
    return dataclasses.replace(spec, params={**spec.params, "batch": batch})


def max_batches(
    cells: Sequence[CellSpec], budget: int, device_budget: plan.DeviceBudget | None = None
) -> list[MaxBatch]:
    """One answer per distinct cell (its batch aside) of the cells with a batch parameter."""
    with_batch = [c for c in cells if "batch" in workloads.get(c.workload).defaults()]
    if not with_batch:
        raise UsageError("--find-max-batch needs workloads with a batch parameter (the models)")
    # One row per cell up to its batch: a --param batch=... list asks the same question.
    unique = {spec.label(): spec for spec in (_with_batch(c, 1) for c in with_batch)}
    answers = []
    for spec in unique.values():
        if plan.skip_reason(spec):
            answers.append(MaxBatch(spec.workload, dict(spec.params), spec.stack, None, None))
            continue
        best = max_batch(spec, budget, device_budget)
        at_best = _with_batch(spec, best)
        peak = plan.prediction(at_best)[0] if best else None
        on_device = plan.device_prediction(at_best) if best else None
        device_peak = None if on_device is None else on_device[0]
        limit = _device_limit(spec, device_budget)
        answers.append(
            MaxBatch(spec.workload, dict(spec.params), spec.stack, best, peak, device_peak, limit)
        )
    return answers
