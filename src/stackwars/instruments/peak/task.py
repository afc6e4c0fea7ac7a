"""Measuring this machine's peak: each installed library in its own ``instruments/peak/worker.py``
process (the parent imports no framework); the best number of any library is the peak, since
the question a user asks is "could this machine go faster", not "could this library".
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from stackwars.config import default_memory_budget
from stackwars.frameworks import missing_reason
from stackwars.instruments.peak import worker as peak_worker
from stackwars.instruments.peak.worker import DTYPES, STREAM_ARRAYS, STREAM_ITEMSIZE
from stackwars.results.metadata import machine_info
from stackwars.results.peak import MACHINE_KEYS, Peak, PeakError
from stackwars.runner.child import Limits, run_child

STREAM_COUNTING = (
    f"STREAM counting on float64 ({STREAM_ITEMSIZE}-byte) elements: each array read or "
    f"written once, so bytes per element are {STREAM_ITEMSIZE} x "
    + ", ".join(f"{count} ({name})" for name, count in STREAM_ARRAYS.items())
    + "; write-allocate reads of the destination are not counted; the peak is the best triad"
)


def measure_peak(quick: bool = False, timeout_s: float = 600.0, device: str = "cpu") -> Peak:
    """Measure every installed library in its own worker on ``device``; the best numbers are
    the peak.

    ``quick`` uses tiny sizes (for tests: the numbers are then not a peak). ``timeout_s``
    bounds the whole measurement. A library that fails (one without ``device``, too) is
    recorded with its error in ``details``; PeakError when no library measured a dtype (float32
    alone on a TPU) or the bandwidth, or on timeout.
    """
    machine = machine_info()
    deadline = time.monotonic() + timeout_s
    libraries: dict[str, Any] = {}
    for library in peak_worker.libraries():
        missing = missing_reason(library)
        libraries[library] = (
            {"error": missing}
            if missing
            else run_worker(library, quick, deadline, timeout_s, device)
        )
    flops, bandwidth, best = best_of(libraries, device)
    details = {
        "quick": quick,
        "best": best,
        "stream_counting": STREAM_COUNTING,
        "load_average_before": machine["load_average"],
        "libraries": libraries,
    }
    return Peak(
        flops_per_s=flops,
        bandwidth_bytes_per_s=bandwidth,
        details=details,
        measured=datetime.now(UTC).isoformat(timespec="seconds"),
        machine={key: machine[key] for key in MACHINE_KEYS},
        device=device,
    )


def run_worker(
    library: str, quick: bool, deadline: float, timeout_s: float, device: str = "cpu"
) -> dict[str, Any]:
    """One peak worker's result; a worker that dies without one becomes ``{"error": ...}``."""
    limits = Limits(max(deadline - time.monotonic(), 0.0), default_memory_budget())
    request = {"library": library, "quick": quick, "device": device}
    end = run_child("stackwars.instruments.peak.worker", "peak", request, limits)
    if end.status == "timeout":
        raise PeakError(
            f"measuring the peak took longer than {timeout_s:g} s (stopped in {library}); "
            "allow more time"
        )
    if end.ok and end.result is not None:
        return end.result
    return {"error": f"{library} peak worker: {end.detail}"}


def required_dtypes(device: str) -> tuple[str, ...]:
    """The GEMM dtypes a peak of ``device`` must have: a TPU computes no float64, so its
    roofline places float32 cells only."""
    return ("float32",) if device.startswith("tpu") else DTYPES


def best_of(
    libraries: dict[str, Any], device: str = "cpu"
) -> tuple[dict[str, float], float, dict[str, str]]:
    """Best GEMM FLOP/s per dtype, best triad bytes/s, and which library gave each."""
    flops: dict[str, float] = {}
    best: dict[str, str] = {}
    for dtype in DTYPES:
        rates = _rates(libraries, ("gemm", dtype, "flops_per_s"))
        if not rates and dtype not in required_dtypes(device):
            continue
        if not rates:
            raise PeakError(f"no library measured {dtype} GEMM: {_errors(libraries)}")
        best[f"gemm_{dtype}"] = max(rates, key=rates.__getitem__)
        flops[dtype] = rates[best[f"gemm_{dtype}"]]
    triads = _rates(libraries, ("stream", "triad", "bytes_per_s"))
    if not triads:
        raise PeakError(f"no library measured the STREAM triad: {_errors(libraries)}")
    best["bandwidth"] = max(triads, key=triads.__getitem__)
    return flops, triads[best["bandwidth"]], best


def _rates(libraries: dict[str, Any], keys: tuple[str, ...]) -> dict[str, float]:
    rates = {}
    for library, result in libraries.items():
        value: Any = result
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int | float) and value > 0:
            rates[library] = float(value)
    return rates


def _errors(tree: Any, where: str = "") -> str:
    """Every ``error`` in a worker result tree, prefixed by where it happened."""
    if not isinstance(tree, dict):
        return ""
    found = [f"{where or 'peak'}: {tree['error']}"] if "error" in tree else []
    found += [_errors(value, f"{where} {key}".strip()) for key, value in tree.items()]
    return "\n".join(text for text in found if text)
