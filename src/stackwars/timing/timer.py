"""The timing protocol, independent of any framework.

A :class:`Timer` is given plain callables: ``call`` (one invocation of the prepared function),
``sync`` (wait for a result), a ``clock``, a compile counter and a CPU-usage probe. It never
knows which framework it times, and tests drive it with a fake clock and a fake sync.

Protocol (docs/methodology.md, "The timing protocol", gives the reasons):

1. first run: one call, synchronised (``first_call`` may differ from ``call``, e.g. to trace);
2. second run: one call, synchronised;
3. warm-up: single synchronised runs until the series is stationary (``steady.py``), bounded
   by a run count and a time budget; ``runs_to_steady`` is counted from the whole series;
4. calibration: the inner loop count doubles until one block lasts at least ``min_block_s``;
5. steady state: blocks of ``inner`` calls and one synchronisation per block, until the 95 %
   interval of the median is within ``target_rel_ci`` or the budget ends (``stable`` false);
6. latency (when asked, for asynchronous stacks): single calls each synchronised. In a block,
   an asynchronous stack dispatches the next call while the previous one computes, so the
   per-call time is a throughput; a caller that waits for each result (an inference server,
   ``%timeit f(x).block_until_ready()`` in the seeds) pays this latency instead.

Raw samples are kept; statistics are computed from them on demand.
"""

from __future__ import annotations

import math
import resource
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stackwars.timing import steady
from stackwars.timing.stats import Summary, summarize


@dataclass(frozen=True)
class TimingConfig:
    """How long and how precisely to measure; every field is recorded with the cell."""

    target_rel_ci: float = 0.01
    steady_budget_s: float = 10.0
    min_steady_s: float = 0.2
    min_blocks: int = 20
    max_blocks: int = 100_000
    min_block_s: float = 1e-3
    warmup_window: int = 5
    warmup_tolerance: float = 0.2
    warmup_budget_s: float = 10.0
    max_warmup_runs: int = 1_000
    # Synchronised single calls after steady state, on asynchronous stacks (see Timer).
    latency_budget_s: float = 0.5
    max_latency_runs: int = 200


@dataclass(frozen=True)
class Usage:
    user_s: float
    sys_s: float
    faults: int


def process_usage() -> Usage:
    """CPU time of every thread of this process, and its page faults."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Usage(usage.ru_utime, usage.ru_stime, usage.ru_minflt + usage.ru_majflt)


@dataclass
class Measurement:
    """Raw results of the protocol; statistics are derived lazily."""

    first_run_s: float
    second_run_s: float
    runs_s: list[float]  # every individually timed run, the first and second included
    runs_to_steady: int
    warmup_settled: bool
    inner_loops: int
    block_s: list[float] = field(default_factory=list)  # whole block, synchronised
    dispatch_block_s: list[float] = field(default_factory=list)  # until the last call returned
    compiles_first_run: int = 0
    compiles_second_run: int = 0
    compiles_steady: int = 0
    # The framework's own event counters per phase: first_run, second_run, steady (how much
    # each grew over the phase; steady also holds its number of calls); {} when the framework
    # keeps none.
    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    steady_usage: Usage = Usage(0.0, 0.0, 0)
    steady_wall_s: float = 0.0
    stable: bool = False
    latency_s: list[float] = field(default_factory=list)  # single synchronised calls

    @property
    def samples_s(self) -> list[float]:
        """Per-call time of each steady block."""
        return [block / self.inner_loops for block in self.block_s]

    @property
    def calls(self) -> int:
        return len(self.block_s) * self.inner_loops

    def summary(self) -> Summary:
        return summarize(self.samples_s)

    def dispatch_per_call_s(self) -> float | None:
        if not self.dispatch_block_s:
            return None
        return summarize([d / self.inner_loops for d in self.dispatch_block_s]).median


class Timer:
    """Runs the protocol over ``call``; see the module docstring."""

    def __init__(
        self,
        call: Callable[[], Any],
        sync: Callable[[Any], None],
        *,
        config: TimingConfig | None = None,
        first_call: Callable[[], Any] | None = None,
        on_first_run: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
        compile_count: Callable[[], int] = lambda: 0,
        counters: Callable[[], Mapping[str, float]] = dict,
        usage: Callable[[], Usage] = process_usage,
        measure_latency: bool = False,
        on_phase: Callable[[str, bool], None] = lambda text, change: None,
    ) -> None:
        self.call = call
        self.sync = sync
        self.config = config or TimingConfig()
        self.first_call = first_call or call
        self.on_first_run = on_first_run
        self.clock = clock
        self.compile_count = compile_count
        self.counters = counters
        self.usage = usage
        self.measure_latency = measure_latency
        # Told what the protocol is doing, between timed runs and blocks (never inside one);
        # ``change`` marks a new phase, else a progress note within one.
        self.on_phase = on_phase

    def timed_run(self, fn: Callable[[], Any]) -> float:
        start = self.clock()
        self.sync(fn())
        return self.clock() - start

    def measure(self) -> Measurement:
        before, counted = self.compile_count(), dict(self.counters())
        self.on_phase("first run (compiles, if the stack compiles)", True)
        first = self.timed_run(self.first_call)
        compiles_first = self.compile_count() - before
        counters = {"first_run": self._counted_since(counted)}
        if self.on_first_run is not None:
            self.on_first_run(first)
        before, counted = self.compile_count(), dict(self.counters())
        second = self.timed_run(self.call)
        compiles_second = self.compile_count() - before
        counters["second_run"] = self._counted_since(counted)
        runs = [first, second, *self._warm_up([first, second])]
        settled = steady.is_stationary(
            runs, self.config.warmup_window, self.config.warmup_tolerance
        )
        reference = _tail_median(runs, self.config.warmup_window)
        measurement = Measurement(
            first_run_s=first,
            second_run_s=second,
            runs_s=runs,
            runs_to_steady=steady.runs_to_steady(runs, reference, self.config.warmup_tolerance),
            warmup_settled=settled,
            inner_loops=self._calibrate(reference),
            compiles_first_run=compiles_first,
            compiles_second_run=compiles_second,
            counters=counters if any(counters.values()) else {},
        )
        self._steady(measurement)
        if self.measure_latency:
            self.on_phase("latency: single synchronised calls", True)
            measurement.latency_s = self._latency()
        return measurement

    def _counted_since(self, before: Mapping[str, float]) -> dict[str, float]:
        """How much each of the framework's counters grew since ``before``."""
        return {name: value - before.get(name, 0) for name, value in self.counters().items()}

    def _latency(self) -> list[float]:
        runs: list[float] = []
        start = self.clock()
        while len(runs) < self.config.max_latency_runs and (
            self.clock() - start < self.config.latency_budget_s or len(runs) < 3
        ):
            runs.append(self.timed_run(self.call))
        return runs

    def _warm_up(self, runs_so_far: list[float]) -> list[float]:
        config = self.config
        runs: list[float] = []
        start = self.clock()
        while len(runs_so_far) + len(runs) < config.max_warmup_runs:
            if steady.is_stationary(
                runs_so_far + runs, config.warmup_window, config.warmup_tolerance
            ):
                break
            if self.clock() - start >= config.warmup_budget_s:
                break
            self.on_phase(f"warm-up: run {len(runs_so_far) + len(runs) + 1}", False)
            runs.append(self.timed_run(self.call))
        return runs

    def _calibrate(self, per_call_estimate: float) -> int:
        """Smallest power-of-two multiple of the estimate whose block lasts min_block_s."""
        guess = self.config.min_block_s / max(per_call_estimate, 1e-9)
        inner = 2 ** max(0, math.ceil(math.log2(max(guess, 1.0))))
        while inner < 2**30:
            block, _ = self._block(inner)
            if block >= self.config.min_block_s:
                break
            inner *= 2
        return inner

    def _block(self, inner: int) -> tuple[float, float]:
        """One block: (synchronised time, time until the last call returned).

        Only the last output is synchronised: every supported stack runs the calls of one
        device in order (JAX's per-device queue, one CUDA stream, TensorFlow's device-wide
        sync), so the last result being ready means all are. Keeping every output alive
        instead would change the allocator's behaviour being measured (for JAX on CPU it
        made calls 20-40 % slower and noisier). tests/test_frameworks.py checks the order.
        """
        out: Any = None
        start = self.clock()
        for _ in range(inner):
            out = self.call()
        dispatched = self.clock()
        self.sync(out)
        return self.clock() - start, dispatched - start

    def _steady(self, m: Measurement) -> None:
        config = self.config
        self.on_phase(f"steady: blocks of {m.inner_loops} call(s)", True)
        compiles_before, counted = self.compile_count(), dict(self.counters())
        usage_before = self.usage()
        start = self.clock()
        next_check = config.min_blocks
        while len(m.block_s) < config.max_blocks:
            block, dispatched = self._block(m.inner_loops)
            m.block_s.append(block)
            m.dispatch_block_s.append(dispatched)
            elapsed = self.clock() - start
            if len(m.block_s) >= next_check and elapsed >= config.min_steady_s:
                next_check = len(m.block_s) + max(1, len(m.block_s) // 10)
                width = m.summary().ci_half_width_rel
                if width <= config.target_rel_ci:
                    m.stable = True
                    break
                self.on_phase(f"steady: ±{width:.1%} after {len(m.block_s)} blocks", False)
            if elapsed >= config.steady_budget_s and len(m.block_s) >= 2:
                break
        if not m.stable and len(m.block_s) >= 2:
            m.stable = m.summary().ci_half_width_rel <= config.target_rel_ci
        m.steady_wall_s = self.clock() - start
        after = self.usage()
        m.steady_usage = Usage(
            after.user_s - usage_before.user_s,
            after.sys_s - usage_before.sys_s,
            after.faults - usage_before.faults,
        )
        m.compiles_steady = self.compile_count() - compiles_before
        if m.counters:
            m.counters["steady"] = {**self._counted_since(counted), "calls": float(m.calls)}


def _tail_median(runs: list[float], window: int) -> float:
    """Median of the last warm-up window; of every run after the first when there are few."""
    return statistics.median(runs[-window:] if len(runs) > window else runs[1:] or runs)
