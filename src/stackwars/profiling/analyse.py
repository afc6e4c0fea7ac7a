"""A trace as a profile: time per operation and per category, operations per call, threads.

Operations nest on a thread (``aten::linear`` holds ``aten::addmm``) and run at the same time
on several threads (XLA's thunks beside the Python thread, TensorFlow's executor threads). So
each moment of a call is given to the innermost operation running on each thread, split evenly
between the threads busy at that moment: every microsecond of a call is counted once, the
operations' shares add up to the time some operation was running, and the rest of the call
(dispatch, Python, waiting) is overhead/idle. The categories therefore add up to the traced
call time by construction; ``result.AddsUp`` checks that time against the host clock's.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping

from stackwars.ir.hlo import Instruction
from stackwars.profiling import categories
from stackwars.profiling.result import AddsUp, OpRow, Profile
from stackwars.profiling.trace import OpEvent, Trace, overlaps

US = 1e-6
# Instructions that run what they call: shown with the operations inside.
CALLERS = ("fusion", "call", "while", "conditional", "custom-call")

Segment = tuple[float, float, int]  # start, end (µs), index of the operation it belongs to


def fill(profile: Profile, trace: Trace, hlo: Mapping[str, Instruction]) -> Profile:
    """Complete ``profile`` (its identity and unprofiled time already set) from ``trace``,
    naming XLA operations found in ``hlo`` (instruction name -> Instruction) by what they run."""
    calls = len(trace.windows)
    if calls == 0 or len(trace.call_s) != calls:
        raise ValueError(
            f"the profiler recorded {calls} call annotation(s) for {len(trace.call_s)} calls: "
            "its trace cannot be split into calls"
        )
    ops = [op for op in trace.ops if overlaps(trace.windows, op.start_us, op.end_us)]
    shares, outermost = attribute(ops, trace.windows)
    traced_us = sum(end - start for start, end in trace.windows)
    profile.calls = calls
    profile.ops = rows(ops, shares, hlo, calls)
    profile.categories = dict.fromkeys(categories.CATEGORIES, 0.0)
    for row in profile.ops:
        profile.categories[row.category] += row.self_s
    profile.categories[categories.OVERHEAD] = (traced_us - sum(shares)) * US / calls
    profile.traced_s = traced_us * US / calls
    profile.ops_per_call = sum(outermost) / calls
    profile.fusions_per_call = sum(row.per_call for row in profile.ops if _fused(row))
    profile.threads = list(trace.threads)
    profile.hlo_joined = joined_share(ops, shares, hlo)
    profile.xla_modules = sorted({op.module for op in ops if op.module})
    ordered = sorted(trace.call_s)
    profile.profiled_s = ordered[len(ordered) // 2]
    profile.profiled_mean_s = sum(trace.call_s) / calls
    profile.adds_up = AddsUp(traced_s=profile.traced_s, measured_s=profile.profiled_mean_s)
    profile.files.update(trace.files)
    profile.notes.extend(trace.notes)
    profile.notes.extend(empty_calls_note(ops, trace.windows))
    return profile


def empty_calls_note(ops: list[OpEvent], windows: list[tuple[float, float]]) -> list[str]:
    """A note when some calls recorded no operation: the profiler left their work untraced,
    so their time is all overhead/idle and the operations per call undercount."""
    empty = sum(
        1
        for start, end in windows
        if not any(op.start_us < end and op.end_us > start for op in ops)
    )
    if not empty:
        return []
    return [
        f"{empty} of {len(windows)} profiled calls recorded no operation: the profiler left "
        "their kernels untraced, so their time counts as overhead/idle and the operations per "
        "call undercount"
    ]


def attribute(
    ops: list[OpEvent], windows: list[tuple[float, float]]
) -> tuple[list[float], list[bool]]:
    """Each operation's share of the windows' time (µs), and whether it is outermost on its
    thread (a dispatched operation rather than one inside another)."""
    segments: list[Segment] = []
    outermost = [False] * len(ops)
    by_thread: defaultdict[str, list[int]] = defaultdict(list)
    for index, op in enumerate(ops):
        by_thread[op.thread].append(index)
    for indices in by_thread.values():
        for segment in innermost(ops, indices, outermost):
            segments.extend(clip(segment, windows))
    return shares(segments, len(ops)), outermost


def innermost(ops: list[OpEvent], indices: list[int], outermost: list[bool]) -> Iterator[Segment]:
    """One thread's time, each moment given to the innermost operation running then; an
    operation reaching past the one around it (clock jitter) is cut at its end."""
    stack: list[tuple[float, int]] = []  # (end, index), innermost last
    cursor = 0.0
    for index in sorted(indices, key=lambda i: (ops[i].start_us, -ops[i].duration_us)):
        start = ops[index].start_us
        while stack and stack[-1][0] <= start:
            end, done = stack.pop()
            yield cursor, end, done
            cursor = end
        if stack:
            yield cursor, start, stack[-1][1]
        end = ops[index].end_us if not stack else min(ops[index].end_us, stack[-1][0])
        outermost[index] = not stack
        stack.append((end, index))
        cursor = start
    while stack:
        end, done = stack.pop()
        yield cursor, end, done
        cursor = end


def clip(segment: Segment, windows: list[tuple[float, float]]) -> Iterator[Segment]:
    """The parts of ``segment`` inside the sorted, disjoint call windows."""
    start, end, index = segment
    if end <= start:
        return
    at = max(0, bisect.bisect_right(windows, (start, float("inf"))) - 1)
    for w_start, w_end in windows[at:]:
        if w_start >= end:
            break
        low, high = max(start, w_start), min(end, w_end)
        if high > low:
            yield low, high, index


def shares(segments: list[Segment], count: int) -> list[float]:
    """Each operation's time, every moment split evenly between the segments covering it."""
    delta: Counter[float] = Counter()
    for start, end, _ in segments:
        delta[start] += 1
        delta[end] -= 1
    integral: dict[float, float] = {}  # time -> ∫ dt / (segments active), from the first
    active, total, previous = 0, 0.0, None
    for point in sorted(delta):
        if previous is not None and active > 0:
            total += (point - previous) / active
        integral[point] = total
        active += delta[point]
        previous = point
    found = [0.0] * count
    for start, end, index in segments:
        found[index] += integral[end] - integral[start]
    return found


def rows(
    ops: list[OpEvent], shares_us: list[float], hlo: Mapping[str, Instruction], calls: int
) -> list[OpRow]:
    """One row per operation name, most time first, per call."""
    count: Counter[str] = Counter()
    self_us: defaultdict[str, float] = defaultdict(float)
    total_us: defaultdict[str, float] = defaultdict(float)
    for op, share in zip(ops, shares_us, strict=True):
        count[op.name] += 1
        self_us[op.name] += share
        total_us[op.name] += op.duration_us
    found = [
        OpRow(
            name=name,
            category=category_of(name, hlo.get(name)),
            per_call=count[name] / calls,
            self_s=self_us[name] * US / calls,
            total_s=total_us[name] * US / calls,
            hlo=describe(hlo.get(name)),
        )
        for name in count
    ]
    return sorted(found, key=lambda row: (-row.self_s, row.name))


def category_of(name: str, instruction: Instruction | None) -> str:
    if instruction is None:
        return categories.of_name(name)
    return categories.of_hlo(instruction.runs)


def describe(instruction: Instruction | None) -> str:
    """``fusion: dot`` for an instruction that runs others, its opcode otherwise."""
    if instruction is None:
        return ""
    if instruction.opcode in CALLERS:
        return f"{instruction.opcode}: {', '.join(instruction.runs)}"
    return instruction.opcode


def joined_share(
    ops: list[OpEvent], shares_us: list[float], hlo: Mapping[str, Instruction]
) -> float | None:
    """Of the XLA operations' time, the share whose instruction the optimized HLO names; None
    when there are no XLA operations or no HLO."""
    xla = [(op, share) for op, share in zip(ops, shares_us, strict=True) if op.module]
    total = sum(share for _, share in xla)
    if not xla or not hlo or total <= 0:
        return None
    return sum(share for op, share in xla if op.name in hlo) / total


def _fused(row: OpRow) -> bool:
    name = row.name.lower()
    return "fusion" in name or "fused" in name or row.hlo.startswith("fusion")
