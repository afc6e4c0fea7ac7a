"""jax.profiler on jax's stacks and on torch:xla (torchax runs the torch code as one jax.jit).

``jax.profiler.trace`` writes a TensorBoard profile (``plugins/profile/RUN/HOST.xplane.pb``),
the same as Chrome trace JSON (``HOST.trace.json.gz``) and, asked for, a Perfetto trace. On cpu,
XLA's runtime records every operation it executes (a "thunk": a fusion, a dot, a copy) with
its HLO instruction (``hlo_op``) and module (``hlo_module``): those are the operations here.
"""

from __future__ import annotations

import gzip
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


def profile_calls(call: Callable[[], Any], calls: int, out_dir: Path) -> Trace:
    import jax

    # The Python tracer would record every Python function called: off, so that the profile
    # costs what XLA's own events cost.
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    logdir = out_dir / "jax-trace"
    with jax.profiler.trace(str(logdir), create_perfetto_trace=True, profiler_options=options):
        seconds = timed_calls(
            call, calls, lambda index: jax.profiler.TraceAnnotation(annotation(index))
        )
    chrome = _one(logdir, "*.trace.json.gz")
    trace = read_chrome_trace(json.loads(gzip.decompress(chrome.read_bytes())))
    trace.call_s = seconds
    trace.files = {"tensorboard": str(logdir), "chrome": str(chrome)}
    perfetto = sorted(logdir.glob("plugins/profile/*/perfetto_trace.json.gz"))
    if perfetto:
        trace.files["perfetto"] = str(perfetto[-1])
    return trace


def _one(logdir: Path, pattern: str) -> Path:
    found = sorted(logdir.glob(f"plugins/profile/*/{pattern}"))
    if not found:
        raise RuntimeError(f"jax.profiler wrote no {pattern} under {logdir}")
    return found[-1]


def read_chrome_trace(data: dict[str, Any]) -> Trace:
    """Operations (events naming an HLO instruction), call windows and active threads from
    the Chrome trace JSON jax.profiler writes."""
    events = [e for e in data.get("traceEvents", []) if e.get("ph") == "X"]
    names = {
        (e.get("pid"), e.get("tid")): e["args"]["name"]
        for e in data.get("traceEvents", [])
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }

    def thread(event: dict[str, Any]) -> str:
        key = (event.get("pid"), event.get("tid"))
        return f"{names.get(key, 'thread')} ({event.get('tid')})"

    windows = windows_of(
        (e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == CALL_ANNOTATION
    )
    ops = [
        OpEvent(
            name=e["args"]["hlo_op"],
            thread=thread(e),
            start_us=float(e["ts"]),
            duration_us=float(e["dur"]),
            module=e["args"].get("hlo_module", ""),
        )
        for e in events
        if "hlo_op" in e.get("args", {})
    ]
    spans = ((thread(e), e["ts"], e["ts"] + e.get("dur", 0.0)) for e in events)
    return Trace(ops=ops, windows=windows, threads=active_threads(spans, windows), call_s=[])
