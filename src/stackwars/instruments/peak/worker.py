"""The peak worker: measures one library's GEMM FLOP/s and STREAM bandwidth in a fresh process.

Usage: ``python -m stackwars.instruments.peak.worker RESULT.json LIBRARY [--quick]``.

One library per process, so that no library's idle thread pool (OpenMP, OpenBLAS and MKL
threads spin for a while after each call) competes with the next one for the 2 cores of a
small machine, and so that each library is measured with its own defaults. The parent
(``instruments/peak/task.py``) starts one worker per installed library and keeps the best numbers.

Every registered framework is a library here, set up as a timing worker sets it up
(``load_framework``, its ``environment`` with x64 on, ``load``, ``init`` on the device asked
for: the cpu by default, a GPU or TPU for ``env --peak --device``); its inputs go through
``to_device`` onto that device and every timed block ends with its ``sync``, so on an
accelerator the GEMM and the copy kernels run there (the copy where the library can write
into an existing device array: torch; JAX and TensorFlow cannot).

GEMM: ``C = A @ B`` with square matrices (``Framework.gemm_call``), ``2 n³`` FLOPs per call, at
every size of ``Sizes.gemm_n`` (the best size counts: small sizes do not fill the cores, large
ones may fall out of the caches). Every library runs in float32 and float64 and the output
dtype is checked, so that a library that quietly computes float32 (JAX without x64) fails
loudly.

STREAM (the libraries that can write into an existing array: ``Framework.stream_kernels``):
four kernels on float64 arrays far larger than the last-level cache, counted as STREAM counts
them: each array read or written once per element, so copy and scale move 16 bytes per
element, add and triad 24. The extra read of the destination (write-allocate) is not counted,
as in STREAM.

Every failure is recorded under the measurement it broke (``{"error": ...}``); the worker exits
non-zero only when it cannot write its result.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from stackwars.frameworks import (
    FRAMEWORKS,
    influential_environment,
    installed_version,
    load_framework,
)
from stackwars.frameworks.base import Framework, RunSettings, split_device
from stackwars.results.metadata import BLAS_VARIABLES
from stackwars.runner.child import serve
from stackwars.runner.worker import blas_libraries
from stackwars.timing.timer import Timer, TimingConfig

# The GEMM peak is measured in every element type the workloads offer: a table divides a cell by
# the peak of its own type.
from stackwars.workloads._inputs import DTYPES


def libraries() -> list[str]:
    """Every registered library, read live (a framework added to the registry is measured
    too); a layer over another (Keras) brings no kernels of its own."""
    return [name for name, info in FRAMEWORKS.items() if info.runs_on is None]


STREAM_ARRAYS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
STREAM_SCALAR = 3.0
STREAM_ITEMSIZE = 8  # float64, as in STREAM
# Recorded whether set or not; each library's own variables (FrameworkInfo.environment_prefixes)
# and the XLA and CUDA ones are recorded when set.
ENVIRONMENT_VARIABLES = (*BLAS_VARIABLES, "KMP_BLOCKTIME", "GOMP_SPINCOUNT")
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


def require_dtype(computed: str, requested: str) -> None:
    if computed != requested:
        raise TypeError(f"asked for {requested}, the library computed {computed}")


def gemm_call(framework: Framework, n: int, dtype: str) -> Call:
    """The framework's GEMM on two n×n device matrices, its output dtype checked."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = framework.to_device([rng.standard_normal((n, n)).astype(dtype) for _ in range(2)])
    call = framework.gemm_call(a, b)
    out = call()
    framework.sync(out)
    require_dtype(framework.to_host(out)[0].dtype.name, dtype)
    return call


def runtime(framework: Framework) -> dict[str, Any]:
    """The library's version and the settings that decide its speed (threads, BLAS)."""
    return {
        "version": installed_version(framework.name),
        **framework.runtime_settings(),
        "blas": blas_libraries(),
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


def gemm(framework: Framework, dtype: str, sizes: Sizes) -> dict:
    by_n = {}
    for n in sizes.gemm_n:
        call = gemm_call(framework, n, dtype)
        by_n[str(n)] = measure(call, framework.sync, 2.0 * n**3, "flops_per_s", sizes.gemm_timing)
    best = max(by_n, key=lambda n: by_n[n]["flops_per_s"])
    return {"flops_per_s": by_n[best]["flops_per_s"], "n": int(best), "by_n": by_n}


def stream(framework: Framework, sizes: Sizes) -> dict:
    """Each STREAM kernel's bandwidth; ``{}`` for a library that has none."""
    elements = sizes.stream_elements
    return {
        name: recorded(
            partial(
                measure,
                call,
                framework.sync,
                STREAM_ARRAYS[name] * STREAM_ITEMSIZE * elements,
                "bytes_per_s",
                sizes.stream_timing,
            )
        )
        for name, call in framework.stream_kernels(elements, STREAM_SCALAR).items()
    }


def start_framework(framework: Framework, settings: RunSettings) -> dict:
    """Load and initialise ``framework`` as a timing worker does; ``{}`` when it started."""
    framework.load()
    framework.init(settings)
    return {}


def measure_library(library: str, sizes: Sizes, device: str = "cpu") -> dict[str, Any]:
    """Everything measured for ``library`` on ``device``; what failed carries its error (a
    library that does not run there, or does not see the device, fails to start)."""
    framework = load_framework(library)
    if split_device(device)[0] not in framework.info.devices:
        runs_on = ", ".join(framework.info.devices)
        return {"library": library, "error": f"{library} runs on {runs_on}, not {device}"}
    with tempfile.TemporaryDirectory(prefix="stackwars-peak-") as scratch:
        # x64: float64 is measured too (JAX computes float32 without it).
        settings = RunSettings(device=device, x64=True, cache_dir=scratch)
        os.environ.update(framework.environment(settings))
        result: dict[str, Any] = {
            "library": library,
            "environment": {
                **{name: os.environ.get(name) for name in ENVIRONMENT_VARIABLES},
                **influential_environment(library),
            },
            "usable_cores": len(os.sched_getaffinity(0)),
        }
        started = recorded(partial(start_framework, framework, settings))
        if started:  # it could not start: nothing was measured
            return result | {"runtime": started, "gemm": dict.fromkeys(DTYPES, started)}
        result["runtime"] = recorded(partial(runtime, framework))
        result["gemm"] = {
            dtype: recorded(partial(gemm, framework, dtype, sizes)) for dtype in DTYPES
        }
        streamed = recorded(partial(stream, framework, sizes))
        if streamed:
            result["stream"] = streamed
        return result


def answer(data: dict[str, Any]) -> dict[str, Any]:
    """``{"library": one of libraries(), "quick": tiny sizes for tests}`` -> its measurements."""
    library, quick = data["library"], bool(data.get("quick", False))
    if library not in libraries():
        known = ", ".join(libraries())
        return {"error": f"no peak measurement for {library!r}; known: {known}"}
    device = data.get("device", "cpu")
    return {**measure_library(library, QUICK if quick else FULL, device), "quick": quick}


def main(argv: list[str]) -> int:
    return serve(argv, "peak", answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
