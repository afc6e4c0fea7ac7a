"""Which stacks can be profiled, and the functions that profile them (worker side).

Both come from the framework registry: ``FrameworkInfo.profilers`` names, per mode, the
framework's own profiler as "module:function" with what it cannot see, and
``FrameworkInfo.no_profiler`` why a framework has none. The profilers of the built-in
frameworks live in one module per framework (``profile_jax``, ``profile_torch``,
``profile_tensorflow``) and import their framework inside functions.

A profiler is called as ``profile_calls(call, calls, out_dir)``: ``call`` makes one
synchronised call of the prepared function; it is called once to start the profiler's own
bookkeeping and then ``calls`` times inside the profiler, each inside an annotation named
``trace.CALL_ANNOTATION``; the profiler's files go into ``out_dir``. It returns a
:class:`~stackwars.profiling.trace.Trace`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stackwars.frameworks import FRAMEWORKS, split_stack
from stackwars.frameworks.base import Profiler
from stackwars.profiling.trace import Trace

ProfileCalls = Callable[[Callable[[], Any], int, Path], Trace]


def profiler(stack: str) -> Profiler | None:
    """The profiler of ``stack`` ("framework:mode"); None when it has none."""
    framework, mode, _ = split_stack(stack)
    info = FRAMEWORKS.get(framework)
    return None if info is None else info.profilers.get(mode)


def no_profiler_reason(stack: str) -> str:
    """Why ``stack`` cannot be profiled (for a stack that has no profiler)."""
    framework, mode, _ = split_stack(stack)
    info = FRAMEWORKS.get(framework)
    if info is not None and info.no_profiler:
        return info.no_profiler
    return f"no profiler is declared for {framework}:{mode} (FrameworkInfo.profilers)"


def profile_function(stack: str) -> ProfileCalls:
    """The function that profiles ``stack`` (imports its module; workers only)."""
    found = profiler(stack)
    if found is None:
        raise ValueError(f"{stack} cannot be profiled: {no_profiler_reason(stack)}")
    module_name, _, function = found.profiler.partition(":")
    profile: ProfileCalls = getattr(importlib.import_module(module_name), function)
    return profile
