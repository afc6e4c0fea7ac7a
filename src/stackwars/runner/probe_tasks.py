"""The parent half of the framework probe of ``stackwars env``: per installed framework, the
devices it sees and the BLAS libraries it loads, asked in one fresh worker
(runner/devices_worker.py), and per mode with a runtime of its own (torch:xla) the devices in
one more. The workers are independent questions, not measurements: they run side by side."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from stackwars.config import default_memory_budget
from stackwars.frameworks import FRAMEWORKS, missing_reason, stack_missing_reason
from stackwars.frameworks.base import DeviceSupport
from stackwars.runner.child import Limits, run_child

DEVICES_WORKER = "stackwars.runner.devices_worker"
# Asking for a TPU where there is none takes TensorFlow seconds; a TPU VM's runtime, longer.
DEVICE_PROBE_TIMEOUT_S = 180.0

Libraries = dict[str, list[dict[str, Any]] | str]
Devices = dict[str, list[DeviceSupport] | str]


@dataclass(frozen=True)
class FrameworkProbes:
    """What the workers answered: per framework its BLAS libraries, per framework (and per
    mode with a runtime of its own, ``torch:xla``) its devices; a string where a worker could
    not answer, saying why."""

    libraries: Libraries
    devices: Devices


def probe_frameworks() -> FrameworkProbes:
    """Ask every installed framework, each in a fresh worker: as many side by side as there
    are cores (each spends most of its life importing its framework, one core's work), the
    memory budget shared among them."""
    questions = _questions()
    jobs = max(1, min(len(questions), os.cpu_count() or 1))
    limits = Limits(DEVICE_PROBE_TIMEOUT_S, default_memory_budget() // jobs)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        asked = (request for _, request in questions)
        ends = list(pool.map(lambda r: run_child(DEVICES_WORKER, "devices", r, limits), asked))
    libraries: Libraries = {}
    devices: Devices = {}
    for (label, request), end in zip(questions, ends, strict=True):
        result = end.result if end.ok and end.result is not None else {}
        why = result.get("missing") or end.detail[-300:]  # where the worker could not answer
        if request["libraries"]:
            libraries[label] = result.get("libraries", why)
        if "support" in result:
            devices[label] = [
                DeviceSupport(e["kind"], tuple(e["devices"]), e["reason"])
                for e in result["support"]
            ]
        else:
            devices[label] = why
    return FrameworkProbes(libraries, devices)


def _questions() -> list[tuple[str, dict[str, Any]]]:
    """(label, request) per worker: each framework with its libraries, then each mode with a
    runtime of its own. A layer over another framework (Keras) sees and loads that one's."""
    questions: list[tuple[str, dict[str, Any]]] = []
    for name, info in FRAMEWORKS.items():
        if info.runs_on is not None or missing_reason(name) is not None:
            continue
        questions.append((name, {"framework": name, "mode": None, "libraries": True}))
        for mode in info.mode_implementations:
            if stack_missing_reason(name, mode) is None:
                request = {"framework": name, "mode": mode, "libraries": False}
                questions.append((f"{name}:{mode}", request))
    return questions
