"""The parent half of the selftest worker (instruments/selftest/worker.py): one stack's selftest in
a fresh worker, or unsupported without one when the stack cannot run here."""

from __future__ import annotations

import tempfile

from stackwars.config import default_memory_budget
from stackwars.frameworks import FRAMEWORKS, Stack
from stackwars.frameworks.base import split_device
from stackwars.instruments.selftest.data import StackResult
from stackwars.runner.child import Limits, run_child
from stackwars.runner.environments import interpreter_for, stack_problem

WORKER = "stackwars.instruments.selftest.worker"
# A stack takes seconds; torch.compile's cold compiles make it about half a minute on 2 cores.
SELFTEST_TIMEOUT_S = 300.0


def selftest_stack(stack: Stack, device: str, timeout_s: float) -> StackResult:
    """One stack's selftest; unsupported without a worker when it cannot run here."""
    reason = stack_problem(str(stack))
    devices = FRAMEWORKS[stack.framework].devices_for(stack.mode)
    if reason is None and split_device(device)[0] not in devices:
        reason = f"{stack} runs on {', '.join(devices)}, not {device}"
    if reason is not None:
        return StackResult(str(stack), "unsupported", reason)
    return run_selftest_worker(stack, device, timeout_s)


def run_selftest_worker(stack: Stack, device: str, timeout_s: float) -> StackResult:
    """The selftest worker's answer; a worker that does not answer becomes its status."""
    with tempfile.TemporaryDirectory(prefix="stackwars-selftest-") as scratch:
        request = {"stack": str(stack), "device": device, "cache_dir": f"{scratch}/cache"}
        limits = Limits(timeout_s, default_memory_budget())
        end = run_child(
            WORKER, "selftest", request, limits, interpreter=interpreter_for(stack.runs_in)
        )
    if end.ok and end.result is not None:
        return StackResult.from_dict(end.result)
    detail = end.detail
    if end.status == "timeout":
        detail = f"still running after {timeout_s:g} s; raise it with --timeout"
    return StackResult(str(stack), end.status, detail)
