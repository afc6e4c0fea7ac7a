"""Which IR stages each stack can give, and the functions that capture them (worker side).

Both come from the framework registry: ``FrameworkInfo.ir_capture`` names, per mode with a
compiler, its stages and its capturer as "module:function", so that the parent can list stages
without importing anything. The capturers of the built-in frameworks live in one module per
framework (``capture_jax``, ``capture_torch``, ``capture_tensorflow``) and import their
framework inside functions.

A capturer is called as ``capturer(fn, args, framework)`` with the workload's unprepared
function, the inputs already on the device, and the set-up Framework; it returns
``{stage: text}`` for every stage it could capture and ``{stage: reason}`` for those it could
not (second dict), never raising for one failed stage.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from stackwars.frameworks import FRAMEWORKS, split_stack
from stackwars.frameworks.base import IrCapture

Captured = tuple[dict[str, str], dict[str, str]]
Capturer = Callable[[Callable[..., Any], tuple[Any, ...], Any], Captured]

NO_COMPILER = "no compiler IR: this stack executes op by op"
# Stages whose text is StableHLO or HLO, i.e. what `ir --diff` can compare across stacks.
COMPARABLE = ("stablehlo", "hlo", "optimized_hlo")


def _ir_capture(stack: str) -> IrCapture | None:
    framework, mode, _ = split_stack(stack)
    info = FRAMEWORKS.get(framework)
    return None if info is None else info.ir_capture.get(mode)


def stages(stack: str) -> tuple[str, ...]:
    """The IR stages ``stack`` ("framework:mode") gives; () when it has no compiler IR."""
    found = _ir_capture(stack)
    return () if found is None else found.stages


def capturer(stack: str) -> Capturer:
    """The function that captures ``stack``'s stages (imports its module; workers only)."""
    found = _ir_capture(stack)
    if found is None:
        raise ValueError(f"{stack} has no compiler IR to capture")
    module_name, _, function = found.capturer.partition(":")
    captures: Capturer = getattr(importlib.import_module(module_name), function)
    return captures


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
