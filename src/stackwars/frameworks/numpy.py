"""NumPy: one mode (eager), CPU only, synchronous; nothing to compile or synchronise."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import Framework, RunSettings, flatten

# float64 elements of the STREAM triad's temporary: 512 KiB stays in a 1 MiB L2 cache; smaller
# chunks were slower here (4096: 19 GB/s, 32768: 27, 65536 to 262144: 29).
TRIAD_CHUNK = 2**16


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

    def call_peak_bytes(self, call: Callable[[], Any]) -> int | None:
        """NumPy reports every array's data to tracemalloc (its own domain, beside Python's
        objects, which are traced too): the traced peak above the start is what the call
        held at most. A tracing the user started (PYTHONTRACEMALLOC) is left running."""
        import tracemalloc

        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            call()
            return tracemalloc.get_traced_memory()[1] - before
        finally:
            if started:
                tracemalloc.stop()

    def runtime_settings(self) -> dict[str, Any]:
        import numpy as np

        config = np.show_config(mode="dicts")
        blas = config.get("Build Dependencies", {}).get("blas", {}) if config else {}
        return {"blas": blas.get("name"), "blas_version": blas.get("version")}

    def selftest_step(self) -> Callable[[Any, Any], Any]:
        import numpy as np

        def step(x: Any, w: Any) -> Any:
            return np.tanh(x @ w)

        return step

    def gemm_call(self, a: Any, b: Any) -> Callable[[], Any]:
        import numpy as np

        return partial(np.matmul, a, b, out=np.empty_like(a))

    def stream_kernels(self, elements: int, scalar: float) -> dict[str, Callable[[], Any]]:
        """NumPy has no fused triad: it runs ``a = b + s·c`` chunk by chunk through a temporary
        that stays in the L2 cache, so that memory sees one pass, as in STREAM."""
        import numpy as np

        # np.full writes every page now, so that no page fault lands in a timed call.
        a, b, c = (np.full(elements, value) for value in (1.0, 2.0, 0.0))
        temporary = np.empty(TRIAD_CHUNK)
        chunks = []
        for start in range(0, elements, TRIAD_CHUNK):
            part = slice(start, start + TRIAD_CHUNK)
            a_part = a[part]
            chunks.append((a_part, b[part], c[part], temporary[: len(a_part)]))

        def triad() -> None:
            for a_part, b_part, c_part, scaled in chunks:
                np.multiply(c_part, scalar, out=scaled)
                np.add(b_part, scaled, out=a_part)

        return {
            "copy": partial(np.copyto, c, a),
            "scale": partial(np.multiply, c, scalar, out=b),
            "add": partial(np.add, a, b, out=c),
            "triad": triad,
        }
