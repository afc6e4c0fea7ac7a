"""Executors and machines, without Ray: the run loop with a fake executor that finishes cells
out of order or is interrupted, choosing an executor, and readers that never mix machines
(tables, --repeat merging, comparisons)."""

from __future__ import annotations

import dataclasses
import random
import sys
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
from stackwars.results.comparison import Gate, compare_runs, gate_failures
from stackwars.results.history import series_by_params
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, Steady
from stackwars.runner import executors, session
from stackwars.runner.plan import PlannedCell
from stackwars.runner.protocol import CellSpec
from stackwars.service import api
from stackwars.service.stored import machine_mismatch


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


class ReversedExecutor:
    """Finishes the planned cells last first, as a cluster may; can stop with Ctrl-C."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self.interrupt_after = interrupt_after
        self.closed_stream = False

    def cells(
        self, planned: Sequence[PlannedCell], options: RunOptions, reporter: Any
    ) -> Generator[Cell, None, None]:
        try:
            for count, item in enumerate(reversed(planned)):
                if count == self.interrupt_after:
                    raise KeyboardInterrupt
                yield timed(item.spec.stack, 1e-3, A, seed=count)
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
    skipped = PlannedCell(spec, skip_reason="not here")
    (cell,) = executors.LocalExecutor().cells([skipped], RunOptions(), Reporter())
    assert cell.status == "unsupported" and cell.node == {"executor": "local"}
    assert executors.ran_on("local", PlannedCell(spec), {"fingerprint": "f"}) == {
        "executor": "local",
        "fingerprint": "f",
    }


def test_choosing_an_executor_is_checked() -> None:
    assert isinstance(api.open_executor("local", None, RunOptions()), executors.LocalExecutor)
    with pytest.raises(UsageError, match="unknown executor 'slurm'"):
        api.open_executor("slurm", None, RunOptions())
    with pytest.raises(UsageError, match="--ray-address is where --executor ray sends cells"):
        api.open_executor("local", "10.0.0.1:6379", RunOptions())


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
    assert gate_failures([row], Gate(fail_above=10)) == []
    notes = comparison_notes([row], Gate(fail_above=10))
    assert notes[0].startswith("not judged: gemm(n=8) numpy:eager @ cpu: the cells ran on")
    assert not any("geometric mean" in note for note in notes)
    same = [timed("numpy:eager", 2e-3, A, repeat=r, seed=r + 5) for r in range(3)]
    (judged,) = compare_runs(base, same, 0.05)
    assert judged.result is not None and judged.result.verdict == "slower" and not judged.note


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
