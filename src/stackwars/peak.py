"""This machine's practical limits: GEMM FLOP/s per dtype and STREAM triad bandwidth.

Measured once (``measure_peak``), stored in a JSON file (``save_peak``/``load_peak``) and used
by ``report/roofline.py`` to place every cell under the roofline. The parent imports no
framework: each installed library is measured in its own ``runner/peak_worker.py`` process and
the best number of any library is the peak, since the question a user asks is "could this
machine go faster", not "could this library". A stored peak belongs to one machine:
``stale_reason`` says when it was measured elsewhere and must not be used.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stackwars.errors import StackwarsError
from stackwars.frameworks import missing_reason
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.metadata import machine_info
from stackwars.runner.isolate import OUTPUT_TAIL_CHARS, kill_tree
from stackwars.runner.peak_worker import DTYPES, LIBRARIES, STREAM_ARRAYS, STREAM_ITEMSIZE

PEAK_VERSION = 1
# What a peak records about its machine, and what must be equal for it to be used there.
MACHINE_KEYS = ("cpu_model", "arch", "logical_cores", "physical_cores", "usable_cores", "cpu_flags")
MATCH_KEYS = ("cpu_model", "logical_cores", "usable_cores")
REMEASURE = "measure it again with 'stackwars env --peak'"
STREAM_COUNTING = (
    f"STREAM counting on float64 ({STREAM_ITEMSIZE}-byte) elements: each array read or "
    f"written once, so bytes per element are {STREAM_ITEMSIZE} x "
    + ", ".join(f"{count} ({name})" for name, count in STREAM_ARRAYS.items())
    + "; write-allocate reads of the destination are not counted; the peak is the best triad"
)


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


def default_peak_path() -> Path:
    """``$STACKWARS_PEAK``, else ``stackwars/peak.json`` in the XDG cache folder."""
    explicit = os.environ.get("STACKWARS_PEAK")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "stackwars" / "peak.json"


def save_peak(peak: Peak, path: Path | None = None) -> Path:
    """Write ``peak`` atomically (to the default path when none is given); returns the path."""
    path = path or default_peak_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, dump(peak.to_dict()))
    return path


def load_peak(path: Path | None = None) -> Peak | None:
    """The stored peak; None when none was measured; PeakError when the file is unusable."""
    path = path or default_peak_path()
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


def measure_peak(quick: bool = False, timeout_s: float = 600.0) -> Peak:
    """Measure every installed library in its own worker; the best numbers are the peak.

    ``quick`` uses tiny sizes (for tests: the numbers are then not a peak). ``timeout_s``
    bounds the whole measurement. A library that fails is recorded with its error in
    ``details``; PeakError when no library measured a dtype or the bandwidth, or on timeout.
    """
    machine = machine_info()
    deadline = time.monotonic() + timeout_s
    libraries: dict[str, Any] = {}
    for library in LIBRARIES:
        missing = missing_reason(library)
        libraries[library] = (
            {"error": missing} if missing else run_worker(library, quick, deadline, timeout_s)
        )
    flops, bandwidth, best = best_of(libraries)
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
    )


def run_worker(library: str, quick: bool, deadline: float, timeout_s: float) -> dict[str, Any]:
    """One peak worker's result; a worker that dies without one becomes ``{"error": ...}``."""
    with tempfile.TemporaryDirectory(prefix="stackwars-peak-") as scratch:
        folder = Path(scratch)
        result_path, output_path = folder / "result.json", folder / "output.txt"
        command = [sys.executable, "-m", "stackwars.runner.peak_worker", str(result_path), library]
        with output_path.open("wb") as output:
            popen = subprocess.Popen(
                [*command, *(["--quick"] if quick else [])],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=folder,
            )
            try:
                popen.wait(timeout=max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                kill_tree(popen)
                raise PeakError(
                    f"measuring the peak took longer than {timeout_s:g} s (stopped in "
                    f"{library}); allow more time\n{_tail(output_path)}"
                ) from None
            finally:
                # Whatever interrupted the parent, no worker is left running.
                if popen.poll() is None:
                    kill_tree(popen)
        if result_path.exists():
            return json.loads(result_path.read_text(encoding="utf-8"))
        return {
            "error": f"{library} peak worker exited with {popen.returncode}\n{_tail(output_path)}"
        }


def _tail(output_path: Path) -> str:
    return output_path.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL_CHARS:]


def best_of(libraries: dict[str, Any]) -> tuple[dict[str, float], float, dict[str, str]]:
    """Best GEMM FLOP/s per dtype, best triad bytes/s, and which library gave each."""
    flops: dict[str, float] = {}
    best: dict[str, str] = {}
    for dtype in DTYPES:
        rates = _rates(libraries, ("gemm", dtype, "flops_per_s"))
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


def peak_rows(peak: Peak) -> dict[str, str]:
    """The peak as labelled display strings (for ``stackwars env --peak``)."""
    best = peak.details.get("best", {})
    rows = {
        f"GEMM {dtype}": f"{rate / 1e9:.1f} GFLOP/s ({best.get(f'gemm_{dtype}', '?')})"
        for dtype, rate in peak.flops_per_s.items()
    }
    rows["bandwidth"] = (
        f"{peak.bandwidth_bytes_per_s / 1e9:.1f} GB/s STREAM triad ({best.get('bandwidth', '?')})"
    )
    rows["measured"] = peak.measured + (" (quick: not a peak)" if peak.details.get("quick") else "")
    return rows
