"""``stackwars env --peak``: the machine's peak measured (one peak worker per library,
``task.py``) and stored where the tables find it (``results/peak.py``)."""

from __future__ import annotations

from pathlib import Path

from stackwars.instruments.peak.task import measure_peak
from stackwars.results.peak import Peak, save_peak


def measure_and_store_peak(quick: bool = False, device: str = "cpu") -> tuple[Peak, Path]:
    """Measure this machine's peak on ``device`` (~4 minutes on the cpu; ``quick``: seconds,
    not a peak) and store it where tables find it."""
    peak = measure_peak(quick, device=device)
    return peak, save_peak(peak)
