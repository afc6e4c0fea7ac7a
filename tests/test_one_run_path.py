"""One path for a run: ``stackwars run`` and ``stackwars.run()`` hand the service the same
request, so they make the same executor calls and store the same records (times, ids and the
machine's load excepted), with ``--repeat auto``'s pilot, the second look and ``--force``."""

from __future__ import annotations

import random
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

import stackwars
from stackwars import cli
from stackwars.results.schema import Cell, Steady
from stackwars.results.store import Store
from stackwars.service import api

# The plan's memory budget is far below any cell's predicted peak: without --force every cell
# would be planned oom and never measured.
TINY_BUDGET = "1KiB"
STACKS = "numpy:eager,jax:jit"


class RecordingExecutor:
    """Measures nothing: each task gets an ok cell whose per-call times are the next draws of
    a seeded generator (the same sequence for the same order of calls), and every batch of
    tasks is recorded as (label, worker index, why it was skipped)."""

    def __init__(self) -> None:
        self.draws = random.Random(52)
        self.batches: list[list[tuple[str, int, str]]] = []

    def results(
        self, tasks: Sequence[Any], caches: Any, reporter: Any
    ) -> Generator[Any, None, None]:
        del caches, reporter
        self.batches.append(
            [(t.item.spec.label(), t.item.spec.repeat, t.item.skip_reason) for t in tasks]
        )
        for task in tasks:
            if task.item.skip_reason:
                yield task.not_run("error", "", {"executor": "recording"})
                continue
            yield self._cell(task.item.spec)

    def _cell(self, spec: Any) -> Cell:
        level = self.draws.uniform(1e-3, 2e-3)
        samples = [level * self.draws.uniform(0.98, 1.02) for _ in range(5)]
        cell = Cell(spec.workload, dict(spec.params), spec.stack, spec.device, spec.to_host)
        cell.repeat, cell.status, cell.wall_s = spec.repeat, "ok", 1.0
        cell.steady = Steady(median_s=sorted(samples)[2], blocks=5, samples_s=samples)
        cell.node = {"executor": "recording"}
        return cell

    def close(self) -> None:
        """Nothing held."""


def comparable(run: Any) -> dict[str, Any]:
    """What both entry points must store alike: the options, the plan and every cell (times
    in the cells are the fake executor's, so they are compared too)."""
    return {
        "options": run.options,
        "planned": run.planned,
        "status": run.status,
        "cells": [cell.to_dict() for cell in run.cells],
    }


def through_the_shell(
    monkeypatch: pytest.MonkeyPatch, db: Path, extra: list[str]
) -> RecordingExecutor:
    executor = RecordingExecutor()
    monkeypatch.setattr(api, "open_executor", lambda *args, **kwargs: executor)
    argv = ["run", "--workload", "gemm", "--param", "n=8", "--stacks", STACKS, "--force"]
    argv += ["--memory-budget", TINY_BUDGET, "--budget", "0.05", "--db", str(db), "--quiet"]
    assert cli.main([*argv, *extra]) == 0
    return executor


def through_python(db: Path, **extra: Any) -> RecordingExecutor:
    executor = RecordingExecutor()
    stackwars.run(
        "gemm",
        params={"n": 8},
        stacks=STACKS,
        force=True,
        memory_budget=TINY_BUDGET,
        budget_s=0.05,
        db=str(db),
        executor=executor,
        **extra,
    )
    return executor


@pytest.mark.parametrize(
    ("shell", "python"),
    [
        ([], {}),  # one worker a cell, and the default second look
        (["--repeat", "auto"], {"repeat": "auto"}),
        (["--repeat", "3"], {"repeat": 3}),
    ],
    ids=["second-look", "repeat-auto", "repeat-3"],
)
def test_the_shell_and_python_make_the_same_calls_and_store_the_same_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shell: list[str], python: dict[str, Any]
) -> None:
    shell_executor = through_the_shell(monkeypatch, tmp_path / "shell.sqlite", shell)
    python_executor = through_python(tmp_path / "python.sqlite", **python)
    assert shell_executor.batches == python_executor.batches
    shell_run = Store(tmp_path / "shell.sqlite").load_run("latest")
    python_run = Store(tmp_path / "python.sqlite").load_run("latest")
    assert comparable(shell_run) == comparable(python_run)
    assert shell_run.cells and all(cell.status == "ok" for cell in shell_run.cells)


def test_a_forced_cells_second_look_is_measured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    executor = through_the_shell(monkeypatch, tmp_path / "run.sqlite", [])
    first, second = executor.batches  # the cells, then their second look
    assert {repeat for _, repeat, _ in second} == {1}
    assert all(not skipped for _, _, skipped in first + second), "planned under --force"
    run = Store(tmp_path / "run.sqlite").load_run("latest")
    looks = [cell.settings["second_look"]["status"] for cell in run.cells]
    assert looks == ["ok"] * len(run.cells)


def test_repeat_auto_stores_its_pilot_with_the_first_workers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    executor = through_the_shell(monkeypatch, tmp_path / "run.sqlite", ["--repeat", "auto"])
    pilot, measured = executor.batches[:2]
    assert len(pilot) == len(measured) == 2 * 3  # two stacks, three workers each
    run = Store(tmp_path / "run.sqlite").load_run("latest")
    first_workers = [cell for cell in run.cells if cell.repeat == 0]
    assert {cell.settings["pilot"]["workers"] for cell in first_workers} == {3}
    assert not any("second_look" in cell.settings for cell in run.cells)


def test_a_negative_second_look_is_refused_before_anything_runs(tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    with pytest.raises(stackwars.UsageError, match="--second-look -1 must be 0"):
        stackwars.run("gemm", params={"n": 8}, stacks="numpy", db=str(db), second_look_s=-1)
    assert not db.exists()
