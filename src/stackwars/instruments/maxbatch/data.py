"""The answer of ``run --find-max-batch`` for one cell, as data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MaxBatch:
    """The largest batch of one cell predicted to fit (0: none fits; None: unsupported)."""

    workload: str
    params: dict[str, Any]  # the cell's, at batch 1
    stack: str
    batch: int | None
    predicted_bytes: int | None
    predicted_device_bytes: int | None = None  # accelerator cells only
