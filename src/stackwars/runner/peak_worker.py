"""The peak worker: measures one library's GEMM FLOP/s and STREAM bandwidth in a fresh process.

Usage: ``python -m stackwars.runner.peak_worker RESULT.json LIBRARY [--quick]``.

One library per process, so that no library's idle thread pool (OpenMP, OpenBLAS and MKL
threads spin for a while after each call) competes with the next one for the 2 cores of a
small machine, and so that each library is measured with its own defaults. The parent
(``stackwars.peak``) starts one worker per installed library and keeps the best numbers.

GEMM: ``C = A @ B`` with square matrices, ``2 n³`` FLOPs per call, at every size of
``Sizes.gemm_n`` (the best size counts: small sizes do not fill the cores, large ones may
fall out of the caches). Every library runs in float32 and float64 and the output dtype is
checked, so that a library that quietly computes float32 (JAX without x64) fails loudly.

STREAM (numpy and torch; JAX and TensorFlow cannot write into an existing array): four kernels
on float64 arrays far larger than the last-level cache, counted as STREAM counts them: each
array read or written once per element, so copy and scale move 16 bytes per element, add and
triad 24. The extra read of the destination (write-allocate) is not counted, as in STREAM.
numpy has no fused triad: it runs ``a = b + s·c`` chunk by chunk through a temporary that stays
in the L2 cache, so that memory sees one pass, as in STREAM.

Every failure is recorded under the measurement it broke (``{"error": ...}``); the worker exits
non-zero only when it cannot write its result.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.metadata import BLAS_VARIABLES
from stackwars.timing.timer import Timer, TimingConfig

LIBRARIES = ("numpy", "torch", "jax", "tensorflow")
DTYPES = ("float32", "float64")
STREAM_ARRAYS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
STREAM_SCALAR = 3.0
STREAM_ITEMSIZE = 8  # float64, as in STREAM
# float64 elements of numpy's triad temporary: 512 KiB stays in a 1 MiB L2 cache; smaller
# chunks were slower here (4096: 19 GB/s, 32768: 27, 65536 to 262144: 29).
TRIAD_CHUNK = 2**16
ENVIRONMENT_VARIABLES = (
    *BLAS_VARIABLES,
    "KMP_BLOCKTIME",
    "GOMP_SPINCOUNT",
    "TF_ENABLE_ONEDNN_OPTS",
    "XLA_FLAGS",
    "JAX_PLATFORMS",
    "JAX_ENABLE_X64",
)
# Set before the library is imported: JAX reads them once, and float64 needs x64.
LIBRARY_ENVIRONMENT = {"jax": {"JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "true"}}
ERROR_CHARS = 3000

Call = Callable[[], Any]
Sync = Callable[[Any], None]


@dataclass(frozen=True)
class Sizes:
    gemm_n: tuple[int, ...]
    stream_elements: int
    gemm_timing: TimingConfig
    stream_timing: TimingConfig


# A 4096² float64 GEMM takes about 1.4 s here, so the time budget, not the CI target, ends
# most GEMM measurements; the whole peak took 3.5 minutes on 2 cores.
FULL = Sizes(
    gemm_n=(2048, 4096),
    stream_elements=2**25,  # 256 MiB per array, 8× a 32 MiB L3
    gemm_timing=TimingConfig(
        steady_budget_s=6.0,
        min_steady_s=1.0,
        min_blocks=10,
        warmup_window=3,
        warmup_budget_s=5.0,
    ),
    stream_timing=TimingConfig(
        steady_budget_s=4.0,
        min_steady_s=1.0,
        min_blocks=20,
        warmup_window=3,
        warmup_budget_s=2.0,
    ),
)
# For tests: every code path, in well under a second per library once it is imported.
_QUICK_TIMING = TimingConfig(
    steady_budget_s=0.02,
    min_steady_s=0.0,
    min_blocks=6,
    warmup_window=3,
    warmup_budget_s=0.02,
    max_warmup_runs=10,
)
QUICK = Sizes(
    gemm_n=(64, 128),
    stream_elements=2**16,
    gemm_timing=_QUICK_TIMING,
    stream_timing=_QUICK_TIMING,
)


def no_sync(out: Any) -> None:
    """numpy and torch on CPU return only once the result is written."""
    del out


def require_dtype(computed: str, requested: str) -> None:
    if computed != requested:
        raise TypeError(f"asked for {requested}, the library computed {computed}")


def numpy_gemm(n: int, dtype: str) -> tuple[Call, Sync]:
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
    c = np.empty((n, n), dtype=dtype)
    require_dtype(np.matmul(a, b, out=c).dtype.name, dtype)
    return partial(np.matmul, a, b, out=c), no_sync


def torch_gemm(n: int, dtype: str) -> tuple[Call, Sync]:
    import torch

    generator = torch.Generator().manual_seed(0)
    kind = getattr(torch, dtype)
    a, b = (torch.randn(n, n, dtype=kind, generator=generator) for _ in range(2))
    c = torch.empty(n, n, dtype=kind)
    require_dtype(str(torch.matmul(a, b, out=c).dtype).removeprefix("torch."), dtype)
    return partial(torch.matmul, a, b, out=c), no_sync


def jax_gemm(n: int, dtype: str) -> tuple[Call, Sync]:
    import jax
    import jax.numpy as jnp

    a, b = jax.random.normal(jax.random.key(0), (2, n, n), dtype=dtype)
    matmul = jax.jit(jnp.matmul)
    require_dtype(jax.block_until_ready(matmul(a, b)).dtype.name, dtype)
    return partial(matmul, a, b), jax.block_until_ready


def tensorflow_gemm(n: int, dtype: str) -> tuple[Call, Sync]:
    import tensorflow as tf

    a, b = tf.unstack(tf.random.stateless_normal((2, n, n), seed=(0, 0), dtype=dtype))
    require_dtype(tf.linalg.matmul(a, b).dtype.name, dtype)
    return partial(tf.linalg.matmul, a, b), lambda out: tf.test.experimental.sync_devices()


def numpy_stream(elements: int) -> dict[str, Call]:
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
            np.multiply(c_part, STREAM_SCALAR, out=scaled)
            np.add(b_part, scaled, out=a_part)

    return {
        "copy": partial(np.copyto, c, a),
        "scale": partial(np.multiply, c, STREAM_SCALAR, out=b),
        "add": partial(np.add, a, b, out=c),
        "triad": triad,
    }


def torch_stream(elements: int) -> dict[str, Call]:
    import torch

    a, b, c = (torch.full((elements,), value, dtype=torch.float64) for value in (1.0, 2.0, 0.0))
    return {
        "copy": partial(c.copy_, a),
        "scale": partial(torch.mul, c, STREAM_SCALAR, out=b),
        "add": partial(torch.add, a, b, out=c),
        "triad": partial(torch.add, b, c, alpha=STREAM_SCALAR, out=a),
    }


GEMMS: dict[str, Callable[[int, str], tuple[Call, Sync]]] = {
    "numpy": numpy_gemm,
    "torch": torch_gemm,
    "jax": jax_gemm,
    "tensorflow": tensorflow_gemm,
}
STREAMS: dict[str, Callable[[int], dict[str, Call]]] = {
    "numpy": numpy_stream,
    "torch": torch_stream,
}


def runtime(library: str) -> dict[str, Any]:
    """The library's version and the settings that decide its speed (threads, BLAS)."""
    if library == "numpy":
        import numpy as np

        return {"version": np.__version__, "config": np.show_config(mode="dicts")}
    if library == "torch":
        import torch

        return {
            "version": torch.__version__,
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "parallel_info": torch.__config__.parallel_info(),
        }
    if library == "jax":
        import jax

        return {"version": jax.__version__, "devices": [str(d) for d in jax.devices()]}
    import tensorflow as tf

    threading = tf.config.threading
    return {
        "version": tf.__version__,
        # 0 means TensorFlow's default: one thread per core this process may use.
        "intra_op_threads": threading.get_intra_op_parallelism_threads(),
        "inter_op_threads": threading.get_inter_op_parallelism_threads(),
    }


def measure(call: Call, sync: Sync, work: float, unit: str, timing: TimingConfig) -> dict:
    """One Timer measurement of ``call``; ``work`` per call (FLOPs or bytes) gives the rate."""
    m = Timer(call, sync, config=timing).measure()
    summary = m.summary()
    used_s = m.steady_usage.user_s + m.steady_usage.sys_s
    return {
        unit: work / summary.median,
        "median_s": summary.median,
        "ci95_low_s": summary.ci95_low,
        "ci95_high_s": summary.ci95_high,
        "min_s": summary.min,
        "blocks": len(m.block_s),
        "inner_loops": m.inner_loops,
        "stable": m.stable,
        "warmup_settled": m.warmup_settled,
        # CPU time over wall time: how many cores the library really kept busy.
        "cores_busy": used_s / m.steady_wall_s if m.steady_wall_s > 0 else None,
    }


def recorded(action: Callable[[], dict]) -> dict:
    """``action()``, or its failure as ``{"error": ...}`` with the traceback's tail."""
    try:
        return action()
    except Exception as exc:
        return {"error": "".join(traceback.format_exception(exc))[-ERROR_CHARS:]}


def gemm(make: Callable[[int, str], tuple[Call, Sync]], dtype: str, sizes: Sizes) -> dict:
    by_n = {}
    for n in sizes.gemm_n:
        call, sync = make(n, dtype)
        by_n[str(n)] = measure(call, sync, 2.0 * n**3, "flops_per_s", sizes.gemm_timing)
    best = max(by_n, key=lambda n: by_n[n]["flops_per_s"])
    return {"flops_per_s": by_n[best]["flops_per_s"], "n": int(best), "by_n": by_n}


def stream(make: Callable[[int], dict[str, Call]], sizes: Sizes) -> dict:
    elements = sizes.stream_elements
    return {
        name: recorded(
            partial(
                measure,
                call,
                no_sync,
                STREAM_ARRAYS[name] * STREAM_ITEMSIZE * elements,
                "bytes_per_s",
                sizes.stream_timing,
            )
        )
        for name, call in make(elements).items()
    }


def measure_library(library: str, sizes: Sizes) -> dict[str, Any]:
    """Everything measured for ``library``; what failed carries its error."""
    os.environ.update(LIBRARY_ENVIRONMENT.get(library, {}))
    result: dict[str, Any] = {
        "library": library,
        "environment": {name: os.environ.get(name) for name in ENVIRONMENT_VARIABLES},
        "usable_cores": len(os.sched_getaffinity(0)),
        "runtime": recorded(partial(runtime, library)),
        "gemm": {dtype: recorded(partial(gemm, GEMMS[library], dtype, sizes)) for dtype in DTYPES},
    }
    if library in STREAMS:
        result["stream"] = recorded(partial(stream, STREAMS[library], sizes))
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m stackwars.runner.peak_worker")
    parser.add_argument("result", type=Path, help="where to write the JSON result")
    parser.add_argument("library", choices=LIBRARIES)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for tests")
    args = parser.parse_args(argv)
    result = measure_library(args.library, QUICK if args.quick else FULL)
    result["quick"] = args.quick
    write_atomically(args.result, dump(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
