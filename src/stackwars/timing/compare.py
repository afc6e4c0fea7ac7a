"""Deciding whether two measurements differ: ratio of medians, bootstrap interval, rank test.

A comparison is between a baseline and a candidate, each given as the per-call samples of one
or more workers (``list[list[float]]``: workers, then steady blocks). The ratio is
``median(candidate) / median(baseline)`` of the pooled samples: above 1 the candidate is slower.

* The 95 % interval of the ratio is a hierarchical bootstrap: resample workers with
  replacement, then blocks within each chosen worker, so that the variation between fresh
  processes (often larger than within one) is part of the interval.
* The rank test is Mann-Whitney U (normal approximation with tie correction, two-sided) on the
  pooled blocks.
* The verdict calls a difference only when it is significant (the interval excludes 1 and the
  rank test's p < alpha) *and* larger than a practical threshold (5 % by default).

NumPy is imported inside the functions: this module is analysis of stored results and runs
only in commands that start no worker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Samples = Sequence[Sequence[float]]  # workers -> per-call block times

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class Comparison:
    ratio: float  # median(candidate) / median(baseline); above 1 is slower
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str  # "faster", "slower", "no clear difference"
    threshold: float

    def describe(self) -> str:
        change = (self.ratio - 1) * 100
        return (
            f"{self.verdict} ({change:+.1f} %, ratio {self.ratio:.3f} "
            f"[{self.ci_low:.3f}, {self.ci_high:.3f}], p={self.p_value:.2g})"
        )


def _pooled(samples: Samples) -> list[float]:
    return [value for worker in samples for value in worker]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def bootstrap_ratio_ci(
    baseline: Samples,
    candidate: Samples,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of median(candidate)/median(baseline), resampling workers then
    blocks within them."""
    import numpy as np

    rng = np.random.default_rng(seed)
    medians_b = _resampled_medians(rng, baseline, resamples)
    medians_c = _resampled_medians(rng, candidate, resamples)
    ratios = medians_c / medians_b
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_median_ci(
    samples: Samples,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of the pooled median, resampling workers then blocks."""
    import numpy as np

    medians = _resampled_medians(np.random.default_rng(seed), samples, resamples)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(low), float(high)


def _resampled_medians(rng: Any, samples: Samples, resamples: int) -> Any:
    import numpy as np

    workers = [np.asarray(worker, dtype=np.float64) for worker in samples if len(worker)]
    if not workers:
        raise ValueError("no samples to compare")
    medians = np.empty(resamples)
    for i in range(resamples):
        chosen = rng.integers(0, len(workers), size=len(workers))
        pooled = np.concatenate(
            [workers[w][rng.integers(0, len(workers[w]), size=len(workers[w]))] for w in chosen]
        )
        medians[i] = np.median(pooled)
    return medians


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected)."""
    import numpy as np

    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("the rank test needs samples on both sides")
    combined = np.concatenate([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)])
    ranks = _average_ranks(combined)
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    _, counts = np.unique(combined, return_counts=True)
    n = n1 + n2
    tie_term = float((counts**3 - counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    variance = n1 * n2 / 12 * ((n + 1) - tie_term)
    if variance <= 0:
        return 1.0  # every value is the same: no evidence of a difference
    z = (abs(u1 - mean) - 0.5) / math.sqrt(variance)  # with continuity correction
    return math.erfc(max(z, 0.0) / math.sqrt(2))


def _average_ranks(values: Any) -> Any:
    import numpy as np

    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    # Tied values share the average of their ranks.
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]


def verdict(
    ratio: float, ci: tuple[float, float], p_value: float, threshold: float, alpha: float
) -> str:
    significant = p_value < alpha and not ci[0] <= 1.0 <= ci[1]
    if not significant or abs(ratio - 1.0) <= threshold:
        return "no clear difference"
    return "slower" if ratio > 1 else "faster"


def compare(
    baseline: Samples,
    candidate: Samples,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
) -> Comparison:
    pooled_b, pooled_c = _pooled(baseline), _pooled(candidate)
    ratio = _median(pooled_c) / _median(pooled_b)
    ci = bootstrap_ratio_ci(baseline, candidate, seed=seed)
    p_value = mann_whitney_p(pooled_b, pooled_c)
    return Comparison(
        ratio=ratio,
        ci_low=ci[0],
        ci_high=ci[1],
        p_value=p_value,
        verdict=verdict(ratio, ci, p_value, threshold, alpha),
        threshold=threshold,
    )


def geometric_mean(ratios: Sequence[float]) -> float:
    if not ratios:
        raise ValueError("geometric mean of no ratios")
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))
