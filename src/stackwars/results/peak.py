"""This machine's practical limits as data: GEMM FLOP/s per dtype and STREAM triad bandwidth.

Measured once (``instruments/peak/task.py``), stored in a JSON file (``save_peak``/
``load_peak``) and used by ``results/roofline.py`` to place every cell under the roofline. A
stored peak belongs to one machine: ``stale_reason`` says when it was measured elsewhere and
must not be used.

History of PEAK_VERSION:

* 1 (2026-11-22): GEMM FLOP/s per dtype, triad bytes/s, every library's details, machine.
  Added since, without a version change: (2026-11-25) ``device``, what the libraries ran on
  (``cpu`` in files without it); each device's peak in a file of its own.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackwars.errors import StackwarsError
from stackwars.results.jsonio import dump, write_atomically

PEAK_VERSION = 1
# What a peak records about its machine, and what must be equal for it to be used there.
MACHINE_KEYS = ("cpu_model", "arch", "logical_cores", "physical_cores", "usable_cores", "cpu_flags")
MATCH_KEYS = ("cpu_model", "logical_cores", "usable_cores")
REMEASURE = "measure it again with 'stackwars env --peak'"


class PeakError(StackwarsError):
    """The peak could not be measured, or a stored peak cannot be read."""


@dataclass
class Peak:
    """Best GEMM FLOP/s by dtype and best STREAM triad bytes/s, with how they were measured."""

    flops_per_s: dict[str, float]  # "float32", "float64"
    bandwidth_bytes_per_s: float
    details: dict[str, Any]  # every library's measurements and errors, and which won
    measured: str  # ISO 8601, UTC
    machine: dict[str, Any]  # MACHINE_KEYS of results.metadata.machine_info()
    version: int = PEAK_VERSION
    device: str = "cpu"  # what the GEMM and copy kernels ran on

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Peak:
        if data.get("version") != PEAK_VERSION:
            raise PeakError(
                f"stored peak has version {data.get('version')!r}, this stackwars reads "
                f"version {PEAK_VERSION}; {REMEASURE}"
            )
        fields = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in fields})


def default_peak_path(device: str = "cpu") -> Path:
    """``$STACKWARS_PEAK``, else ``stackwars/peak.json`` in the XDG cache folder: the cpu's
    peak; another device's beside it (``peak-gpu.json``, ``peak-gpu-1.json``)."""
    explicit = os.environ.get("STACKWARS_PEAK")
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    path = Path(explicit) if explicit else Path(cache) / "stackwars" / "peak.json"
    if device == "cpu":
        return path
    return path.with_name(f"{path.stem}-{device.replace(':', '-')}{path.suffix}")


def save_peak(peak: Peak, path: Path | None = None) -> Path:
    """Write ``peak`` atomically (to the default path when none is given); returns the path."""
    path = path or default_peak_path(peak.device)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, dump(peak.to_dict()))
    return path


def load_peak(path: Path | None = None, device: str = "cpu") -> Peak | None:
    """The stored peak of ``device``; None when none was measured; PeakError when the file
    is unusable."""
    path = path or default_peak_path(device)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return Peak.from_dict(json.loads(text))
    except (ValueError, TypeError, AttributeError) as exc:
        raise PeakError(f"{path} is not a stackwars peak file ({exc}); {REMEASURE}") from exc


def stale_reason(peak: Peak, machine: dict[str, Any]) -> str | None:
    """Why ``peak`` does not describe ``machine`` (a machine_info() dict); None when it does."""
    differences = [
        f"{key} {peak.machine.get(key)!r} then, {machine.get(key)!r} now"
        for key in MATCH_KEYS
        if peak.machine.get(key) != machine.get(key)
    ]
    if not differences:
        return None
    return (
        f"the stored peak was measured on another machine ({'; '.join(differences)}); {REMEASURE}"
    )


def peak_matches_machine(peak: Peak, machine: dict[str, Any]) -> bool:
    return stale_reason(peak, machine) is None
