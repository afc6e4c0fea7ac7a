"""Progress on long runs: the worker's phase reaches the parent as it goes, and the progress
line estimates the time left."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from stackwars.frameworks.base import RunSettings
from stackwars.report.progress import LOG_PHASE_AFTER_S, Progress, TimeLeft, format_duration
from stackwars.results.schema import Cell, CellSpec
from stackwars.runner.child import PROGRESS_FILE, ProgressWriter, _ProgressReader
from stackwars.runner.isolate import run_in_worker
from stackwars.runner.protocol import Request
from stackwars.timing.timer import TimingConfig

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")


def test_a_reader_hears_each_change_once(tmp_path: Path) -> None:
    heard: list[str] = []
    reader = _ProgressReader(tmp_path / PROGRESS_FILE, heard.append)
    writer = ProgressWriter(tmp_path)
    reader.poll()  # nothing written yet
    writer("importing numpy", force=True)
    reader.poll()
    reader.poll()
    writer("warm-up: run 3")  # within the interval of the last write: not written
    writer("steady", force=True)
    reader.poll()
    assert heard == ["importing numpy", "steady"]


@pytest.mark.slow
def test_a_worker_reports_its_phases_to_the_parent(tmp_path: Path) -> None:
    heard: list[str] = []
    request = Request(
        cell=CellSpec("doubles", {"size": 8}, "numpy:eager"),
        settings=RunSettings(cache_dir=str(tmp_path)),
        timing=TimingConfig(steady_budget_s=1.0, min_steady_s=1.0, target_rel_ci=1e-9),
        workload_files=[FAULTY],
    )
    cell = run_in_worker(request, 60.0, 2**32, on_progress=heard.append)
    assert cell.status == "ok", cell.reason
    assert heard and any(text.startswith("steady") for text in heard)


def finished(wall: float | None, stack: str = "numpy:eager") -> Cell:
    status = "ok" if wall is not None else "unsupported"
    return Cell("gemm", {"n": 8}, stack, status=status, wall_s=wall)


def test_the_time_left_and_a_long_cell_in_a_log() -> None:
    out = io.StringIO()
    progress = Progress(total=4, console=Console(file=out, width=200), stacks=["numpy:eager"] * 4)
    now = [0.0]
    progress._clock = lambda: now[0]
    with progress:
        progress.start_cell("gemm on numpy:eager")
        progress.end_cell(finished(2.0))
        progress.start_cell("gpt2-small on torch:compile")
        progress.phase("first run (compiles, if the stack compiles)")  # too soon to print
        now[0] += LOG_PHASE_AFTER_S + 1
        progress.phase("warm-up: run 12")
        progress.end_cell(finished(4.0))
    text = out.getvalue()
    assert "[1/4]" in text and "~6 s left (estimate)" in text  # 3 cells at 2 s
    assert "[2/4]" in text and "~6 s left (estimate)" in text  # 2 cells at 3 s
    assert "first run" not in text
    assert "… gpt2-small on torch:compile: warm-up: run 12 (11 s)" in text
    assert [format_duration(s) for s in (42, 300, 3900)] == ["42 s", "5 min", "1 h 05 min"]


def test_no_time_left_while_a_stack_still_to_run_has_no_finished_cell() -> None:
    """The quick suite's order: a workload on every stack, the fast stacks first."""
    stacks = ["numpy:eager", "torch:compile"] * 3
    time_left = TimeLeft(stacks)
    time_left.finished(finished(0.5))
    assert time_left.seconds() is None  # torch:compile has not finished a cell
    time_left.finished(finished(20.0, "torch:compile"))
    # Two cells on each stack at that stack's own mean, not 4 cells at the mean of both.
    assert time_left.seconds() == 2 * 0.5 + 2 * 20.0
    time_left.finished(finished(1.5))
    time_left.finished(finished(30.0, "torch:compile"))
    assert time_left.seconds() == 1 * 1.0 + 1 * 25.0
    time_left.finished(finished(1.0))
    assert time_left.seconds() == 25.0  # only torch:compile is left


def test_cells_that_start_no_worker_leave_the_time_left_alone() -> None:
    time_left = TimeLeft(["numpy:eager", "numpy:eager"])
    time_left.finished(finished(None, "jax:jit"))  # planned unsupported: not among the stacks
    assert time_left.seconds() is None
    time_left.finished(finished(3.0))
    assert time_left.seconds() == 3.0
    time_left.finished(finished(3.0))
    assert time_left.seconds() is None  # nothing left


def test_without_the_stacks_still_to_run_no_time_left_is_shown() -> None:
    out = io.StringIO()
    with Progress(total=2, console=Console(file=out, width=200)) as progress:
        progress.start_cell("gemm on numpy:eager")
        progress.end_cell(finished(2.0))
    assert "[1/2]" in out.getvalue() and "left" not in out.getvalue()
