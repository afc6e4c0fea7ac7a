"""Benchmark: what running a cell as a Ray task costs, over running it in a local worker.

    python benchmarks/ray_overhead.py [--cells 6] [--repeats 5] [--n 16] [--budget 0.05]
                                      [--ray-address HOST:PORT]

The same tiny cells (``gemm`` with ``n=16`` on ``numpy:eager``, ``--cells`` fresh workers
each time: a worker's life is then mostly its start-up) run through the local executor and
through the Ray executor, alternately, ``--repeats`` times each. Per cell it reports the time
the run waited (the run's wall time over its cells, storing included), the worker's own life
(``Cell.wall_s``: from its start to its answer, seen by whoever started it, this process or
the Ray task), and the difference, the overhead of the executor. Starting the local Ray
instance (or joining ``--ray-address``) happens once per run and is reported apart. Prints a
Markdown table: medians over the repeats, with their range.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from stackwars.runner.session import Executor
from stackwars.service import api


def plan(args: argparse.Namespace) -> api.PlannedRun:
    selection = api.Selection(workload="gemm", params=(f"n={args.n}",), stacks="numpy:eager")
    return api.plan_run(selection, api.Measure(budget_s=args.budget, repeat=args.cells))


def one_run(executor: Executor, args: argparse.Namespace, db: Path) -> tuple[float, float]:
    """Seconds per cell: what the run waited, and the worker's own life."""
    planned = plan(args)
    started = time.perf_counter()
    record = api.execute(planned, api.open_store(str(db)), api.SilentReporter(), executor=executor)
    waited = time.perf_counter() - started
    assert all(cell.status == "ok" for cell in record.cells), [c.reason for c in record.cells]
    return waited / len(record.cells), statistics.mean(c.wall_s or 0.0 for c in record.cells)


def spread(values: list[float]) -> str:
    median = statistics.median(values)
    return f"{median * 1e3:.0f} ms ({min(values) * 1e3:.0f}–{max(values) * 1e3:.0f})"


def table(results: dict[str, list[tuple[float, float]]], ray_start_s: float) -> str:
    lines = [
        "| executor | run waited per cell | worker's life per cell | overhead per cell |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, runs in results.items():
        waited, lived = [w for w, _ in runs], [life for _, life in runs]
        overhead = [w - life for w, life in runs]
        lines.append(f"| {name} | {spread(waited)} | {spread(lived)} | {spread(overhead)} |")
    lines += ["", f"Ray's start or join, once per run: {ray_start_s:.1f} s"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=6, help="fresh workers per run (6)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per executor (5)")
    parser.add_argument("--n", type=int, default=16, help="the GEMM's size (16)")
    parser.add_argument("--budget", type=float, default=0.05, help="steady budget, s (0.05)")
    parser.add_argument("--ray-address", help="a cluster to join (default: a local instance)")
    args = parser.parse_args()
    options = plan(args).options
    local = api.open_executor("local", None, options)
    started = time.perf_counter()
    ray = api.open_executor("ray", args.ray_address, options)
    ray_start_s = time.perf_counter() - started
    results: dict[str, list[tuple[float, float]]] = {"local": [], "ray": []}
    with tempfile.TemporaryDirectory(prefix="stackwars-ray-overhead-") as folder:
        try:
            for _ in range(args.repeats):  # alternated: both see the same drift of the machine
                results["local"].append(one_run(local, args, Path(folder) / "local.sqlite"))
                results["ray"].append(one_run(ray, args, Path(folder) / "ray.sqlite"))
        finally:
            ray.close()
    print(f"gemm(n={args.n}) on numpy:eager, {args.cells} cells per run, {args.repeats} runs")
    print()
    print(table(results, ray_start_s))


if __name__ == "__main__":
    main()
