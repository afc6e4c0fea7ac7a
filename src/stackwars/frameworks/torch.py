"""PyTorch: eager, and compile (``torch.compile`` with its default backend, Inductor), on cpu
or one CUDA gpu.

torch is imported by ``load``, never at module import, so that Inductor sees the cache folder
set by ``environment``.

Compilations, graph breaks and first-run phases come from Dynamo's own bookkeeping
(``torch._dynamo.utils.counters`` and ``compilation_time_metrics``): private but stable
across 2.x releases, and the only place torch exposes them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import (
    DeviceMemory,
    DeviceSupport,
    Framework,
    RunSettings,
    flatten,
    non_negative,
    split_device,
    unavailable,
)

# compilation_time_metrics keys. compile_inner is one whole Dynamo compile of a frame:
# bytecode tracing, then the backend (AOTAutograd and Inductor), then guards.
COMPILE_METRIC = "_compile.compile_inner"
TRACE_METRIC = "bytecode_tracing"
BACKEND_METRIC = "OutputGraph.call_user_compiler"
CXX_METRIC = "compile_file"


def _dynamo_utils() -> Any:
    # Importing Dynamo takes 1-2 s, too much to pay in eager cells just to read counters
    # that are zero: when nothing imported Dynamo, nothing was compiled.
    return sys.modules.get("torch._dynamo.utils")


CUDA_FIX = (
    "install torch==2.13.0's CUDA build (docs/devices.md: pip install 'stackwars[cuda]' from "
    "PyPI on Linux x86_64, or PyTorch's own index for another CUDA)"
)
TPU_REASON = (
    "torch's eager and compile modes have no TPU backend here; torch:xla runs on a TPU "
    "through torchax and JAX's TPU backend (--stacks torch:xla --device tpu)"
)


def device_support(facts: Mapping[str, Any]) -> list[DeviceSupport]:
    """cpu, gpu (CUDA) and tpu as ``TorchFramework.device_facts``'s data shows them."""
    gpus = tuple(facts["gpus"])
    if gpus:
        gpu = DeviceSupport("gpu", gpus)
    elif facts["cuda_build"] is None:
        gpu = DeviceSupport(
            "gpu", reason=f"cpu only: torch {facts['version']} is a CPU-only build; fix: {CUDA_FIX}"
        )
    else:
        gpu = DeviceSupport(
            "gpu",
            reason=f"torch {facts['version']} is built for CUDA {facts['cuda_build']} but "
            "torch.cuda.is_available() is False: no NVIDIA GPU or driver is visible (check "
            "nvidia-smi and CUDA_VISIBLE_DEVICES)",
        )
    return [DeviceSupport("cpu", ("cpu",)), gpu, DeviceSupport("tpu", reason=TPU_REASON)]


def device_memory(stats: Mapping[str, Any] | None) -> DeviceMemory:
    """From the caching allocator's peaks and ``mem_get_info``'s total (times the fraction
    set with ``set_per_process_memory_fraction``, 1 when none was)."""
    if not stats:
        return DeviceMemory()
    total = stats["mem_get_info"][1]
    return DeviceMemory(
        peak_bytes=non_negative(stats["max_memory_allocated"]),
        reserved_bytes=non_negative(stats["max_memory_reserved"]),
        limit_bytes=non_negative(total * (stats.get("memory_fraction") or 1.0)),
    )


def _cuda_device(index: int) -> Any:
    import torch

    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise unavailable(device_support(_device_facts()), f"gpu:{index}")
    return torch.device("cuda", index)


def _device_facts() -> dict[str, Any]:
    import torch

    available = torch.cuda.is_available()
    count = torch.cuda.device_count() if available else 0
    return {
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "gpus": [torch.cuda.get_device_name(index) for index in range(count)],
    }


MEMORY_EVENT = "[memory]"  # the profiler's name for an allocator's record (profiler_util.py)
HOST_DEVICES = ("CPU", "MKLDNN", "IDEEP")  # the profiler's kinds of host memory (profiler.py)


def running_peak(changes: Iterable[tuple[int, int]]) -> int:
    """The most held at once above the start, from (time, bytes allocated or, negative,
    freed) records in any order."""
    held = peak = 0
    for _, change in sorted(changes):
        held += change
        peak = max(peak, held)
    return peak


class TorchFramework(Framework):
    info = FRAMEWORKS["torch"]

    def __init__(self) -> None:
        self._device: Any = None
        self._metrics_before: dict[str, int] = {}
        self._memory_fraction: float | None = None

    def environment(self, settings: RunSettings) -> dict[str, str]:
        if not settings.cache_dir:
            raise ValueError("torch needs settings.cache_dir for Inductor's compile cache")
        # Fresh per cell when cold, shared when warm: this is what decides whether a first
        # torch.compile call pays for code generation and C++ compilation.
        folder = Path(settings.cache_dir)
        environment = {
            "TORCHINDUCTOR_CACHE_DIR": str(folder / "torchinductor"),
            "TRITON_CACHE_DIR": str(folder / "triton"),
        }
        # Read by the CUDA caching allocator only: set (and recorded) for gpu cells.
        if split_device(settings.device)[0] == "gpu" and settings.allocator_conf:
            environment["PYTORCH_CUDA_ALLOC_CONF"] = settings.allocator_conf
        return environment

    def load(self) -> None:
        import torch  # noqa: F401

    def check_machine(self, mode: str) -> None:
        if mode == "compile":
            # What Inductor asks before it generates CPU code: each instruction set's probe
            # compiled into its cache folder (private, but the one place Inductor decides it).
            from torch._inductor.cpu_vec_isa import pick_vec_isa

            pick_vec_isa()

    def init(self, settings: RunSettings) -> dict[str, Any]:
        import torch

        kind, index = split_device(settings.device)
        if kind == "cpu":
            self._device = torch.device("cpu")
        elif kind == "gpu":
            self._device = _cuda_device(index)
            torch.cuda.set_device(self._device)
            if settings.memory_fraction is not None:
                torch.cuda.set_per_process_memory_fraction(settings.memory_fraction, self._device)
                self._memory_fraction = settings.memory_fraction
            torch.cuda.reset_peak_memory_stats(self._device)
        else:
            raise unavailable(self.device_support(self.device_facts()), settings.device)
        if settings.threads is not None:
            torch.set_num_threads(settings.threads)
        if settings.matmul_precision != "default":
            torch.set_float32_matmul_precision(settings.matmul_precision)
            # cuDNN's convolutions keep a flag of their own, TF32 by default: on an H100
            # (2026-11-26) ResNet-50 failed parity at "highest" (max rel 1e-3) with it left so.
            highest = settings.matmul_precision == "highest"
            torch.backends.cudnn.conv.fp32_precision = "ieee" if highest else "tf32"  # pyright: ignore[reportAttributeAccessIssue]
        return {"device": str(self._device)}

    def device_facts(self) -> dict[str, Any]:
        return _device_facts()

    def device_support(self, facts: Mapping[str, Any]) -> list[DeviceSupport]:
        return device_support(facts)

    def attach(self, device: str) -> None:
        import torch

        kind, index = split_device(device)
        self._device = torch.device("cpu") if kind == "cpu" else _cuda_device(index)

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        import torch

        tensors = tuple(torch.as_tensor(array, device=self._device) for array in arrays)
        self.sync(tensors)
        return tensors

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        import torch

        if mode == "eager":
            return fn
        if mode == "compile":
            return torch.compile(fn)
        raise ValueError(f"torch has no mode {mode!r}; modes: {', '.join(self.info.modes)}")

    def sync(self, out: Any) -> None:
        import torch

        del out  # Both synchronisations wait for all work on the device, not per tensor.
        if self._device.type == "cuda":
            torch.cuda.synchronize(self._device)
        else:
            torch.cpu.synchronize()

    def to_host(self, out: Any) -> list[Any]:
        import numpy as np
        import torch

        return [
            leaf.detach().cpu().numpy() if isinstance(leaf, torch.Tensor) else np.asarray(leaf)
            for leaf in flatten(out)
        ]

    def is_async(self) -> bool:
        return self._device.type == "cuda"

    def call_peak_bytes(self, call: Callable[[], Any]) -> int | None:
        """On the CPU, from the profiler's memory records: every allocation and free of
        PyTorch's CPU allocator in the call, with its size, in time order (compiled code's
        buffers included). On any other device (a GPU, torch_xla's), None: not proven there."""
        if self._device.type != "cpu":
            return None
        from torch.autograd import profiler

        recorded = profiler.profile(use_cpu=True, profile_memory=True)
        with recorded:
            call()
        results = recorded.kineto_results
        changes = [
            # nbytes (negative for a free) is missing from torch's type stubs, not its events.
            (event.start_ns(), event.nbytes())  # pyright: ignore[reportAttributeAccessIssue]
            for event in (results.events() if results is not None else ())
            if event.name() == MEMORY_EVENT and event.device_type().name in HOST_DEVICES
        ]
        return running_peak(changes)

    def compile_count(self) -> int:
        utils = _dynamo_utils()
        # Every Dynamo compile, first or recompile, captures a new graph for Inductor.
        return 0 if utils is None else utils.counters["stats"]["unique_graphs"]

    def fallbacks(self) -> list[str]:
        """Dynamo's graph breaks and skipped frames (code run eagerly), by the first line of
        their reason. A break Dynamo resumes after is counted under ``graph_break``; torch 2.13
        leaves data-dependent branching and a break inside a loop (the whole frame then runs
        eagerly) under ``unimplemented``, so both count."""
        utils = _dynamo_utils()
        if utils is None:
            return []
        events = utils.counters["graph_break"] + utils.counters["unimplemented"]
        return [reason.strip().splitlines()[0] for reason, n in events.items() for _ in range(n)]

    def first_call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        utils = _dynamo_utils()
        metrics = {} if utils is None else utils.compilation_time_metrics
        self._metrics_before = {key: len(times) for key, times in metrics.items()}
        return fn(*args)

    def first_run_phases(self, total_s: float) -> dict[str, float]:
        """trace_s, compile_s and execute_s, with parts of compile_s under ``of_compile.``:
        backend_s (AOTAutograd and Inductor, or loading their output from the cache) and
        cxx_compile_thread_s (C++ compiler runs, summed over Inductor's compile threads, so
        it can exceed its share of the wall time when compiles overlap)."""
        spent = self._seconds_since_first_call()
        if COMPILE_METRIC not in spent:
            return {}
        trace_s = spent.get(TRACE_METRIC, 0.0)
        compile_s = spent[COMPILE_METRIC]
        return {
            "trace_s": trace_s,
            "compile_s": max(0.0, compile_s - trace_s),
            "execute_s": max(0.0, total_s - compile_s),
            "of_compile.backend_s": spent.get(BACKEND_METRIC, 0.0),
            "of_compile.cxx_compile_thread_s": spent.get(CXX_METRIC, 0.0),
        }

    def _seconds_since_first_call(self) -> dict[str, float]:
        utils = _dynamo_utils()
        metrics: dict[str, list[float]] = {} if utils is None else utils.compilation_time_metrics
        spent = {
            key: sum(times[self._metrics_before.get(key, 0) :]) for key, times in metrics.items()
        }
        return {key: seconds for key, seconds in spent.items() if seconds > 0}

    def selftest_step(self) -> Callable[[Any, Any], Any]:
        import torch

        def step(x: Any, w: Any) -> Any:
            return torch.tanh(x @ w)

        return step

    def gemm_call(self, a: Any, b: Any) -> Callable[[], Any]:
        import torch

        return partial(torch.matmul, a, b, out=torch.empty_like(a))

    def stream_kernels(self, elements: int, scalar: float) -> dict[str, Callable[[], Any]]:
        import torch

        a, b, c = (
            torch.full((elements,), value, dtype=torch.float64, device=self._device)
            for value in (1.0, 2.0, 0.0)
        )
        return {
            "copy": partial(c.copy_, a),
            "scale": partial(torch.mul, c, scalar, out=b),
            "add": partial(torch.add, a, b, out=c),
            "triad": partial(torch.add, b, c, alpha=scalar, out=a),
        }

    def device_memory_stats(self) -> dict[str, Any] | None:
        import torch

        if self._device.type != "cuda":
            return None
        free, total = torch.cuda.mem_get_info(self._device)
        return {
            "max_memory_allocated": torch.cuda.max_memory_allocated(self._device),
            "max_memory_reserved": torch.cuda.max_memory_reserved(self._device),
            "mem_get_info": [free, total],
            "memory_fraction": self._memory_fraction,
        }

    def device_memory(self, stats: Mapping[str, Any] | None) -> DeviceMemory:
        return device_memory(stats)

    def runtime_settings(self) -> dict[str, Any]:
        import torch

        on_cpu = self._device.type == "cpu"
        return {
            "device": str(self._device),
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "matmul_precision": torch.get_float32_matmul_precision(),
            # matmul is attached to the module at import time, so type checkers miss it.
            "mkldnn_matmul_fp32_precision": torch.backends.mkldnn.matmul.fp32_precision,  # pyright: ignore[reportAttributeAccessIssue]
            "cuda_matmul_fp32_precision": None
            if on_cpu
            else torch.backends.cuda.matmul.fp32_precision,
            "cudnn_conv_fp32_precision": torch.backends.cudnn.conv.fp32_precision,  # pyright: ignore[reportAttributeAccessIssue]
            # Read from the environment: asking Inductor would import it (1-2 s) in eager cells.
            "inductor_cache_dir": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
            # The CUDA caching allocator grows on demand; torch has no pre-allocation.
            "preallocate": None if on_cpu else False,
            "memory_fraction": self._memory_fraction,
            "allocator_conf": None if on_cpu else os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
            "device_peak_bytes_note": "torch has no peak-memory counter for cpu"
            if on_cpu
            else None,
        }
