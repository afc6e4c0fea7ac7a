"""Each accelerator cell's predicted device peak beside the one it measured, from run JSON files.

    python benchmarks/gpu/device_memory.py RUN.json...

Prints a Markdown table (docs/results.md, "On a real GPU"): the cell, its status, the device
peak the plan predicted (runner/plan.py: the model's terms that live on the device), the peak
the framework's allocator measured (``memory.device_peak_bytes``), what it reserved from the
device, and measured / predicted. Cells the plan made no device prediction for, and cells that
measured none, show a dash: a missing number is never a zero.
"""

import json
import sys

MIB = 2**20


def _mib(value: int | None) -> str:
    return "–" if value is None else f"{value / MIB:,.0f}"


def _ratio(measured: int | None, predicted: int | None) -> str:
    return "–" if not measured or not predicted else f"{measured / predicted:.2f}×"


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
            measured = memory.get("device_peak_bytes")
            what = ", ".join(f"{k}={params[k]}" for k in ("task", "batch", "n") if k in params)
            reserved = memory.get("device_reserved_bytes")
            lines.append(
                f"| {cell['workload']} ({what}) | {cell['stack']} | {cell['status']} | "
                f"{_mib(predicted)} | {_mib(measured)} | {_mib(reserved)} | "
                f"{_ratio(measured, predicted)} |"
            )
    return lines


if __name__ == "__main__":
    print(
        "| cell | stack | status | predicted MiB | measured peak MiB | reserved MiB "
        "| measured ÷ predicted |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    print("\n".join(rows(sys.argv[1:])))
