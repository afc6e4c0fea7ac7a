"""Statistics of timing samples: pure functions of sorted or unsorted floats, no framework.

The confidence interval of the median is distribution-free: it takes order statistics whose
ranks come from the binomial(n, 1/2) distribution, so it is valid for the skewed, multimodal
timings real machines produce, where a normal interval around the mean is not.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Below this many samples no 95 % interval of the median exists (0.5**5 * 2 > 0.05).
MIN_SAMPLES_FOR_CI = 6


@dataclass(frozen=True)
class Summary:
    median: float
    ci95_low: float
    ci95_high: float
    iqr: float
    mad: float
    min: float
    mean: float
    std: float
    count: int

    @property
    def ci_half_width_rel(self) -> float:
        """Half the width of the 95 % interval, relative to the median (inf when unknown)."""
        if self.median <= 0 or math.isinf(self.ci95_low) or math.isinf(self.ci95_high):
            return math.inf
        return (self.ci95_high - self.ci95_low) / 2 / self.median


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (NumPy's default method) of already sorted values."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def _binomial_pmf(i: int, n: int) -> float:
    """P(X = i) for X ~ Binomial(n, 1/2), in log space so that large n stays finite."""
    log_choose = math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
    return math.exp(log_choose + n * math.log(0.5))


def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) with P(x_(lo) <= median <= x_(hi)) >= confidence, or None."""
    if n < MIN_SAMPLES_FOR_CI:
        return None
    tail = (1.0 - confidence) / 2
    # k is the largest rank whose lower tail P(X <= k) stays within alpha/2.
    cumulative, k = 0.0, -1
    while cumulative + _binomial_pmf(k + 1, n) <= tail:
        k += 1
        cumulative += _binomial_pmf(k, n)
    if k < 0:
        return None
    return k, n - 1 - k


def median_ci(sorted_values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median; (-inf, inf) when too few values."""
    ranks = median_ci_ranks(len(sorted_values), confidence)
    if ranks is None:
        return (-math.inf, math.inf)
    low, high = ranks
    return sorted_values[low], sorted_values[high]


def summarize(values: Sequence[float]) -> Summary:
    """Median, its 95 % interval, spread and location of ``values`` (at least one)."""
    if not values:
        raise ValueError("summarize needs at least one value")
    ordered = sorted(values)
    median = statistics.median(ordered)
    low, high = median_ci(ordered)
    return Summary(
        median=median,
        ci95_low=low,
        ci95_high=high,
        iqr=quantile(ordered, 0.75) - quantile(ordered, 0.25),
        mad=statistics.median(abs(v - median) for v in ordered),
        min=ordered[0],
        mean=statistics.fmean(ordered),
        std=statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        count=len(ordered),
    )
