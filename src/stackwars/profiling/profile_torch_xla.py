"""torch_xla's own profiler on the torch-xla:lazy stack (worker side, in the torch-xla
environment).

``torch_xla.debug.profiler.start_trace`` / ``stop_trace`` record, in-process, the same XLA
runtime events jax.profiler does (each operation the compiled graph executes, with its HLO
instruction), plus torch_xla's own host events (lazy tracing, the step marker, graph
compilation, transfers), into a TensorBoard profile that includes a Chrome trace
(``plugins/profile/RUN/HOST.trace.json.gz``), read as jax's is. Each call is annotated with a
plain host event (``TraceMe``), not ``xp.Trace``: torch_xla refuses a step boundary inside its
own scopes, and every call here ends with one.
"""

from __future__ import annotations

import gzip
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stackwars.profiling.profile_jax import read_chrome_trace
from stackwars.profiling.trace import Trace, annotation, timed_calls


def profile_calls(call: Callable[[], Any], calls: int, out_dir: Path) -> Trace:
    profiler = importlib.import_module("torch_xla.debug.profiler")
    bindings = importlib.import_module("torch_xla")._XLAC.profiler
    logdir = out_dir / "torch-xla-trace"
    profiler.start_trace(str(logdir))
    try:
        seconds = timed_calls(call, calls, lambda index: bindings.TraceMe(annotation(index)))
    finally:
        profiler.stop_trace()
    (chrome,) = sorted(logdir.glob("plugins/profile/*/*.trace.json.gz"))[-1:]
    trace = read_chrome_trace(json.loads(gzip.decompress(chrome.read_bytes())))
    trace.call_s = seconds
    trace.files = {"tensorboard": str(logdir), "chrome": str(chrome)}
    return trace
