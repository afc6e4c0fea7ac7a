"""--workers per-stack: a stack's cells measured one after another in one shared worker, in a
drawn order (runner/shared_worker.py), each cell's steady time and peaks its own, its place in
the worker recorded, a killed cell not losing the others, a cell the worker cannot measure
measured apart with why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.frameworks.base import RunSettings
from stackwars.report.table import SHARED_WORKER_MARK, build_tables
from stackwars.results.counts import count_changes
from stackwars.results.schema import Cell, CellSpec, Compiles, Worker
from stackwars.runner import plan
from stackwars.runner.protocol import Request
from stackwars.runner.session import CellTask, SharedTask, cell_tasks
from stackwars.runner.worker import CellRun, OwnWorkerNeeded
from stackwars.service.choices import Measure, run_options
from stackwars.timing.timer import TimingConfig
from test_gate import QUICK as ONE_STACK
from test_gate import REGRESSED, stackwars

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")
QUICK = TimingConfig(steady_budget_s=0.05, min_steady_s=0.0, warmup_budget_s=0.05)
MIB = 2**20


def spec(workload: str, stack: str, **params: object) -> CellSpec:
    return CellSpec(workload, dict(params), stack)


def mixed_cells() -> list[CellSpec]:
    """Three GEMM sizes on two stacks, the stacks interleaved as a suite lists them."""
    return [spec("gemm", stack, n=n) for n in (8, 16, 32) for stack in ("numpy:eager", "jax:jit")]


def test_per_stack_puts_each_stacks_cells_together_in_a_drawn_order() -> None:
    cells = mixed_cells()
    orders = set()
    for seed in range(8):
        scheduled = plan.schedule(cells, 1, seed, "per-stack")
        assert sorted(map(str, scheduled)) == sorted(map(str, cells))
        stacks = [cell.stack for cell in scheduled]
        assert stacks == ["numpy:eager"] * 3 + ["jax:jit"] * 3  # together, as first listed
        assert plan.schedule(cells, 1, seed, "per-stack") == scheduled  # the seed decides
        orders.add(tuple(cell.params["n"] for cell in scheduled[:3]))
    assert len(orders) > 1  # which cell goes first changes with the seed
    assert plan.schedule(cells, 1, 0) == cells  # per-cell: the order is the suite's


def test_per_stack_keeps_each_repetition_in_workers_of_its_own() -> None:
    scheduled = plan.schedule(mixed_cells(), 2, 5, "per-stack")
    keys = [plan.shared_worker_key(cell) for cell in scheduled]
    runs = [key for i, key in enumerate(keys) if i == 0 or keys[i - 1] != key]
    assert len(runs) == 4 and len(set(runs)) == 4  # two repetitions x two stacks, each whole


def test_consecutive_cells_of_a_stack_are_one_task_and_a_skipped_cell_its_own() -> None:
    options = RunOptions(workers="per-stack")
    cells = [
        spec("gemm", "numpy:eager", n=8, dtype="float32"),
        spec("gemm", "numpy:eager", n=16, dtype="float32"),
        spec("gemm", "numpy:eager", n=32, dtype="float32"),
        spec("no-such-workload-here", "numpy:eager"),
    ]
    planned = plan.plan_for(cells[:3], options)
    skipped = plan.PlannedCell(cells[3], skip_reason="not here", skip_status="unsupported")
    tasks = cell_tasks([*planned, skipped], options)
    assert [type(task) for task in tasks] == [SharedTask, CellTask]
    shared = tasks[0]
    assert isinstance(shared, SharedTask) and len(shared.cells) == 3
    assert shared.label() == "numpy:eager @ cpu: 3 cells in one worker"
    need = shared.placement().memory_bytes
    assert need == max(item.predicted_bytes or 0 for item in planned)  # one cell at a time
    # Per cell (the default): a task each.
    assert [type(t) for t in cell_tasks(planned, RunOptions())] == [CellTask] * 3


def test_cells_jax_must_start_apart_get_workers_apart() -> None:
    """A float64 cell needs 64-bit JAX, which a worker started for float32 cannot give it."""
    options = RunOptions(workers="per-stack")
    cells = [spec("gemm", "jax:jit", n=8, dtype=dtype) for dtype in ("float32", "float64")]
    tasks = cell_tasks(plan.plan_for(cells, options), options)
    assert [type(task) for task in tasks] == [CellTask, CellTask]


def test_per_stack_with_cold_then_warm_is_refused_with_the_fix() -> None:
    with pytest.raises(UsageError, match="--workers per-cell"):
        run_options(Measure(workers="per-stack", cache="cold-then-warm"), "cpu", None, ())
    with pytest.raises(UsageError, match="allowed: per-cell, per-stack"):
        run_options(Measure(workers="per-node"), "cpu", None, ())


def counted(first_run: int, position: int) -> Cell:
    cell = Cell("gemm", {"n": 8}, "jax:jit", status="ok", worker=Worker(3, position))
    cell.compiles = Compiles(first_run=first_run, second_run=0, steady=0)
    return cell


def test_a_first_run_count_after_earlier_cells_is_not_compared() -> None:
    fresh = count_changes([counted(1, 0)] * 2, [counted(2, 0)] * 2)
    assert [change.what for change in fresh] == ["compilations in the first run"]
    # What earlier cells compiled may serve a later one: the order drawn moves its count.
    assert count_changes([counted(1, 0)] * 2, [counted(2, 1), counted(2, 0)]) == ()


def test_a_first_run_after_earlier_cells_is_marked_in_the_table() -> None:
    later = counted(1, 2)
    later.times.first_run_s, later.steady.median_s = 0.002, 0.001
    (table,) = build_tables([later])
    assert f"2.00 ms {SHARED_WORKER_MARK}" in table.rows[0].values
    marked = f"{SHARED_WORKER_MARK} first run in a worker"
    assert any(note.startswith(marked) for note in table.notes)
    (fresh,) = build_tables([counted(1, 0)])
    assert not any(note.startswith(SHARED_WORKER_MARK) for note in fresh.notes)


def request(tmp_path: Path, workload: str, **settings: object) -> Request:
    return Request(
        CellSpec(workload, {"size": 1}, "numpy:eager"),
        RunSettings(cache_dir=str(tmp_path), **settings),  # type: ignore[arg-type]
        QUICK,
        workload_files=[FAULTY],
    )


def test_a_later_cell_reuses_the_started_framework_and_keeps_its_own_peak(
    tmp_path: Path,
) -> None:
    workloads.load_workload_file(FAULTY)
    first = CellRun(request(tmp_path, "big-first"), worker=Worker(2, 0))
    assert first.run().status == "ok" and first.started is not None
    assert first.cell.times.import_s is not None
    later = CellRun(request(tmp_path, "doubles"), started=first.started, worker=Worker(2, 1))
    cell = later.run()
    assert cell.status == "ok" and cell.worker == Worker(2, 1)
    assert cell.times.import_s is None and cell.times.init_s is None  # started once, earlier
    assert cell.settings["versions"] == first.cell.settings["versions"]
    if cell.memory.first_run_peak_rss_bytes is not None:  # the kernel lets the mark be reset
        # big-first's 256 MiB first run is not in the later cell's peak.
        assert cell.memory.peak_rss_bytes is not None
        assert cell.memory.peak_rss_bytes < (first.cell.memory.first_run_peak_rss_bytes or 0)
    with pytest.raises(OwnWorkerNeeded, match="x64"):
        CellRun(request(tmp_path, "doubles", x64=True), started=first.started).run()


def suite_file(tmp_path: Path, *entries: str) -> Path:
    path = tmp_path / "suite.toml"
    cells = "".join(
        f'[[cells]]\nworkload = "{name}"\nparams = {{ size = [{sizes}] }}\n'
        'stacks = ["numpy:eager"]\n'
        for name, sizes in (entry.split(":") for entry in entries)
    )
    head = 'name = "shared"\ndescription = "cells sharing a worker"\n'
    path.write_text(f"{head}[timing]\nsteady_budget_s = 0.05\n{cells}", encoding="utf-8")
    return path


def run_cells(tmp_path: Path, *options: str, entries: tuple[str, ...]) -> list[dict[str, object]]:
    out = tmp_path / "run.json"
    argv = ["run", "--workload-file", FAULTY, "--suite-file", str(suite_file(tmp_path, *entries))]
    argv += ["--workers", "per-stack", "--second-look", "0", "--quiet", *options]
    assert main([*argv, "--db", str(tmp_path / "db"), "--json", str(out)]) in (0, 1)
    return json.loads(out.read_text(encoding="utf-8"))["cells"]


@pytest.mark.slow
def test_a_stacks_cells_share_one_worker_each_with_its_own_figures(tmp_path: Path) -> None:
    cells = run_cells(tmp_path, entries=("doubles:1,2", "big-first:1"))
    assert [c["status"] for c in cells] == ["ok"] * 3
    by_position = sorted(cells, key=lambda c: c["worker"]["position"])  # type: ignore[index]
    assert [c["worker"] for c in by_position] == [{"cells": 3, "position": p} for p in range(3)]
    imported = [c["times"]["import_s"] is not None for c in by_position]  # type: ignore[index]
    assert imported == [True, False, False]
    # The parent's view of the process tree held all three: no cell claims it.
    assert all(c["memory"]["peak_tree_rss_bytes"] is None for c in cells)  # type: ignore[index]
    big = next(c for c in cells if c["workload"] == "big-first")
    assert big["memory"]["peak_rss_bytes"] >= 256 * MIB  # type: ignore[index]
    for cell in cells:
        if cell["workload"] != "big-first" and cell["memory"]["first_run_peak_rss_bytes"]:  # type: ignore[index]
            assert cell["memory"]["peak_rss_bytes"] < 256 * MIB  # type: ignore[index]


@pytest.mark.slow
def test_a_cell_killed_in_a_shared_worker_loses_no_other_cell(tmp_path: Path) -> None:
    cells = run_cells(tmp_path, "--timeout", "4", entries=("doubles:1,2", "hangs:1"))
    status = {(c["workload"], c["params"]["size"]): c["status"] for c in cells}  # type: ignore[index]
    assert status == {("doubles", 1): "ok", ("doubles", 2): "ok", ("hangs", 1): "timeout"}
    hang = next(c for c in cells if c["workload"] == "hangs")
    assert "timeout" in str(hang["reason"])


WIDE_OR_NARROW = """
import numpy as np
from stackwars.workloads import Param, Work, Workload, register

register(Workload(
    name="wide-or-narrow",
    description="doubles float64 or float32 inputs; no dtype parameter says which",
    params=(Param("wide", int, 0, "1: float64 inputs"),),
    make_inputs=lambda p, seed: (np.arange(4.0, dtype="float64" if p["wide"] else "float32"),),
    reference=lambda p, inputs: inputs[0] * 2,
    work=lambda p: Work(flops=4.0, bytes=64.0),
    memory_bytes=lambda p: 1024,
    implementations={"jax": lambda p: lambda x: x * 2},
))
"""


@pytest.mark.slow
def test_a_cell_the_shared_worker_cannot_start_for_is_measured_apart_saying_why(
    tmp_path: Path,
) -> None:
    """--x64 auto decides 64-bit JAX from a cell's inputs, in its worker: the worker started
    for one cell cannot give the other the other setting."""
    workload = tmp_path / "wide.py"
    workload.write_text(WIDE_OR_NARROW, encoding="utf-8")
    out = tmp_path / "run.json"
    argv = ["run", "--workload-file", str(workload), "--workload", "wide-or-narrow"]
    argv += ["--param", "wide=0,1", "--stacks", "jax:eager", "--workers", "per-stack"]
    argv += ["--second-look", "0", "--quiet", "--target-ci", "50", "--budget", "0.05"]
    assert main([*argv, "--db", str(tmp_path / "db"), "--json", str(out)]) == 0
    cells = json.loads(out.read_text(encoding="utf-8"))["cells"]
    assert [c["status"] for c in cells] == ["ok", "ok"]
    apart = [c for c in cells if c["worker"] == {"cells": 1, "position": 0}]
    shared = [c for c in cells if c["worker"] == {"cells": 2, "position": 0}]
    assert len(apart) == 1 and len(shared) == 1
    assert any("measured in a worker of its own" in w and "x64" in w for w in apart[0]["warnings"])
    assert {c["settings"]["run"]["x64"] for c in cells} == {True, False}


@pytest.mark.slow
@pytest.mark.serial
def test_ab_rounds_share_a_worker_a_stack_each_side_drawing_the_round_s_order(
    tmp_path: Path,
) -> None:
    """Both sides of a round draw the same order (ab passes the round as --order-seed), so a
    cell's place in its worker is paired away."""
    out = tmp_path / "c.json"
    done = stackwars(
        "ab", "--max-rounds", "3", "--min-rounds", "3", "--fail-above", "100",
        "--json", str(out), "--out", str(tmp_path / "rounds"), "--",
        "--workload-file", str(REGRESSED), "--workload", "regressed-gemm", "--param",
        "n=16,24,32", *ONE_STACK, "--workers", "per-stack", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 3), done.stdout + done.stderr
    orders: dict[str, list[tuple[int, ...]]] = {"baseline": [], "candidate": []}
    for side, found in orders.items():
        for path in sorted((tmp_path / "rounds").glob(f"{side}-0[1-3].json")):
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            assert [c["worker"]["cells"] for c in cells] == [3, 3, 3]
            by_place = sorted(cells, key=lambda c: c["worker"]["position"])
            found.append(tuple(c["params"]["n"] for c in by_place))
    assert orders["baseline"] == orders["candidate"] and len(orders["baseline"]) == 3


@pytest.mark.slow
def test_a_worker_s_peak_is_its_own_not_the_parent_s_it_was_started_from(tmp_path: Path) -> None:
    """Linux carries a process's peak from before exec into ru_maxrss: a worker started from
    a parent holding 600 MiB read 600 MiB. The peak is the worker's own image's."""
    hoard = bytearray(600 * MIB)
    for index in range(0, len(hoard), 4096):
        hoard[index] = 1  # resident
    cells = run_cells(tmp_path, entries=("doubles:1",))
    assert cells[0]["memory"]["peak_rss_bytes"] < 300 * MIB  # type: ignore[index]
    del hoard
