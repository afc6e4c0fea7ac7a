"""stackwars.measure: the worker's timer and the framework's own sync, in the caller's process."""

from __future__ import annotations

import io
import statistics
import time
from typing import Any

import pytest
from rich.console import Console

import stackwars
from stackwars.errors import UsageError
from stackwars.frameworks import load_framework
from stackwars.timing.timer import Timer, TimingConfig

pytestmark = pytest.mark.slow


def test_jax_is_timed_computing_not_dispatching() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    # Large enough that the work (tens of ms here) dwarfs a dispatch even when the other test
    # worker holds a core: at 384² the two were within 1.5x of each other on a loaded CI machine.
    a = jax.random.normal(jax.random.key(0), (1536, 1536), dtype=jnp.float32)

    def gemm(x: Any) -> Any:
        return x @ x

    result = stackwars.measure(gemm, a, stack="jax:jit", budget_s=0.5)
    # The cost, measured here the way a JAX user who knows the lesson does.
    compiled = jax.jit(gemm)
    compiled(a).block_until_ready()
    singles = []
    for _ in range(30):
        start = time.perf_counter()
        compiled(a).block_until_ready()
        singles.append(time.perf_counter() - start)
    cost = statistics.median(singles)
    assert 0.4 * cost < result.median_s < 2.0 * cost
    assert result.measurement.second_run_s > 0.5 * cost
    # The same timer without the sync times a single call's dispatch, not its work (in long
    # blocks JAX's queue fills and the pace is the work's again: the single call is the trap).
    # One call of each phase: in blocks the unsynchronised calls only queue work (calibrating
    # a block to 1 ms queued over a thousand of these GEMMs, half a minute of the suite).
    framework = load_framework("jax", "jit")
    config = TimingConfig(
        steady_budget_s=0.0,
        min_steady_s=0.0,
        min_blocks=1,
        max_blocks=1,
        min_block_s=0.0,
        warmup_budget_s=0.0,
        max_warmup_runs=1,
    )
    unsynced = Timer(lambda: compiled(a), lambda out: None, config=config).measure()
    assert unsynced.second_run_s < 0.3 * cost
    assert framework.is_async() and result.measurement.latency_s


def test_the_result_says_it_is_in_process_in_a_terminal_and_a_notebook() -> None:
    np = pytest.importorskip("numpy")
    x = np.ones((64, 64), dtype=np.float32)
    result = stackwars.measure(lambda v: v @ v, x, budget_s=0.1)
    console = Console(file=io.StringIO(), width=160, record=True)
    console.print(result)
    text = console.export_text()
    assert "numpy:eager, in-process" in text and "steady median" in text
    assert "without isolation" in " ".join(text.split())
    html = result._repr_html_()
    assert html.startswith("<table>") and "in-process" in html
    assert result.ci95_s[0] <= result.median_s <= result.ci95_s[1]


def test_a_stack_that_needs_its_own_process_is_refused() -> None:
    with pytest.raises(UsageError, match="torch:xla cannot run inside another process"):
        stackwars.measure(lambda: None, stack="torch:xla")
    with pytest.raises(UsageError, match="budget_s must be positive"):
        stackwars.measure(lambda: None, budget_s=0)
