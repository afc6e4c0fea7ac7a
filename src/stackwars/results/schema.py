"""The versioned result format: a run and its cells, as written to JSON and to the store.

Field names are a public contract: users' scripts read them. Add fields freely; rename or
remove one only with a new version and a migration.

History of SCHEMA_VERSION:

* 1 (2026-11-22): first version: run metadata, cells with times, first-run breakdown, warm-up
  runs, steady-state statistics with raw samples, compiles, memory, CPU, parity, work, settings.
  Added since, without a version change (readers ignore what they do not know): ``repeat``,
  ``memory.peak_tree_rss_bytes``, run ``planned``, ``times.latency_s`` and
  ``latency_samples_s``, ``parity.reference``, ``parity.fingerprint``,
  ``parity.fingerprint_head``, ``parity.fingerprint_steps``, ``parity.fingerprint_counts``,
  ``parity.compared_with``,
  ``memory.predicted_bytes``; (2026-11-23) run ``owner`` (host, pid, process start: a
  ``running`` run whose process is gone reads as ``abandoned``), cell
  ``settings.inherited_environment`` and ``settings.blas``, run ``identity`` (label, hostname,
  machine fingerprint, git commit/branch/dirty); cell ``warm_start`` (``--cache
  cold-then-warm``: the first run again, in a fresh worker that finds the compile cache the
  cell's worker filled), the run JSON's derived ``compile`` section (break-even calls and
  compiled-versus-eager speed-up, recomputed from the cells whenever a run is written; readers
  ignore it); run ``kind`` (``timing``, or ``behave``: a ``stackwars behave`` run, whose file
  holds ``outcomes``, one per probe and stack, instead of ``cells``); (2026-11-24) run
  ``claims`` (``stackwars claims``: each claim checked with the run, its value, interval and
  verdict, ``instruments/claims/verdict.py``); (2026-11-25) ``memory.device_reserved_bytes`` and
  ``memory.device_limit_bytes`` (the allocator's pool and its limit), cell
  ``settings.device_memory_stats`` (the framework's own statistics they come from),
  ``memory.predicted_device_bytes`` (the plan's prediction for an accelerator cell), run
  ``profiles`` (``run --profile``: each ok cell profiled in a profile worker after the timed
  cells, ``profiling.result.Profile`` with its own ``format``), cell ``settings.run.inputs``
  (``--inputs``: ``resident``, as every earlier cell ran, or ``per-call``); (2026-11-26)
  ``compiles.second_run`` (compilations during the second run: a lazily created optimizer
  state compiles a second graph there), cell ``counters`` (the framework's own event counters
  per phase: ``first_run``, ``second_run`` and ``steady`` (with its ``calls``); torch_xla's graphs
  compiled and executed, compile and execute time, transfers; ``{}`` for frameworks that keep
  none), cell ``settings.versions`` (the versions of the cell's framework packages as its
  worker found them, in the Python environment it ran in); (2026-11-29)
  ``memory.call_peak_bytes`` (the most one untimed call after the timed runs held at once
  beyond what was held before it, as the framework's allocation accounting sees it:
  ``Framework.call_peak_bytes``; null where the framework keeps none), cell ``program``
  (the program the mode's compiler was given, read after the timed runs: its dialect, its
  operations and the compiler's estimate of a call's FLOPs; nulls where there is none),
  ``memory.first_run_peak_rss_bytes`` and ``memory.timed_peak_rss_bytes`` (the worker's peak
  resident set up to the end of the first run, and from then to the end of the timed runs;
  null where the kernel's high-water mark cannot be reset); (2026-11-29) cell ``worker``
  (``--workers per-stack``: how many cells its worker measured and how many before this one;
  ``{"cells": 1, "position": 0}``, a worker of its own, in every earlier file).
* 2 (2026-11-23): cell ``node``, the machine the cell ran on (``--executor ray`` runs cells on
  several): executor, host name, machine fingerprint with the CPU model, cores, memory and
  accelerators it is made of, and the library versions installed there (empty in version-1
  files, whose cells all ran on the run's machine, ``run.identity``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from stackwars.frameworks import split_stack, stack_environment

SCHEMA_VERSION = 2

STATUSES = ("ok", "mismatch", "oom", "timeout", "error", "unsupported")


# workload, parameters as text, stack, device, results copied to host
CellKey = tuple[str, str, str, str, bool]


def cell_key(
    workload: str, params: dict[str, Any], stack: str, device: str, to_host: bool
) -> CellKey:
    """What identifies a cell within a run (and across runs, for comparisons)."""
    text = ",".join(f"{k}={params[k]}" for k in sorted(params))
    return (workload, text, stack, device, to_host)


@dataclass(frozen=True)
class CellSpec:
    """What to measure: workload, parameters, stack, device, and whether results go to host.
    A run's plan is a list of these; a measured :class:`Cell` gives its own back
    (:meth:`Cell.spec`), so whatever measures a stored cell again asks for the same thing."""

    workload: str
    params: dict[str, Any]
    stack: str
    device: str = "cpu"
    to_host: bool = False
    repeat: int = 0  # which of the --repeat fresh workers this is

    @property
    def framework(self) -> str:
        return split_stack(self.stack)[0]

    @property
    def mode(self) -> str:
        return split_stack(self.stack)[1]

    @property
    def environment(self) -> str:
        """The Python environment its worker runs in ("" for stackwars' own)."""
        return stack_environment(self.stack)

    def label(self) -> str:
        return cell_label(self.workload, self.params, self.stack, self.device, self.to_host)

    def key(self) -> CellKey:
        return cell_key(self.workload, self.params, self.stack, self.device, self.to_host)


def cell_label(
    workload: str, params: dict[str, Any], stack: str, device: str, to_host: bool
) -> str:
    """How progress lines and tables name a cell."""
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    host = " →host" if to_host else ""
    return f"{workload}({shown}) on {stack}{host} @ {device}"


@dataclass
class Times:
    import_s: float | None = None
    init_s: float | None = None
    transfer_s: float | None = None
    setup_s: float | None = None
    first_run_s: float | None = None
    second_run_s: float | None = None
    dispatch_s: float | None = None  # per call, without synchronisation; async stacks only
    latency_s: float | None = None  # median single call waited for; async stacks only


@dataclass
class Steady:
    median_s: float | None = None
    ci95_low_s: float | None = None
    ci95_high_s: float | None = None
    iqr_s: float | None = None
    mad_s: float | None = None
    min_s: float | None = None
    mean_s: float | None = None
    std_s: float | None = None
    blocks: int = 0
    inner_loops: int = 0
    stable: bool = False
    samples_s: list[float] = field(default_factory=list)  # per-call time of each block


@dataclass
class Compiles:
    first_run: int | None = None
    second_run: int | None = None
    steady: int | None = None


@dataclass
class WarmStart:
    """The first run measured again in a fresh worker whose compile cache the cell's own
    worker filled (``--cache cold-then-warm``); status None when not measured."""

    status: str | None = None
    reason: str = ""
    first_run_s: float | None = None
    first_run_breakdown: dict[str, float] = field(default_factory=dict)
    compiles_first_run: int | None = None
    wall_s: float | None = None  # the warm worker's whole life (import and set-up included)


@dataclass
class Memory:
    # The worker process's own peak (VmHWM; ru_maxrss before 2026-11-29, which on Linux also
    # held the peak of the parent image the worker was started from).
    peak_rss_bytes: int | None = None
    device_peak_bytes: int | None = None  # the work's arrays at most, on the device
    # The most the framework's allocator took from the device (pre-allocation included), and
    # what it may take (frameworks/base.py's DeviceMemory); None where it cannot tell.
    device_reserved_bytes: int | None = None
    device_limit_bytes: int | None = None
    rss_after_import_bytes: int | None = None  # peak once the framework was up, before data
    peak_tree_rss_bytes: int | None = None  # worker and its children, polled by the parent
    predicted_bytes: int | None = None  # the plan's prediction of the peak, before running
    predicted_device_bytes: int | None = None  # the plan's, of the device peak (accelerators)
    # What one more call held at most beyond what was there before it, as the framework's own
    # allocation accounting sees it (frameworks/base.py: Framework.call_peak_bytes).
    call_peak_bytes: int | None = None
    # The worker's peak resident set up to the end of the first run (import, inputs, trace,
    # the compiler's own working memory, the first execution), and from then to the end of the
    # timed runs (what the work holds while it runs again): the kernel's high-water mark, read
    # and reset after the first run (runner/high_water.py); None where it cannot be reset.
    first_run_peak_rss_bytes: int | None = None
    timed_peak_rss_bytes: int | None = None


@dataclass
class Cpu:
    user_s_per_call: float | None = None
    sys_s_per_call: float | None = None
    page_faults_per_call: float | None = None


@dataclass
class Parity:
    ok: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    atol: float | None = None
    rtol: float | None = None
    computed_dtype: str | None = None
    requested_dtype: str | None = None
    # What the result was compared with: "numpy float64" (the workload's reference) or
    # "stacks" (no reference can exist, e.g. a train step: the run compares the stacks that
    # ran the same cell, from the fingerprint: the first output whole, then samples).
    reference: str | None = None
    fingerprint: list[float] | None = None
    fingerprint_head: int | None = None
    fingerprint_steps: list[float] | None = None  # sampled new minus old weights
    fingerprint_counts: list[int] | None = None  # samples per weight tensor, in order
    compared_with: str | None = None  # the stack a "stacks" comparison was made against


@dataclass
class WorkCounts:
    flops: float | None = None
    bytes: float | None = None


@dataclass
class Program:
    """What the mode's compiler was given for the cell's function, read once after the timed
    runs (``Framework.compiled_program``): its dialect, how many operations it holds
    (``ir/analyse.py``'s count) and the compiler's own estimate of a call's FLOPs; all None
    where the mode has no program to read (eager modes) or gives no estimate."""

    dialect: str | None = None
    operations: int | None = None
    flops: float | None = None


@dataclass
class Worker:
    """The worker that measured the cell: one of its own (``cells`` 1, the default), or one
    its stack's cells shared one after another (``--workers per-stack``), ``position`` cells
    measured in it before this one. A later cell's first run finds what the earlier ones
    imported, started and compiled, so its first-run figures are not a fresh process's."""

    cells: int = 1
    position: int = 0

    @property
    def shared(self) -> bool:
        return self.cells > 1


def reason_headline(reason: str) -> str:
    """What a table shows of a cell's reason: its part before the first blank line (the
    details after it stay in the cell), on one line."""
    return " ".join(reason.strip().split("\n\n", 1)[0].split())


@dataclass
class Cell:
    """One measurement: workload + parameters + stack + device (+ whether results go to host)."""

    workload: str
    params: dict[str, Any]
    stack: str
    device: str = "cpu"
    to_host: bool = False
    repeat: int = 0  # which of the --repeat fresh workers measured this cell
    status: str = "error"
    # Why the cell is not ok: its point first (an error's exception and fix), then, after a
    # blank line, details (an error's traceback) that tables leave out (reason_headline).
    reason: str = ""
    times: Times = field(default_factory=Times)
    first_run_breakdown: dict[str, float] = field(default_factory=dict)
    runs_to_steady: int | None = None
    warmup_s: list[float] = field(default_factory=list)  # every run before steady state
    latency_samples_s: list[float] = field(default_factory=list)  # single synchronised calls
    steady: Steady = field(default_factory=Steady)
    compiles: Compiles = field(default_factory=Compiles)
    memory: Memory = field(default_factory=Memory)
    cpu: Cpu = field(default_factory=Cpu)
    parity: Parity = field(default_factory=Parity)
    work: WorkCounts = field(default_factory=WorkCounts)
    program: Program = field(default_factory=Program)
    worker: Worker = field(default_factory=Worker)
    gflops: float | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # The framework's own event counters, per phase (see the history above).
    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    # The worker's whole life, seen from the parent; in a shared worker (``worker``), the
    # cell's own span in it, the first cell's with the framework's import.
    wall_s: float | None = None
    warm_start: WarmStart = field(default_factory=WarmStart)
    # Where the cell ran (results.metadata.node_info, plus "executor"); {} when it ran nowhere.
    node: dict[str, Any] = field(default_factory=dict)

    def key(self) -> CellKey:
        return cell_key(self.workload, self.params, self.stack, self.device, self.to_host)

    def spec(self, repeat: int | None = None) -> CellSpec:
        """What measures this cell again (its own worker index unless ``repeat`` is given):
        the second look, IR captures, profiles and added rounds all ask through this."""
        index = self.repeat if repeat is None else repeat
        return CellSpec(
            self.workload, dict(self.params), self.stack, self.device, self.to_host, index
        )

    def label(self) -> str:
        return cell_label(self.workload, self.params, self.stack, self.device, self.to_host)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        nested = {
            "times": Times,
            "steady": Steady,
            "compiles": Compiles,
            "memory": Memory,
            "cpu": Cpu,
            "parity": Parity,
            "work": WorkCounts,
            "program": Program,
            "worker": Worker,
            "warm_start": WarmStart,
        }
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for name, kind in nested.items():
            if isinstance(values.get(name), dict):
                kind_fields = {f.name for f in dataclasses.fields(kind)}
                values[name] = kind(**{k: v for k, v in values[name].items() if k in kind_fields})
        return cls(**values)
