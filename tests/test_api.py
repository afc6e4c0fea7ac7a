"""The public Python API: the service the command line uses, returning data."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import stackwars
from stackwars.errors import UsageError
from stackwars.instruments.reproduce import plan as reproduce_plan
from stackwars.service import api, execution

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")
# No second look: these tests check what is stored, not the second worker it adds.
FAST = {"budget_s": 0.05, "workload_files": [FAULTY], "second_look_s": 0}


@pytest.mark.slow
def test_run_returns_the_run_as_data_and_stores_it(tmp_path: Path) -> None:
    db = str(tmp_path / "db.sqlite")
    run = stackwars.run("doubles", params={"size": [8, 16]}, stacks="numpy", db=db, **FAST)
    assert [(cell.params["size"], cell.status) for cell in run.cells] == [(8, "ok"), (16, "ok")]
    assert run.status == "complete"
    assert all(cell.steady.median_s for cell in run.cells)
    assert api.open_store(db).load_run("latest").id == run.id
    frame = stackwars.results_frame(run=run.id, db=db)
    assert list(frame["params.size"]) == [8, 16]


@pytest.mark.slow
def test_compare_and_history_read_the_store(tmp_path: Path) -> None:
    db = str(tmp_path / "db.sqlite")
    first = stackwars.run("doubles", params={"size": 8}, stacks=["numpy:eager"], db=db, **FAST)
    second = stackwars.run("doubles", params={"size": 8}, stacks=["numpy:eager"], db=db, **FAST)
    compared = stackwars.compare(first.id, second.id, db=db)
    assert (compared.baseline.id, compared.candidate.id) == (first.id, second.id)
    assert len(compared.verdict.rows) == 1 and compared.verdict.outcome is None
    points, machines = stackwars.history("doubles", "numpy:eager", ["size=8"], db=db)
    assert set(machines) >= {first.id, second.id}
    assert [run_id for run_id, _, _ in points] == [first.id, second.id]


def test_bad_input_is_a_usage_error_that_names_the_fix(tmp_path: Path) -> None:
    db = str(tmp_path / "db.sqlite")
    with pytest.raises(UsageError, match="unknown stack 'numpy:fast'"):
        stackwars.run("doubles", stacks="numpy:fast", db=db, **FAST)
    with pytest.raises(UsageError, match="choose one of a suite, a suite file or a workload"):
        stackwars.run("doubles", suite="quick", db=db, **FAST)
    with pytest.raises(TypeError):
        stackwars.run("doubles", db=db, no_such_option=1)
    assert not Path(db).exists()


def test_the_services_are_loaded_on_first_use() -> None:
    assert stackwars.run is execution.run
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = stackwars.nope  # type: ignore[attr-defined]


@pytest.mark.slow
def test_reproduce_measures_an_edition_and_writes_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stackwars.reproduce``, the path the command takes: an edition (here one tiny cells
    part, on NumPy) measured into its folder with its findings; a resume at another scale
    is refused with the fix."""
    cells = next(part for part in reproduce_plan.TINY if part.kind == reproduce_plan.CELLS)
    only = dataclasses.replace(cells, stacks="numpy:eager")
    monkeypatch.setitem(reproduce_plan.SCALES, "tiny", (only,))
    notes: list[str] = []
    db = str(tmp_path / "db.sqlite")
    done = stackwars.reproduce(tmp_path / "e", scale="tiny", db=db, on_note=notes.append)
    assert done.not_run == [] and done.path == tmp_path / "e" / "edition.json"
    assert done.findings.read_text(encoding="utf-8").startswith("#")
    assert notes[0].startswith(f"edition {done.edition.id} (tiny) in {tmp_path / 'e'}")
    assert [part.status for part in done.edition.parts] == ["done"]
    with pytest.raises(UsageError, match="drop --scale"):
        stackwars.reproduce(tmp_path / "e", scale="full", resume=True, db=db)
    with pytest.raises(UsageError, match="--time-budget 0 must be a number of seconds above 0"):
        stackwars.reproduce(tmp_path / "f", scale="tiny", budget_s=0, db=db)
