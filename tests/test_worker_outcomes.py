"""Every way a worker can end becomes a cell with the right status, and the run goes on."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import CellSpec
from stackwars.runner import worker
from stackwars.runner.isolate import run_in_worker
from stackwars.runner.protocol import Request
from stackwars.timing.timer import TimingConfig

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")
QUICK = TimingConfig(steady_budget_s=0.05, min_steady_s=0.0, warmup_budget_s=0.05)


def request(name: str, tmp_path: Path, params: dict[str, Any] | None = None) -> Request:
    return Request(
        cell=CellSpec(name, params or {"size": 1}, "numpy:eager"),
        settings=RunSettings(cache_dir=str(tmp_path)),
        timing=QUICK,
        workload_files=[FAULTY],
    )


@pytest.mark.slow
def test_a_correct_cell_is_ok(tmp_path: Path) -> None:
    cell = run_in_worker(request("doubles", tmp_path), timeout_s=60, budget_bytes=2**31)
    assert cell.status == "ok", cell.reason
    assert cell.parity.ok
    assert cell.steady.median_s is not None and cell.steady.median_s > 0
    assert cell.memory.peak_rss_bytes and cell.memory.peak_tree_rss_bytes
    first, timed = cell.memory.first_run_peak_rss_bytes, cell.memory.timed_peak_rss_bytes
    assert first and timed and max(first, timed) <= cell.memory.peak_rss_bytes


@pytest.mark.slow
def test_the_first_run_s_peak_is_told_apart_from_the_timed_runs(tmp_path: Path) -> None:
    """A first call that holds 256 MiB for a moment (as a compiler's working memory does):
    the first run's peak has it, the timed runs' after it does not, the process's has it."""
    cell = run_in_worker(request("big-first", tmp_path), timeout_s=60, budget_bytes=2**31)
    assert cell.status == "ok", cell.reason
    first, timed = cell.memory.first_run_peak_rss_bytes, cell.memory.timed_peak_rss_bytes
    assert first is not None and timed is not None
    assert first - timed >= 200 * 2**20, (first, timed)
    assert cell.memory.peak_rss_bytes is not None and cell.memory.peak_rss_bytes >= first


@pytest.mark.slow
def test_an_exception_is_an_error_with_the_traceback(tmp_path: Path) -> None:
    cell = run_in_worker(request("fails", tmp_path), timeout_s=60, budget_bytes=2**31)
    assert cell.status == "error"
    assert "ValueError: this workload always fails" in cell.reason
    assert "faulty_workloads.py" in cell.reason


@pytest.mark.slow
def test_a_hard_crash_is_an_error_naming_the_signal(tmp_path: Path) -> None:
    cell = run_in_worker(request("crashes", tmp_path), timeout_s=60, budget_bytes=2**31)
    assert cell.status == "error"
    assert signal.Signals.SIGSEGV.name in cell.reason


@pytest.mark.slow
def test_a_hang_is_a_timeout(tmp_path: Path) -> None:
    cell = run_in_worker(request("hangs", tmp_path), timeout_s=3, budget_bytes=2**31)
    assert cell.status == "timeout"
    assert "3 s timeout" in cell.reason
    assert cell.wall_s is not None and cell.wall_s < 30


@pytest.mark.slow
def test_memory_past_the_budget_is_oom(tmp_path: Path) -> None:
    cell = run_in_worker(request("hogs", tmp_path), timeout_s=60, budget_bytes=400 * 2**20)
    assert cell.status == "oom"
    assert "memory budget" in cell.reason
    assert cell.memory.peak_tree_rss_bytes is not None
    assert cell.memory.peak_tree_rss_bytes > 400 * 2**20


@pytest.mark.slow
def test_a_wrong_result_is_a_mismatch_not_a_speed(tmp_path: Path) -> None:
    cell = run_in_worker(request("wrong", tmp_path), timeout_s=60, budget_bytes=2**31)
    assert cell.status == "mismatch"
    assert cell.parity.ok is False
    assert cell.parity.max_abs_err == pytest.approx(3.0)  # 3x - 2x at x = 3


def test_a_framework_that_fails_to_import_is_unsupported_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stackwars.frameworks.numpy import NumpyFramework

    class Missing(NumpyFramework):
        def load(self) -> None:
            raise ModuleNotFoundError("No module named 'numpy'")

    monkeypatch.setattr(worker, "load_framework", lambda name, mode: Missing())
    workloads.load_workload_file(FAULTY)
    cell = worker.CellRun(request("doubles", tmp_path)).run()
    assert cell.status == "unsupported"
    assert "pip install 'stackwars[numpy]'" in cell.reason


@pytest.mark.slow
def test_a_run_goes_on_past_failures_and_exit_status_follows_strict(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    base = [
        "run",
        "--workload-file",
        FAULTY,
        "--stacks",
        "numpy",
        "--db",
        str(tmp_path / "db"),
        "--budget",
        "0.05",
        "--timeout",
        "20",
        "--quiet",
        "--json",
        str(out),
    ]
    assert main([*base, "--workload", "fails"]) == 0
    assert main([*base, "--workload", "fails", "--strict"]) == 1
    assert main([*base, "--workload", "doubles", "--strict"]) == 0
    cells = json.loads(out.read_text())["cells"]
    assert [c["status"] for c in cells] == ["ok"]


@pytest.mark.slow
def test_stacks_without_an_implementation_are_listed_unsupported(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    code = main(
        [
            "run",
            "--workload-file",
            FAULTY,
            "--workload",
            "doubles",
            "--stacks",
            "numpy,jax:jit",
            "--db",
            str(tmp_path / "db"),
            "--budget",
            "0.05",
            "--quiet",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    cells = {c["stack"]: c for c in json.loads(out.read_text())["cells"]}
    assert cells["numpy:eager"]["status"] == "ok"
    assert cells["jax:jit"]["status"] == "unsupported"
    assert "no jax implementation" in cells["jax:jit"]["reason"]


@pytest.mark.slow
def test_a_framework_not_installed_is_unsupported_without_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stackwars.frameworks import FRAMEWORKS
    from stackwars.runner import environments

    real = environments.stack_missing_reason

    def torch_missing(framework: str, mode: str, environment: str = "") -> str | None:
        if framework == "torch":
            return f"torch is not installed; fix: {FRAMEWORKS['torch'].install_hint()}"
        return real(framework, mode, environment)

    monkeypatch.setattr(environments, "stack_missing_reason", torch_missing)
    out = tmp_path / "run.json"
    argv = [
        "run",
        "--workload",
        "gemm",
        "--param",
        "n=8",
        "--stacks",
        "numpy,torch",
        "--db",
        str(tmp_path / "db"),
        "--budget",
        "0.05",
        "--quiet",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    cells = {c["stack"]: c for c in json.loads(out.read_text())["cells"]}
    assert cells["numpy:eager"]["status"] == "ok"
    for stack in ("torch:eager", "torch:compile", "torch:xla"):
        assert cells[stack]["status"] == "unsupported"
        assert "pip install 'stackwars[torch]'" in cells[stack]["reason"]
        assert cells[stack]["wall_s"] is None  # no worker was started
