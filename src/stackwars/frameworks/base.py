"""The one interface every framework implements.

A :class:`Framework` is what a worker process needs to run a workload's implementation on one
array library: import it, pick a device, move NumPy inputs onto the device, apply an execution
mode to a function, wait for results, bring results back, and report what the framework did
(compilations, first-run phases, device memory, versions).

Contract (checked for every registered framework by ``tests/test_framework_contract.py``):

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
* ``first_call`` makes the first call (it may snapshot counters or trace explicitly first) and
  ``first_run_phases``, called after that call was synchronised, returns the phases the
  framework exposes in seconds (``trace_s``, ``lower_s``, ``compile_s``, ``execute_s``, ...),
  non-overlapping and summing to at most the total; ``{}`` when it exposes none. Keys
  prefixed ``of_compile.`` are parts of ``compile_s`` (they may overlap each other, e.g. a
  compile spread over threads), not phases of their own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


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


@dataclass(frozen=True)
class FrameworkInfo:
    """What the parent process may know about a framework without importing it."""

    name: str
    modes: tuple[str, ...]
    import_name: str
    extra: str
    implementation: str  # "module:Class", imported only by workers
    devices: tuple[str, ...] = ("cpu",)
    distributions: tuple[str, ...] = ()  # package names whose versions are reported
    mode_implementations: Mapping[str, ModeImplementation] = field(default_factory=dict, hash=False)

    def implementation_for(self, mode: str | None) -> str:
        """The "module:Class" that runs ``mode`` (None: the framework's own class)."""
        special = self.mode_implementations.get(mode or "")
        return self.implementation if special is None else special.implementation

    def needs_own_process(self, mode: str) -> bool:
        special = self.mode_implementations.get(mode)
        return special is not None and special.own_process

    def install_hint(self, mode: str | None = None) -> str:
        special = self.mode_implementations.get(mode or "")
        extra = self.extra if special is None else special.extra
        return f"pip install 'stackwars[{extra}]'"


@dataclass
class RunSettings:
    """Settings a worker applies before importing its framework; all of them are recorded."""

    device: str = "cpu"
    threads: int | None = None
    cache: str = "cold"  # cold | warm | pristine
    cache_dir: str = ""
    x64: bool = False
    preallocate: bool = False
    matmul_precision: str = "highest"
    extra: dict[str, Any] = field(default_factory=dict)


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

    @abstractmethod
    def init(self, settings: RunSettings) -> dict[str, Any]:
        """Select the device and start the runtime; return the settings actually in effect."""

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

    def is_async(self) -> bool:
        """Whether a call may return before its work is done (dispatch time differs)."""
        return False

    def compile_count(self) -> int:
        """Compilations performed so far in this process (0 for stacks that never compile)."""
        return 0

    def first_call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        """Make the first call of a prepared function, recording what its phases need."""
        return fn(*args)

    def first_run_phases(self, total_s: float) -> dict[str, float]:
        """Phases of the first run (seconds), given its synchronised total."""
        del total_s
        return {}

    def device_peak_bytes(self) -> int | None:
        """Peak device memory in bytes, or None when the framework cannot tell."""
        return None

    def runtime_settings(self) -> dict[str, Any]:
        """Threads, precision and allocator settings as the framework reports them."""
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
