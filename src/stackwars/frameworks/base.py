"""The one interface every framework implements.

A :class:`Framework` is what a worker process needs to run a workload's implementation on one
array library: import it, pick a device, move NumPy inputs onto the device, apply an execution
mode to a function, wait for results, bring results back, and report what the framework did
(compilations, first-run phases, device memory, versions).

Everything stackwars knows about a framework is declared in two places: its
:class:`FrameworkInfo` in the registry (``stackwars/frameworks/__init__.py``: static data the
parent reads without importing anything) and its :class:`Framework` subclass (what a worker
does with it). Planning, listing, the selftest, the peak, IR capture and the model memory
prediction ask these two and keep no table of frameworks of their own. Adding a framework is
its registry entry, its module here, and its implementations in the workload modules.

Registry facts beyond names and packages (see :class:`FrameworkInfo`):

* ``baseline_bytes``: resident memory of a worker that has imported and initialised the
  framework, before any data; planning adds it to every cell's memory prediction.
* ``ir_capture``: per mode that compiles, the IR stages it gives and the "module:function"
  that captures them in a worker (see ``stackwars/ir/capture.py``); modes left out execute op
  by op and have no compiler IR.
* ``profilers``: per mode, the framework's own profiler as "module:function" (see
  ``stackwars/profiling/capture.py``), with what it cannot see; ``no_profiler`` says why a
  mode left out cannot be profiled.
* ``model_memory``: how the framework's model runner (``workloads/models/run_<name>.py``)
  holds a model's weights and optimizer state, for ``workloads/models/memory.py``; None when
  the framework has no model runner.

Contract (checked for every registered framework by ``tests/test_frameworks.py`` and
``tests/test_framework_registry.py``):

* Only this package's framework modules import their framework at top level, and only the
  worker imports those modules. Nothing here may import a framework.
* ``environment`` is called before the framework is imported and returns the environment
  variables that make the stack comparable (cache directories, pre-allocation, precision).
* ``load`` imports the framework; its duration is reported as ``import_s``.
* ``init`` selects the device and brings the runtime up; its duration is ``init_s``.
* ``prepare`` applies a mode. A mode changes only how the function executes, never what it
  computes.
* ``sync`` returns only when every array in ``out`` has been computed on the device. It is the
  framework's own mechanism (``block_until_ready``, device synchronize), never a host copy.
* ``compile_count`` counts compilations (traces, graph builds, backend compiles) performed so
  far in this process, so that the timer can detect compilations during steady state.
* ``fallbacks`` lists, one line per event so far in this process, why a compiling mode ran
  part of a program outside what it compiled (a torch.compile graph break); ``[]`` when the
  framework reports none, which is not proof that none happened.
* ``first_call`` makes the first call (it may snapshot counters or trace explicitly first) and
  ``first_run_phases``, called after that call was synchronised, returns the phases the
  framework exposes in seconds (``trace_s``, ``lower_s``, ``compile_s``, ``execute_s``, ...),
  non-overlapping and summing to at most the total; ``{}`` when it exposes none. Keys
  prefixed ``of_compile.`` are parts of ``compile_s`` (they may overlap each other, e.g. a
  compile spread over threads), not phases of their own.
* ``attach(device)`` is ``init``'s in-process counterpart (``stackwars.measure`` in a user's
  own process): it selects the device that ``sync`` waits for, and changes no global setting
  of a framework the user already configured.
* ``selftest_step`` returns ``(x, w) -> tanh(x @ w)`` written with the framework's own
  operations: the dependent chain ``stackwars selftest`` times to prove that ``sync`` waits.
* ``gemm_call(a, b)`` returns a call computing ``a @ b`` on two device arrays as fast as the
  framework does it: what ``stackwars env --peak`` times as this framework's GEMM.
* ``compiled_program(fn, args)`` returns the program the mode's compiler is given for the
  prepared ``fn`` on ``args`` (its text and the compiler's estimate of a call's FLOPs), read
  after the timed runs without running it; None where the mode has none (eager modes).
* ``stream_kernels(elements, scalar)`` returns STREAM's kernels (copy, scale, add, triad) on
  float64 device arrays, each writing into an existing array; ``{}`` when the framework cannot
  write into an existing array (the peak then measures no bandwidth with it).
* ``device_facts()`` (before ``init``) returns what the framework itself says about devices in
  this process (its build, plugins, the devices of each kind or the error asking gave), as
  plain data; ``device_support(facts)`` is a pure function of such facts: per device kind, the
  devices seen or why none, with the fix. ``init`` raises :class:`DeviceUnavailable` with that
  reason when the device asked for is not there, and the cell ends ``unsupported``.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal


@dataclass(frozen=True)
class ModeImplementation:
    """A mode that runs through more than its framework: its own implementation class, and
    the packages it needs besides the framework."""

    implementation: str  # "module:Class", imported only by workers
    import_names: tuple[str, ...]
    extra: str
    # Loading it changes the framework for the rest of the process (torchax makes every later
    # torch.compile fail), so it must never share a process with the framework's other modes.
    own_process: bool = False
    # The device kinds this mode runs on, when they differ from the framework's (torch:xla
    # runs wherever JAX does, the TPU included); None: the framework's.
    devices: tuple[str, ...] | None = None
    # FrameworkInfo.device_memory_share for this mode, when another runtime holds its arrays
    # (torch:xla's live in JAX's client); None: the framework's.
    device_memory_share: float | None = None


@dataclass(frozen=True)
class IrCapture:
    """The compiler IR a mode gives: its stage names (listed by the parent without importing
    anything) and the function that captures them in a worker."""

    stages: tuple[str, ...]
    # "module:function", imported only by workers; called as described in ir/capture.py.
    capturer: str


@dataclass(frozen=True)
class Profiler:
    """How a mode is profiled with its framework's own profiler: the function that profiles
    calls in a worker (see ``stackwars/profiling/capture.py``), the environment it needs before
    the framework is imported, and what that profiler cannot see (said with every profile)."""

    # "module:function", imported only by workers.
    profiler: str
    blind_spots: str
    environment: Mapping[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class CompiledProgram:
    """What a mode's compiler is given for a function: its text (StableHLO, HLO, an op list)
    and the compiler's own estimate of the FLOPs one call does (None where it gives none)."""

    text: str
    flops: float | None = None


@dataclass(frozen=True)
class ModelMemory:
    """How a framework's model runner (``workloads/models/run_<name>.py``) holds a model: the
    facts ``workloads/models/memory.py`` adds up into a prediction."""

    # Where the weights the model computes with live:
    # "host": the host arrays themselves, no copy (numpy);
    # "device copy": the copy ``to_device`` makes of the host arrays, cast again when the
    #   cell's dtype is not the host's (jax: the parameters are device arrays);
    # "own copy": the framework's own objects (a torch Module, Keras variables) in the cell's
    #   dtype, loaded from the host arrays with no other device copy (torch loads its module
    #   on the host and moves it once, Keras variables are assigned from host arrays).
    weights: Literal["host", "device copy", "own copy"]
    # A train step is a pure function returning new weights and new AdamW moments (three more
    # parameter-sized arrays) instead of updating them in place: jax, whose timed calls reuse
    # the same arguments, so their buffers cannot be donated.
    functional_train_step: bool = False
    # A train step's attention keeps its scores and probabilities for the backward; False
    # where a fused attention keeps one log-sum-exp per row instead (torch's
    # scaled_dot_product_attention).
    keeps_attention_scores: bool = True
    # Logits-sized tensors alive at once while the loss's backward runs, where measured: torch's
    # cross_entropy holds the log-probabilities it kept, their gradient and the logits'
    # gradient (3; five out-of-memory errors on three GPUs, docs/log.md "fourth visit"). 0:
    # not measured, and the forward's own peak stands for the backward's.
    loss_backward_logits: int = 0
    # Logits-sized blocks the device allocator keeps reserved but unused at a train step's
    # peak: torch's caching allocator, having split the blocks the loss freed, had 12.1, 20.1
    # and 21.9 GiB reserved but free beside logits of 12.7, 20.9 and 22.6 GiB when it ran out
    # (three GPUs), and with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the same step ran
    # (docs/log.md "fourth visit"). The prediction does not read that setting: with it the
    # answer is one block low.
    cached_free_logits: int = 0


@dataclass(frozen=True)
class FrameworkInfo:
    """What the parent process may know about a framework without importing it."""

    name: str
    modes: tuple[str, ...]
    import_name: str
    extra: str
    implementation: str  # "module:Class", imported only by workers
    # Resident memory of a worker that has imported and initialised the framework, before any
    # data (measured on this project's reference machine, rounded up); planning adds it to
    # every cell's predicted peak.
    baseline_bytes: int
    # How the model runner holds a model (memory prediction); None: no model runner.
    model_memory: ModelMemory | None
    devices: tuple[str, ...] = ("cpu",)
    distributions: tuple[str, ...] = ()  # package names whose versions are reported
    mode_implementations: Mapping[str, ModeImplementation] = field(default_factory=dict, hash=False)
    # Prefixes of the environment variables the framework reads: a user's value that the stack
    # does not pin is recorded with the cell and warned about.
    environment_prefixes: tuple[str, ...] = ()
    # Per mode with a compiler, the IR it gives; a mode left out has none (op by op).
    ir_capture: Mapping[str, IrCapture] = field(default_factory=dict, hash=False)
    # Per mode, the framework's own profiler (``stackwars profile``); a mode left out cannot
    # be profiled, and ``no_profiler`` says why.
    profilers: Mapping[str, Profiler] = field(default_factory=dict, hash=False)
    no_profiler: str = ""
    # Mode -> the persistent compile cache its compiled code can be reloaded from in a later
    # process (--cache warm, cold-then-warm); a mode missing here keeps none.
    compile_caches: Mapping[str, str] = field(default_factory=dict, hash=False)
    # Mode -> the checks of the machine its compiler makes once per cache folder, not per
    # program (Inductor's probes of the CPU's vector instruction sets), made by
    # ``Framework.check_machine``: a cold cell's fresh cache starts from them, made once per
    # batch (runner/toolchain.py); under --cache pristine each cell makes them.
    machine_checks: Mapping[str, str] = field(default_factory=dict, hash=False)
    # The registered framework this one is a layer over (the Keras stacks run on jax, torch or
    # tensorflow): it brings no kernels of its own, so the peak and the BLAS probe leave it
    # out, and runs that name no stacks leave it out too (ask for it by name or family).
    runs_on: str | None = None
    # Frameworks written with the same code share a family: the key of their implementations
    # in workloads and probes, and a name ``--stacks`` expands to every member of (``keras``).
    # Empty: the framework is its own family.
    family: str = ""
    # The framework whose implementations this one runs, when it runs another's code
    # unchanged (torch-xla runs the torch code on lazy XLA tensors); "": its own or its
    # family's.
    runs_code_of: str = ""
    # The Python environment its workers run in (frameworks/environments.py), when it cannot
    # share stackwars' own; "": this one.
    environment: str = ""
    # The distributions released in lockstep with the framework, pinned at one version in each
    # release's environment by `stackwars bisect` (jaxlib with jax, torch with torch_xla; not
    # what a worker reports: tensorflow's distributions are two alternative builds).
    # Empty: it cannot be bisected, for the reason in ``release_note``.
    release_packages: tuple[str, ...] = ()
    release_note: str = ""
    # The share of a GPU's memory one process may take by default: JAX's client stops at
    # 75 % (XLA_PYTHON_CLIENT_MEM_FRACTION unset), with pre-allocation or without (read on an
    # H100, 2026-11-26: bytes_limit 59.4 GiB of 79.2, and a train step predicted to fit the
    # 90 % budget ran out of memory); None: no limit of its own.
    device_memory_share: float | None = None
    # --memory-fraction replaces that share (JAX's variable, torch's
    # set_per_process_memory_fraction); TensorFlow 2 has no such setting.
    takes_memory_fraction: bool = False
    # The device kinds on which this project has run the framework's stacks on real hardware
    # (docs/accelerators.md says what ran): tables mark its cells on any other kind unproven.
    proven_devices: tuple[str, ...] = ("cpu",)
    # Device kind -> why the framework's stacks do not run on it (a release dropped it, a
    # runtime stackwars has not proven), said when a cell asks for it.
    not_on: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def code_key(self) -> str:
        """The key of this framework's implementations in workloads and probes."""
        return self.runs_code_of or self.family or self.name

    def implementation_for(self, mode: str | None) -> str:
        """The "module:Class" that runs ``mode`` (None: the framework's own class)."""
        special = self.mode_implementations.get(mode or "")
        return self.implementation if special is None else special.implementation

    def devices_for(self, mode: str | None) -> tuple[str, ...]:
        """The device kinds ``mode`` runs on (None: the framework's own)."""
        special = self.mode_implementations.get(mode or "")
        return self.devices if special is None or special.devices is None else special.devices

    def needs_own_process(self, mode: str) -> bool:
        special = self.mode_implementations.get(mode)
        return special is not None and special.own_process

    def install_hint(self, mode: str | None = None) -> str:
        if self.environment:
            return f"stackwars env create {self.environment}"
        special = self.mode_implementations.get(mode or "")
        extra = self.extra if special is None else special.extra
        return f"pip install 'stackwars[{extra}]'"


DEVICE_KINDS = ("cpu", "gpu", "tpu")


class DeviceUnavailable(Exception):
    """The framework cannot use the device asked for in this process; the message says why
    and how to fix it (a cell then ends ``unsupported``, not ``error``)."""


@dataclass(frozen=True)
class DeviceSupport:
    """One device kind as a framework sees it: the devices' names, or why there are none."""

    kind: str  # cpu, gpu, tpu
    devices: tuple[str, ...] = ()
    reason: str = ""  # why no device of this kind, with the fix; "" when there are devices

    def describe(self) -> str:
        if self.devices:
            return f"{len(self.devices)}: {', '.join(self.devices)}"
        return self.reason


@dataclass(frozen=True)
class DeviceMemory:
    """Device memory of a cell, as its framework counts it; None where it cannot tell."""

    # The most the work's arrays held at once (allocated, in use).
    peak_bytes: int | None = None
    # The most the framework's allocator took from the device (its pool: what other
    # processes could not use), pre-allocation included.
    reserved_bytes: int | None = None
    # What the allocator may take at most (the device's memory times any fraction set).
    limit_bytes: int | None = None


def non_negative(value: Any) -> int | None:
    """A count from a statistics dict; None for a missing one or a sentinel below 0."""
    return int(value) if isinstance(value, int | float) and value >= 0 else None


def unavailable(support: list[DeviceSupport], device: str) -> DeviceUnavailable:
    """The exception ``init`` raises for ``device``, with the reason ``support`` gives."""
    kind, index = split_device(device)
    found = next((entry for entry in support if entry.kind == kind), None)
    if found is None or not found.devices:
        reason = found.reason if found else f"no {kind} device kind is known here"
        return DeviceUnavailable(f"no {kind} here: {reason}")
    return DeviceUnavailable(
        f"{len(found.devices)} {kind} device(s) here ({', '.join(found.devices)}), not "
        f"{kind}:{index}; choose an index below {len(found.devices)}"
    )


@dataclass
class RunSettings:
    """Settings a worker applies before importing its framework; all of them are recorded."""

    device: str = "cpu"
    threads: int | None = None
    cache: str = "cold"  # cold | warm | pristine | cold-then-warm
    cache_dir: str = ""
    # What the cell's fresh compile cache started from: the checks of the machine its compiler
    # makes once per cache folder (FrameworkInfo.machine_checks), made once per batch; "" none.
    machine_checks: str = ""
    x64: bool = False
    preallocate: bool = False
    # highest: full float32 matmuls; high: the framework's faster float32 mode (TF32 on
    # NVIDIA GPUs); default: whatever the framework does by itself (config.MATMUL_PRECISIONS).
    matmul_precision: str = "highest"
    # The share of a gpu's memory the framework may take (None: its own default), and
    # torch's CUDA allocator settings (PYTORCH_CUDA_ALLOC_CONF; "": torch's default).
    memory_fraction: float | None = None
    allocator_conf: str = ""
    # Devices the framework shows on a cpu host, asked for by the workload (a map over
    # devices); above 1 they are simulated and share the same cores.
    host_devices: int = 1
    # resident: inputs placed once before timing; per-call: placed inside every timed call
    # (config.INPUT_MODES).
    inputs: str = "resident"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def persistent_cache(self) -> bool:
        """Whether persistent compile caches are on (in ``cache_dir``): warm, and both
        workers of cold-then-warm (the first fills an empty folder, the second reads it)."""
        return self.cache in ("warm", "cold-then-warm")


class Framework(ABC):
    """One array library, as seen by a worker. See the module docstring for the contract."""

    info: FrameworkInfo

    @property
    def name(self) -> str:
        return self.info.name

    def environment(self, settings: RunSettings) -> dict[str, str]:
        """Environment variables to set before ``load``; recorded with the cell."""
        del settings
        return {}

    @abstractmethod
    def load(self) -> None:
        """Import the framework."""

    def check_machine(self, mode: str) -> None:
        """Make the checks ``info.machine_checks`` names for ``mode``, into the cache folder
        set by ``environment`` (after ``load``, in a toolchain worker of their own)."""
        del mode

    @abstractmethod
    def init(self, settings: RunSettings) -> dict[str, Any]:
        """Select the device and start the runtime; return the settings actually in effect."""

    def attach(self, device: str) -> None:
        """Select ``device`` for ``sync`` without changing any global setting (in-process
        timing in a user's process); frameworks whose ``sync`` needs no device do nothing."""
        del device

    @abstractmethod
    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        """Place NumPy arrays on the selected device and wait until they are there."""

    @abstractmethod
    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        """Apply ``mode`` to ``fn`` (identity for eager modes)."""

    @abstractmethod
    def sync(self, out: Any) -> None:
        """Block until every array in ``out`` is computed."""

    @abstractmethod
    def to_host(self, out: Any) -> list[Any]:
        """Copy every array in ``out`` to host NumPy arrays (flattened, in order)."""

    def settle(self) -> None:  # noqa: B027 (a hook: most stacks leave nothing pending)
        """Run what host code left pending on the device (a lazy stack's recorded copies), so
        that the next call's work is the function's own; nothing for stacks that run each
        operation as it is called (the default)."""

    def is_async(self) -> bool:
        """Whether a call may return before its work is done (dispatch time differs)."""
        return False

    def compile_count(self) -> int:
        """Compilations performed so far in this process (0 for stacks that never compile)."""
        return 0

    def counters(self) -> dict[str, float]:
        """The framework's own event counters so far in this process (graphs compiled and
        executed, seconds compiling, transfers: whatever it keeps), cumulative; the timer
        records how much each grew in the first run, the second run and steady state. ``{}``
        by default: the framework keeps none that compile_count does not already say."""
        return {}

    def fallbacks(self) -> list[str]:
        """Why a compiling mode ran part of a program uncompiled: one line per event so far
        in this process, in no particular order (what happened between two calls is their
        difference as multisets); ``[]`` when the framework reports no such events (the
        default), which does not prove there were none."""
        return []

    def first_call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        """Make the first call of a prepared function, recording what its phases need."""
        return fn(*args)

    def first_run_phases(self, total_s: float) -> dict[str, float]:
        """Phases of the first run (seconds), given its synchronised total."""
        del total_s
        return {}

    def call_peak_bytes(self, call: Callable[[], Any]) -> int | None:
        """Make one more call (``call`` returns when its work is done) and return the most
        bytes it held at once beyond what was held before it, as the framework's own
        allocation accounting sees them; None, without calling, where the framework keeps no
        such accounting on this device (the default). Made after the timed runs, never inside
        them: the accounting slows the call. A count, not a time, so that an extra copy a change
        adds is seen in one round (results/counts.py)."""
        del call
        return None

    def compiled_program(
        self, fn: Callable[..., Any], args: Sequence[Any]
    ) -> CompiledProgram | None:
        """The program the mode's compiler is given for ``fn`` (as ``prepare`` returned it)
        on ``args``, read after the timed runs without calling ``fn`` (lowered again from the
        traces it keeps); None where the mode has none to read (the default). Counted by the
        worker, it is the deterministic gate's operation count (results/counts.py): an
        operation a change adds or removes is seen in one round, with no timing involved."""
        del fn, args
        return None

    def device_memory_stats(self) -> dict[str, Any] | None:
        """The framework's own memory statistics of the selected device, as plain data
        (after the work); None when it keeps none for this device (the default)."""
        return None

    def device_memory(self, stats: Mapping[str, Any] | None) -> DeviceMemory:
        """Peak, reserved and limit from ``device_memory_stats``'s data (pure: tested on
        answers recorded from real machines); all None by default."""
        del stats
        return DeviceMemory()

    def runtime_settings(self) -> dict[str, Any]:
        """Threads, precision and allocator settings as the framework reports them."""
        return {}

    def device_facts(self) -> dict[str, Any]:
        """What the framework says about devices in this process (after ``load``): plain
        data for :meth:`device_support`; by default nothing (cpu only)."""
        return {}

    def device_support(self, facts: Mapping[str, Any]) -> list[DeviceSupport]:
        """Per device kind, the devices ``facts`` show or why none (pure: tested on answers
        recorded from real machines); by default the framework runs on the cpu only."""
        del facts
        only = f"{self.name} runs on the cpu only"
        return [DeviceSupport("cpu", ("cpu",))] + [
            DeviceSupport(kind, reason=only) for kind in DEVICE_KINDS[1:]
        ]

    @abstractmethod
    def selftest_step(self) -> Callable[[Any, Any], Any]:
        """``(x, w) -> tanh(x @ w)`` in the framework's own operations (the selftest's chain)."""

    def gemm_call(self, a: Any, b: Any) -> Callable[[], Any]:
        """A call computing ``a @ b`` on device arrays at the framework's best (the peak's
        GEMM); by default the eager ``a @ b``."""
        return partial(operator.matmul, a, b)

    def stream_kernels(self, elements: int, scalar: float) -> dict[str, Callable[[], Any]]:
        """STREAM's copy, scale, add and triad on float64 device arrays of ``elements``, each
        writing into an existing array; ``{}`` when the framework cannot (the default)."""
        del elements, scalar
        return {}


def split_device(device: str) -> tuple[str, int]:
    """``"gpu:1"`` -> ``("gpu", 1)``; no index means 0."""
    kind, _, index = device.partition(":")
    return kind, int(index or 0)


def flatten(out: Any) -> list[Any]:
    """Arrays of a result in a fixed order: a single array, or nested tuples/lists/dicts."""
    if isinstance(out, tuple | list):
        return [leaf for item in out for leaf in flatten(item)]
    if isinstance(out, Mapping):
        return [leaf for key in sorted(out) for leaf in flatten(out[key])]
    return [out]
