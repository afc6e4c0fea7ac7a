"""Benchmark: how many cells a second the results store takes, the bound docs/cluster.md puts on
a cluster's run (the driver stores each cell as it ends, one SQLite transaction each).

    python benchmarks/store_rate.py [--cells 500] [--samples 200]

Stores ``--cells`` cells of ``--samples`` steady samples each (the size of a real cell's JSON)
into a fresh store in a temporary folder, one ``Store.add_cell`` at a time as a run does, and
prints the median and 90th percentile per cell, then the time of one ``--json`` rewrite of the
whole run (what ``run --json`` does after every cell).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from stackwars.results import store
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, Steady


def cell(index: int, samples: int) -> Cell:
    times = [1e-3 * (1 + i * 1e-4) for i in range(samples)]
    steady = Steady(median_s=1e-3, samples_s=times, blocks=samples)
    stored = Cell("gemm", {"n": index}, "numpy:eager", status="ok", steady=steady)
    stored.node = {"executor": "ray", "fingerprint": "0" * 12, "ray_resources": {"GPU": 1.0}}
    return stored


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=500, help="cells stored (500)")
    parser.add_argument("--samples", type=int, default=200, help="samples a cell (200)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stackwars-store-rate-") as folder:
        results = store.Store(Path(folder) / "db.sqlite")
        run = Run("rate", now(), {}, {}, [])
        results.begin_run(run)
        took = []
        for index in range(args.cells):
            run.cells.append(cell(index, args.samples))
            started = time.perf_counter()
            results.add_cell(run, run.cells[-1])
            took.append(time.perf_counter() - started)
        started = time.perf_counter()
        run.write_json(Path(folder) / "run.json")
        rewrite = time.perf_counter() - started
    size = len(json.dumps(run.cells[-1].to_dict(), indent=1))
    ninetieth = statistics.quantiles(took, n=10)[-1]
    print(f"{args.cells} cells of {size} bytes: {statistics.median(took) * 1e3:.1f} ms a cell")
    print(f"(90th percentile {ninetieth * 1e3:.1f} ms): {1 / statistics.median(took):.0f} cells/s")
    print(f"one --json rewrite of the run: {rewrite * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
