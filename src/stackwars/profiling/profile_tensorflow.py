"""tf.profiler on TensorFlow's stacks (eager, graph, xla).

``tf.profiler.experimental.start(logdir)`` writes a TensorBoard profile
(``plugins/profile/RUN/HOST.xplane.pb``), read here with TensorFlow's own protobuf definition
of it. The operations on the host plane are: under eager, each op's kernel
(``KernelAndDeviceFunc::Run`` inside the ``EagerExecute`` naming the op); under graph, each
node's kernel on TensorFlow's executor threads (an event named ``node:Type``); under xla, each
XLA operation (an event with an ``hlo_op``). The events are also written as Chrome trace JSON,
which Perfetto opens (TensorBoard opens the logdir).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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

HOST_PLANE = "/host:CPU"
KERNEL_RUN = "KernelAndDeviceFunc::Run"
EAGER_EXECUTE = "EagerExecute"
# Kernels that call a function whose own operations are recorded (the graph, XLA's cluster),
# and the sync stackwars calls: not operations of their own.
NOT_OPS = ("SyncDevice", "PartitionedCall", "StatefulPartitionedCall", "__inference", "__forward")


@dataclass(frozen=True)
class _Event:
    name: str
    thread: str
    start_us: float
    duration_us: float
    display: str
    stats: dict[str, Any]


def profile_calls(call: Callable[[], Any], calls: int, out_dir: Path) -> Trace:
    import tensorflow as tf

    logdir = out_dir / "tf-trace"
    # At the default level (2) the graph executor traces only the kernels it deems expensive.
    # Level 3 (verbose) is meant to trace them all, but TensorFlow 2.21's binding ignores it
    # (it logs "host_tracer_level expects an i value"): asked for all the same, for a
    # TensorFlow that honours it; the registry's blind spots say what is missed meanwhile.
    options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=3)
    tf.profiler.experimental.start(str(logdir), options=options)
    try:
        seconds = timed_calls(
            call, calls, lambda index: tf.profiler.experimental.Trace(annotation(index))
        )
    finally:
        tf.profiler.experimental.stop()
    found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"))
    if not found:
        raise RuntimeError(f"tf.profiler wrote no .xplane.pb under {logdir}")
    events = list(read_xplane(found[-1].read_bytes()))
    chrome = out_dir / "tf-trace.json"
    chrome.write_text(json.dumps(chrome_trace(events)), encoding="utf-8")
    trace = trace_of(events)
    trace.call_s = seconds
    trace.files = {"tensorboard": str(logdir), "chrome": str(chrome)}
    return trace


def read_xplane(data: bytes) -> Iterator[_Event]:
    """The host plane's events, with their stats by name."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    # Generated protobuf classes are made at import time; type checkers cannot see them.
    space = xplane_pb2.XSpace()  # pyright: ignore[reportAttributeAccessIssue]
    space.ParseFromString(data)
    for plane in space.planes:
        if plane.name != HOST_PLANE:
            continue
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for line in plane.lines:
            thread = f"{line.name} ({line.id})"
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                yield _Event(
                    name=meta.name,
                    thread=thread,
                    start_us=(line.timestamp_ns * 1000 + event.offset_ps) / 1e6,
                    duration_us=event.duration_ps / 1e6,
                    display=meta.display_name,
                    stats={
                        stat_names.get(s.metadata_id, "?"): _value(s, stat_names)
                        for s in (*meta.stats, *event.stats)
                    },
                )


def _value(stat: Any, names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return names.get(stat.ref_value, "")
    return getattr(stat, kind) if kind else None


def trace_of(events: list[_Event]) -> Trace:
    windows = windows_of(
        (e.start_us, e.start_us + e.duration_us) for e in events if e.name == CALL_ANNOTATION
    )
    ops = [*_xla_and_graph_ops(events), *_eager_ops(events)]
    spans = ((e.thread, e.start_us, e.start_us + e.duration_us) for e in events)
    return Trace(ops=ops, windows=windows, threads=active_threads(spans, windows), call_s=[])


def _xla_and_graph_ops(events: list[_Event]) -> Iterator[OpEvent]:
    for e in events:
        if "hlo_op" in e.stats:
            name, module = str(e.stats["hlo_op"]), str(e.stats.get("hlo_module", ""))
        elif e.display and e.name.endswith(f":{e.display}"):
            name, module = e.display, ""  # a graph node, "node:Type", counted by its type
        else:
            continue
        if not name.startswith(NOT_OPS):
            yield OpEvent(name, e.thread, e.start_us, e.duration_us, module)


def _eager_ops(events: list[_Event]) -> Iterator[OpEvent]:
    """Each eager op's kernel, named by the EagerExecute around it (same thread)."""
    by_thread: dict[str, list[_Event]] = {}
    for e in events:
        by_thread.setdefault(e.thread, []).append(e)
    for thread_events in by_thread.values():
        stack: list[_Event] = []
        for e in sorted(thread_events, key=lambda e: (e.start_us, -e.duration_us)):
            while stack and stack[-1].start_us + stack[-1].duration_us <= e.start_us:
                stack.pop()
            if e.name == KERNEL_RUN:
                op = next((s for s in reversed(stack) if s.name == EAGER_EXECUTE), None)
                if op is not None and not op.stats.get("is_func"):
                    name = str(op.stats.get("eager_op", ""))
                    if name and not name.startswith(NOT_OPS):
                        yield OpEvent(name, e.thread, e.start_us, e.duration_us)
            stack.append(e)


def chrome_trace(events: list[_Event]) -> dict[str, Any]:
    """The events as Chrome trace JSON (one process, a track per thread)."""
    threads = {thread: index for index, thread in enumerate(sorted({e.thread for e in events}))}
    names = [
        {"ph": "M", "pid": 1, "tid": tid, "name": "thread_name", "args": {"name": thread}}
        for thread, tid in threads.items()
    ]
    spans = [
        {
            "ph": "X",
            "pid": 1,
            "tid": threads[e.thread],
            "ts": e.start_us,
            "dur": e.duration_us,
            "name": e.name,
            "args": {key: str(value) for key, value in e.stats.items()},
        }
        for e in events
    ]
    return {"displayTimeUnit": "ns", "traceEvents": names + spans}
