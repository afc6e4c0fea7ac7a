"""NumPy: one mode (eager), CPU only, synchronous; nothing to compile or synchronise."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import Framework, RunSettings, flatten


class NumpyFramework(Framework):
    info = FRAMEWORKS["numpy"]

    def environment(self, settings: RunSettings) -> dict[str, str]:
        if settings.threads is None:
            return {}
        count = str(settings.threads)
        return {"OMP_NUM_THREADS": count, "OPENBLAS_NUM_THREADS": count, "MKL_NUM_THREADS": count}

    def load(self) -> None:
        import numpy  # noqa: F401

    def init(self, settings: RunSettings) -> dict[str, Any]:
        if settings.device != "cpu":
            raise ValueError(f"numpy runs on cpu only, not {settings.device}")
        return {"device": "cpu"}

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(arrays)

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        if mode != "eager":
            raise ValueError(f"numpy has no mode {mode!r}")
        return fn

    def sync(self, out: Any) -> None:
        del out  # NumPy returns only when the work is done.

    def to_host(self, out: Any) -> list[Any]:
        import numpy as np

        return [np.asarray(leaf) for leaf in flatten(out)]

    def runtime_settings(self) -> dict[str, Any]:
        import numpy as np

        config = np.show_config(mode="dicts")
        blas = config.get("Build Dependencies", {}).get("blas", {}) if config else {}
        return {"blas": blas.get("name"), "blas_version": blas.get("version")}
