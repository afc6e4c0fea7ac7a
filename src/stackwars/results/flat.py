"""Cells as flat rows: dotted column names (``steady.median_s``), for CSV and DataFrames."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from stackwars.results.run import Run

# Columns every flat row starts with, in this order; the rest follow alphabetically.
LEADING = ("run_id", "workload", "stack", "device", "to_host", "status", "steady.median_s")


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts become dotted keys; lists become JSON text (raw samples stay whole)."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(flatten(item, f"{prefix}{key}."))
        return flat
    if isinstance(value, list | tuple):
        return {prefix[:-1]: json.dumps(value)}
    return {prefix[:-1]: value}


def rows(runs: Iterable[Run]) -> list[dict[str, Any]]:
    return [{"run_id": run.id, **flatten(cell.to_dict())} for run in runs for cell in run.cells]


def columns(flat_rows: list[dict[str, Any]]) -> list[str]:
    present = {key for row in flat_rows for key in row}
    rest = sorted(present - set(LEADING))
    return [name for name in LEADING if name in present] + rest
