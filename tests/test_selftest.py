"""``stackwars selftest``: a stack of each implementation of sync passes in fresh workers, and
stacks whose sync does not wait for the work fail the check that exists to catch them, with the
numbers."""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from stackwars.errors import UsageError
from stackwars.frameworks import Stack, all_stacks, load_framework, missing_reason
from stackwars.frameworks.base import Framework, RunSettings
from stackwars.frameworks.jax import JaxFramework
from stackwars.frameworks.numpy import NumpyFramework
from stackwars.instruments.selftest import command
from stackwars.instruments.selftest import task as selftest_task
from stackwars.instruments.selftest import worker as selftest_worker
from stackwars.instruments.selftest.data import Check, StackResult
from stackwars.instruments.selftest.worker import run_checks, run_request

F = TypeVar("F", bound=Framework)
# Small enough that the work a broken sync leaves running stays short.
BROKEN_MAX_N = 512


def arguments(stacks: str | None = None, timeout: float | None = None) -> argparse.Namespace:
    return argparse.Namespace(stacks=stacks, device="cpu", timeout=timeout)


def ready(framework: F, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> F:
    """``framework`` after environment, load and init, as the selftest worker leaves it."""
    settings = RunSettings(cache_dir=str(tmp_path))
    for variable, value in framework.environment(settings).items():
        monkeypatch.setenv(variable, value)
    framework.load()
    framework.init(settings)
    return framework


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


def failed(checks: list[Check]) -> set[str]:
    return {check.name for check in checks if check.passed is False}


def sync_implementations() -> dict[str, list[Stack]]:
    """Every stack, grouped by the method that waits for its work (``Framework.sync``)."""
    groups: dict[str, list[Stack]] = {}
    for stack in all_stacks():
        framework = load_framework(stack.framework, stack.mode)
        groups.setdefault(type(framework).sync.__qualname__, []).append(stack)
    return groups


# torch-xla:lazy runs in an environment of its own: tests/test_torch_lazy.py runs its selftest.
SELFTESTED_ELSEWHERE = ("TorchLazyFramework.sync",)


def one_stack_per_sync() -> list[Stack]:
    """The first stack of each way of waiting, in the registry's order."""
    groups = sync_implementations()
    return [stacks[0] for name, stacks in groups.items() if name not in SELFTESTED_ELSEWHERE]


def test_every_sync_implementation_has_a_stack_in_the_selftest_run_below() -> None:
    groups = sync_implementations()
    assert set(groups) >= {"NumpyFramework.sync", "JaxFramework.sync", *SELFTESTED_ELSEWHERE}
    chosen = one_stack_per_sync()
    assert len(chosen) == len(groups) - len(SELFTESTED_ELSEWHERE)
    for name, stack in zip(
        [n for n in groups if n not in SELFTESTED_ELSEWHERE], chosen, strict=True
    ):
        assert stack in groups[name]
    # A stack's mode changes its function, not the call that waits: jax:eager and jax:jit
    # share JaxFramework.sync, the Keras stacks their backend's through KerasFramework.sync.
    assert len(chosen) < len(all_stacks())


@pytest.mark.slow
@pytest.mark.serial
def test_one_stack_of_each_sync_implementation_passes_in_fresh_workers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What the selftest proves is that a stack's sync waits for its work; the stacks that
    share one implementation of sync prove it once (the selftest on all 17 stacks took 81 s
    of the serial pass; `stackwars selftest` runs them all, as on the GPU, docs/accelerators.md)."""
    stacks = one_stack_per_sync()
    status = command.selftest(arguments(",".join(map(str, stacks))), [])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "FAILED" not in out
    for stack in stacks:
        assert str(stack) in out
        if missing_reason(stack.framework) is None:
            assert out.count(f"{stack} ") >= 3, out  # one row per check


class NoWaitJax(JaxFramework):
    """JAX whose sync returns at once: the bug the selftest exists to catch."""

    last: Any = None

    def sync(self, out: Any) -> None:
        self.last = out


class DeferredNumpy(NumpyFramework):
    """NumPy whose calls return a computation to do later, like a lazy array library."""

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        prepared = super().prepare(fn, mode)
        return lambda *args: functools.partial(prepared, *args)


class SleepyNumpy(DeferredNumpy):
    """Calls that return at once, and a sync that waits a fixed 5 ms instead of for the work.

    No real work, so that the numbers do not depend on how busy the machine is.
    """

    def sync(self, out: Any) -> None:
        time.sleep(0.005)


class MissingNumpy(NumpyFramework):
    def load(self) -> None:
        raise ImportError("No module named 'numpy'")


@pytest.fixture
def no_wait_jax(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NoWaitJax]:
    pytest.importorskip("jax")
    framework = ready(NoWaitJax(), tmp_path, monkeypatch)
    yield framework
    # JAX runs one device's calls in order: once the last output is ready, no work is left
    # running to slow the tests that follow.
    JaxFramework.sync(framework, framework.last)


@pytest.mark.slow
@pytest.mark.serial
def test_async_stack_whose_sync_does_not_wait_fails_physical_and_dispatch(
    no_wait_jax: NoWaitJax,
) -> None:
    checks = by_name(run_checks(no_wait_jax, "jit", "cpu", max_n=BROKEN_MAX_N))
    # Both blocks then time dispatches only, so the chain check cannot tell: it is not asserted.
    physical, dispatch = checks["physical"], checks["dispatch"]
    assert physical.passed is False
    assert physical.numbers["n"] == BROKEN_MAX_N  # no size made a "synchronised" call last
    assert physical.numbers["flops_per_s"] > physical.numbers["limit"]
    assert f"{physical.numbers['flops_per_s']:.2e} FLOP/s, ABOVE" in physical.message
    assert f"n={BROKEN_MAX_N}" in physical.message
    assert dispatch.passed is False
    assert dispatch.numbers["fraction"] > selftest_worker.DISPATCH_MAX_FRACTION
    assert f"({dispatch.numbers['fraction']:.2f}), NOT below 0.5" in dispatch.message


def test_sync_stack_whose_calls_return_before_the_work_fails_physical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework = ready(DeferredNumpy(), tmp_path, monkeypatch)
    checks = run_checks(framework, "eager", "cpu", max_n=BROKEN_MAX_N)
    physical = by_name(checks)["physical"]
    assert "physical" in failed(checks)
    assert physical.numbers["flops_per_s"] > physical.numbers["limit"]
    assert f"took {physical.numbers['call_s'] * 1e3:.3g} ms" in physical.message
    assert f"{physical.numbers['flops_per_s']:.2e} FLOP/s, ABOVE" in physical.message
    assert by_name(checks)["dispatch"].passed is None  # numpy is synchronous


def test_sync_with_a_fixed_wait_fails_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework = ready(SleepyNumpy(), tmp_path, monkeypatch)
    checks = run_checks(framework, "eager", "cpu", max_n=BROKEN_MAX_N)
    chain = by_name(checks)["chain"]
    assert failed(checks) == {"chain"}
    assert chain.numbers["ratio"] < selftest_worker.CHAIN_LOW
    assert f"{chain.numbers['ratio']:.2f}x the" in chain.message
    assert "a fixed wait" in chain.message


def test_a_framework_that_cannot_be_imported_is_unsupported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selftest_worker, "load_framework", lambda name, mode: MissingNumpy())
    request = {"stack": "numpy:eager", "device": "cpu", "cache_dir": str(tmp_path)}
    result = run_request(request)
    assert result["status"] == "unsupported"
    assert "pip install 'stackwars[numpy]'" in result["reason"]
    assert result["checks"] == []


def canned(results: dict[str, StackResult]) -> Callable[..., StackResult]:
    def check_stack(stack: Stack, device: str, timeout_s: float) -> StackResult:
        return results[str(stack)]

    return check_stack


PASSED = Check("physical", True, {"flops_per_s": 1e11}, "1.00e+11 FLOP/s, within")
NOT_APPLICABLE = Check("dispatch", None, {"fraction": 1.0}, "not applicable")
CHAIN_FAILED = Check("chain", False, {"ratio": 0.1}, "0.10x the 80 ms; allowed [0.6, 1.5]")


def test_exit_status_is_1_when_a_check_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = {
        "numpy:eager": StackResult("numpy:eager", "ok", "", [PASSED, NOT_APPLICABLE]),
        "jax:jit": StackResult("jax:jit", "ok", "", [PASSED, CHAIN_FAILED]),
    }
    monkeypatch.setattr(command, "selftest_stack", canned(results))
    assert command.selftest(arguments("numpy,jax:jit"), []) == command.EXIT_FAILED
    out = capsys.readouterr().out
    assert f"FAILED: jax:jit chain: {CHAIN_FAILED.message}" in out
    assert "FAILED: numpy" not in out


def test_exit_status_is_0_when_every_check_passes_or_does_not_apply(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hint = "tensorflow is not installed; fix: pip install 'stackwars[tensorflow]'"
    results = {
        "numpy:eager": StackResult("numpy:eager", "ok", "", [PASSED, NOT_APPLICABLE]),
        "tensorflow:eager": StackResult("tensorflow:eager", "unsupported", hint),
    }
    monkeypatch.setattr(command, "selftest_stack", canned(results))
    assert command.selftest(arguments("numpy,tensorflow:eager"), []) == 0
    out = capsys.readouterr().out
    assert "FAILED" not in out
    assert "unsupported" in out and "pip install 'stackwars[tensorflow]'" in out


def test_a_missing_framework_is_unsupported_without_a_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_worker(stack: Stack, device: str, timeout_s: float) -> StackResult:
        raise AssertionError(f"a worker was started for {stack}")

    monkeypatch.setattr(selftest_task, "run_selftest_worker", no_worker)
    on_gpu = selftest_task.selftest_stack(Stack("numpy", "eager"), "gpu", 10.0)
    assert (on_gpu.status, on_gpu.reason) == ("unsupported", "numpy:eager runs on cpu, not gpu")
    monkeypatch.setattr(
        selftest_task, "stack_problem", lambda stack: f"{stack.partition(':')[0]} is missing"
    )
    result = selftest_task.selftest_stack(Stack("torch", "eager"), "cpu", 10.0)
    assert (result.status, result.reason, result.failures()) == (
        "unsupported",
        "torch is missing",
        [],
    )


@pytest.mark.slow
def test_a_worker_past_its_timeout_is_killed_and_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # No worker even finishes starting Python in a millisecond.
    assert command.selftest(arguments("numpy", timeout=0.001), []) == command.EXIT_FAILED
    assert "FAILED: numpy:eager worker (timeout): still running after 0.001 s" in (
        capsys.readouterr().out
    )


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(UsageError, match="--timeout 0 must be a positive"):
        command.selftest(arguments("numpy", timeout=0.0), [])


def test_without_a_terminal_each_stack_ends_with_a_progress_line_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # On a GPU machine the whole selftest took 7 minutes with a log that stayed silent.
    results = {
        "numpy:eager": StackResult("numpy:eager", "ok", "", [PASSED, NOT_APPLICABLE]),
        "jax:jit": StackResult("jax:jit", "ok", "", [PASSED, CHAIN_FAILED]),
    }
    monkeypatch.setattr(command, "selftest_stack", canned(results))
    command.selftest(arguments("numpy,jax:jit"), [])
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "selftest 1/2 numpy:eager on cpu: ok",
        "selftest 2/2 jax:jit on cpu: ok",
    ]
