"""Keras 3 on JAX, PyTorch or TensorFlow: one framework per backend, the family ``keras``.

Keras is a layer over a backend, not an array library: its arrays are the backend's, its ops
dispatch to the backend's, and the modes it offers are the backend's compilers applied the way
Keras's own trainers apply them (``jax.jit``, ``torch.compile``, ``tf.function`` with or
without ``jit_compile``). So a Keras framework object holds the native framework object of its
backend and hands it everything the timer relies on: device selection, placement, the mode,
sync, compile counting, fallbacks, first-run phases and memory. What it adds is the backend
choice, pinned before Keras is imported (Keras reads ``KERAS_BACKEND`` once, at import: a
user's exported value must never decide what a ``keras-jax`` cell runs on), the check that
Keras really runs on it, and, on PyTorch, the device Keras creates its variables on.

Keras imports JAX whatever its backend (seen with Keras 3.15), which the baseline memory of
every Keras stack includes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from stackwars.frameworks import FRAMEWORKS, load_framework
from stackwars.frameworks.base import (
    DeviceMemory,
    DeviceSupport,
    Framework,
    RunSettings,
    split_device,
)


class KerasFramework(Framework):
    """Keras on ``backend``; subclasses name the backend (and so the registry entry)."""

    backend: ClassVar[str]

    def __init__(self) -> None:
        self.native = load_framework(self.backend)

    def environment(self, settings: RunSettings) -> dict[str, str]:
        return {**self.native.environment(settings), "KERAS_BACKEND": self.backend}

    def load(self) -> None:
        self.native.load()
        import keras

        running = keras.backend.backend()
        if running != self.backend:
            raise RuntimeError(
                f"Keras runs on {running!r}, not {self.backend!r}: it was imported before "
                f"KERAS_BACKEND={self.backend} was set (Keras reads it once, at import)"
            )

    def init(self, settings: RunSettings) -> dict[str, Any]:
        import keras

        effective = self.native.init(settings)
        return {**effective, "keras_backend": keras.backend.backend(), "keras": keras.__version__}

    def attach(self, device: str) -> None:
        self.native.attach(device)

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        return self.native.to_device(arrays)

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        if mode not in self.info.modes:
            raise ValueError(
                f"{self.name} has no mode {mode!r}; modes: {', '.join(self.info.modes)}"
            )
        return self.native.prepare(fn, mode)

    def sync(self, out: Any) -> None:
        self.native.sync(out)

    def to_host(self, out: Any) -> list[Any]:
        return self.native.to_host(out)

    def is_async(self) -> bool:
        return self.native.is_async()

    def compile_count(self) -> int:
        return self.native.compile_count()

    def fallbacks(self) -> list[str]:
        return self.native.fallbacks()

    def first_call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        return self.native.first_call(fn, args)

    def first_run_phases(self, total_s: float) -> dict[str, float]:
        return self.native.first_run_phases(total_s)

    def device_memory_stats(self) -> dict[str, Any] | None:
        return self.native.device_memory_stats()

    def device_memory(self, stats: Mapping[str, Any] | None) -> DeviceMemory:
        return self.native.device_memory(stats)

    def device_facts(self) -> dict[str, Any]:
        return self.native.device_facts()

    def device_support(self, facts: Mapping[str, Any]) -> list[DeviceSupport]:
        return self.native.device_support(facts)

    def runtime_settings(self) -> dict[str, Any]:
        import keras

        return {
            **self.native.runtime_settings(),
            "keras_backend": keras.backend.backend(),
            "keras_floatx": keras.config.floatx(),
        }

    def selftest_step(self) -> Callable[[Any, Any], Any]:
        from keras import ops

        def step(x: Any, w: Any) -> Any:
            return ops.tanh(ops.matmul(x, w))

        return step

    def gemm_call(self, a: Any, b: Any) -> Callable[[], Any]:
        from keras import ops

        return lambda: ops.matmul(a, b)


class KerasJaxFramework(KerasFramework):
    info = FRAMEWORKS["keras-jax"]
    backend = "jax"


class KerasTorchFramework(KerasFramework):
    info = FRAMEWORKS["keras-torch"]
    backend = "torch"

    def environment(self, settings: RunSettings) -> dict[str, str]:
        # Keras on torch creates its variables on the first GPU when there is one, whatever
        # device the inputs are on; KERAS_TORCH_DEVICE is its documented override.
        kind, index = split_device(settings.device)
        device = "cpu" if kind == "cpu" else f"cuda:{index}"
        return {**super().environment(settings), "KERAS_TORCH_DEVICE": device}


class KerasTensorflowFramework(KerasFramework):
    info = FRAMEWORKS["keras-tensorflow"]
    backend = "tensorflow"
