"""Run settings: frozen dataclasses with their defaults, and parsing of sizes and devices."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from stackwars.errors import UnknownNameError, UsageError
from stackwars.frameworks.base import DEVICE_KINDS
from stackwars.timing.timer import TimingConfig

# cold-then-warm: each cell runs with an empty persistent compile cache, then its first run is
# measured again in a fresh worker that finds the cache the first one filled.
CACHE_MODES = ("cold", "warm", "pristine", "cold-then-warm")
X64_MODES = ("auto", "on", "off")
# --matmul-precision: float32 matmuls at full precision (highest), in the framework's faster
# mode (high: TF32 on NVIDIA GPUs, bf16 passes on TPUs), or as the framework leaves them by
# default (TF32 on in TensorFlow and, on GPUs, in JAX; off in torch).
MATMUL_PRECISIONS = ("highest", "high", "default")
# Where cells run: here, one at a time (local), or as tasks on a Ray cluster (runner/executors.py).
EXECUTORS = ("local", "ray")
# --inputs: the inputs placed on the device once before timing (resident), or placed from
# host NumPy arrays inside every timed call (per-call), as seed 002's
# `jax.jit(f)(jnp.array(x))` measured.
INPUT_MODES = ("resident", "per-call")
# --workers: a fresh worker per cell (what a user's first call pays, every figure its own), or
# one per stack running its cells one after another in a drawn order, the framework imported
# and started once (runner/shared_worker.py: ab's cheap rounds, issue 54).
WORKER_MODES = ("per-cell", "per-stack")
PER_STACK = "per-stack"
DEFAULT_TIMEOUT_S = 900.0
# Leave room for the parent, the OS page cache and whatever else shares the machine.
DEFAULT_BUDGET_SHARE = 0.75
# Of a GPU's memory: the framework's context, kernels and allocator slack take the rest.
DEFAULT_DEVICE_BUDGET_SHARE = 0.9

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(text: str) -> int:
    """'8GiB', '512M', '1.5g', '1000000' -> bytes (binary units; the 'i' and 'B' are optional)."""
    match = _SIZE.match(text)
    if not match:
        raise UsageError(
            f"memory size {text!r} is not understood; write a number with an optional unit, "
            "e.g. 8GiB, 512MiB, 2G"
        )
    number, unit = float(match.group(1)), (match.group(2) or "").lower()
    return int(number * _UNITS[unit[:1]])


def default_memory_budget() -> int:
    """A safe share of this machine's memory: of what is available now, not of the total."""
    memory = psutil.virtual_memory()
    return int(min(memory.total, memory.available) * DEFAULT_BUDGET_SHARE)


def device_memory(device: str, gpu_memory: list[int]) -> int | None:
    """The memory of ``device``'s GPU (``gpu_memory``: each GPU's bytes, nvidia-smi's order);
    None on the cpu, a TPU, or a GPU not listed."""
    kind, _, index = device.partition(":")
    position = int(index or 0)
    if kind != "gpu" or position >= len(gpu_memory):
        return None
    return gpu_memory[position]


def default_device_budget(device: str, gpu_memory: list[int]) -> int | None:
    """DEFAULT_DEVICE_BUDGET_SHARE of the memory of ``device``'s GPU (None where unknown)."""
    total = device_memory(device, gpu_memory)
    return None if total is None else int(total * DEFAULT_DEVICE_BUDGET_SHARE)


def parse_device(text: str) -> str:
    """'cpu', 'gpu', 'gpu:1', 'tpu' -> normalised device name."""
    kind, _, index = text.strip().lower().partition(":")
    if kind not in DEVICE_KINDS or (index and not index.isdigit()):
        raise UnknownNameError(
            "device", text, DEVICE_KINDS, "write cpu, gpu, tpu, or an index such as gpu:1"
        )
    return f"{kind}:{int(index)}" if index else kind


def choose(kind: str, text: str, allowed: tuple[str, ...]) -> str:
    if text not in allowed:
        raise UnknownNameError(kind, text, allowed)
    return text


@dataclass(frozen=True)
class RunOptions:
    """Everything about how a run executes, apart from which cells it has."""

    device: str = "cpu"
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_budget: int = field(default_factory=default_memory_budget)
    cache: str = "cold"
    threads: int | None = None
    x64: str = "auto"
    # The run's own parity tolerance (--rtol, --atol), replacing the workloads'; None: theirs.
    rtol: float | None = None
    atol: float | None = None
    seed: int = 0
    timing: TimingConfig = field(default_factory=TimingConfig)
    workload_files: tuple[str, ...] = ()
    cache_root: Path | None = None  # where compile caches live; a temporary folder when None
    force: bool = False  # run cells predicted not to fit the memory budget
    preallocate: bool = False  # let accelerator frameworks reserve most device memory upfront
    memory_fraction: float | None = None  # the share of a gpu's memory JAX and torch may take
    # What an accelerator cell's predicted device peak must fit; None: not checked (unknown).
    device_memory_budget: int | None = None
    # The GPU's memory (nvidia-smi), for the share of it each framework's allocator takes.
    device_memory_total: int | None = None
    allocator_conf: str = ""  # PYTORCH_CUDA_ALLOC_CONF for torch's cells on a gpu
    matmul_precision: str = "highest"
    inputs: str = "resident"  # INPUT_MODES
    # Cells measured at a time by the local executor: 1 unless asked, since cells timed side by
    # side share the cores and disturb each other's numbers.
    jobs: int = 1
    workers: str = "per-cell"  # WORKER_MODES

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["cache_root"] = str(self.cache_root) if self.cache_root else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunOptions:
        """Options as stored with a run (for --resume); unknown keys are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["timing"] = TimingConfig(**values.get("timing", {}))
        values["workload_files"] = tuple(values.get("workload_files", ()))
        root = values.get("cache_root")
        values["cache_root"] = Path(root) if root else None
        return cls(**values)


def check_fraction(fraction: float | None) -> float | None:
    """A --memory-fraction value, refused outside (0, 1]."""
    if fraction is not None and not 0 < fraction <= 1:
        raise UsageError(
            f"--memory-fraction {fraction} must be in (0, 1]: the share of the device's memory "
            "a framework may take, e.g. 0.5"
        )
    return fraction


def jobs_warnings(options: RunOptions) -> list[str]:
    """--jobs above 1: what it costs the numbers."""
    if options.jobs == 1:
        return []
    return [
        f"--jobs {options.jobs}: cells run {options.jobs} at a time, so their timings share "
        "this machine's cores and memory bandwidth and disturb each other; compare them only "
        "with runs made the same way (the run records jobs in its options)"
    ]


def workers_warnings(options: RunOptions) -> list[str]:
    """--workers per-stack: what it costs the numbers."""
    if options.workers != PER_STACK:
        return []
    return [
        "--workers per-stack: each stack's cells share one worker, so a cell's first run, "
        "import and start-up are not a fresh process's (each cell records its place in its "
        "worker); steady times and peaks stay each cell's own: compare them only with runs "
        "made the same way"
    ]


def option_warnings(options: RunOptions) -> list[str]:
    """Options that will not do what their name suggests on this run's device."""
    if options.device == "cpu":
        asked = [
            name
            for name, value in (
                ("--preallocate", options.preallocate),
                ("--memory-fraction", options.memory_fraction),
                ("--allocator-conf", options.allocator_conf),
            )
            if value
        ]
        if not asked:
            return []
        verb = "changes" if len(asked) == 1 else "change"
        return [
            f"{', '.join(asked)} {verb} nothing on cpu: the allocators of JAX, torch and "
            "TensorFlow read them on a gpu only (each cell records the settings it ran with)"
        ]
    if options.memory_fraction is not None:
        return [
            "--memory-fraction is applied by JAX (XLA_PYTHON_CLIENT_MEM_FRACTION) and torch "
            "(set_per_process_memory_fraction); TensorFlow 2 has no fraction setting, so its "
            "cells run without one (recorded in settings.framework.memory_fraction)"
        ]
    return []
