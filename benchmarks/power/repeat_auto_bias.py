"""Benchmark: how low `run --repeat auto` biases a cell's spread across workers (issue 34, item 6).

    python benchmarks/power/repeat_auto_bias.py [--sessions 2000]

`run --repeat auto` measures three workers a cell, then adds a worker at a time to the cells
whose interval across workers is still wider than ±3 %, up to ten. It stops on the spread it
measures, so a cell stops early when its workers happen to agree: the spread it keeps is
smaller than the workers' real spread, and a later comparison that reads it is too sure.

This drives the project's own rule (`service.adaptive.grow` with `wide_cells`, the functions
`stackwars run --repeat auto` calls) on simulated workers whose log medians are normal with a
known standard deviation, and prints, for each spread, the mean of the kept sample variance
over the true one (1.0 when unbiased), beside a fixed count of workers (10, unbiased) for
contrast. No worker process starts: `execute` returns the simulated cells.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable

from stackwars.config import RunOptions
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, Steady
from stackwars.runner import plan
from stackwars.runner.protocol import CellSpec
from stackwars.service import adaptive, api

SPREADS = (0.005, 0.01, 0.02, 0.03, 0.05)
SPEC = CellSpec("gemm", {"n": 16, "dtype": "float32"}, "numpy:eager")


def simulated(spread: float, rng: random.Random) -> Callable[[api.PlannedRun], Run]:
    """An ``execute`` that ends each planned cell with one worker median drawn at ``spread``."""

    def execute(part: api.PlannedRun) -> Run:
        for planned in part.cells:
            median = 1e-3 * math.exp(rng.gauss(0.0, spread))
            steady = Steady(median_s=median, samples_s=[median])
            spec = planned.spec
            cell = Cell(spec.workload, spec.params, spec.stack, repeat=spec.repeat, steady=steady)
            cell.status, cell.wall_s = "ok", 1.0
            part.record.cells.append(cell)
        return part.record

    return execute


def one_session(spread: float, rng: random.Random) -> float:
    """The kept variance of the log worker medians over the true one, for one cell."""
    options = RunOptions()
    specs = [CellSpec(SPEC.workload, SPEC.params, SPEC.stack, repeat=i) for i in range(3)]
    record = Run(id="sim", started=now(), machine={}, versions={}, argv=[])
    planned = api.PlannedRun(record, plan.plan(specs, options.memory_budget), options, [])
    run = adaptive.grow(
        planned,
        simulated(spread, rng),
        adaptive.wide_cells(),
        settings=adaptive.Adaptive(),
        clock=lambda: 0.0,
    )
    logs = [math.log(cell.steady.samples_s[0]) for cell in run.cells]
    return statistics.variance(logs) / spread**2


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print("| worker spread | kept variance ÷ true, --repeat auto | fixed 10 workers |")
    print("| ---: | ---: | ---: |")
    for spread in SPREADS:
        auto = statistics.mean(one_session(spread, rng) for _ in range(args.sessions))
        fixed = statistics.mean(
            statistics.variance([rng.gauss(0.0, spread) for _ in range(10)]) / spread**2
            for _ in range(args.sessions)
        )
        print(f"| {spread:.1%} | {auto:.3f} | {fixed:.3f} |")


if __name__ == "__main__":
    main()
