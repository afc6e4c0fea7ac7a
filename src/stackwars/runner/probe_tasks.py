"""The parent halves of the two probe workers of ``stackwars env``: the devices each framework
sees (runner/devices_worker.py) and the BLAS libraries it loads (runner/blas_worker.py), each
asked in a fresh worker per framework."""

from __future__ import annotations

from typing import Any

from stackwars.config import default_memory_budget
from stackwars.frameworks import FRAMEWORKS, missing_reason, stack_missing_reason
from stackwars.frameworks.base import DeviceSupport
from stackwars.runner.child import Limits, run_child

DEVICES_WORKER = "stackwars.runner.devices_worker"
BLAS_WORKER = "stackwars.runner.blas_worker"
BLAS_PROBE_TIMEOUT_S = 120.0
# Asking for a TPU where there is none takes TensorFlow seconds; a TPU VM's runtime, longer.
DEVICE_PROBE_TIMEOUT_S = 180.0


def device_support() -> dict[str, list[DeviceSupport] | str]:
    """Per installed framework (and per mode with a runtime of its own: torch:xla), the device
    kinds it sees in a fresh worker and why not, or why it could not be asked."""
    probed: dict[str, list[DeviceSupport] | str] = {}
    limits = Limits(DEVICE_PROBE_TIMEOUT_S, default_memory_budget())
    for name, info in FRAMEWORKS.items():
        # A layer over another framework (Keras) sees that framework's devices.
        if info.runs_on is not None or missing_reason(name) is not None:
            continue
        own = {f"{name}:{mode}": mode for mode, special in info.mode_implementations.items()}
        for label, mode in {name: None, **own}.items():
            if mode is not None and stack_missing_reason(name, mode) is not None:
                continue
            request = {"framework": name, "mode": mode}
            end = run_child(DEVICES_WORKER, "devices", request, limits)
            result = end.result if end.ok and end.result is not None else {}
            if "support" in result:
                entries = result["support"]
                probed[label] = [
                    DeviceSupport(e["kind"], tuple(e["devices"]), e["reason"]) for e in entries
                ]
            else:
                probed[label] = result.get("missing") or end.detail[-300:]
    return probed


def blas_libraries() -> dict[str, list[dict[str, Any]] | str]:
    """Per installed framework, the BLAS libraries its worker process loads (or why not)."""
    probed: dict[str, list[dict[str, Any]] | str] = {}
    limits = Limits(BLAS_PROBE_TIMEOUT_S, default_memory_budget())
    for name, info in FRAMEWORKS.items():
        # A layer over another framework (Keras) loads that framework's libraries.
        if info.runs_on is not None or missing_reason(name) is not None:
            continue
        end = run_child(BLAS_WORKER, "blas", {"framework": name}, limits)
        ok = end.ok and end.result is not None
        probed[name] = end.result["libraries"] if ok and end.result else end.detail[-300:]
    return probed
