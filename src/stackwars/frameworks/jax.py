"""JAX: eager (op-by-op dispatch) and jit (``jax.jit``) on cpu, gpu (CUDA) or tpu.

JAX is imported by ``load``, never at module import, because the environment (platforms,
64-bit, pre-allocation, persistent cache) must be in place before JAX reads it.

Compilations and first-run phases come from ``jax.monitoring`` duration events, which JAX
records for every trace, lowering and backend compile, eager mode included (each new
primitive and shape is compiled once). A persistent-cache hit still reports a backend
compile event, whose duration is then mostly the cache read.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from stackwars.frameworks import FRAMEWORKS, distribution_version
from stackwars.frameworks.base import (
    DEVICE_KINDS,
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

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_READ_EVENT = "/jax/compilation_cache/cache_retrieval_time_sec"
# JAX_PLATFORMS names: "gpu" would expand to cuda and rocm and fail when either is missing.
PLATFORMS = {"cpu": "cpu", "gpu": "cuda", "tpu": "tpu"}
# Simulated cpu devices, for a map over devices; they share the host's cores.
HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
NO_PREALLOCATE = ("false", "False", "0")  # as jaxlib reads XLA_PYTHON_CLIENT_PREALLOCATE
# The packages that give jax a device kind beyond the cpu; jaxlib loads a plugin only of its
# own version.
DEVICE_PACKAGES = {"gpu": ("jax-cuda12-plugin", "jax-cuda13-plugin"), "tpu": ("libtpu",)}
INSTALL_FIX = {
    "gpu": "pip install 'stackwars[cuda]' on a machine with an NVIDIA GPU",
    "tpu": "pip install 'stackwars[tpu]' on a TPU VM",
}
THREADS_NOTE = (
    "XLA:CPU has no thread-count setting; it sizes its thread pool from the CPUs this "
    "process may run on (restrict them with taskset to use fewer)"
)


class _CompileEvents:
    """Seconds and counts of JAX's compile events in this process.

    One listener per process: JAX keeps listeners forever, and several framework objects
    (in tests) must not each add one.
    """

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.counts: Counter[str] = Counter()
        self._registered = False

    def register(self) -> None:
        if self._registered:
            return
        import jax.monitoring

        jax.monitoring.register_event_duration_secs_listener(self._record)
        self._registered = True

    def _record(self, event: str, duration_secs: float, **kwargs: str | int) -> None:
        del kwargs
        self.seconds[event] += duration_secs
        self.counts[event] += 1


_EVENTS = _CompileEvents()


def device_support(facts: Mapping[str, Any]) -> list[DeviceSupport]:
    """Per kind, the devices jax showed or why none (``JaxFramework.device_facts``'s data)."""
    return [DeviceSupport("cpu", tuple(facts["devices"].get("cpu", ())))] + [
        _accelerator_support(kind, facts) for kind in DEVICE_KINDS[1:]
    ]


def gpu_allocator_environment(kind: str, settings: RunSettings) -> dict[str, str]:
    """The XLA_PYTHON_CLIENT_ variables, which only jax's GPU client reads: set (and so
    recorded) for gpu cells only. Unset, jax pre-allocates 75 % of the GPU; stackwars turns
    that off unless --preallocate, so that the device peak is the work's."""
    if kind != "gpu":
        return {}
    environment = {"XLA_PYTHON_CLIENT_PREALLOCATE": str(settings.preallocate).lower()}
    if settings.memory_fraction is not None:
        environment["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{settings.memory_fraction:g}"
    return environment


def device_memory(stats: Mapping[str, Any] | None) -> DeviceMemory:
    """From ``Device.memory_stats()``: the allocator's peak in use, the peak of its pool (what
    it took from the device, all of the limit when it pre-allocates) and its limit."""
    if not stats:
        return DeviceMemory()
    return DeviceMemory(
        peak_bytes=non_negative(stats.get("peak_bytes_in_use")),
        reserved_bytes=non_negative(stats.get("peak_pool_bytes")),
        limit_bytes=non_negative(stats.get("bytes_limit")),
    )


def _accelerator_support(kind: str, facts: Mapping[str, Any]) -> DeviceSupport:
    devices = tuple(facts["devices"].get(kind, ()))
    if devices:
        return DeviceSupport(kind, devices)
    installed = {
        name: version
        for name in DEVICE_PACKAGES[kind]
        if (version := facts["packages"].get(name)) is not None
    }
    error = facts["errors"].get(kind, "")
    platforms = facts.get("platforms")
    if platforms and PLATFORMS[kind] not in platforms.split(","):
        reason = f"JAX_PLATFORMS={platforms} leaves it out (the cell's device sets it)"
    elif not installed:
        wanted = " or ".join(DEVICE_PACKAGES[kind])
        reason = f"cpu only: no {wanted} installed; fix: {INSTALL_FIX[kind]}"
    elif kind == "gpu" and facts["jaxlib"] not in installed.values():
        found = ", ".join(f"{name} {version}" for name, version in installed.items())
        reason = (
            f"{found} does not match jaxlib {facts['jaxlib']}, and jaxlib loads only a plugin "
            f"of its own version; fix: {INSTALL_FIX[kind]}"
        )
    else:
        found = ", ".join(f"{name} {version}" for name, version in installed.items())
        reason = f"{found} is installed but jax found no {kind}: {error or 'no device'}; check " + (
            "the NVIDIA driver (nvidia-smi) and CUDA_VISIBLE_DEVICES"
            if kind == "gpu"
            else "that this is a TPU VM and no other process holds the TPU"
        )
    return DeviceSupport(kind, reason=reason)


def _devices(kind: str) -> list[Any] | str:
    """jax's devices of ``kind``, or why it has none (the error asking gave)."""
    import jax

    try:
        return jax.devices(kind)
    # jax raises RuntimeError for an unknown backend, AssertionError when it has none.
    except (RuntimeError, AssertionError) as exc:
        return f"{type(exc).__name__}: {exc}".strip().removesuffix(":")


class JaxFramework(Framework):
    info = FRAMEWORKS["jax"]

    def __init__(self) -> None:
        self._device: Any = None
        self._seconds_before: dict[str, float] = {}

    def environment(self, settings: RunSettings) -> dict[str, str]:
        kind, _ = split_device(settings.device)
        if kind not in PLATFORMS:
            raise ValueError(f"jax runs on {', '.join(PLATFORMS)}, not {settings.device}")
        environment = {
            "JAX_PLATFORMS": PLATFORMS[kind],
            "JAX_ENABLE_X64": str(settings.x64).lower(),
            **gpu_allocator_environment(kind, settings),
        }
        if kind == "cpu" and settings.host_devices > 1:
            # XLA reads all its flags from this one variable: the user's flags are kept, and
            # the count goes last, where it wins over a count the user set.
            flags = os.environ.get("XLA_FLAGS", "")
            count = f"{HOST_DEVICES_FLAG}={settings.host_devices}"
            environment["XLA_FLAGS"] = f"{flags} {count}".strip()
        if not settings.persistent_cache:
            environment["JAX_ENABLE_COMPILATION_CACHE"] = "false"
            return environment
        if not settings.cache_dir:
            raise ValueError("jax's persistent cache needs settings.cache_dir for its folder")
        return environment | {
            "JAX_ENABLE_COMPILATION_CACHE": "true",
            "JAX_COMPILATION_CACHE_DIR": str(Path(settings.cache_dir) / "jax"),
            # The default (1 s) would leave the small functions of most cells uncached.
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        }

    def load(self) -> None:
        import jax  # noqa: F401

        _EVENTS.register()

    def init(self, settings: RunSettings) -> dict[str, Any]:
        import jax

        kind, index = split_device(settings.device)
        # Also set here, not only through the environment, so that they hold when JAX was
        # imported before environment() ran (in-process use, tests).
        jax.config.update("jax_enable_x64", settings.x64)
        if settings.matmul_precision != "default":
            jax.config.update("jax_default_matmul_precision", settings.matmul_precision)
        devices = _devices(kind)
        if isinstance(devices, str) or index >= len(devices):
            raise unavailable(self.device_support(self.device_facts()), settings.device)
        self._device = devices[index]
        return {"device": str(self._device)}

    def require_platform(self) -> None:
        """DeviceUnavailable when the platform ``environment`` pinned (JAX_PLATFORMS) has no
        device here: for code that makes arrays while it loads (torchax), which would
        otherwise fail inside jax with a bare AssertionError."""
        pinned = {platform: kind for kind, platform in PLATFORMS.items()}
        kind = pinned.get(os.environ.get("JAX_PLATFORMS", ""))
        if kind is not None and isinstance(_devices(kind), str):
            raise unavailable(self.device_support(self.device_facts()), kind)

    def device_facts(self) -> dict[str, Any]:
        found = {kind: _devices(kind) for kind in DEVICE_KINDS}
        seen = {kind: v for kind, v in found.items() if isinstance(v, list)}
        return {
            "jaxlib": distribution_version("jaxlib"),
            "platforms": os.environ.get("JAX_PLATFORMS"),
            "packages": {
                name: distribution_version(name)
                for packages in DEVICE_PACKAGES.values()
                for name in packages
            },
            "devices": {kind: [device.device_kind for device in v] for kind, v in seen.items()},
            "errors": {kind: v for kind, v in found.items() if isinstance(v, str)},
        }

    def device_support(self, facts: Mapping[str, Any]) -> list[DeviceSupport]:
        return device_support(facts)

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        import jax

        placed = tuple(jax.device_put(tuple(arrays), self._device))
        return jax.block_until_ready(placed)

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        import jax

        if mode == "eager":
            return fn
        if mode == "jit":
            return jax.jit(fn)
        raise ValueError(f"jax has no mode {mode!r}; modes: {', '.join(self.info.modes)}")

    def sync(self, out: Any) -> None:
        import jax

        jax.block_until_ready(out)

    def to_host(self, out: Any) -> list[Any]:
        import numpy as np

        return [np.asarray(leaf) for leaf in flatten(out)]

    def is_async(self) -> bool:
        return True

    def compile_count(self) -> int:
        return _EVENTS.counts[COMPILE_EVENT]

    def compiled_program(
        self, fn: Callable[..., Any], args: Sequence[Any]
    ) -> CompiledProgram | None:
        """jax:jit's StableHLO for these arguments, lowered again from jit's trace cache
        (nothing compiled), and XLA's cost analysis of it; None for jax:eager."""
        lower = getattr(fn, "lower", None)
        if lower is None:
            return None
        lowered = lower(*args)
        cost = lowered.cost_analysis()
        if isinstance(cost, list):  # older jax: one dict per computation
            cost = cost[0] if cost else None
        flops = cost.get("flops") if isinstance(cost, dict) else None
        return CompiledProgram(lowered.as_text(), None if flops is None else float(flops))

    def first_call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        self._seconds_before = dict(_EVENTS.seconds)
        return fn(*args)

    def first_run_phases(self, total_s: float) -> dict[str, float]:
        def spent(event: str) -> float:
            return _EVENTS.seconds[event] - self._seconds_before.get(event, 0.0)

        phases = {
            "trace_s": spent(TRACE_EVENT),
            "lower_s": spent(LOWER_EVENT),
            "compile_s": spent(COMPILE_EVENT),
        }
        phases["execute_s"] = max(0.0, total_s - sum(phases.values()))
        if spent(CACHE_READ_EVENT):
            phases["of_compile.cache_read_s"] = spent(CACHE_READ_EVENT)
        return phases

    def selftest_step(self) -> Callable[[Any, Any], Any]:
        import jax.numpy as jnp

        def step(x: Any, w: Any) -> Any:
            return jnp.tanh(x @ w)

        return step

    def gemm_call(self, a: Any, b: Any) -> Callable[[], Any]:
        import jax
        import jax.numpy as jnp

        return partial(jax.jit(jnp.matmul), a, b)

    def device_memory_stats(self) -> dict[str, Any] | None:
        return self._device.memory_stats()

    def device_memory(self, stats: Mapping[str, Any] | None) -> DeviceMemory:
        return device_memory(stats)

    def runtime_settings(self) -> dict[str, Any]:
        import jax

        platform = self._device.platform
        config = jax.config.values
        tracks_memory = self._device.memory_stats() is not None
        # Unset means pre-allocate; only the GPU client reads it.
        preallocates = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE") not in NO_PREALLOCATE
        on_gpu = platform not in ("cpu", "tpu")
        return {
            "platform": platform,
            "device_kind": self._device.device_kind,
            "x64": config["jax_enable_x64"],
            # None: jax's own default (TF32 for float32 on recent NVIDIA GPUs).
            "matmul_precision": config["jax_default_matmul_precision"],
            "preallocate": preallocates if on_gpu else None,
            "memory_fraction": os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION") if on_gpu else None,
            "persistent_cache_dir": config["jax_compilation_cache_dir"]
            if config["jax_enable_compilation_cache"]
            else None,
            "threads": None,
            "threads_note": THREADS_NOTE,
            "device_peak_bytes_note": None
            if tracks_memory
            else f"jax keeps no memory statistics for {platform} devices",
        }
