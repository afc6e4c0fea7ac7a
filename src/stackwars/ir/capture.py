"""Which IR stages each stack can give, and the functions that capture them (worker side).

Capturers live in one module per framework (``capture_jax``, ``capture_torch``,
``capture_tensorflow``), import their framework inside functions, and are named here by
"module:function" so that the parent can list stages without importing anything.

A capturer is called as ``capturer(fn, args, framework)`` with the workload's unprepared
function, the inputs already on the device, and the set-up Framework; it returns
``{stage: text}`` for every stage it could capture and ``{stage: reason}`` for those it could
not (second dict), never raising for one failed stage.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

Captured = tuple[dict[str, str], dict[str, str]]
Capturer = Callable[[Callable[..., Any], tuple[Any, ...], Any], Captured]

STAGES: dict[str, tuple[str, ...]] = {
    "jax:jit": ("jaxpr", "stablehlo", "hlo", "optimized_hlo", "cost_analysis", "memory_analysis"),
    "torch:xla": ("exported_graph", "stablehlo", "optimized_hlo"),
    "torch:compile": ("fx_graph", "inductor_code", "graph_breaks"),
    "tensorflow:xla": ("stablehlo", "hlo", "optimized_hlo"),
    "tensorflow:graph": ("graph_ops",),
}
_CAPTURERS = {
    "jax:jit": "stackwars.ir.capture_jax:capture_jit",
    "torch:xla": "stackwars.ir.capture_torch:capture_xla",
    "torch:compile": "stackwars.ir.capture_torch:capture_compile",
    "tensorflow:xla": "stackwars.ir.capture_tensorflow:capture_xla",
    "tensorflow:graph": "stackwars.ir.capture_tensorflow:capture_graph",
}
NO_COMPILER = "no compiler IR: this stack executes op by op"
# Stages whose text is StableHLO or HLO, i.e. what `ir --diff` can compare across stacks.
COMPARABLE = ("stablehlo", "hlo", "optimized_hlo")


def stages(stack: str) -> tuple[str, ...]:
    return STAGES.get(stack, ())


def capturer(stack: str) -> Capturer:
    module_name, _, function = _CAPTURERS[stack].partition(":")
    found: Capturer = getattr(importlib.import_module(module_name), function)
    return found


def attempt(
    captured: dict[str, str], failed: dict[str, str], stage: str, produce: Callable[[], str]
) -> None:
    """Capture one stage; a failure is recorded with its reason and the others go on."""
    try:
        captured[stage] = produce()
    except Exception as exc:  # a stage the front end cannot give is data, not a crash
        failed[stage] = f"{type(exc).__name__}: {exc}"[:2000]


def text_of(text: str | None) -> str:
    """A compiler's text output, which some APIs type as optional."""
    if text is None:
        raise RuntimeError("the compiler returned no text for this stage")
    return text
