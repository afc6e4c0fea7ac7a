"""Deciding whether two measurements differ: ratio of medians, bootstrap interval, a test.

A comparison is between a baseline and a candidate, each given as the per-call samples of one
or more workers (``list[list[float]]``: workers, then steady blocks). Above 1 the ratio says
the candidate is slower.

The unit of evidence is the worker (a fresh process): times move between processes far more
than within one (13 % to several hundred % here, docs/results.md), so thousands of blocks from
one process say how precisely that process was measured, not whether the code changed.

* With at least ``MIN_WORKERS`` workers per side, the ratio is that of the medians of the
  per-worker medians, and its 95 % interval is Student's t interval of the difference of the
  mean logarithms of the per-worker medians (the p-value is that t-test's). The verdict calls a
  difference only when the whole interval lies beyond the practical threshold (above
  1 + threshold, or below 1 / (1 + threshold)). A percentile bootstrap over 3 workers is too
  narrow: "bootstrap interval excludes 1, Welch p < alpha and the point beyond the threshold"
  cried wolf in 6.5 % of simulated identical pairs (tests/test_compare.py), this rule in 2-4 %.
* With fewer, the verdict is ``inconclusive`` and says why, unless the caller accepts
  within-process statistics (``within_process=True``): then the ratio is that of the pooled
  medians, the interval a hierarchical bootstrap (resample workers, then blocks within
  each), and the test Mann-Whitney U on the pooled blocks
  (scipy, normal approximation with tie and continuity corrections, two-sided).
* Within-process, the verdict calls a difference only when it is significant (the interval
  excludes 1 and p < alpha) *and* larger than a practical threshold (5 % by default).

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
MIN_WORKERS = 3
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Comparison:
    ratio: float  # median(candidate) / median(baseline); above 1 is slower
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str  # "faster", "slower", "no clear difference", "inconclusive"
    threshold: float
    unit: str = "worker"  # what the interval and the test count: "worker" or "block"
    workers: tuple[int, int] = (0, 0)  # baseline, candidate
    reason: str = ""  # why the verdict is inconclusive

    def describe(self) -> str:
        change = (self.ratio - 1) * 100
        evidence = (
            f"ratio {self.ratio:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}], "
            f"p={self.p_value:.2g}, {self.workers[0]}+{self.workers[1]} workers"
        )
        if self.unit == "block":
            evidence += ", within-process"
        text = f"{self.verdict} ({change:+.1f} %, {evidence})"
        return f"{text}: {self.reason}" if self.reason else text


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
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected,
    with continuity correction); 1.0 when every value is the same."""
    from scipy.stats import mannwhitneyu

    if len(a) == 0 or len(b) == 0:
        raise ValueError("the rank test needs samples on both sides")
    if len(set(a) | set(b)) == 1:
        return 1.0  # every value is the same: no evidence of a difference
    result = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    return float(result.pvalue)


def worker_interval(
    baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """(low, high, p): Student's t interval of candidate / baseline from per-worker medians
    (on their logarithms, pooled variance), and the two-sided p-value of the same test."""
    from scipy.stats import t as student

    log_b, log_c = [math.log(x) for x in baseline], [math.log(x) for x in candidate]
    n_b, n_c = len(log_b), len(log_c)
    df = n_b + n_c - 2
    mean_b, mean_c = sum(log_b) / n_b, sum(log_c) / n_c
    squares = sum((x - mean_b) ** 2 for x in log_b) + sum((x - mean_c) ** 2 for x in log_c)
    se = math.sqrt(squares / df * (1 / n_b + 1 / n_c))
    difference = mean_c - mean_b
    if se == 0:
        ratio = math.exp(difference)
        return ratio, ratio, 1.0 if difference == 0 else 0.0
    half = float(student.ppf(0.5 + confidence / 2, df)) * se
    p_value = 2 * float(student.sf(abs(difference) / se, df))
    return math.exp(difference - half), math.exp(difference + half), p_value


def beyond_threshold(ci: tuple[float, float], threshold: float) -> str:
    """The verdict when a whole interval must lie beyond the threshold."""
    if ci[0] > 1 + threshold:
        return "slower"
    if ci[1] < 1 / (1 + threshold):
        return "faster"
    return "no clear difference"


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
    within_process: bool = False,
) -> Comparison:
    """Compare two sets of workers (see the module docstring for the rules)."""
    workers = (sum(1 for w in baseline if w), sum(1 for w in candidate if w))
    if within_process:
        ci = bootstrap_ratio_ci(baseline, candidate, seed=seed)
        pooled_b, pooled_c = _pooled(baseline), _pooled(candidate)
        ratio = _median(pooled_c) / _median(pooled_b)
        p_value = mann_whitney_p(pooled_b, pooled_c)
        decided = verdict(ratio, ci, p_value, threshold, alpha)
        return Comparison(ratio, ci[0], ci[1], p_value, decided, threshold, "block", workers)
    medians_b = [_median(w) for w in baseline if w]
    medians_c = [_median(w) for w in candidate if w]
    ratio = _median(medians_c) / _median(medians_b)
    if min(workers) < MIN_WORKERS:
        ci = bootstrap_ratio_ci(baseline, candidate, seed=seed)
        why = (
            f"{workers[0]} and {workers[1]} worker(s); at least {MIN_WORKERS} fresh workers per "
            "side are needed to tell a change from the variation between processes (run both "
            f"with --repeat {MIN_WORKERS}, or accept within-process statistics with "
            "--within-process)"
        )
        return Comparison(
            ratio, ci[0], ci[1], math.nan, INCONCLUSIVE, threshold, "worker", workers, why
        )
    low, high, p_value = worker_interval(medians_b, medians_c, 1 - alpha)
    decided = beyond_threshold((low, high), threshold)
    return Comparison(ratio, low, high, p_value, decided, threshold, "worker", workers)


def geometric_mean(ratios: Sequence[float]) -> float:
    if not ratios:
        raise ValueError("geometric mean of no ratios")
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))
