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
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import Framework, RunSettings, flatten, split_device

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_READ_EVENT = "/jax/compilation_cache/cache_retrieval_time_sec"
# JAX_PLATFORMS names: "gpu" would expand to cuda and rocm and fail when either is missing.
PLATFORMS = {"cpu": "cpu", "gpu": "cuda", "tpu": "tpu"}
# Simulated cpu devices, for a map over devices; they share the host's cores.
HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
NO_PREALLOCATE = ("false", "False", "0")  # as jaxlib reads XLA_PYTHON_CLIENT_PREALLOCATE
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
            "XLA_PYTHON_CLIENT_PREALLOCATE": str(settings.preallocate).lower(),
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
        jax.config.update("jax_default_matmul_precision", settings.matmul_precision)
        try:
            devices = jax.devices(kind)
        # jax raises RuntimeError for an unknown backend, AssertionError when it has none.
        except (RuntimeError, AssertionError) as exc:
            raise RuntimeError(
                f"jax has no usable {kind} backend here ({exc}); install jax's {kind} plugin "
                "on a machine with that device, or choose --device cpu"
            ) from exc
        if index >= len(devices):
            raise RuntimeError(f"jax sees {len(devices)} {kind} device(s), not {settings.device}")
        self._device = devices[index]
        return {"device": str(self._device)}

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

    def device_peak_bytes(self) -> int | None:
        stats = self._device.memory_stats()
        return None if stats is None else stats.get("peak_bytes_in_use")

    def runtime_settings(self) -> dict[str, Any]:
        import jax

        platform = self._device.platform
        config = jax.config.values
        tracks_memory = self._device.memory_stats() is not None
        # Unset means pre-allocate; CPU clients never do.
        preallocates = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE") not in NO_PREALLOCATE
        return {
            "platform": platform,
            "device_kind": self._device.device_kind,
            "x64": config["jax_enable_x64"],
            "matmul_precision": config["jax_default_matmul_precision"],
            "preallocate": None if platform == "cpu" else preallocates,
            "persistent_cache_dir": config["jax_compilation_cache_dir"]
            if config["jax_enable_compilation_cache"]
            else None,
            "threads": None,
            "threads_note": THREADS_NOTE,
            "device_peak_bytes_note": None
            if tracks_memory
            else f"jax keeps no memory statistics for {platform} devices",
        }
