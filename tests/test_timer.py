"""The timing protocol against a fake clock and a fake synchronisation."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from stackwars.timing.timer import Timer, TimingConfig, Usage


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ScriptedWork:
    """A synchronous function whose n-th call takes durations[n] seconds (the last repeats)."""

    def __init__(self, clock: FakeClock, durations: list[float]) -> None:
        self.clock = clock
        self.durations: Iterator[float] = itertools.chain(
            durations, itertools.repeat(durations[-1])
        )
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        self.clock.advance(next(self.durations))
        return self.calls


class AsyncWork:
    """Each call returns after ``dispatch`` seconds; the work (``compute``) happens at sync."""

    def __init__(self, clock: FakeClock, dispatch: float, compute: float) -> None:
        self.clock, self.dispatch, self.compute = clock, dispatch, compute
        self.pending = 0
        self.synced: list[Any] = []

    def __call__(self) -> str:
        self.clock.advance(self.dispatch)
        self.pending += 1
        return "result"

    def sync(self, out: Any) -> None:
        self.synced.append(out)
        self.clock.advance(self.pending * self.compute)
        self.pending = 0


FAST = TimingConfig(steady_budget_s=5.0, min_steady_s=0.05, warmup_budget_s=5.0)


def make_timer(clock: FakeClock, work: Any, config: TimingConfig = FAST, **kw: Any) -> Timer:
    return Timer(
        work,
        kw.pop("sync", lambda out: None),
        config=config,
        clock=clock,
        usage=lambda: Usage(0.0, 0.0, 0),
        **kw,
    )


def test_first_and_second_run_are_single_synchronised_calls() -> None:
    clock = FakeClock()
    work = ScriptedWork(clock, [2.0, 0.5, 1e-3])
    m = make_timer(clock, work).measure()
    assert m.first_run_s == pytest.approx(2.0)
    assert m.second_run_s == pytest.approx(0.5)
    assert m.runs_s[:2] == pytest.approx([2.0, 0.5])


@pytest.mark.parametrize(
    ("durations", "expected"),
    [
        ([5.0, 1e-3], 1),  # compiled on the first call, steady from the second (JAX in seed 001)
        ([5.0, 4.0, 1e-3], 2),  # a second slow run (PyTorch in seed 001)
        ([1e-3], 0),  # nothing to warm up
        ([5.0, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 9e-3, 1e-3], 1),  # a late spike is noise
    ],
)
def test_runs_to_steady_is_detected_from_the_series(durations: list[float], expected: int) -> None:
    clock = FakeClock()
    m = make_timer(clock, ScriptedWork(clock, durations)).measure()
    assert m.runs_to_steady == expected
    assert m.warmup_settled


def test_warm_up_that_never_settles_is_reported_within_its_budget() -> None:
    clock = FakeClock()
    growing = [1e-3 * 1.5**i for i in range(60)]
    config = TimingConfig(warmup_budget_s=0.5, steady_budget_s=0.1, min_steady_s=0.0)
    m = make_timer(clock, ScriptedWork(clock, growing), config).measure()
    assert not m.warmup_settled
    assert len(m.runs_s) < 60


def test_constant_work_stops_early_with_exact_median_and_stable() -> None:
    clock = FakeClock()
    m = make_timer(clock, ScriptedWork(clock, [1.0, 2e-4])).measure()
    summary = m.summary()
    assert m.stable
    assert summary.median == pytest.approx(2e-4)
    assert summary.ci95_low == pytest.approx(2e-4)
    assert m.steady_wall_s < FAST.steady_budget_s
    assert len(m.block_s) >= FAST.min_blocks


def test_inner_loops_make_a_block_last_at_least_the_minimum() -> None:
    clock = FakeClock()
    m = make_timer(clock, ScriptedWork(clock, [1e-5])).measure()
    assert m.inner_loops == 128  # the smallest power of two with 128 * 10 µs >= 1 ms
    assert all(block >= FAST.min_block_s for block in m.block_s)
    assert m.samples_s[0] == pytest.approx(1e-5)


def test_noisy_work_ends_at_the_budget_unstable() -> None:
    clock = FakeClock()
    noisy = [1e-3 * (1 + (i % 7) * 0.3) for i in range(10_000)]
    config = TimingConfig(steady_budget_s=0.3, min_steady_s=0.0, target_rel_ci=0.001)
    m = make_timer(clock, ScriptedWork(clock, noisy), config).measure()
    assert not m.stable
    assert m.steady_wall_s == pytest.approx(0.3, abs=0.02)
    assert m.summary().ci_half_width_rel > 0.001


def test_compilations_are_counted_per_phase() -> None:
    clock = FakeClock()
    count = {"n": 0, "calls": 0}

    def work() -> None:
        clock.advance(1e-3)
        count["calls"] += 1
        if count["calls"] == 1:
            count["n"] = 1  # the first call compiles
        elif count["calls"] == 40:
            count["n"] = 2  # and one more, well inside the steady phase (~60 calls in all)

    m = make_timer(clock, work, compile_count=lambda: count["n"]).measure()
    assert m.compiles_first_run == 1
    assert m.compiles_steady == 1


def test_async_stack_dispatch_time_differs_from_synchronised_time() -> None:
    clock = FakeClock()
    work = AsyncWork(clock, dispatch=1e-6, compute=1e-4)
    m = make_timer(clock, work, sync=work.sync).measure()
    assert m.summary().median == pytest.approx(1e-4 + 1e-6)
    assert m.dispatch_per_call_s() == pytest.approx(1e-6)
    # One synchronisation per block, on the block's last output.
    assert len(work.synced) == len(m.runs_s) + len(m.block_s) + 1  # +1: calibration


def test_first_call_and_callback_are_used_for_the_first_run_only() -> None:
    clock = FakeClock()
    seen: list[float] = []
    firsts = {"n": 0}

    def first() -> None:
        firsts["n"] += 1
        clock.advance(3.0)

    m = make_timer(
        clock, ScriptedWork(clock, [1e-3]), first_call=first, on_first_run=seen.append
    ).measure()
    assert firsts["n"] == 1
    assert seen == [pytest.approx(3.0)]
    assert m.first_run_s == pytest.approx(3.0)


def test_cpu_usage_is_taken_over_the_steady_phase() -> None:
    clock = FakeClock()
    usage = iter([Usage(1.0, 0.5, 10), Usage(3.0, 1.5, 110)])
    m = Timer(
        ScriptedWork(clock, [1e-3]),
        lambda out: None,
        config=FAST,
        clock=clock,
        usage=lambda: next(usage),
    ).measure()
    assert m.steady_usage == Usage(2.0, 1.0, 100)


def test_latency_waits_for_each_call_on_asynchronous_stacks() -> None:
    clock = FakeClock()
    work = AsyncWork(clock, dispatch=1e-6, compute=1e-4)
    m = make_timer(clock, work, sync=work.sync, measure_latency=True).measure()
    assert m.summary().median == pytest.approx(1.01e-4)
    assert len(m.latency_s) >= 3
    assert all(run == pytest.approx(1.01e-4) for run in m.latency_s)
    assert make_timer(clock, work, sync=work.sync).measure().latency_s == []


def test_the_timer_says_what_it_is_doing_between_timed_runs() -> None:
    clock = FakeClock()
    work = AsyncWork(clock, dispatch=1e-5, compute=1e-3)
    heard: list[tuple[str, bool, float]] = []
    timer = make_timer(
        clock,
        work,
        sync=work.sync,
        measure_latency=True,
        on_phase=lambda text, change: heard.append((text, change, clock.now)),
    )
    timer.measure()
    phases = [text for text, change, _ in heard if change]
    assert phases[0].startswith("first run")
    assert phases[1].startswith("steady: blocks of")
    assert phases[2].startswith("latency")
    assert any(text.startswith("warm-up: run") for text, _, _ in heard)
    # Never inside a timed call: no pending (dispatched, unsynchronised) work when told.
    assert work.pending == 0
