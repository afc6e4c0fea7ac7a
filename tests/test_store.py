"""The results store: round trip, listing, export, resume, versions and migration."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
from pathlib import Path

import pytest

from stackwars import results_frame
from stackwars.cli import main
from stackwars.results import store
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell, CellSpec, Steady
from stackwars.service import api

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")


def finished_cell(size: int, median: float = 1e-3) -> Cell:
    return Cell(
        workload="doubles",
        params={"size": size},
        stack="numpy:eager",
        status="ok",
        steady=Steady(median_s=median, ci95_low_s=median, ci95_high_s=median),
        wall_s=123.0,
    )


def stored_run(
    db: Path, run_id: str, cells: list[Cell], planned: list[CellSpec], status: str = "complete"
) -> Run:
    results = store.Store(db)
    options = {
        "timing": {"steady_budget_s": 0.05, "min_steady_s": 0.0},
        "workload_files": [FAULTY],
        "timeout_s": 60.0,
        "memory_budget": 2**31,
    }
    run = Run(
        id=run_id,
        started=now(),
        machine={},
        versions={},
        argv=["stackwars", "run"],
        options=options,
        planned=[vars(spec) for spec in planned],
        status=status,
    )
    results.begin_run(run)
    for cell in cells:
        run.cells.append(cell)
        results.add_cell(run, cell)
    results.finish_run(run)
    return run


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    cell = finished_cell(1)
    cell.warnings.append("a warning")
    cell.steady.samples_s = [1e-3, 2e-3]
    stored_run(db, "r1", [cell], [])
    loaded = store.Store(db).load_run("r1").cells[0]
    assert loaded.to_dict() == cell.to_dict()


def test_latest_names_the_newest_run_and_runs_lists_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    stored_run(db, "20260101-000000-aaaaaa", [finished_cell(1)], [])
    stored_run(db, "20260102-000000-bbbbbb", [finished_cell(2)], [])
    assert store.Store(db).resolve("latest") == "20260102-000000-bbbbbb"
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "20260101-000000-aaaaaa" in out and "1 ok" in out
    assert main(["show", "--db", str(db)]) == 0
    assert "doubles(size=2)" in capsys.readouterr().out


def test_export_json_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "db.sqlite"
    stored_run(db, "r1", [finished_cell(1, 2e-3), finished_cell(2, 4e-3)], [])
    assert main(["export", "r1", "--db", str(db)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema_version"] == 2 and len(data["cells"]) == 2
    out = tmp_path / "cells.csv"
    assert main(["export", "latest", "--format", "csv", "--out", str(out), "--db", str(db)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [row["steady.median_s"] for row in rows] == ["0.002", "0.004"]
    assert rows[0]["run_id"] == "r1" and rows[0]["params.size"] == "1"


def test_results_frame_has_a_row_per_cell(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    stored_run(db, "r1", [finished_cell(1), finished_cell(2)], [])
    frame = results_frame(db=str(db))
    assert len(frame) == 2
    assert list(frame["params.size"]) == [1, 2]
    assert frame.columns[0] == "run_id"


@pytest.mark.slow
def test_resume_runs_only_what_is_missing(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    planned = [CellSpec("doubles", {"size": size}, "numpy:eager") for size in (1, 2, 3)]
    first = finished_cell(1, median=7.0)  # a marker value no real run produces
    stored_run(db, "r1", [first], planned, status="interrupted")
    assert main(["run", "--resume", "r1", "--db", str(db), "--quiet"]) == 0
    run = store.Store(db).load_run("r1")
    assert run.status == "complete"
    assert [c.params["size"] for c in run.cells] == [1, 2, 3]
    assert run.cells[0].steady.median_s == 7.0  # kept, not run again
    assert all(c.status == "ok" for c in run.cells)


def test_resume_plans_again_the_cells_lost_with_their_node_in_their_place(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    planned = [CellSpec("doubles", {"size": size}, "numpy:eager") for size in (1, 2, 3)]
    lost = finished_cell(2)
    lost.status, lost.node = "error", {"executor": "ray", "lost": True}
    stored_run(db, "r1", [finished_cell(1), lost], planned)
    resumed = api.plan_resume(store.Store(db), "r1")
    assert [cell.spec.params["size"] for cell in resumed.cells] == [2, 3]
    assert [cell.params["size"] for cell in resumed.record.cells] == [1]
    results = store.Store(db)
    results.add_cell(resumed.record, finished_cell(3))  # after the forgotten one, no clash
    assert [c.params["size"] for c in results.load_run("r1").cells] == [1, 3]


def test_resume_refuses_new_selection_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    stored_run(db, "r1", [], [CellSpec("doubles", {"size": 1}, "numpy:eager")])
    assert main(["run", "--resume", "r1", "--workload", "gemm", "--db", str(db)]) == 2
    assert "--resume continues a stored run" in capsys.readouterr().err


def test_a_store_from_a_newer_version_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    store.Store(db)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE meta SET value = '99' WHERE key = 'store_version'")
    assert main(["runs", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "written by a newer stackwars (store version 99" in err


def test_reading_commands_need_an_existing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "none.sqlite"
    assert main(["show", "--db", str(db)]) == 2
    assert "no results store at" in capsys.readouterr().err
    assert not db.exists()


V1_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT,
    status TEXT NOT NULL, header TEXT NOT NULL);
CREATE TABLE cells (run_id TEXT NOT NULL, seq INTEGER NOT NULL, workload TEXT NOT NULL,
    params TEXT NOT NULL, stack TEXT NOT NULL, device TEXT NOT NULL, to_host INTEGER NOT NULL,
    status TEXT NOT NULL, median_s REAL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq));
INSERT INTO meta VALUES ('store_version', '1');
"""


def test_a_version_1_store_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "v1.sqlite"
    cell = finished_cell(5)
    header = {"id": "old", "started": "2026-11-01T00:00:00+00:00", "status": "complete"}
    with sqlite3.connect(db) as connection:
        connection.executescript(V1_TABLES)
        connection.execute(
            "INSERT INTO runs VALUES ('old', ?, NULL, 'complete', ?)",
            (header["started"], json.dumps(header)),
        )
        connection.execute(
            "INSERT INTO cells VALUES ('old', 0, 'doubles', '{}', 'numpy:eager', 'cpu', 0, "
            "'ok', 0.001, ?)",
            (json.dumps(cell.to_dict()),),
        )
    results = store.Store(db)
    assert results.finished_keys("old") == {store.key_text(cell.key())}
    with sqlite3.connect(db) as connection:
        (version,) = connection.execute(
            "SELECT value FROM meta WHERE key = 'store_version'"
        ).fetchone()
    assert int(version) == store.STORE_VERSION
    assert results.load_run("old").cells[0].params == {"size": 5}


@pytest.mark.parametrize("damage", ["random", "truncated"])
def test_a_corrupt_store_is_one_line_and_left_untouched(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    if damage == "random":
        db.write_bytes(os.urandom(5000))
    else:
        good = store.Store(db)
        good.begin_run(Run(id="r1", started=now(), machine={}, versions={}, argv=["x" * 9000]))
        db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    before = db.read_bytes()
    for argv in (["runs"], ["show", "latest"], ["run", "--workload", "gemm", "--stacks", "numpy"]):
        assert main([*argv, "--db", str(db)]) == 2
        err = capsys.readouterr().err
        assert f"results store {db} cannot be read" in err
        assert "left untouched" in err
        assert len(err.strip().splitlines()) == 1
    assert db.read_bytes() == before
