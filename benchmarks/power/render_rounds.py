"""Cheap rounds (issue 54), rendered from the sessions that measured them: for each design of
a round, an A/A `stackwars ab` session with fixed rounds, its noise table and what its workers
cost, side by side.

    python benchmarks/power/render_rounds.py --costs DIR    # once, from the sessions' rounds
    python benchmarks/power/render_rounds.py DIR

``DIR`` holds, per design NAME (``sequential``: the sides one after the other, as ab always
ran them; ``duet``: both at once on a core each; ``per-stack`` and ``per-stack-duet``: the
same with ``--workers per-stack``, a worker a stack and side each round, its cells in a drawn
order), ``NAME.json`` (the session's ``--json``),
``NAME-noise.json`` (its ``--write-noise``) and ``NAME-costs.json``, which ``--costs`` writes
from the session's round files (``NAME-rounds/``, its ``--out``, too large to keep): per cell
the mean wall time of its workers, the whole worker from start to exit (in a shared worker,
the cell's own span in it, the first cell's with the framework's import: summed over a stack's
cells, the worker's life but its start).

Prints Markdown: per design the rounds, the session's seconds and a round's; per cell each
design's paired spread (the standard deviation of a round's log ratio), the rounds it needs to
be shown within 10 % at one look (``timing/sequential.py``'s ``rounds_to_pass``) and its
workers' wall time; then, per group of stacks a gate could be given, what a round of those
cells costs (both sides' workers, one after the other, or one side's in a duet, the sides at
once, plus its share of the design's own cost a round: its measured round less its workers,
shared by the workers it starts), how many
rounds 15 minutes afford at that cost and how many of its cells they can gate (ab's triage:
the most cells, quietest first, all shown within the limit together with 80 % probability, at
the spreads the design's session measured). docs/evidence.md
holds its output between ``rendered`` markers; tests/test_rendered_docs.py renders it again.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from stackwars.instruments.ab.data import CellNoise, NoiseTable, triage
from stackwars.results.comparison import label
from stackwars.results.schema import Cell
from stackwars.timing.sequential import rounds_to_pass

PASS_LIMIT = 0.10  # the gate's default --pass-below
ALPHA = 0.05
BUDGET_S = 900.0  # a CI job's time for the gate (docs/ci.md's --time-budget default)
DESIGNS = ("sequential", "duet", "per-stack", "per-stack-duet")
SIDES = ("baseline", "candidate")
COSTS_FORMAT = 2  # of NAME-costs.json (write_costs has its history)
# Groups of the quick suite's stacks a gate could be given, cheapest imports first.
GROUPS = {
    "numpy, jax, torch:eager": ("numpy:eager", "jax:eager", "jax:jit", "torch:eager"),
    "and torch:compile, torchax": ("torch:compile", "torch:xla"),
    "and TensorFlow, torch_xla": (
        "tensorflow:eager", "tensorflow:graph", "tensorflow:xla", "torch-xla:lazy"
    ),
}  # fmt: skip


def load(folder: Path, name: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    def read(suffix: str) -> dict[str, Any]:
        return json.loads((folder / f"{name}{suffix}.json").read_text(encoding="utf-8"))

    return read(""), read("-noise"), read("-costs")


def write_costs(folder: Path, name: str) -> None:
    """``NAME-costs.json``: each cell's mean worker wall time over every round and side, and
    the mean of its first run's compile time (its breakdown's ``compile_s``: JAX's XLA
    compile, torch.compile's backend and Inductor; 0 for a stack that compiles nothing ahead
    or keeps no breakdown), the most a compile cache kept across rounds could save of it.
    Format history: 1 (2026-11-29) wall_s and workers; 2 (2026-11-29) compile_s."""
    walls: dict[str, list[float]] = defaultdict(list)
    compiles: dict[str, list[float]] = defaultdict(list)
    for path in sorted((folder / f"{name}-rounds").glob("*-[0-9][0-9].json")):
        for data in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            cell = Cell.from_dict(data)
            if cell.wall_s is not None:
                walls[label(cell)].append(cell.wall_s)
                compiles[label(cell)].append(cell.first_run_breakdown.get("compile_s", 0.0))
    cells = {
        cell: {"wall_s": statistics.fmean(w), "compile_s": statistics.fmean(compiles[cell]),
               "workers": len(w)}
        for cell, w in walls.items()
    }  # fmt: skip
    text = json.dumps({"format": COSTS_FORMAT, "cells": cells}, indent=1, sort_keys=True) + "\n"
    (folder / f"{name}-costs.json").write_text(text, encoding="utf-8")


def render(folder: Path) -> str:
    found = {name: load(folder, name) for name in DESIGNS if (folder / f"{name}.json").is_file()}
    machines = {(n["machine"]["cpu_model"], n["machine"]["fingerprint"])
                for _, n, _ in found.values()}  # fmt: skip
    if len(machines) != 1:
        raise SystemExit(f"the sessions ran on several machines, not comparable: {machines}")
    ((model, fingerprint),) = machines
    lines = [
        f"Machine {model} (fingerprint `{fingerprint}`).",
        "",
        "| design | measured (UTC) | rounds | session | a round |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for name, (session, noise, _) in found.items():
        rounds, elapsed = session["session"]["rounds"], session["session"]["elapsed_s"]
        when = noise["measured"][:16].replace("T", " ")
        lines.append(f"| {name} | {when} | {rounds} | {elapsed:.0f} s | {elapsed / rounds:.0f} s |")
    header = " | ".join(f"{name}: spread, rounds, a worker" for name in found)
    lines += ["", f"| cell | {header} |", "| --- |" + " ---: |" * len(found)]
    needed = {name: _needed(noise) for name, (_, noise, _) in found.items()}
    walls = {name: _walls(costs) for name, (_, _, costs) in found.items()}
    for cell in dict.fromkeys(c for _, noise, _ in found.values() for c in noise["cells"]):
        texts = []
        for name, (_, noise, _) in found.items():
            measured = noise["cells"].get(cell)
            spread = f"{measured['spread'] * 100:.1f} %" if measured else "not measured"
            wall = walls[name].get(cell)
            worker = f"{wall:.1f} s" if wall is not None else "–"
            texts.append(f"{spread}, {needed[name].get(cell, '–')}, {worker}")
        lines.append(f"| {cell} | " + " | ".join(texts) + " |")
    noises = {name: noise for name, (_, noise, _) in found.items()}
    compiles = {name: _compiles(costs) for name, (_, _, costs) in found.items()}
    return "\n".join([*lines, "", *_groups(found, noises, walls, compiles)]) + "\n"


def _needed(noise: dict[str, Any]) -> dict[str, int]:
    margin = math.log1p(PASS_LIMIT)
    return {c: rounds_to_pass(m["spread"], margin, ALPHA) for c, m in noise["cells"].items()}


def _walls(costs: dict[str, Any]) -> dict[str, float]:
    return {cell: data["wall_s"] for cell, data in costs["cells"].items()}


def _compiles(costs: dict[str, Any]) -> dict[str, float]:
    if costs["format"] < COSTS_FORMAT:
        raise SystemExit("costs written before their compile time was kept: run --costs again")
    return {cell: data["compile_s"] for cell, data in costs["cells"].items()}


def _groups(
    found: dict[str, tuple[dict[str, Any], ...]],
    noises: dict[str, dict[str, Any]],
    walls: dict[str, dict[str, float]],
    compiles: dict[str, dict[str, float]],
) -> list[str]:
    """Per group of stacks (each adding to the ones before): what a round of its cells costs
    in each design, from that design's own workers (sequential: both sides' workers in turn;
    duet: the sides at once, each on its core), how many rounds a CI job's budget affords at
    that cost, and how many of the group's cells those rounds can gate: ab's triage with the
    design's noise table, the cells all shown within the limit together with 80 %
    probability; and of a round's cost, what its workers' first runs spent compiling (the
    most a compile cache kept across rounds could save)."""
    header = " | ".join(f"{name}: a round (compiling), rounds in {BUDGET_S // 60:.0f} min, "
                        "cells they gate" for name in found)  # fmt: skip
    lines = [f"| stacks | cells | {header} |", "| --- | ---: |" + " ---: |" * len(found)]
    stacks: tuple[str, ...] = ()
    for group, more in GROUPS.items():
        stacks += more
        texts, count = [], 0
        for name, (session, _, _) in found.items():
            cells = [c for c in walls[name] if any(f" {stack} " in c for stack in stacks)]
            cost = _workers_cost(name, walls[name], cells)
            cost += _overhead(name, session, walls[name], cells)
            rounds = int(BUDGET_S // cost)
            decided = len(cells) - len(triage(_table(noises[name]), cells, PASS_LIMIT * 100,
                                              ALPHA, rounds))  # fmt: skip
            compiling = _workers_cost(name, compiles[name], cells)
            texts.append(f"{cost:.0f} s ({compiling:.1f} s), {rounds}, {decided}")
            count = len(cells)
        lines.append(f"| {group} | {count} | " + " | ".join(texts) + " |")
    return lines


def _table(noise: dict[str, Any]) -> NoiseTable:
    """The session's noise table as ab reads it (on any machine: this only renders it)."""
    cells = {cell: CellNoise(**data) for cell, data in noise["cells"].items()}
    machine = noise["machine"]
    return NoiseTable(machine["fingerprint"], machine["cpu_model"], noise["measured"],
                      noise["command"], noise["rounds"], cells)  # fmt: skip


def _workers_cost(design: str, walls: dict[str, float], cells: list[str]) -> float:
    """A round's workers: both sides in turn, or (duet) the sides at once."""
    one_side = sum(walls[c] for c in cells)
    return one_side if design.endswith("duet") else 2 * one_side


def _overhead(
    design: str, session: dict[str, Any], walls: dict[str, float], cells: list[str]
) -> float:
    """What a round of ``cells`` costs beyond its workers' measured spans: the session's
    measured round less all its workers, shared by the workers the round starts (a worker a
    cell, or a stack with shared workers) and charged by the workers ``cells`` start. Each
    worker's start (Python, stackwars, the framework's checks) is most of it; the sides' own
    processes are a small part charged alike, so a small group's cost is a little low."""
    measured = session["session"]["elapsed_s"] / session["session"]["rounds"]
    total = max(0.0, measured - _workers_cost(design, walls, list(walls)))
    return total * len(_workers(design, cells)) / len(_workers(design, list(walls)))


def _workers(design: str, cells: list[str]) -> set[str]:
    """The workers one side starts for ``cells``: one a cell, or one a stack (per-stack)."""
    if design.startswith("per-stack"):
        return {cell.rsplit(" @ ", 1)[0].rsplit(" ", 1)[1] for cell in cells}
    return set(cells)


if __name__ == "__main__":
    if sys.argv[1] == "--costs":
        for design in DESIGNS:
            if (Path(sys.argv[2]) / f"{design}-rounds").is_dir():
                write_costs(Path(sys.argv[2]), design)
    else:
        sys.stdout.write(render(Path(sys.argv[1])))
