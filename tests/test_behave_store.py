"""A behave run lands in the results store like a timing run: listed, shown, exported,
imported, and refused by commands that need timings."""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from stackwars.cli import main
from stackwars.instruments.behave.service import behave_run
from stackwars.instruments.behave.task import ProbeTask
from stackwars.results.store import Store
from stackwars.runner.tasks import Caches, Task

R = TypeVar("R")

PROBES = "boolean-mask,side-effect"


@pytest.mark.slow
def test_a_behave_run_is_stored_listed_shown_exported_and_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, out = str(tmp_path / "db.sqlite"), tmp_path / "behave.json"
    argv = ["behave", "--probes", PROBES, "--stacks", "numpy:eager", "--quiet"]
    assert main([*argv, "--db", db, "--json", str(out), "--label", "pitfalls"]) == 0
    assert "2 outcomes; stored in" in capsys.readouterr().out
    record = Store(Path(db)).load_run("latest")
    assert record.kind == "behave" and record.status == "complete"
    # Stored as they ended (two workers at a time); the file written at the end is in order.
    assert sorted((o["probe"], o["outcome"]) for o in record.outcomes) == [
        ("boolean-mask", "works"),
        ("side-effect", "works"),
    ]
    written = json.loads(out.read_text())["outcomes"]
    assert [o["probe"] for o in written] == ["boolean-mask", "side-effect"]
    assert sorted(written, key=str) == sorted(record.outcomes, key=str)

    assert main(["runs", "--db", db, "--label", "pitfalls"]) == 0
    assert "2 works" in capsys.readouterr().out
    assert main(["show", "latest", "--db", db, "--details"]) == 0
    shown = capsys.readouterr().out
    assert "How each stack behaves" in shown and "side-effect on numpy:eager: works" in shown
    assert main(["export", "latest", "--db", db, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("probe,stack,outcome,detail")

    other = str(tmp_path / "other.sqlite")
    assert main(["import", str(out), "--db", other]) == 0
    assert Store(Path(other)).load_run(record.id).outcomes == written
    capsys.readouterr()
    assert main(["compare", str(out), str(out)]) == 2
    assert "is a behave run, with no timings to compare" in capsys.readouterr().err


def test_an_unknown_probe_stores_nothing(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    assert main(["behave", "--probes", "nope", "--db", str(db)]) == 2
    assert not db.exists() or Store(db).run_ids() == []


class ReversedExecutor:
    """Answers every task last first, as a cluster may, without starting a worker."""

    def __init__(self) -> None:
        self.tasks: list[Any] = []

    def results(
        self, tasks: Sequence[Task[R]], caches: Caches, reporter: Any
    ) -> Generator[R, None, None]:
        self.tasks = list(tasks)
        for task in reversed(tasks):
            yield task.not_run("works", f"faked, cache {caches.mode}", {})

    def close(self) -> None:
        """Nothing held."""


def test_behave_draws_every_probe_and_stack_from_the_executor_given(tmp_path: Path) -> None:
    executor = ReversedExecutor()
    store = Store(tmp_path / "db.sqlite")
    record = behave_run(PROBES.split(","), "numpy:eager,torch:eager", store, executor=executor)
    assert all(isinstance(task, ProbeTask) for task in executor.tasks)
    assert [(task.probe, task.stack) for task in executor.tasks] == [
        ("boolean-mask", "numpy:eager"),
        ("boolean-mask", "torch:eager"),
        ("side-effect", "numpy:eager"),
        ("side-effect", "torch:eager"),
    ]
    assert record.status == "complete" and record.finished
    # Kept in plan order, whatever order the executor answered in.
    assert [(o["probe"], o["stack"]) for o in record.outcomes] == [
        (task.probe, task.stack) for task in executor.tasks
    ]
    stored = store.load_run(record.id)
    assert stored.status == "complete"
    assert {o["detail"] for o in stored.outcomes} == {"faked, cache warm"}
