"""TensorFlow: eager, graph (``tf.function``) and xla (``tf.function(jit_compile=True)``).

TensorFlow is imported by ``load``, never at module import, so that its logging settings are
in place first. TensorFlow keeps no compile cache between processes by default, so cold and
warm cells differ only in the folders other code uses.

TensorFlow places ops on its default device (the first GPU when there is one, else the CPU)
whatever device the inputs are on. When another device was selected, calls run under
``tf.device`` (about 3 µs per call); on the default device they run bare, so that the timed
call is exactly what a TensorFlow user writes. Soft placement (on by default) silently turns
a missing device into the CPU, which is why ``init`` checks that the device exists.

A ``tf.function`` never falls back to eager on its own; what it may do is trace a function
without AutoGraph's conversion (Python ``if``/``while`` on tensors then fail or run once at
trace time). AutoGraph says so only in a warning on the ``tensorflow`` logger ("AutoGraph could
not transform ... and will run it as-is"), which ``fallbacks`` collects. Code it skips
silently (built by ``exec``, native callables) is not reported.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from stackwars.frameworks import FRAMEWORKS, distribution_version
from stackwars.frameworks.base import (
    CompiledProgram,
    DeviceMemory,
    DeviceSupport,
    Framework,
    RunSettings,
    flatten,
    non_negative,
    split_device,
    unavailable,
)

DEVICE_TYPES = {"cpu": "CPU", "gpu": "GPU", "tpu": "TPU"}
# The TensorFlow builds on PyPI: one package each, all installing the tensorflow module.
DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-tpu")
GPU_FIX = (
    "pip uninstall tensorflow-cpu, then pip install 'stackwars[cuda]' (TensorFlow's CUDA "
    "build, tensorflow[and-cuda]) on a machine with an NVIDIA GPU"
)
TPU_NOTE = (
    "TensorFlow runs on a TPU only in its tensorflow-tpu build on a TPU VM, which stackwars "
    "does not pin (PyPI's stops at 2.20, below the tensorflow pin)"
)
# TensorFlow's only float32 matmul shortcut is TF32 (on by default): off for highest, on for
# high, left as TensorFlow sets it for default.
TF32_BY_PRECISION = {"highest": False, "high": True, "default": None}
CPU_PEAK_NOTE = (
    "on cpu TensorFlow's allocator statistics leave out allocations under 256 KiB, "
    "so the peak is a lower bound"
)

AUTOGRAPH_FALLBACK = "AutoGraph could not transform"
# XLA's compile time of each function TensorFlow compiles. Its DeviceCompiler logs it at
# VLOG(1), "Compiled <function> <n> times, compile time: <us> us, ..."
# (device_compilation_profiler.cc), and gives Python no other way to read it: its monitoring
# counter /tensorflow/core/xla_compilation_time_usecs is C++'s (a Python counter of that name
# is a metric of its own and reads 0). A VLOG message is an INFO one, so TensorFlow's
# minimum log level must let INFO through for the line to be written.
XLA_COMPILE_LINE = re.compile(r"compiled \S+ \d+ times, compile time: (\d+) us", re.IGNORECASE)
XLA_COMPILE_LOGGING = {
    "TF_CPP_MIN_LOG_LEVEL": "0",
    "TF_CPP_VMODULE": "device_compilation_profiler=1",
}


class _AutoGraphFallbacks(logging.Handler):
    """AutoGraph's warnings that it runs a function unconverted. One per process: handlers
    stay on the logger, and several framework objects (in tests) must not each add one."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(AUTOGRAPH_FALLBACK):
            self.seen.append(message.splitlines()[0])

    def watch(self) -> None:
        logger = logging.getLogger("tensorflow")  # tf.get_logger(), without importing tf
        if self not in logger.handlers:
            logger.addHandler(self)


_AUTOGRAPH = _AutoGraphFallbacks()


def device_support(facts: Mapping[str, Any]) -> list[DeviceSupport]:
    """cpu, gpu and tpu as ``TensorflowFramework.device_facts``'s data shows them."""
    devices = facts["devices"]
    build = f"{facts['distribution']} {facts['version']}"
    gpu_reason = (
        f"{build} is built with CUDA but lists no GPU: check nvidia-smi, CUDA_VISIBLE_DEVICES "
        "and that TensorFlow's CUDA libraries (tensorflow[and-cuda]) are installed"
        if facts["built_with_cuda"]
        else f"cpu only: {build} is built without CUDA; fix: {GPU_FIX}"
    )
    tpu_reason = f"the TPU system did not start ({facts['tpu_error']}); {TPU_NOTE}"
    reasons = {"cpu": "no cpu listed", "gpu": gpu_reason, "tpu": tpu_reason}
    return [
        DeviceSupport(kind, tuple(devices.get(kind, ())), "" if devices.get(kind) else why)
        for kind, why in reasons.items()
    ]


def device_memory(stats: Mapping[str, Any] | None) -> DeviceMemory:
    """From ``get_memory_info``'s peak: TensorFlow reports neither what its allocator took
    from the device nor a limit."""
    return DeviceMemory(peak_bytes=non_negative(stats["peak"])) if stats else DeviceMemory()


class _OnDevice:
    """``function`` called under ``tf.device``, for a device that is not the default one."""

    def __init__(self, function: Any, device: str) -> None:
        import tensorflow as tf

        self.function = function
        self.device = device
        # Kept so that a call does not look tensorflow up again: calls are what is timed.
        self._scope = tf.device

    def __call__(self, *args: Any) -> Any:
        with self._scope(self.device):
            return self.function(*args)


class TensorflowFramework(Framework):
    info = FRAMEWORKS["tensorflow"]

    def __init__(self) -> None:
        self._device = ""
        self._kind = ""
        self._default_device = ""
        self._traced: list[Any] = []
        self._modes: dict[int, tuple[str, Any]] = {}  # id(prepared) -> (mode, tf.function)
        self._first: tuple[str, float] | None = None
        self._log_offset: int | None = None  # where stderr stood when the first call began
        self._tpu_error: str | None = None  # why the TPU system did not start, once tried
        self._fraction_note: str | None = None  # why a --memory-fraction was not applied
        self._allocator_stats = False  # whether the device's allocator keeps statistics

    def environment(self, settings: RunSettings) -> dict[str, str]:
        if not settings.cache_dir:
            raise ValueError("tensorflow needs settings.cache_dir to keep keras out of home")
        # TensorFlow's info logs go to the worker's output (kept, shown when a cell fails)
        # so that XLA's compile time can be read there (XLA_COMPILE_LINE).
        return {
            **XLA_COMPILE_LOGGING,
            "KERAS_HOME": str(Path(settings.cache_dir) / "keras"),
            # Keras reads its backend from the environment: a user's KERAS_BACKEND=jax would
            # otherwise build this stack's models on JAX.
            "KERAS_BACKEND": "tensorflow",
        }

    def load(self) -> None:
        import tensorflow  # noqa: F401

        _AUTOGRAPH.watch()

    def init(self, settings: RunSettings) -> dict[str, Any]:
        import tensorflow as tf

        kind, index = split_device(settings.device)
        if kind not in DEVICE_TYPES:
            raise ValueError(f"tensorflow runs on {', '.join(DEVICE_TYPES)}, not {settings.device}")
        if settings.matmul_precision not in TF32_BY_PRECISION:
            raise ValueError(
                f"matmul precision {settings.matmul_precision!r} is not one of "
                f"{', '.join(TF32_BY_PRECISION)}"
            )
        # Threads and memory growth can only be set before the runtime starts, which the
        # first device listing below does.
        if settings.threads is not None:
            tf.config.threading.set_intra_op_parallelism_threads(settings.threads)
            tf.config.threading.set_inter_op_parallelism_threads(settings.threads)
        for gpu in tf.config.list_physical_devices("GPU"):
            tf.config.experimental.set_memory_growth(gpu, not settings.preallocate)
        if settings.memory_fraction is not None and kind == "gpu":
            self._fraction_note = (
                f"{settings.memory_fraction:g} asked, not applied: TensorFlow 2 has no fraction "
                "setting (a logical device's memory_limit takes MiB, and TensorFlow does not "
                "report the GPU's total to compute them)"
            )
        if kind == "cpu" and settings.host_devices > 1:
            # Logical devices on the one cpu, for a map over devices: they share its cores.
            cpu = tf.config.list_physical_devices("CPU")[0]
            logical = [tf.config.LogicalDeviceConfiguration()] * settings.host_devices
            tf.config.set_logical_device_configuration(cpu, logical)
        tf32 = TF32_BY_PRECISION[settings.matmul_precision]
        if tf32 is not None:
            tf.config.experimental.enable_tensor_float_32_execution(tf32)
        if kind == "tpu":
            self._initialize_tpu()
        self._device = self._select(kind, index)
        self._kind = kind
        gpus = tf.config.list_logical_devices("GPU")
        self._default_device = (gpus or tf.config.list_logical_devices("CPU"))[0].name
        return {"device": self._device, "allocator_stats": self._reset_allocator_stats()}

    def _reset_allocator_stats(self) -> str:
        """Zero the device allocator's peak; what its statistics are. TensorFlow's CPU
        allocator keeps none unless it is its BFC allocator, which it picks itself by CPU (on
        an AMD EPYC without AVX-512, 2026-11-28, it did not): the cell then has no device
        peak, rather than an error, and the allocator being measured is left as chosen."""
        import tensorflow as tf

        try:
            tf.config.experimental.reset_memory_stats(self._device)
        except ValueError as error:
            self._allocator_stats = False
            return f"unavailable: {error}"
        self._allocator_stats = True
        return "kept"

    def _initialize_tpu(self) -> None:
        """Start TensorFlow's TPU system as its TPU guide does (a cluster resolver for the
        local TPU VM, connect, initialise); its devices are then listed. Tried once."""
        import tensorflow as tf

        if self._tpu_error is not None:
            return
        self._tpu_error = ""
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        # TensorFlow raises NotFoundError without a TPU, ValueError without a TPU VM's
        # metadata, RuntimeError once the runtime started: each means no TPU here.
        except (tf.errors.OpError, ValueError, RuntimeError) as exc:
            self._tpu_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"

    def _select(self, kind: str, index: int) -> str:
        import tensorflow as tf

        names = [device.name for device in tf.config.list_logical_devices(DEVICE_TYPES[kind])]
        if index >= len(names):
            raise unavailable(self.device_support(self.device_facts()), f"{kind}:{index}")
        return names[index]

    def device_facts(self) -> dict[str, Any]:
        import tensorflow as tf

        self._initialize_tpu()
        versions = {name: distribution_version(name) for name in DISTRIBUTIONS}
        distribution = next((name for name, v in versions.items() if v), "tensorflow")
        return {
            "version": tf.__version__,
            "distribution": distribution,
            "built_with_cuda": tf.test.is_built_with_cuda(),
            "devices": {
                kind: [device.name for device in tf.config.list_logical_devices(name)]
                for kind, name in DEVICE_TYPES.items()
            },
            "tpu_error": self._tpu_error,
        }

    def device_support(self, facts: Mapping[str, Any]) -> list[DeviceSupport]:
        return device_support(facts)

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        import tensorflow as tf

        # Constants are created in host memory; identity under the scope copies them over.
        with tf.device(self._device):
            tensors = tuple(tf.identity(tf.convert_to_tensor(array)) for array in arrays)
        self.sync(tensors)
        return tensors

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        import tensorflow as tf

        if mode not in self.info.modes:
            raise ValueError(
                f"tensorflow has no mode {mode!r}; modes: {', '.join(self.info.modes)}"
            )
        function = fn if mode == "eager" else tf.function(fn, jit_compile=mode == "xla")
        if mode != "eager":
            self._traced.append(function)
        prepared = (
            function if self._device == self._default_device else _OnDevice(function, self._device)
        )
        self._modes[id(prepared)] = (mode, function)
        return prepared

    def sync(self, out: Any) -> None:
        import tensorflow as tf

        del out  # TensorFlow's sync waits for every device, not per tensor.
        tf.test.experimental.sync_devices()

    def to_host(self, out: Any) -> list[Any]:
        import numpy as np

        return [np.asarray(leaf) for leaf in flatten(out)]

    def is_async(self) -> bool:
        return self._kind in ("gpu", "tpu")

    def compile_count(self) -> int:
        # Traces only: TensorFlow does not expose how often XLA compiles, and a new input
        # shape retraces (and so recompiles) a tf.function.
        return sum(traced.experimental_get_tracing_count() for traced in self._traced)

    def fallbacks(self) -> list[str]:
        return list(_AUTOGRAPH.seen)

    def compiled_program(
        self, fn: Callable[..., Any], args: Sequence[Any]
    ) -> CompiledProgram | None:
        """tensorflow:xla's HLO for these arguments (converted from the traced graph, not
        compiled); tensorflow:graph's graph as its list of operation types; None in eager."""
        mode, function = self._modes.get(id(fn), ("eager", fn))
        if mode == "eager":
            return None
        if mode == "xla":
            return CompiledProgram(function.experimental_get_compiler_ir(*args)(stage="hlo"))
        graph = function.get_concrete_function(*args).graph
        return CompiledProgram("\n".join(op.type for op in graph.get_operations()) + "\n")

    def first_call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        import time

        import tensorflow as tf

        mode, function = self._modes.get(id(fn), ("eager", fn))
        if mode == "eager":
            self._first = None
            return fn(*args)
        # Tracing explicitly separates it from the first execution, which (graph) runs
        # Grappler's optimisations or (xla) compiles with XLA before it executes.
        start = time.perf_counter()
        with tf.device(self._device):
            function.get_concrete_function(*args)
        self._first = (mode, time.perf_counter() - start)
        self._log_offset = _stderr_offset()
        return fn(*args)

    def first_run_phases(self, total_s: float) -> dict[str, float]:
        """trace_s, then (graph) optimize_and_execute_s: Grappler's work is not logged apart;
        (xla) compile_s and execute_s where XLA's compile time was logged to a stderr that is
        a file (a worker's output), else compile_and_execute_s."""
        if self._first is None:
            return {}
        mode, trace_s = self._first
        rest = max(0.0, total_s - trace_s)
        if mode != "xla":
            return {"trace_s": trace_s, "optimize_and_execute_s": rest}
        compile_s = _logged_compile_s(self._log_offset)
        if compile_s is None:
            return {"trace_s": trace_s, "compile_and_execute_s": rest}
        return {"trace_s": trace_s, "compile_s": compile_s, "execute_s": max(0.0, rest - compile_s)}

    def selftest_step(self) -> Callable[[Any, Any], Any]:
        import tensorflow as tf

        def step(x: Any, w: Any) -> Any:
            return tf.tanh(x @ w)

        return step

    def gemm_call(self, a: Any, b: Any) -> Callable[[], Any]:
        import tensorflow as tf

        return partial(tf.linalg.matmul, a, b)

    def device_memory_stats(self) -> dict[str, Any] | None:
        import tensorflow as tf

        if not self._allocator_stats:
            return None
        info = tf.config.experimental.get_memory_info(self._device)
        return {"current": info["current"], "peak": info["peak"]}

    def device_memory(self, stats: Mapping[str, Any] | None) -> DeviceMemory:
        return device_memory(stats)

    def runtime_settings(self) -> dict[str, Any]:
        import tensorflow as tf

        threading = tf.config.threading
        return {
            "device": self._device,
            # 0 means TensorFlow chooses (one thread per core).
            "intra_op_threads": threading.get_intra_op_parallelism_threads(),
            "inter_op_threads": threading.get_inter_op_parallelism_threads(),
            "matmul_precision": "tf32 on"
            if tf.config.experimental.tensor_float_32_execution_enabled()
            else "tf32 off",
            "soft_device_placement": tf.config.get_soft_device_placement(),
            "memory_growth": {
                gpu.name: tf.config.experimental.get_memory_growth(gpu)
                for gpu in tf.config.list_physical_devices("GPU")
            },
            "memory_fraction": self._fraction_note,
            "device_peak_bytes_note": CPU_PEAK_NOTE if self._kind == "cpu" else None,
        }


def _stderr_offset() -> int | None:
    """Where this process's stderr stands, when it is a regular file (a worker's output);
    None for a terminal or a pipe, which cannot be read back."""
    try:
        if not stat.S_ISREG(os.fstat(2).st_mode):
            return None
        return os.lseek(2, 0, os.SEEK_CUR)
    except OSError:
        return None


def _logged_compile_s(offset: int | None) -> float | None:
    """XLA's compile time logged to stderr since ``offset`` (every function it compiled), in
    seconds; None when stderr is no file or no compile was logged."""
    if offset is None:
        return None
    with open(f"/proc/{os.getpid()}/fd/2", "rb") as written:  # a reading handle of its own
        written.seek(offset)
        return xla_compile_s(written.read().decode("utf-8", errors="replace"))


def xla_compile_s(log: str) -> float | None:
    """The compile time of every function XLA compiled, as TensorFlow logged them in ``log``
    (XLA_COMPILE_LINE), in seconds; None when it logged none."""
    times_us = [int(found) for found in XLA_COMPILE_LINE.findall(log)]
    return sum(times_us) / 1e6 if times_us else None
