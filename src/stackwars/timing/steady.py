"""Steady-state detection over individually timed runs.

Warm-up runs are timed one by one (call + synchronise). The series is stationary once the
median of the last ``window`` runs agrees, within ``tolerance``, with the median of the
``window`` runs before them. How many runs it took to get there is then counted backwards,
so that a single late spike (noise) is not mistaken for warm-up, and two slow runs at the
start (a compile, then a lazily built second graph) count as two.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def is_stationary(times: Sequence[float], window: int, tolerance: float) -> bool:
    """True when the last two windows of runs have medians within ``tolerance`` of each other."""
    if window < 1 or len(times) < 2 * window:
        return False
    recent = statistics.median(times[-window:])
    previous = statistics.median(times[-2 * window : -window])
    return abs(recent - previous) <= tolerance * min(recent, previous)


def rolling_median3(times: Sequence[float]) -> list[float]:
    """Centred median of three (of two at the ends), which ignores isolated spikes."""
    smoothed = []
    for i in range(len(times)):
        neighbourhood = times[max(0, i - 1) : i + 2]
        smoothed.append(statistics.median(neighbourhood))
    return smoothed


def runs_to_steady(times: Sequence[float], reference: float, tolerance: float) -> int:
    """How many leading runs were slower than ``reference * (1 + tolerance)``.

    It is the index of the first run from which the smoothed series stays within the band
    for good, and that run itself is within the band.
    """
    band = reference * (1.0 + tolerance)
    smoothed = rolling_median3(times)
    settled = 0
    for i, value in enumerate(smoothed):
        if value > band or (times[i] > band and i == settled):
            settled = i + 1
    return min(settled, len(times))
