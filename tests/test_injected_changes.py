"""The changes the gate's A/B campaign injects into a candidate (benchmarks/power/injected/,
fresh_sessions.py's ``recipe-ab``) slow the cells they name, and only in the candidate's
processes that were given them."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
INJECTED = ROOT / "benchmarks" / "power" / "injected"


def load_injected(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The module without changes to inject (so it installs no import hook here)."""
    monkeypatch.delenv("STACKWARS_INJECT", raising=False)
    spec = importlib.util.spec_from_file_location("injected_changes", INJECTED / "sitecustomize.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_slowed_call_costs_its_factor_times_its_own_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a fake clock: a call that takes 10 units, slowed 3x, ends 30 units after it began;
    the first calls wait for their result to measure it, the later ones do not (an
    asynchronous framework keeps them in flight) and add what the cheapest measured one
    did."""
    injected = load_injected(monkeypatch)
    clock = [0.0]

    def now() -> float:
        clock[0] += 0.001  # reading the clock takes a little time, as it does
        return clock[0]

    def work(x: int) -> int:
        clock[0] += 10.0
        return x + 1

    synced: list[int] = []
    monkeypatch.setattr(injected.time, "perf_counter", now)
    slowed = injected.slowed(work, synced.append, 3.0)
    for call in range(1 + injected.CALIBRATION_CALLS + 2):
        began = clock[0]
        assert slowed(call) == call + 1
        assert clock[0] - began == pytest.approx(30.0, abs=0.01)
    assert synced == list(range(1, 2 + injected.CALIBRATION_CALLS))


@pytest.mark.slow
@pytest.mark.parametrize("given", [True, False])
def test_the_worker_of_a_process_given_the_changes_is_patched(given: bool) -> None:
    changes = {"selu numpy:eager": {"factor": 2.0}}
    env = {**os.environ, "PYTHONPATH": str(INJECTED)}
    if given:
        env["STACKWARS_INJECT"] = json.dumps(changes)
    else:
        env.pop("STACKWARS_INJECT", None)
    probe = (
        "import stackwars.runner.worker as w, sitecustomize as s; "
        "print(w.CellRun._setup.__qualname__, sorted(s.SLOW_HERE))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    if given:
        assert done.stdout.split() == ["_patch.<locals>._setup", "['selu", "numpy:eager']"]
    else:
        assert done.stdout.split() == ["CellRun._setup", "[]"]
