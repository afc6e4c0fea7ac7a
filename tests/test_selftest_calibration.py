"""The selftest's calibration on a modelled device: a clock injected into the chain advances by
what each call would cost (a fixed cost plus 2n³ FLOPs at a rate), so that the sizes chosen
for a CPU and for fast accelerators are checked without one. What a real GPU does is not
proven here (docs/accelerators.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from stackwars.frameworks.base import Framework, RunSettings
from stackwars.instruments.selftest import worker as selftest_worker
from stackwars.instruments.selftest.worker import (
    ACCELERATOR_MAX_N,
    MAX_N,
    MIN_ACCELERATOR_CALL_S,
    MIN_CALL_S,
    calibrate,
    check_calibration,
    min_call_s,
    next_size,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ModelledDevice(Framework):
    """Each call of the step costs ``overhead_s + 2n³ / flops_per_s`` on ``clock``."""

    def __init__(self, clock: Clock, overhead_s: float, flops_per_s: float) -> None:
        self.clock, self.overhead_s, self.flops_per_s = clock, overhead_s, flops_per_s
        self.sizes: list[int] = []

    def load(self) -> None:
        pass

    def init(self, settings: RunSettings) -> dict[str, Any]:
        return {}

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(arrays)

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        return fn

    def sync(self, out: Any) -> None:
        pass

    def to_host(self, out: Any) -> list[Any]:
        return [out]

    def selftest_step(self) -> Callable[[Any, Any], Any]:
        def step(x: Any, w: Any) -> Any:
            n = x.shape[0]
            self.sizes.append(n)
            self.clock.now += self.overhead_s + 2.0 * n**3 / self.flops_per_s
            return x

        return step


def calibrated(device: str, overhead_s: float, flops_per_s: float, max_n: int):
    clock = Clock()
    framework = ModelledDevice(clock, overhead_s, flops_per_s)
    return calibrate(framework, framework.selftest_step(), device, max_n, clock)[1]


def test_a_cpu_needs_min_call_s_whatever_its_overheads() -> None:
    assert min_call_s("cpu", None) == MIN_CALL_S
    calibration = calibrated("cpu", 5e-6, 1e11, MAX_N)
    assert calibration.overhead_s is None
    # 2·512³/1e11 = 2.7 ms: too short; the n³ law aims 1.5x 5 ms at 721, on a multiple of 64
    assert (calibration.n, calibration.reached) == (768, True)  # 2·768³/1e11 = 9.1 ms
    assert calibration.min_call_s == MIN_CALL_S


def test_an_accelerator_needs_a_multiple_of_its_measured_fixed_cost() -> None:
    calibration = calibrated("gpu", 20e-6, 5e13, ACCELERATOR_MAX_N)
    assert calibration.overhead_s == pytest.approx(20e-6, rel=0.01)
    assert calibration.min_call_s == pytest.approx(50 * 20e-6, rel=0.01)
    # 2·2048³/5e13 = 0.34 ms: too short; 3328 is aimed at 1.5 ms
    assert calibration.reached and calibration.n == 3328


def test_the_minimum_never_falls_below_a_floor_nor_rises_above_min_call_s() -> None:
    assert min_call_s("gpu", 1e-6) == MIN_ACCELERATOR_CALL_S
    assert min_call_s("tpu", 1e-3) == MIN_CALL_S


def test_a_fast_gpu_stays_under_its_minimum_at_the_cpus_largest_size() -> None:
    """At 1e15 FLOP/s the largest cpu size (4096) takes 0.16 ms: calibration says so."""
    short = calibrated("gpu", 20e-6, 1e15, MAX_N)
    assert (short.n, short.reached) == (MAX_N, False)
    check = check_calibration(short)
    assert check.passed is None
    assert "not reached at the largest size allowed" in check.message
    enough = calibrated("gpu", 20e-6, 1e15, ACCELERATOR_MAX_N)
    # From 4096 the n³ law aims at 9,600, past a doubling: at most double, 2·8192³/1e15 = 1.1 ms
    assert enough.reached and enough.n == 8192
    assert check_calibration(enough).passed is True


@pytest.mark.parametrize("flops_per_s", [3e10, 1e11, 2.04e11, 4.21e11, 1e12])
def test_a_cpu_call_lands_near_its_minimum_not_eight_times_past_it(flops_per_s: float) -> None:
    """Doubling n multiplies a call by eight: 1024² at 4.5 ms became 2048² at 36 ms, and the
    checks' 112 timed calls paid for it. Past a size too small, the next is aimed at 1.5 times
    the minimum, so a call lands between the minimum and twice the aim."""
    calibration = calibrated("cpu", 5e-6, flops_per_s, MAX_N)
    assert calibration.reached
    assert MIN_CALL_S <= calibration.call_s <= 3 * MIN_CALL_S, calibration


def test_next_size_grows_by_whole_steps_at_most_double_and_never_past_the_largest() -> None:
    assert next_size(256, 1e-9, 5e-3, MAX_N) == 512  # pure fixed cost: no leap past double
    assert next_size(1024, 4.99e-3, 5e-3, MAX_N) == 1216  # just short: about 1.5x the work
    assert next_size(256, 4.99e-3, 5e-3, MAX_N) == 320  # the next step up
    assert next_size(1024, 4.99e-3, 5e-3, 1100) == 1100


def test_run_checks_lets_an_accelerator_use_larger_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    bounds: list[int] = []

    def record(framework: Any, step: Any, device: str, max_n: int, clock: Any = None) -> Any:
        bounds.append(max_n)
        raise RuntimeError("stop after calibration")

    monkeypatch.setattr(selftest_worker, "calibrate", record)
    framework = ModelledDevice(Clock(), 0.0, 1e12)
    for device in ("cpu", "gpu:1"):
        with pytest.raises(RuntimeError, match="stop after calibration"):
            selftest_worker.run_checks(framework, "eager", device)
    assert bounds == [MAX_N, ACCELERATOR_MAX_N]
