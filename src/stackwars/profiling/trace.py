"""What a framework's profiler saw over the profiled calls, in one form for every framework.

Each profiler implementation (``profile_jax``, ``profile_torch``, ``profile_tensorflow``)
reads its framework's own trace into a :class:`Trace`: the operations it recorded, each call's
window (the annotation the profiler wrote around it), the threads that were active, and the
host clock's time of each call. Times are the profiler's clock, in microseconds.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

CALL_ANNOTATION = "stackwars call"  # the name every profiler writes around each timed call
WARMUP_ANNOTATION = "stackwars warm-up"  # around the call before them, not analysed


@dataclass(frozen=True)
class OpEvent:
    """One operation the profiler recorded: a kernel, an operator, an XLA operation."""

    name: str
    thread: str
    start_us: float
    duration_us: float
    # An XLA operation's HLO module: its name is an instruction of that module's optimized HLO.
    module: str = ""

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


@dataclass
class Trace:
    ops: list[OpEvent]
    windows: list[tuple[float, float]]  # each profiled call: start and end, microseconds
    threads: list[str]  # names of the threads with any event inside a window
    call_s: list[float]  # each profiled call on the host clock (perf_counter), seconds
    files: dict[str, str] = field(default_factory=dict)  # what it is -> absolute path
    notes: list[str] = field(default_factory=list)


def timed_calls(
    call: Callable[[], Any],
    calls: int,
    annotate: Callable[[int], AbstractContextManager[Any]],
) -> list[float]:
    """Run ``call`` (one synchronised call) once, so that the profiler's and the annotation's
    own first-use costs fall outside the calls analysed, then ``calls`` times, each inside the
    profiler's annotation ``annotate(index)`` and timed on the host clock. ``annotate(-1)``
    is the warm-up's annotation (WARMUP_ANNOTATION)."""
    with annotate(-1):
        call()
    seconds = []
    for index in range(calls):
        with annotate(index):
            start = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - start)
    return seconds


def annotation(index: int) -> str:
    """The annotation's name around call ``index`` (-1: the warm-up call)."""
    return WARMUP_ANNOTATION if index < 0 else CALL_ANNOTATION


def windows_of(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Call windows in time order (annotations can be written out of order)."""
    return sorted((start, end) for start, end in spans)


def active_threads(
    spans: Iterable[tuple[str, float, float]], windows: list[tuple[float, float]]
) -> list[str]:
    """The threads with an event (thread, start, end) overlapping any call window."""
    return sorted({thread for thread, start, end in spans if overlaps(windows, start, end)})


def overlaps(windows: list[tuple[float, float]], start: float, end: float) -> bool:
    """Whether [start, end] meets one of the sorted, disjoint ``windows``."""
    index = bisect.bisect_right(windows, (end, math.inf))  # windows before it start by end
    return index > 0 and windows[index - 1][1] >= start
