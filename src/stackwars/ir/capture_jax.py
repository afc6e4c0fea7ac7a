"""IR of jax:jit: jaxpr, StableHLO, HLO, optimized HLO, and XLA's cost and memory analysis."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stackwars.ir.capture import Captured, attempt, text_of

MEMORY_FIELDS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "alias_size_in_bytes",
    "temp_size_in_bytes",
    "generated_code_size_in_bytes",
    "peak_memory_in_bytes",
)


def capture_jit(fn: Callable[..., Any], args: tuple[Any, ...], framework: Any) -> Captured:
    import jax

    del framework
    captured: dict[str, str] = {}
    failed: dict[str, str] = {}
    attempt(captured, failed, "jaxpr", lambda: str(jax.make_jaxpr(fn)(*args)))
    lowered = jax.jit(fn).lower(*args)
    attempt(captured, failed, "stablehlo", lowered.as_text)
    attempt(captured, failed, "hlo", lambda: lowered.as_text(dialect="hlo"))
    compiled = lowered.compile()
    attempt(captured, failed, "optimized_hlo", lambda: text_of(compiled.as_text()))
    attempt(captured, failed, "cost_analysis", lambda: _cost(compiled))
    attempt(captured, failed, "memory_analysis", lambda: _memory(compiled))
    return captured, failed


def _cost(compiled: Any) -> str:
    cost = compiled.cost_analysis()
    # Older jax returned a list with one dict per computation.
    if isinstance(cost, list):
        cost = cost[0] if cost else {}
    return json.dumps({k: float(v) for k, v in sorted(cost.items())}, indent=1)


def _memory(compiled: Any) -> str:
    stats = compiled.memory_analysis()
    if stats is None:
        raise RuntimeError("XLA gave no memory analysis for this executable")
    found = {name: getattr(stats, name) for name in MEMORY_FIELDS if hasattr(stats, name)}
    return json.dumps(found, indent=1)
