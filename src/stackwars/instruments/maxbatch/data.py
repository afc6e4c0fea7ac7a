"""The answer of ``run --find-max-batch`` for one cell, as data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The search doubles the batch up to here: an answer this large was bounded by nothing.
MAX_BATCH = 2**20


@dataclass(frozen=True)
class MaxBatch:
    """The largest batch of one cell predicted to fit (0: none fits; None: unsupported)."""

    workload: str
    params: dict[str, Any]  # the cell's, at batch 1
    stack: str
    batch: int | None
    predicted_bytes: int | None
    predicted_device_bytes: int | None = None  # accelerator cells only
    # What bounds the device side when it is not the device memory budget, e.g. a JAX stack's
    # allocator limit; '' when it is the budget.
    device_limit: str = ""
