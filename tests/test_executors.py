"""Executors and machines, without Ray: the run loop with a fake executor that finishes cells
out of order or is interrupted, choosing an executor, and readers that never mix machines
(tables, --repeat merging, comparisons)."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import threading
from collections.abc import Generator, Sequence
from typing import Any

import pytest

from stackwars import runner
from stackwars.cli import main
from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.report.comparison import comparison_notes
from stackwars.report.table import build_tables
from stackwars.results.aggregate import merge_repeats
from stackwars.results.comparison import UNDERPOWERED, Gate, compare_runs, decide
from stackwars.results.history import series_by_params
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, CellSpec, Steady
from stackwars.runner import executors, session
from stackwars.runner.plan import PlannedCell
from stackwars.runner.tasks import Caches, Where
from stackwars.service import api
from stackwars.service.comparisons import machine_mismatch


def node(host: str, fingerprint: str) -> dict[str, Any]:
    return {"executor": "ray", "hostname": host, "fingerprint": fingerprint}


def timed(stack: str, median: float, where: dict[str, Any], repeat: int = 0, seed: int = 0) -> Cell:
    rng = random.Random(seed)
    samples = [median * (1 + rng.gauss(0, 0.01)) for _ in range(40)]
    steady = Steady(median_s=sorted(samples)[20], samples_s=samples, blocks=40, stable=True)
    cell = Cell("gemm", {"n": 8}, stack, repeat=repeat, status="ok", steady=steady)
    cell.node = dict(where)
    return cell


A, B = node("big", "aaaaaaaaaaaa"), node("small", "bbbbbbbbbbbb")


class Reporter:
    def __init__(self) -> None:
        self.ended: list[str] = []

    def start_cell(self, label: str) -> None:
        del label

    def phase(self, text: str) -> None:
        del text

    def end_cell(self, cell: Cell) -> None:
        self.ended.append(cell.stack)


class Labels(Reporter):
    def __init__(self) -> None:
        super().__init__()
        self.started: list[str] = []

    def start_cell(self, label: str) -> None:
        self.started.append(label)


class ReversedExecutor:
    """Finishes the planned cells last first, as a cluster may; can stop with Ctrl-C."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self.interrupt_after = interrupt_after
        self.closed_stream = False

    def results(
        self, tasks: Sequence[Any], caches: Caches, reporter: Any
    ) -> Generator[Any, None, None]:
        try:
            for count, task in enumerate(reversed(tasks)):
                if count == self.interrupt_after:
                    raise KeyboardInterrupt
                yield timed(task.item.spec.stack, 1e-3, A, seed=count)
        finally:
            self.closed_stream = True

    def close(self) -> None:
        """Nothing held."""


def planned_run(stacks: Sequence[str]) -> tuple[list[PlannedCell], Run]:
    specs = [CellSpec("gemm", {"n": 8}, stack) for stack in stacks]
    run = Run("r", now(), {}, {}, [], planned=[dataclasses.asdict(spec) for spec in specs])
    return [PlannedCell(spec) for spec in specs], run


def test_the_loop_stores_cells_as_they_end_and_keeps_them_in_plan_order() -> None:
    planned, run = planned_run(["numpy:eager", "jax:jit", "torch:eager"])
    stored: list[str] = []
    reporter = Reporter()
    executor = ReversedExecutor()
    sinks = [lambda _run, cell: stored.append(cell.stack)]
    session.execute(planned, RunOptions(), run, sinks, reporter, executor=executor)
    assert stored == reporter.ended == ["torch:eager", "jax:jit", "numpy:eager"]
    assert [cell.stack for cell in run.cells] == ["numpy:eager", "jax:jit", "torch:eager"]
    assert run.status == "complete" and run.finished and executor.closed_stream


def test_ctrl_c_closes_the_executor_and_keeps_what_finished() -> None:
    planned, run = planned_run(["numpy:eager", "jax:jit", "torch:eager"])
    stored: list[str] = []
    executor = ReversedExecutor(interrupt_after=1)
    sinks = [lambda _run, cell: stored.append(cell.stack)]
    with pytest.raises(KeyboardInterrupt):
        session.execute(planned, RunOptions(), run, sinks, Reporter(), executor=executor)
    assert stored == ["torch:eager"] and run.status == "interrupted" and executor.closed_stream


def test_the_local_executor_records_this_machine_except_for_cells_that_ran_nowhere() -> None:
    spec = CellSpec("gemm", {"n": 8}, "numpy:eager")
    skipped = session.CellTask(PlannedCell(spec, skip_reason="not here"), RunOptions(), 0)
    (cell,) = executors.LocalExecutor().results([skipped], Caches(), Reporter())
    assert cell.status == "unsupported" and cell.node == {"executor": "local"}
    refused = session.CellTask(PlannedCell(spec), RunOptions(), 0)
    lost = refused.not_run("error", "its node left", {"executor": "ray"})
    assert (lost.status, lost.reason, lost.node) == ("error", "its node left", {"executor": "ray"})


def test_choosing_an_executor_is_checked() -> None:
    assert isinstance(api.open_executor("local", None, RunOptions()), executors.LocalExecutor)
    with pytest.raises(UsageError, match="unknown executor 'slurm'"):
        api.open_executor("slurm", None, RunOptions())
    with pytest.raises(UsageError, match="--ray-address says where --executor ray sends cells"):
        api.open_executor("local", "10.0.0.1:6379", RunOptions())
    with pytest.raises(UsageError, match="drop --ray-resource to run here"):
        api.open_executor("local", None, RunOptions(), ["sim_h100"])


def test_without_ray_the_ray_executor_is_one_line_naming_the_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if not installed
    monkeypatch.delitem(sys.modules, "stackwars.runner.ray_executor", raising=False)
    monkeypatch.delattr(runner, "ray_executor", raising=False)  # imported by another test
    db = tmp_path / "db.sqlite"
    argv = ["run", "--workload", "gemm", "--stacks", "numpy", "--executor", "ray"]
    assert main([*argv, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "stackwars: error: --executor ray needs Ray, which is not installed here: "
        "pip install 'stackwars[ray]'"
    )
    assert not db.exists()


def test_tables_group_by_machine_when_a_run_spans_several() -> None:
    skipped = Cell("gemm", {"n": 8}, "torch:eager", status="unsupported", reason="no torch")
    cells = [timed("numpy:eager", 1e-3, A), timed("jax:jit", 2e-3, B), skipped]
    cells.append(timed("jax:jit", 3e-3, A))
    tables = build_tables(cells)
    assert [table.title for table in tables] == [
        "gemm(n=8) @ cpu on big (aaaaaaaaaaaa)",
        "gemm(n=8) @ cpu on small (bbbbbbbbbbbb)",
    ]
    assert [row.stack for row in tables[0].rows] == ["numpy:eager", "jax:jit", "torch:eager"]
    assert [row.stack for row in tables[1].rows] == ["jax:jit"]
    assert tables[1].rows[0].values[-1] == "1.00×"  # its own baseline, not big's numpy
    one_machine = build_tables([timed("numpy:eager", 1e-3, A), timed("jax:jit", 2e-3, A)])
    assert [table.title for table in one_machine] == ["gemm(n=8) @ cpu"]


def test_repeats_on_different_machines_are_never_pooled() -> None:
    cells = [timed("numpy:eager", 1e-3, A, repeat=0), timed("numpy:eager", 2e-3, B, repeat=1)]
    cells.append(timed("numpy:eager", 1e-3, A, repeat=2, seed=3))
    merged = merge_repeats(cells)
    assert [(cell.node["fingerprint"], cell.settings.get("merged_workers")) for cell in merged] == [
        ("aaaaaaaaaaaa", 2),
        ("bbbbbbbbbbbb", None),
    ]


def test_comparisons_of_cells_from_different_machines_say_so_and_judge_nothing() -> None:
    base = [timed("numpy:eager", 1e-3, A, repeat=r, seed=r) for r in range(3)]
    slow = [timed("numpy:eager", 2e-3, B, repeat=r, seed=r + 5) for r in range(3)]
    (row,) = compare_runs(base, slow, 0.05)
    assert row.result is not None and row.result.verdict == "inconclusive"
    assert "ran on different machines (big (aaaaaaaaaaaa), small (bbbbbbbbbbbb))" in row.note
    verdict = decide([row], Gate(fail_above=10))
    assert verdict.failures == () and verdict.outcome == UNDERPOWERED  # shown, never judged
    notes = comparison_notes([row], verdict)
    assert notes[0].startswith("not judged: gemm(n=8) numpy:eager @ cpu: the cells ran on")
    assert not any("geometric mean" in note for note in notes)
    same = [timed("numpy:eager", 2e-3, A, repeat=r, seed=r + 5) for r in range(3)]
    (judged,) = compare_runs(base, same, 0.05)
    assert judged.result is not None and judged.result.verdict == "slower" and not judged.note


def test_ray_nodes_of_one_host_are_told_apart_by_their_kind_not_their_id() -> None:
    def on(kind: dict[str, float], node_id: str) -> dict[str, Any]:
        return {**A, "ray_resources": kind, "ray_node_id": node_id}

    h100, a100 = {"CPU": 1.0, "sim_h100": 1.0}, {"CPU": 2.0, "sim_a100": 1.0}
    base = [timed("numpy:eager", 1e-3, on(h100, "n1"), repeat=r, seed=r) for r in range(3)]
    other = [timed("numpy:eager", 1e-3, on(a100, "n2"), repeat=r, seed=r) for r in range(3)]
    (row,) = compare_runs(base, other, 0.05)
    assert row.result is not None and row.result.verdict == "inconclusive"
    assert "big (aaaaaaaaaaaa, Ray node CPU=1 sim_h100=1), big (aaaaaaaaaaaa, " in row.note
    restarted = [timed("numpy:eager", 1e-3, on(h100, "n3"), repeat=r, seed=r) for r in range(3)]
    (same,) = compare_runs(base, restarted, 0.05)
    assert not same.note  # a node restarted has a new id but is the same machine
    titles = [table.title for table in build_tables([base[0], other[0]])]
    assert titles[1] == "gemm(n=8) @ cpu on big (aaaaaaaaaaaa, Ray node CPU=2 sim_a100=1)"


def test_runs_whose_cells_say_where_they_ran_are_checked_cell_by_cell() -> None:
    def run(fingerprint: str, cells: list[Cell]) -> Run:
        identity = {"hostname": "driver", "fingerprint": fingerprint}
        return Run("r", now(), {}, {}, [], identity=identity, cells=cells)

    nodes = [timed("numpy:eager", 1e-3, A)]
    assert machine_mismatch(run("x", nodes), run("y", nodes)) == ""
    old = [timed("numpy:eager", 1e-3, {})]
    assert "different machines" in machine_mismatch(run("x", old), run("y", old))


def test_history_keeps_the_cells_of_one_run_on_two_machines_in_two_series() -> None:
    rows = [
        ("r1", "t1", timed("numpy:eager", 1e-3, A)),
        ("r1", "t1", timed("numpy:eager", 2e-3, B)),
    ]
    rows.append(("r2", "t2", timed("numpy:eager", 1e-3, {})))  # an older run: its run's machine
    series = series_by_params(rows, {"r1": "driver", "r2": "aaaaaaaaaaaa"})
    assert {title: len(points) for title, points in series.items()} == {
        "gemm(n=8) numpy:eager @ cpu on machine aaaaaaaaaaaa": 2,
        "gemm(n=8) numpy:eager @ cpu on machine bbbbbbbbbbbb": 1,
    }


class Meeting:
    """A task that ends only when another task meets it: they must run at the same time."""

    def __init__(self, barrier: threading.Barrier, name: str) -> None:
        self.barrier, self.name = barrier, name

    def label(self) -> str:
        return self.name

    def placement(self) -> None:
        return None

    def run(self, where: Where) -> str:
        self.barrier.wait()  # raises BrokenBarrierError if the other never comes
        return f"{self.name} on {where.node['executor']}"

    def not_run(self, status: str, reason: str, node: dict[str, Any]) -> str:
        return status


class Failing(Meeting):
    def run(self, where: Where) -> str:
        raise ValueError(f"{self.name} failed")


def test_the_local_executor_runs_jobs_tasks_at_a_time_and_hands_back_their_errors() -> None:
    barrier = threading.Barrier(2, timeout=60)
    tasks = [Meeting(barrier, "a"), Meeting(barrier, "b")]
    reporter = Labels()
    ended = list(executors.LocalExecutor(jobs=2).results(tasks, Caches(), reporter))
    assert sorted(ended) == ["a on local", "b on local"] and reporter.started == ["a", "b"]
    lonely = [Meeting(threading.Barrier(2, timeout=0.1), "c")]
    alone = executors.LocalExecutor(jobs=1).results(lonely, Caches(), Labels())
    with pytest.raises(threading.BrokenBarrierError):
        list(alone)
    failing = executors.LocalExecutor(jobs=2).results([Failing(barrier, "d")], Caches(), Labels())
    with pytest.raises(ValueError, match="d failed"):
        list(failing)


def test_jobs_are_checked_recorded_and_warned_about(tmp_path: Any) -> None:
    with pytest.raises(UsageError, match="--jobs 0 must be at least 1"):
        api.plan_run(api.Selection(workload="gemm"), api.Measure(jobs=0))
    with pytest.raises(UsageError, match="--jobs 2 is for --executor local"):
        api.open_executor("ray", None, RunOptions(jobs=2))
    planned = api.plan_run(api.Selection(workload="gemm"), api.Measure(jobs=2))
    assert planned.record.options["jobs"] == 2
    assert any(w.startswith("--jobs 2: cells run 2 at a time") for w in planned.warnings)
    alone = api.plan_run(api.Selection(workload="gemm"), api.Measure())
    assert planned.options.memory_budget < alone.options.memory_budget
    assert not any("--jobs" in w for w in alone.warnings)
    executor = api.open_executor("local", None, planned.options)
    assert isinstance(executor, executors.LocalExecutor) and executor.jobs == 2


@pytest.mark.slow
def test_run_jobs_2_measures_eager_cells_side_by_side_and_records_it(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.json"
    argv = ["run", "--workload", "gemm", "--param", "n=32,64", "--stacks", "numpy:eager"]
    argv += ["--budget", "0.05", "--quiet", "--jobs", "2", "--json", str(out)]
    assert main([*argv, "--db", str(tmp_path / "db.sqlite")]) == 0
    assert "--jobs 2: cells run 2 at a time" in capsys.readouterr().err
    written = json.loads(out.read_text())
    assert written["run"]["options"]["jobs"] == 2 and written["run"]["status"] == "complete"
    cells = written["cells"]
    assert [cell["params"]["n"] for cell in cells] == [32, 64]  # in plan order
    assert all(cell["status"] == "ok" and cell["node"]["executor"] == "local" for cell in cells)
