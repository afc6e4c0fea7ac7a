"""The one child runner: every worker speaks its envelope, refuses another protocol version
or kind as data, and is classified by how it ended."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from stackwars.runner import child
from stackwars.runner.child import PROTOCOL_VERSION, Limits, run_child, serve

LIMITS = Limits(timeout_s=60.0, memory_budget=4 * 2**30)
# A real worker to start: stackwars env's framework probe, asked for numpy's libraries.
DEVICES = "stackwars.runner.devices_worker"
NUMPY = {"framework": "numpy", "mode": None, "libraries": True}


def served(tmp_path: Path, envelope: dict[str, Any], kind: str) -> dict[str, Any]:
    request, result = tmp_path / "request.json", tmp_path / "result.json"
    request.write_text(json.dumps(envelope), encoding="utf-8")
    assert serve([str(request), str(result)], kind, lambda data: {"doubled": 2 * data["x"]}) == 0
    return json.loads(result.read_text(encoding="utf-8"))


def test_a_worker_answers_its_kind_and_version(tmp_path: Path) -> None:
    envelope = {"protocol": PROTOCOL_VERSION, "kind": "demo", "request": {"x": 21}}
    assert served(tmp_path, envelope, "demo") == {
        "protocol": PROTOCOL_VERSION,
        "result": {"doubled": 42},
    }


def test_a_worker_refuses_another_protocol_version_as_data(tmp_path: Path) -> None:
    envelope = {"protocol": PROTOCOL_VERSION - 1, "kind": "demo", "request": {"x": 1}}
    answer = served(tmp_path, envelope, "demo")
    assert "result" not in answer
    assert answer["refused"].startswith(
        f"protocol mismatch: the parent speaks version {PROTOCOL_VERSION - 1}"
    )


def test_a_worker_refuses_another_kind(tmp_path: Path) -> None:
    envelope = {"protocol": PROTOCOL_VERSION, "kind": "timing", "request": {"x": 1}}
    assert "this is the demo worker" in served(tmp_path, envelope, "demo")["refused"]


@pytest.mark.slow
def test_the_parent_turns_a_refusal_into_an_error() -> None:
    end = run_child(DEVICES, "timing", NUMPY, LIMITS)
    assert end.status == "error"
    assert "this is the devices worker; the parent asked it for 'timing'" in end.detail


@pytest.mark.slow
def test_a_worker_that_answers_is_ok() -> None:
    end = run_child(DEVICES, "devices", NUMPY, LIMITS)
    assert end.ok, end.detail
    assert end.result is not None
    assert any(lib["internal_api"] == "openblas" for lib in end.result["libraries"])


@pytest.mark.slow
def test_a_worker_that_dies_without_an_answer_is_an_error_with_its_output() -> None:
    end = run_child(DEVICES, "devices", {"framework": "nope"}, LIMITS)
    assert end.status == "error"
    assert "without a result" in end.detail
    assert "KeyError: 'nope'" in end.detail


@pytest.mark.slow
def test_past_the_timeout_the_tree_is_killed() -> None:
    end = run_child(DEVICES, "devices", {"framework": "torch"}, Limits(0.2, 2**40))
    assert end.status == "timeout"
    assert "0.2 s timeout" in end.detail


@pytest.mark.slow
def test_past_the_memory_budget_the_tree_is_killed() -> None:
    end = run_child(DEVICES, "devices", {"framework": "torch"}, Limits(60, 2**20))
    assert end.status == "oom"
    assert "passed the memory budget" in end.detail


def test_a_worker_whose_parent_is_gone_exits_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    exits: list[int] = []
    monkeypatch.setattr(child.os, "_exit", exits.append)
    monkeypatch.setattr(child, "PR_SET_PDEATHSIG", 0)  # prctl(0, ...) is refused: a no-op here
    child._die_with_parent(os.getpid() + 10**6)
    child._die_with_parent(os.getppid())
    assert exits == [1]


@pytest.mark.slow
def test_a_tool_runs_to_its_end_logged_line_by_line_and_is_killed_at_its_timeout(
    tmp_path: Path,
) -> None:
    from stackwars.runner.child import TIMED_OUT, run_command

    heard: list[str] = []
    log = tmp_path / "tool.log"
    code = run_command(
        [sys.executable, "-c", "print('one'); print('two')"],
        timeout_s=60,
        log=log,
        on_line=heard.append,
    )
    assert (code, heard) == (0, ["one", "two"])
    assert log.read_text(encoding="utf-8").splitlines() == ["one", "two"]
    slow = [sys.executable, "-c", "import time; time.sleep(60)"]
    assert run_command(slow, timeout_s=1, log=log) == TIMED_OUT
