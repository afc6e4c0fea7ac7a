"""Each accelerator cell's predicted device peak beside the one it measured, from run JSON files.

    python benchmarks/gpu/device_memory.py RUN.json...

Prints a Markdown table (docs/results.md, "On a real GPU"): the cell, its status, the device
peak the plan predicted (runner/plan.py: the model's terms that live on the device, and for
torch's train steps the free blocks its caching allocator keeps reserved), the peak the
framework's allocator measured (``memory.device_peak_bytes``), what it reserved from the device,
the measured peak against the predicted arrays (the prediction less those cached blocks: the
allocator's peak counts only what is allocated) and what it reserved against the whole
prediction. Cells the plan made no device prediction for, and cells that measured none, show a
dash: a missing number is never a zero.
"""

import json
import sys

from stackwars import workloads
from stackwars.frameworks import split_stack

MIB = 2**20


def _mib(value: int | None) -> str:
    return "–" if value is None else f"{value / MIB:,.0f}"


def _ratio(measured: int | None, predicted: int | None) -> str:
    return "–" if not measured or not predicted else f"{measured / predicted:.2f}×"


def _cached_free(cell: dict) -> int:
    """The cached free blocks the plan added to the cell's device prediction (0 where none)."""
    slack_for = workloads.get(cell["workload"]).device_slack_for
    if slack_for is None:
        return 0
    return slack_for(cell["params"], split_stack(cell["stack"])[0])[0]


def rows(paths: list[str]) -> list[str]:
    lines = []
    for path in paths:
        with open(path, encoding="utf-8") as file:
            cells = json.load(file)["cells"]
        for cell in cells:
            if cell["device"] == "cpu":
                continue
            params = cell["params"]
            memory = cell.get("memory") or {}
            predicted = memory.get("predicted_device_bytes")
            arrays = None if predicted is None else predicted - _cached_free(cell)
            measured = memory.get("device_peak_bytes")
            what = ", ".join(f"{k}={params[k]}" for k in ("task", "batch", "n") if k in params)
            reserved = memory.get("device_reserved_bytes")
            lines.append(
                f"| {cell['workload']} ({what}) | {cell['stack']} | {cell['status']} | "
                f"{_mib(predicted)} | {_mib(measured)} | {_mib(reserved)} | "
                f"{_ratio(measured, arrays)} | {_ratio(reserved, predicted)} |"
            )
    return lines


if __name__ == "__main__":
    print(
        "| cell | stack | status | predicted MiB | measured peak MiB | reserved MiB "
        "| peak ÷ predicted arrays | reserved ÷ predicted |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows(sys.argv[1:])))
