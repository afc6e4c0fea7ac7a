"""Two-speed cells and their mode signal (issue 54): do page faults per call tell a cell's fast
workers from its slow ones, as they did for jax:jit SELU 2000² (61-69 against 3,380-3,910 per
call)? And do a cell's own times part at two speeds, where ab splits it (timing/speeds.py)?
Rendered from the workers of A/A `stackwars ab` sessions.

    python benchmarks/power/render_modes.py --extract DIR NAME   # once, from a session
    python benchmarks/power/render_modes.py DIR NAME
    python benchmarks/power/render_modes.py --speeds DIR NAME

``DIR`` and ``NAME`` as for render_rounds.py (a session's ``NAME-noise.json`` there names the
machine). ``--extract`` writes ``NAME-modes.json``: per cell, each ok worker's steady median and
page faults per steady call (``cpu.page_faults_per_call``) from the session's round files
(``NAME-rounds/``, its ``--out``, too large to keep). The rendering lists the cells whose
workers span more than ``SPREAD`` (slowest median over fastest) whose page faults show a gap,
and for each the split of its workers by page faults at their largest gap (at least
``FAULT_GAP`` times more faults above it): the median time of each side of the split and whether
it separates the speeds (every worker above the gap slower than every one below), and how many
more cells spread that far with no such gap. ``--speeds`` lists every cell with whether its
workers' times part at two speeds by ab's rule (``split``), and if not, how far its widest gap
fell short. docs/evidence.md holds its outputs between ``rendered`` markers;
tests/test_rendered_docs.py renders them again.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from stackwars.results.comparison import label
from stackwars.results.schema import Cell
from stackwars.timing.speeds import SPLIT_DEVIATIONS, split, widest_gap

SPREAD = 1.4  # slowest worker's median over the fastest's: a cell worth asking about
FAULT_GAP = 10.0  # faults above the split at least this many times those below
FLOOR = 1.0  # faults per call below this count as this (a gap from 0.0 to 0.2 is no signal)
FORMAT = 1  # of the extracted file; history: 1 (2026-11-29) first


def extract(folder: Path, name: str) -> None:
    workers: dict[str, list[list[float]]] = {}
    for path in sorted((folder / f"{name}-rounds").glob("*-[0-9][0-9].json")):
        for raw in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            cell = Cell.from_dict(raw)
            faults, median = cell.cpu.page_faults_per_call, cell.steady.median_s
            if cell.status == "ok" and faults is not None and median:
                workers.setdefault(label(cell), []).append([median, faults])
    text = json.dumps({"format": FORMAT, "cells": workers}, indent=1, sort_keys=True) + "\n"
    (folder / f"{name}-modes.json").write_text(text, encoding="utf-8")


def render(folder: Path, name: str) -> str:
    def read(suffix: str) -> dict[str, Any]:
        return json.loads((folder / f"{name}{suffix}.json").read_text(encoding="utf-8"))

    machine, data = read("-noise")["machine"], read("-modes")
    lines = [
        f"Machine {machine['cpu_model']} (fingerprint `{machine['fingerprint']}`), the workers "
        f"of the `{name}` session.",
        "",
        "| cell | workers | slowest ÷ fastest | page faults a call | split by faults |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    quiet = 0
    for cell, workers in data["cells"].items():
        times = [median for median, _ in workers]
        spread = max(times) / min(times)
        if spread < SPREAD:
            continue
        split = _split(workers)
        if not split:
            quiet += 1
            continue
        faults = [fault for _, fault in workers]
        span = f"{min(faults):.1f}–{max(faults):.1f}"
        lines.append(f"| {cell} | {len(workers)} | {spread:.2f} | {span} | {split} |")
    lines += [
        "",
        f"{quiet} more of its {len(data['cells'])} cells span more than {SPREAD:g}× with no gap "
        f"in their page faults (none {FAULT_GAP:g} times the next, each floored at {FLOOR:g}).",
    ]
    return "\n".join(lines) + "\n"


def render_speeds(folder: Path, name: str) -> str:
    """Each cell of the session: its workers, their spread, and its two speeds or why none."""
    machine = json.loads((folder / f"{name}-noise.json").read_text(encoding="utf-8"))["machine"]
    data = json.loads((folder / f"{name}-modes.json").read_text(encoding="utf-8"))
    lines = [
        f"Machine {machine['cpu_model']} (fingerprint `{machine['fingerprint']}`), the workers "
        f"of the `{name}` session, both sides.",
        "",
        "| cell | workers | slowest ÷ fastest | two speeds by its times |",
        "| --- | ---: | ---: | --- |",
    ]
    for cell, workers in data["cells"].items():
        times = [median for median, _ in workers]
        logs = [math.log(median) for median in times]
        spread = max(times) / min(times)
        lines.append(f"| {cell} | {len(workers)} | {spread:.2f} | {_speeds(logs)} |")
    return "\n".join(lines) + "\n"


def _speeds(logs: list[float]) -> str:
    speeds = split(logs)
    if speeds is not None:
        return (
            f"{speeds.ratio:.2f}x apart, {speeds.slow_share:.0%} of the workers slow, "
            f"{speeds.deviation:.1%} within a speed"
        )
    gap = widest_gap(logs)
    if gap is None:
        return "too few workers"
    deviations = gap.size / gap.deviation if gap.deviation else math.inf
    return (
        f"none: its widest gap {math.exp(gap.size):.2f}x, {deviations:.1f} deviations within "
        f"a speed (a split needs more than {SPLIT_DEVIATIONS:g})"
    )


def _split(workers: list[list[float]]) -> str:
    """The workers split at the largest ratio between consecutive fault counts (each floored
    at FLOOR), if it is at least FAULT_GAP: each side's median time, and whether the split
    separates the speeds; "" without such a gap."""
    ordered = sorted(workers, key=lambda worker: worker[1])
    floored = [max(fault, FLOOR) for _, fault in ordered]
    gaps = [(floored[i + 1] / floored[i], i + 1) for i in range(len(ordered) - 1)]
    ratio, at = max(gaps, default=(1.0, 0))
    if ratio < FAULT_GAP:
        return ""
    low = [median for median, _ in ordered[:at]]
    high = [median for median, _ in ordered[at:]]
    separates = max(low) < min(high)
    verdict = "separates the speeds" if separates else "does not separate the speeds"
    return (
        f"{len(low)} at ≤ {ordered[at - 1][1]:.1f}: {statistics.median(low) * 1e6:.0f} µs; "
        f"{len(high)} at ≥ {ordered[at][1]:.1f}: {statistics.median(high) * 1e6:.0f} µs; "
        f"{verdict}"
    )


if __name__ == "__main__":
    if sys.argv[1] == "--extract":
        extract(Path(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "--speeds":
        sys.stdout.write(render_speeds(Path(sys.argv[2]), sys.argv[3]))
    else:
        sys.stdout.write(render(Path(sys.argv[1]), sys.argv[2]))
