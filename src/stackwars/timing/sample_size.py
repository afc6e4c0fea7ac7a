"""How many fresh workers a side would likely decide a comparison or a claim, from the
measured spread between workers, with 80 % power.

A comparison's number is found by simulating the test actually used (``decided_share``:
Yuen's trimmed t of ``timing/compare.py``, its significance and its equivalence interval,
with the run-to-run drift drawn as well as added): the usual sample-size rule, (quantile of
the test + quantile of the power) x standard error within the margin, ignores the trimming
and that "decided" is either of two one-sided questions, and reached its promised 80 % in
39-78 % of simulated comparisons (issue 34). A claim's (``workers_to_separate``) keeps the rule.

SciPy is imported inside the functions (analysis of stored results only)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from stackwars.timing.sequential import PLANNING_POWER, trimmed_t

MIN_WORKERS = 3  # the fewest fresh workers a side a verdict accepts (timing/compare.py)
MOST_WORKERS_ESTIMATED = 200  # past this, "undecided" says more workers are not a plan
PLANNING_POWER_Z = 0.8416  # the normal quantile of PLANNING_POWER, 80 %: "likely"
# Comparisons simulated per size tried: the share decided is then known to about +-1.3 %, and
# the seed fixed, so the answer is the same every time and nearly monotone in the size.
PLANNING_SESSIONS = 1000
PLANNING_SEED = 25


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    """Student's t quantile, kept: a gate asks the same few (level, workers) pairs for every
    cell and look, and each of scipy's calls costs tens of microseconds."""
    from scipy.stats import t as student

    return float(student.ppf(q, df))


@dataclass(frozen=True)
class Measured:
    """What a comparison measured that sets the workers it needs: the log difference, the
    spread between workers, and the run-to-run drift with the degrees of freedom it was
    estimated with (infinite: given as known, which adds variance but no uncertainty)."""

    difference: float
    between_sd: float
    run_drift: float = 0.0
    run_drift_df: float = math.inf


def workers_needed(measured: Measured, threshold: float, alpha: float) -> int | None:
    """Workers per side that would likely decide a comparison whose true log difference and
    between-worker spread are the measured ones: the fewest with which the test decides (its
    interval excludes 1, or its ``1 - 2 alpha`` interval lies inside the threshold) in at
    least 80 % of simulated comparisons. None when no number up to
    ``MOST_WORKERS_ESTIMATED`` would, e.g. because the run-to-run drift alone is wider."""

    def decides(n: int) -> bool:
        share = decided_share(n, measured, threshold=threshold, alpha=alpha)
        return share >= PLANNING_POWER

    return _fewest(decides, _normal_guess(measured, threshold, alpha))


def _normal_guess(measured: Measured, threshold: float, alpha: float) -> int:
    """Where the search starts: the normal sample-size rule (the simulation corrects it; a
    start near the answer keeps the simulated sizes small)."""
    from scipy.stats import norm

    difference = abs(measured.difference)
    to_significance = difference / (norm.isf(alpha / 2) + PLANNING_POWER_Z)
    to_equivalence = (math.log1p(threshold) - difference) / (norm.isf(alpha) + PLANNING_POWER_Z)
    room = max(to_significance, to_equivalence) ** 2 - 2 * measured.run_drift**2
    if room <= 0:
        return MOST_WORKERS_ESTIMATED
    return min(MOST_WORKERS_ESTIMATED, math.ceil(2 * measured.between_sd**2 / room))


def decided_share(n: int, measured: Measured, *, threshold: float, alpha: float) -> float:
    """The share of simulated comparisons of ``n`` workers a side (log-normal workers around
    a true log difference, each side moved by its own run effect of sd ``run_drift``) that the
    trimmed t of ``timing/compare.py`` decides, with its degrees of freedom: the workers' and,
    by Satterthwaite's rule, the drift's (``compare.log_difference``)."""
    import numpy as np
    from scipy.stats import t as student

    rng = np.random.default_rng(PLANNING_SEED)
    shape = (PLANNING_SESSIONS, n)
    drift_sd, between_sd = measured.run_drift, measured.between_sd
    runs = rng.normal(0.0, drift_sd, (2, PLANNING_SESSIONS, 1)) if drift_sd else np.zeros(2)
    base = rng.normal(0.0, between_sd, shape) + runs[0]
    cand = rng.normal(measured.difference, between_sd, shape) + runs[1]
    mean_b, se_b, df_b = trimmed_t(base)
    mean_c, se_c, df_c = trimmed_t(cand)
    observed = mean_c - mean_b
    workers, drift = se_b**2 + se_c**2, 2 * drift_sd**2
    se = np.sqrt(workers + drift)
    # Satterthwaite's rule over both parts, as compare's log_difference (a known drift has
    # infinite degrees of freedom: it adds variance, not uncertainty).
    df = (workers + drift) ** 2 / (workers**2 / (df_b + df_c) + drift**2 / measured.run_drift_df)
    significant = observed / se > student.isf(alpha / 2, df)
    significant |= observed / se < -student.isf(alpha / 2, df)
    half = student.isf(alpha, df) * se
    margin = math.log1p(threshold)
    inside = (observed + half <= margin) & (observed - half >= -margin)
    return float(np.mean(significant | inside))


def workers_to_separate(distance: float, between_sd: float, alpha: float) -> int | None:
    """Workers per side whose 1 - alpha interval of a log ratio would, with 80 % probability,
    keep clear of a bound ``distance`` (in logs) from the measured ratio (a claim's verdict);
    None past ``MOST_WORKERS_ESTIMATED``."""

    def decides(n: int) -> bool:
        se = math.sqrt(2 * between_sd**2 / n)
        return (t_quantile(1 - alpha / 2, 2 * n - 2) + PLANNING_POWER_Z) * se < distance

    return _fewest(decides)


def _fewest(decides: Callable[[int], bool], start: int = MOST_WORKERS_ESTIMATED) -> int | None:
    """The fewest workers in [MIN_WORKERS, MOST_WORKERS_ESTIMATED] that decide: doubling from
    ``start`` until some number does, then bisection (more workers never decide less: the
    standard error and the t quantile both fall)."""
    high = max(MIN_WORKERS, min(start, MOST_WORKERS_ESTIMATED))
    while not decides(high):
        if high >= MOST_WORKERS_ESTIMATED:
            return None
        high = min(MOST_WORKERS_ESTIMATED, 2 * high)
    low = MIN_WORKERS
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if decides(middle) else (middle + 1, high)
    return low
