"""Timing a function in this process: ``stackwars.measure(fn, *args, stack="jax:jit")``.

For a notebook cell or a script that wants one number done right: the same timer as a worker
(first run, warm-up until steady, calibrated blocks, median with its 95 % interval), with the
framework's own synchronisation. Seed 000's ``%timeit`` lesson is why: without
``block_until_ready`` a JAX call is timed dispatching, not computing. The function runs in the
caller's process, with its imports, caches, allocator state and whatever else that process
does: no isolation, and the result says so. ``stackwars.run`` measures cells in fresh workers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stackwars.config import parse_device
from stackwars.errors import UsageError
from stackwars.frameworks import FRAMEWORKS, load_framework, parse_stack
from stackwars.report.inprocess import result_html, result_table
from stackwars.timing.stats import Summary
from stackwars.timing.timer import Measurement, Timer, TimingConfig

IN_PROCESS_NOTE = (
    "in-process: timed in this process, sharing its imports, caches and allocator, without "
    "isolation; stackwars.run measures cells in fresh workers"
)


@dataclass(frozen=True)
class InProcessResult:
    """One in-process measurement: the raw protocol results, and what they add up to."""

    stack: str
    measurement: Measurement
    config: TimingConfig
    note: str = IN_PROCESS_NOTE

    @property
    def summary(self) -> Summary:
        return self.measurement.summary()

    @property
    def median_s(self) -> float:
        return self.summary.median

    @property
    def ci95_s(self) -> tuple[float, float]:
        return self.summary.ci95_low, self.summary.ci95_high

    def __rich__(self) -> Any:
        return result_table(self.stack, self.measurement, self.note)

    def _repr_html_(self) -> str:
        return result_html(self.stack, self.measurement, self.note)


def measure(
    fn: Callable[..., Any],
    *args: Any,
    stack: str = "numpy:eager",
    device: str = "cpu",
    budget_s: float = 2.0,
    target_ci_pct: float = 1.0,
) -> InProcessResult:
    """Apply the stack's mode to ``fn`` (``jax.jit``, ``torch.compile``, ``tf.function``...)
    and time ``fn(*args)`` here, synchronising with the framework's own mechanism; ``args``
    are already on the device. ``budget_s`` bounds the warm-up and the steady phase each."""
    parsed = parse_stack(stack)
    if FRAMEWORKS[parsed.framework].needs_own_process(parsed.mode):
        raise UsageError(f"{stack} cannot run inside another process; use stackwars.run")
    if budget_s <= 0 or not 0 < target_ci_pct < 100:
        raise UsageError("budget_s must be positive and target_ci_pct in (0, 100)")
    framework = load_framework(parsed.framework, parsed.mode)
    framework.load()
    framework.attach(parse_device(device))
    prepared = framework.prepare(fn, parsed.mode)
    config = dataclasses.replace(
        TimingConfig(),
        steady_budget_s=budget_s,
        warmup_budget_s=budget_s,
        target_rel_ci=target_ci_pct / 100,
    )
    timer = Timer(
        lambda: prepared(*args),
        framework.sync,
        config=config,
        first_call=lambda: framework.first_call(prepared, args),
        compile_count=framework.compile_count,
        measure_latency=framework.is_async(),
    )
    return InProcessResult(str(parsed), timer.measure(), config)
