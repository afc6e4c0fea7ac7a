"""torch.profiler on torch:eager and torch:compile (cpu activities, plus CUDA on a gpu).

The profile is exported as Chrome trace JSON (Perfetto and chrome://tracing open it). Its
``cpu_op`` events are ATen operators (nested: ``aten::linear`` holds ``aten::addmm``) and,
under torch.compile, Inductor's kernels; the events torch.compile wraps around a compiled
graph (the cache lookup, the compiled region, the call of the compiled graph) are framework
overhead, not operations. On a gpu, ``kernel`` events are the CUDA kernels.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stackwars.profiling.trace import (
    CALL_ANNOTATION,
    OpEvent,
    Trace,
    active_threads,
    annotation,
    timed_calls,
    windows_of,
)

OP_CATEGORIES = ("cpu_op", "kernel")
# torch.compile's own events around the operations of a compiled graph.
WRAPPERS = (
    "TorchDynamo Cache Lookup",
    "Torch-Compiled Region",
    "## Call CompiledFxGraph",
    "Pregraph bytecode",
    "AOTDispatcher Runtime Wrapper",
    "CompiledFunction",
    "## ",
)


def profile_calls(call: Callable[[], Any], calls: int, out_dir: Path) -> Trace:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as profiler:
        seconds = timed_calls(call, calls, lambda index: record_function(annotation(index)))
    path = out_dir / "torch-trace.json"
    profiler.export_chrome_trace(str(path))
    trace = read_chrome_trace(json.loads(path.read_text(encoding="utf-8")))
    trace.call_s = seconds
    trace.files = {"chrome": str(path)}
    return trace


def read_chrome_trace(data: dict[str, Any]) -> Trace:
    events = [e for e in data.get("traceEvents", []) if e.get("ph") == "X"]
    windows = windows_of(
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if e.get("name") == CALL_ANNOTATION
    )
    ops = [
        OpEvent(
            name=e["name"],
            thread=f"{e.get('pid')}/{e.get('tid')}",
            start_us=float(e["ts"]),
            duration_us=float(e["dur"]),
        )
        for e in events
        if e.get("cat") in OP_CATEGORIES and not e["name"].startswith(WRAPPERS)
    ]
    spans = (
        (f"{e.get('pid')}/{e.get('tid')}", float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if e.get("cat") != "Trace"  # the profiler's own span covers everything
    )
    return Trace(ops=ops, windows=windows, threads=active_threads(spans, windows), call_s=[])
