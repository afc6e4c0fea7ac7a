"""Benchmark: what running a cell as a Ray task costs, over running it in a local worker.

    python benchmarks/ray_overhead.py [--cells 6] [--repeats 5] [--n 16] [--budget 0.05]
                                      [--ray-address HOST:PORT | --nodes N]

The same tiny cells (``gemm`` with ``n=16`` on ``numpy:eager``, ``--cells`` fresh workers
each time: a worker's life is then mostly its start-up) run through the local executor and
through the Ray executor, alternately, ``--repeats`` times each. Per cell it reports the time
the run waited (the run's wall time over its cells, storing included), the worker's own life
(``Cell.wall_s``: from its start to its answer, seen by whoever started it, this process or
the Ray task), and the difference, the overhead of the executor. Starting the local Ray
instance (or joining ``--ray-address``) happens once per run and is reported apart. Prints a
Markdown table: medians over the repeats, with their range.

``--nodes N`` runs the Ray side on a cluster of this host instead (Ray's multi-node test
cluster, tests/data/ray_nodes.py, on loopback): a head that takes no cell and ``N`` worker
nodes of one CPU, each offering one ``stackwars_cell``, so every cell crosses from the head's
raylet to another's, up to ``N`` at a time. The overhead is then each cell's share of the
slots' time less its worker's life (with one node: the run's wait less the life, as above).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stackwars.runner.session import Executor
from stackwars.service import api


def plan(args: argparse.Namespace) -> api.PlannedRun:
    selection = api.Selection(workload="gemm", params=(f"n={args.n}",), stacks="numpy:eager")
    return api.plan_run(selection, api.Measure(budget_s=args.budget, repeat=args.cells))


HELPER = Path(__file__).resolve().parents[1] / "tests" / "data" / "ray_nodes.py"


def start_nodes(count: int, folder: str) -> tuple[subprocess.Popen[str], str]:
    """A head taking no cell and ``count`` one-CPU nodes with a cell slot each; the helper
    holding them (its input closed, it ends them) and the head's address."""
    node = {"num_cpus": 1, "resources": {"stackwars_cell": 1}}
    specs = {"head": {"num_cpus": 1}, **{f"node{i}": node for i in range(count)}}
    helper = subprocess.Popen(
        [sys.executable, str(HELPER), folder, json.dumps(specs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert helper.stdin is not None and helper.stdout is not None
    address = json.loads(helper.stdout.readline())["address"]
    for name in list(specs)[1:]:
        helper.stdin.write(f"add {name}\n")
        helper.stdin.flush()
        assert "added" in json.loads(helper.stdout.readline())
    return helper, address


def one_run(
    executor: Executor, args: argparse.Namespace, db: Path, slots: int = 1
) -> tuple[float, float]:
    """Seconds per cell: what the run waited (times the cells it ran at once), and the
    worker's own life."""
    planned = plan(args)
    started = time.perf_counter()
    record = api.execute(planned, api.open_store(str(db)), api.SilentReporter(), executor=executor)
    waited = time.perf_counter() - started
    assert all(cell.status == "ok" for cell in record.cells), [c.reason for c in record.cells]
    lived = statistics.mean(cell.wall_s or 0.0 for cell in record.cells)
    return waited * slots / len(record.cells), lived


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


def measure(
    args: argparse.Namespace, address: str | None, folder: Path
) -> tuple[dict[str, list[tuple[float, float]]], float]:
    """Both executors' runs, alternated (both see the same drift of the machine), and how long
    starting or joining Ray took."""
    options = plan(args).options
    local = api.open_executor("local", None, options)
    started = time.perf_counter()
    ray = api.open_executor("ray", address, options)
    ray_start_s = time.perf_counter() - started
    name = f"ray, {args.nodes} node{'s' if args.nodes > 1 else ''}" if args.nodes else "ray"
    results: dict[str, list[tuple[float, float]]] = {"local": [], name: []}
    try:
        for _ in range(args.repeats):
            results["local"].append(one_run(local, args, folder / "local.sqlite"))
            results[name].append(one_run(ray, args, folder / "ray.sqlite", max(args.nodes, 1)))
    finally:
        ray.close()
    return results, ray_start_s


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=6, help="fresh workers per run (6)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per executor (5)")
    parser.add_argument("--n", type=int, default=16, help="the GEMM's size (16)")
    parser.add_argument("--budget", type=float, default=0.05, help="steady budget, s (0.05)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--ray-address", help="a cluster to join (default: a local instance)")
    where.add_argument("--nodes", type=int, default=0, help="a cluster of N nodes, this host")
    args = parser.parse_args()
    # Short: Ray's socket paths under it must stay < 108 characters.
    with tempfile.TemporaryDirectory(prefix="swo-", dir="/tmp") as folder:
        helper, address = start_nodes(args.nodes, folder) if args.nodes else (None, None)
        try:
            results, ray_start_s = measure(args, address or args.ray_address, Path(folder))
        finally:
            if helper is not None:
                helper.communicate(timeout=120)  # its input closed, it ends every node
    print(f"gemm(n={args.n}) on numpy:eager, {args.cells} cells per run, {args.repeats} runs")
    print()
    print(table(results, ray_start_s))


if __name__ == "__main__":
    main()
