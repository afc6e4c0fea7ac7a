"""Benchmark: the spread `run --repeat auto` keeps, against the true one (issue 34, item 6).

    python benchmarks/power/repeat_auto_bias.py [--sessions 2000]

`run --repeat auto` plans each cell's workers from a pilot of three that stays out of the
numbers (`service.adaptive.pilot_then_grow`, the function `stackwars run --repeat auto`
calls), so the count of workers does not depend on the spread the run keeps. The rule before
added a worker at a time while the run's own interval across workers was wider than ±3 %: it
stopped where its workers happened to agree, and kept too small a spread. That rule is
written out here (`stopping_rule`) for contrast; a fixed 10 workers is the unbiased reference.

Workers are simulated: their log medians are normal with a known standard deviation. The
table gives, per spread, the mean of the kept sample variance over the true one (1.0 when
unbiased) and the mean workers a cell used, the pilot's included. No process starts.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable

from scipy.stats import t as student

from stackwars.config import RunOptions
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, CellSpec, Steady
from stackwars.runner import plan
from stackwars.service import adaptive, api

SPREADS = (0.005, 0.01, 0.02, 0.03, 0.05)
SPEC = CellSpec("gemm", {"n": 16, "dtype": "float32"}, "numpy:eager")
TARGET = adaptive.ACROSS_WORKERS_TARGET


def measured(spread: float, rng: random.Random) -> Callable[[api.PlannedRun], list[Cell]]:
    """Each planned cell as one simulated worker, its median drawn at ``spread``."""

    def measure(part: api.PlannedRun) -> list[Cell]:
        cells = []
        for planned in part.cells:
            median = 1e-3 * math.exp(rng.gauss(0.0, spread))
            steady = Steady(median_s=median, samples_s=[median])
            spec = planned.spec
            cell = Cell(spec.workload, spec.params, spec.stack, repeat=spec.repeat, steady=steady)
            cell.status, cell.wall_s = "ok", 1.0
            cells.append(cell)
        return cells

    return measure


def pilot_rule(spread: float, rng: random.Random) -> tuple[float, int]:
    """The kept variance over the true one, and the workers used, for one cell."""
    options = RunOptions()
    specs = [CellSpec(SPEC.workload, SPEC.params, SPEC.stack, repeat=i) for i in range(3)]
    record = Run(id="sim", started=now(), machine={}, versions={}, argv=[])
    planned = api.PlannedRun(record, plan.plan(specs, options.memory_budget), options, [])
    measure = measured(spread, rng)

    def execute(part: api.PlannedRun) -> Run:
        part.record.cells.extend(measure(part))
        return part.record

    run, _ = adaptive.pilot_then_grow(
        planned, execute, measure, settings=adaptive.Adaptive(), clock=lambda: 0.0
    )
    logs = [math.log(cell.steady.samples_s[0]) for cell in run.cells]
    return statistics.variance(logs) / spread**2, len(logs) + 3


def stopping_rule(spread: float, rng: random.Random) -> tuple[float, int]:
    """The rule before: 3 workers, then one more while the interval is wider than ±3 %."""
    logs = [rng.gauss(0.0, spread) for _ in range(3)]
    while len(logs) < 10:
        t = float(student.ppf(0.975, len(logs) - 1))
        if math.expm1(t * statistics.stdev(logs) / math.sqrt(len(logs))) <= TARGET:
            break
        logs.append(rng.gauss(0.0, spread))
    return statistics.variance(logs) / spread**2, len(logs)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(
        "| worker spread | kept variance ÷ true (workers), pilot | the stopping rule before "
        "| fixed 10 workers |"
    )
    print("| ---: | ---: | ---: | ---: |")
    for spread in SPREADS:
        cells = []
        for rule in (pilot_rule, stopping_rule):
            kept = [rule(spread, rng) for _ in range(args.sessions)]
            ratio = statistics.mean(ratio for ratio, _ in kept)
            cells.append(f"{ratio:.3f} ({statistics.mean(n for _, n in kept):.1f})")
        fixed = statistics.mean(
            statistics.variance([rng.gauss(0.0, spread) for _ in range(10)]) / spread**2
            for _ in range(args.sessions)
        )
        print(f"| {spread:.1%} | {cells[0]} | {cells[1]} | {fixed:.3f} |")


if __name__ == "__main__":
    main()
