"""run --second-look: at --repeat 1 a second fresh worker checks the cheapest cells, and the
run keeps one worker a cell with what the second saw (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.results.store import Store


def run_argv(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "run", "--workload", "gemm", "--param", "n=16", "--stacks", "numpy",
        "--budget", "0.05", "--quiet", "--db", str(tmp_path / "db.sqlite"),
        "--json", str(tmp_path / "run.json"), *extra,
    ]  # fmt: skip


@pytest.mark.slow
def test_a_default_run_checks_its_cell_in_a_second_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(run_argv(tmp_path)) == 0
    (cell,) = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["cells"]
    look = cell["settings"]["second_look"]
    assert look["status"] == "ok" and look["median_s"] > 0 and look["wall_s"] > 0
    assert "second look: 1 of 1 ok cells measured again" in capsys.readouterr().out
    store = Store(tmp_path / "db.sqlite")
    (stored,) = store.load_run(store.run_ids()[-1]).cells
    assert stored.settings["second_look"] == look


@pytest.mark.slow
def test_second_look_zero_and_repeat_3_start_no_second_worker(tmp_path: Path) -> None:
    assert main(run_argv(tmp_path, "--second-look", "0")) == 0
    (cell,) = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["cells"]
    assert "second_look" not in cell["settings"]
    assert main(run_argv(tmp_path, "--repeat", "3")) == 0
    cells = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["cells"]
    assert len(cells) == 3 and not any("second_look" in c["settings"] for c in cells)


def test_a_negative_second_look_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(run_argv(tmp_path, "--second-look", "-1")) == 2
    assert "--second-look -1 must be 0 (none) or a number of seconds" in capsys.readouterr().err
    assert not (tmp_path / "run.json").exists()
