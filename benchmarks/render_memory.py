"""A run's memory per cell, rendered again from its run file: status, peak resident set and
the plan's prediction, for a log entry that cites them.

    python benchmarks/render_memory.py docs/data/gpt-neo-2026-11-28/gpt-neo-infer-train.json

Prints a Markdown table, one row per cell in the file's order: the cell (its workload and the
parameters that differ between the run's cells), stack, status (with parity for an ok cell;
a cell the plan refused names that), ``memory.peak_rss_bytes`` (and, where the file has them,
the peak up to the end of the first run and the timed runs' after it) and
``memory.predicted_bytes`` in GiB of 2³⁰ bytes. docs/log.md holds its output between
``rendered`` markers, and tests/test_rendered_docs.py renders it again and fails on any
difference.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

GIB = 2**30
PREDICTED = "predicted peak"  # how the plan's refusal of a cell begins its reason
# The peak split at the end of the first run (run files from 2026-11-29 on): shown when a
# cell of the file has it.
SPLIT = ("first_run_peak_rss_bytes", "timed_peak_rss_bytes")
SPLIT_COLUMNS = ("peak to the first run's end", "peak of the timed runs")


def gib(value: int | None) -> str:
    return "" if value is None else f"{value / GIB:.2f} GiB"


def status(cell: dict[str, Any]) -> str:
    if cell["status"] == "ok":
        parity = (cell.get("parity") or {}).get("ok")
        return "ok, parity " + ("not checked" if parity is None else "ok" if parity else "failed")
    if cell["memory"].get("peak_rss_bytes") is None and cell["reason"].startswith(PREDICTED):
        return f"`{cell['status']}`, predicted, not run"
    return f"`{cell['status']}`"


def varying(cells: list[dict[str, Any]]) -> list[str]:
    """The parameters whose value is not the same in every cell."""
    names = {name for cell in cells for name in cell["params"]}
    return sorted(n for n in names if len({str(c["params"].get(n)) for c in cells}) > 1)


def render(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    shown = varying(cells)
    split = any(cell["memory"].get(SPLIT[0]) is not None for cell in cells)
    columns = ["cell", "stack", "status", "peak RSS", *SPLIT_COLUMNS * split, "predicted"]
    rows = [f"| {' | '.join(columns)} |", "| --- | --- | --- |" + " ---: |" * (len(columns) - 3)]
    for cell in cells:
        params = ", ".join(f"{name}={cell['params'].get(name)}" for name in shown)
        label = f"{cell['workload']} ({params})" if params else cell["workload"]
        memory = cell["memory"]
        sizes = [gib(memory.get(key)) for key in ("peak_rss_bytes", *SPLIT * split)]
        sizes.append(gib(memory.get("predicted_bytes")))
        rows.append(f"| {label} | {cell['stack']} | {status(cell)} | " + " | ".join(sizes) + " |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1])))
