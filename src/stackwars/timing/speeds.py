"""Cells whose processes land at one of two speeds (issue 54, item 4): split by their own
times, judged within their speeds, and the share of slow processes judged apart.

Some cells run at one of two speeds in a fresh process (numpy's two-thread GEMM at 1.35 or
2.0 ms; jax:jit SELU 2000² with 61-69 or 3,380-3,910 page faults a call), which process is
which drawn by the machine. A round's paired log ratio of such a cell is near 0 when both
workers land at one speed and near +-log(ratio) when they do not, so its spread is the speeds'
and no session of a CI job's rounds can show the cell within 10 %. Split, a worker's log time
is its speed's level plus its deviation within that speed; the round's log ratio is the sum of

* the **within-speed** ratio, ``deviation(candidate) - deviation(baseline)``: what a change to
  the code does to either speed, with the spread of one speed (2 % where the speeds are 1.9x
  apart), and
* the **share** ratio, ``level(candidate) - level(baseline)`` (0, or +-log(ratio)): its mean
  is the time a change in the share of slow processes adds, a mean over three values, whose
  trimmed mean is not the mean (``Paired``'s ``trim`` 0).

Where the speeds part (``split``): the pooled log times of both sides, sorted, are cut at
their largest gap that leaves each speed at least ``SMALLEST_SHARE`` of the workers
(``FEWEST_PER_SPEED`` at least); the cut is a split when the gap is more than
``SPLIT_DEVIATIONS`` robust deviations (1.4826 x the median absolute deviation) of a worker
within its speed: the wider speed's in the pooled times, or a deviation measured before (an
A/A session's, which a change cannot widen: a candidate 20 % slower in both speeds widens
each pooled speed by its shift). Each speed's level is the median of its workers. With the
speeds an A/A session measured (``Known``), the session's must also be at least half as far
apart (in log time) as those: a session whose processes all landed at one speed, the
candidate 14 % slower, parts at the sides instead (fresh sessions, 2026-11-30: 1.14x apart
where the speeds are 1.49x), which is a change of the code, not a second speed.

Validity: the split, the levels and so both ratios are functions of the pooled times, which
swapping the two workers of any rounds leaves as they are; so under no change (the workers of
a round exchangeable, their order drawn) each ratio stays as likely negative as positive, and
the joint sign flips of ``timing/maxt.py`` stay exact, however the split fell.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

SPLIT_DEVIATIONS = 4.0
SMALLEST_SHARE = 0.1
FEWEST_PER_SPEED = 3
ROBUST_SD = 1.4826  # a normal spread's standard deviation over its median absolute deviation


@dataclass(frozen=True)
class Speeds:
    """A cell's two speeds: the log time that parts them, and each one's level (the median
    log time of its workers) and share of the workers."""

    boundary: float
    fast: float
    slow: float
    slow_share: float
    deviation: float  # a worker's robust deviation of log time within its speed

    @property
    def ratio(self) -> float:
        """The slow speed's time over the fast one's."""
        return math.exp(self.slow - self.fast)

    def level(self, log_time: float) -> float:
        return self.slow if log_time > self.boundary else self.fast

    def describe(self) -> str:
        return (
            f"two speeds {math.exp(self.slow - self.fast):.2f}x apart, {self.slow_share:.0%} "
            f"of the workers slow"
        )


class Gap(NamedTuple):
    """The widest gap of a cell's sorted log times that leaves each side a speed's share."""

    at: int  # the workers below it
    size: float  # in log time
    deviation: float  # the wider side's robust deviation of a worker's log time


def widest_gap(log_times: Sequence[float]) -> Gap | None:
    """Where ``log_times`` would part (module docstring); None when too few for two speeds."""
    return _widest_gap(sorted(log_times))


def _widest_gap(ordered: Sequence[float]) -> Gap | None:
    n = len(ordered)
    least = max(FEWEST_PER_SPEED, math.ceil(SMALLEST_SHARE * n))
    if n < 2 * least:
        return None
    size, at = max((ordered[k] - ordered[k - 1], k) for k in range(least, n - least + 1))
    return Gap(at, size, max(_deviation(ordered[:at]), _deviation(ordered[at:])))


@dataclass(frozen=True)
class Known:
    """What an A/A session measured of a cell's two speeds."""

    deviation: float  # a worker's robust deviation of log time within its speed
    ratio: float  # the slow speed's time over the fast one's
    slow_share: float | None = None  # of its workers (the share's history, shown beside)


def split(log_times: Sequence[float], known: Known | None = None) -> Speeds | None:
    """The two speeds of ``log_times`` (module docstring), judged with the deviation and
    ratio of ``known`` (None: the pooled speeds' own deviation); None when they do not part."""
    ordered = sorted(log_times)
    gap = _widest_gap(ordered)
    if gap is None:
        return None
    within = gap.deviation if known is None else known.deviation
    if gap.size <= SPLIT_DEVIATIONS * within:
        return None
    fast, slow = ordered[: gap.at], ordered[gap.at :]
    speeds = Speeds((fast[-1] + slow[0]) / 2, statistics.median(fast), statistics.median(slow),
                    len(slow) / len(ordered), within)  # fmt: skip
    if known is not None and 2 * math.log(speeds.ratio) < math.log(known.ratio):
        return None
    return speeds


def _deviation(values: Sequence[float]) -> float:
    centre = statistics.median(values)
    return ROBUST_SD * statistics.median(abs(x - centre) for x in values)


def within_speed(speeds: Speeds, times: Sequence[float]) -> list[float]:
    """Each time over its speed's level: what is left of it within its speed."""
    return [math.exp(math.log(t) - speeds.level(math.log(t))) for t in times]


def speed_levels(speeds: Speeds, times: Sequence[float]) -> list[float]:
    """Each time's speed level (a time): what its speed alone makes it."""
    return [math.exp(speeds.level(math.log(t))) for t in times]
