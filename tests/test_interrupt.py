"""Ctrl-C: the current worker is killed, finished cells are kept, the run is marked."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from stackwars.cli import main
from stackwars.results import store
from stackwars.results.run import Run, displayed_status, now, owner_alive, this_process
from stackwars.results.schema import CellSpec

# Starts the CLI in a subprocess and interrupts it.
pytestmark = pytest.mark.slow

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")
TAG = "STACKWARS_TEST_RUN"  # marks the workers of the run this test starts


def workers_alive(since: float, tag: str) -> list[psutil.Process]:
    """Timing workers started since ``since`` whose environment carries ``tag`` (inherited
    from the run given it), whatever else runs on the machine (other tests under xdist)."""
    alive = []
    for process in psutil.process_iter(["cmdline", "create_time"]):
        cmdline = process.info["cmdline"] or []
        if "stackwars.runner.worker" in cmdline and process.info["create_time"] >= since - 1:
            try:
                if process.environ().get(TAG) == tag:
                    alive.append(process)
            except psutil.Error:
                continue  # ended meanwhile
    return alive


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_keeps_finished_cells_and_kills_the_worker(
    tmp_path: Path, sent: signal.Signals
) -> None:
    """Ctrl-C, or SIGTERM as a CI runner cancelling a job or ``kill`` send it (the only signal
    that reaches a job started with ``nohup ... &``, which ignores SIGINT)."""
    db = tmp_path / "db.sqlite"
    started, tag = time.time(), uuid.uuid4().hex
    # Two cells that hang: the first ends by its 2 s timeout, the second is interrupted.
    # A shell starts background jobs (nohup ... &) with SIGINT ignored, and an ignored signal
    # stays ignored across exec: give this process a handler, which exec resets to the default.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stackwars",
            "run",
            "--workload-file",
            FAULTY,
            "--workload",
            "hangs",
            "--param",
            "size=1,2",
            "--stacks",
            "numpy",
            "--timeout",
            "2",
            "--db",
            str(db),
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, TAG: tag},
    )
    signal.signal(signal.SIGINT, previous)
    # Wait until the second cell's worker is up: a second worker process, however slowly the
    # machine starts them (a clock-based guess raced with the first worker on a loaded machine).
    seen: set[int] = set()
    deadline = time.time() + 60
    while len(seen) < 2 and time.time() < deadline:
        seen.update(process.pid for process in workers_alive(started, tag))
        time.sleep(0.05)
    run.send_signal(sent)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert "interrupted" in err
    assert workers_alive(started, tag) == []
    with sqlite3.connect(db) as connection:
        (status,) = connection.execute("SELECT status FROM runs").fetchone()
        cells = connection.execute("SELECT status FROM cells").fetchall()
    assert status == "interrupted"
    assert cells == [("timeout",)]


def dead_owner() -> dict[str, object]:
    # Any program that exits at once: its pid then names no process of ours.
    child = subprocess.Popen(["true"])
    child.wait()
    return {**this_process(), "pid": child.pid}


def test_a_run_whose_process_is_gone_reads_as_abandoned() -> None:
    assert owner_alive(this_process()) is True
    assert owner_alive(dead_owner()) is False
    assert owner_alive({**this_process(), "host": "elsewhere"}) is None
    # A reused pid is another process: its start time differs.
    reused = {**this_process(), "process_started": psutil.Process().create_time() - 100}
    assert owner_alive(reused) is False
    assert displayed_status({"status": "running", "owner": dead_owner()}) == "abandoned"
    assert displayed_status({"status": "running", "owner": this_process()}) == "running"
    assert displayed_status({"status": "complete", "owner": dead_owner()}) == "complete"


def _abandoned_run(db: Path) -> Run:
    results = store.Store(db)
    spec = CellSpec("doubles", {"size": 8}, "numpy:eager")
    options = {
        "timing": {"steady_budget_s": 0.05, "min_steady_s": 0.0},
        "workload_files": [FAULTY],
    }
    record = Run(
        id="killed",
        started=now(),
        machine={},
        versions={},
        argv=["stackwars", "run"],
        options=options,
        planned=[vars(spec)],
        owner=dead_owner(),
    )
    results.begin_run(record)
    return record


@pytest.mark.slow
def test_resume_finishes_an_abandoned_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    _abandoned_run(db)
    assert main(["runs", "--db", str(db)]) == 0
    assert "abandoned" in capsys.readouterr().out
    assert main(["run", "--resume", "killed", "--db", str(db), "--quiet"]) == 0
    finished = store.Store(db).load_run("killed")
    assert finished.status == "complete"
    assert [cell.status for cell in finished.cells] == ["ok"]


def test_resume_refuses_a_run_that_is_still_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    record = _abandoned_run(db)
    record.owner = this_process()
    store.Store(db).begin_run(record)
    assert main(["run", "--resume", "killed", "--db", str(db)]) == 2
    assert "is still running" in capsys.readouterr().err
