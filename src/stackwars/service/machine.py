"""The machine a run measures on, as the service layer sees it: the settings that make every
number of the run less stable (with their fix), and its stored peak when that peak still
describes it. Part of ``api.py``, which re-exports both; nothing printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackwars.results.peak import Peak, load_peak, stale_reason


def machine_warnings(machine: Mapping[str, Any]) -> list[str]:
    """Machine settings that make every number of the run less stable, with the fix."""
    warnings = []
    governor = machine.get("governor")
    if governor not in (None, "performance"):
        warnings.append(
            f"the CPU frequency governor is {governor!r}: clock speed follows load, so times "
            "vary; for stable numbers set it to 'performance' (cpupower frequency-set -g "
            "performance)"
        )
    warnings.extend(_environment_warnings(machine))
    load = machine.get("load_average")
    if load and load[0] > 0.5:
        warnings.append(
            f"the 1-minute load average is {load[0]:.2f} before the run started: other work "
            "shares the machine (each cell reports what it saw as background_cores)"
        )
    return warnings


def _environment_warnings(machine: Mapping[str, Any]) -> list[str]:
    warnings = []
    kernel_choice = {
        name: value
        for name, value in machine.get("blas_env", {}).items()
        if name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") and value is not None
    }
    if kernel_choice:
        settings = ", ".join(f"{name}={value}" for name, value in kernel_choice.items())
        warnings.append(
            f"{settings} is set: OpenBLAS (numpy's BLAS, and torch's on CPU) runs the kernels "
            "of that core type instead of the ones it would pick for this CPU, which can halve "
            "NumPy's GEMM; each cell records the kernel it ran (settings.blas). To measure the "
            "library's own choice, unset both for this command"
        )
    inherited = machine.get("influential_environment", {})
    if inherited:
        settings = ", ".join(f"{name}={value}" for name, value in inherited.items())
        warnings.append(
            f"your environment sets {settings}: every stack that reads them and does not pin "
            "them runs with them (each cell records them in settings.inherited_environment)"
        )
    return warnings


def usable_peak(machine: Mapping[str, Any], device: str = "cpu") -> tuple[Peak | None, str]:
    """The stored peak of ``device`` when it describes this machine, else None and why (empty
    when there is none at all)."""
    peak = load_peak(device=device)
    if peak is None:
        return None, ""
    stale = stale_reason(peak, dict(machine))
    return (None, stale) if stale else (peak, "")
