"""A stack's profile of one cell, as the profile worker answers it and ``--json`` writes it.

History of PROFILE_FORMAT:

* 1 (2026-11-25): first version. Added since, without a version change: ``device`` (a run's
  profiles, ``run --profile``, name the cell they profiled by workload, params, stack, device).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

PROFILE_FORMAT = 1
# The categories add up to the traced call time by construction; what is checked is that the
# trace covers the calls the host clock measured: the two agree within the larger of these.
ADDS_UP_RELATIVE = 0.10
ADDS_UP_ABSOLUTE_S = 50e-6


@dataclass
class OpRow:
    """One operation (an operator, a kernel, an XLA instruction), per profiled call."""

    name: str
    category: str
    per_call: float  # how often it ran per call
    # Its share of the call's time: the time it was the innermost operation on its thread,
    # split evenly with the operations other threads ran at the same moment.
    self_s: float
    total_s: float  # its events' durations summed (nested operations included, all threads)
    hlo: str = ""  # the HLO operations it runs, when found in the optimized HLO


@dataclass
class AddsUp:
    """The categories (the traced call time) against the host clock's profiled time."""

    traced_s: float
    measured_s: float
    relative: float = ADDS_UP_RELATIVE
    absolute_s: float = ADDS_UP_ABSOLUTE_S

    @property
    def within(self) -> bool:
        allowed = max(self.relative * self.measured_s, self.absolute_s)
        return abs(self.traced_s - self.measured_s) <= allowed

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "within": self.within}


@dataclass
class Profile:
    stack: str
    workload: str
    params: dict[str, Any]
    status: str = "ok"  # ok, unsupported, error, timeout, oom, mismatch
    reason: str = ""
    calls: int = 0
    steady_s: float | None = None  # unprofiled: the timing protocol's median
    steady_ci95_s: tuple[float, float] | None = None
    # The unprofiled steady state's CPU time and page faults per call (the timing protocol's):
    # what a trace of operations does not show, such as the kernel zeroing fresh pages.
    cpu: dict[str, float | None] = field(default_factory=dict)
    profiled_s: float | None = None  # median of the profiled calls, host clock
    profiled_mean_s: float | None = None
    traced_s: float | None = None  # per call, from the profiler's annotations
    categories: dict[str, float] = field(default_factory=dict)  # seconds per call
    ops: list[OpRow] = field(default_factory=list)
    ops_per_call: float | None = None  # operations dispatched per call (outermost ones)
    fusions_per_call: float | None = None  # of the operations, fused kernels (XLA, Inductor)
    threads: list[str] = field(default_factory=list)  # threads active during the calls
    framework_threads: dict[str, Any] = field(default_factory=dict)  # as the framework says
    hlo_joined: float | None = None  # share of operation time found in the optimized HLO
    xla_modules: list[str] = field(default_factory=list)  # the XLA executables the calls ran
    files: dict[str, str] = field(default_factory=dict)
    blind_spots: str = ""
    notes: list[str] = field(default_factory=list)
    adds_up: AddsUp | None = None
    format: int = PROFILE_FORMAT
    device: str = "cpu"

    @property
    def overhead(self) -> float | None:
        """How much slower the profiled calls were than the unprofiled steady state."""
        if self.profiled_s is None or not self.steady_s:
            return None
        return self.profiled_s / self.steady_s - 1

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["overhead"] = self.overhead
        data["adds_up"] = self.adds_up.to_dict() if self.adds_up else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["ops"] = [OpRow(**row) for row in values.get("ops", [])]
        adds_up = values.get("adds_up")
        if adds_up:
            values["adds_up"] = AddsUp(
                **{k: v for k, v in adds_up.items() if k != "within"},
            )
        if values.get("steady_ci95_s"):
            values["steady_ci95_s"] = tuple(values["steady_ci95_s"])
        return cls(**values)
