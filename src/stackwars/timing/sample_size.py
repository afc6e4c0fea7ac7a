"""How many fresh workers a side would likely decide a comparison or a claim, from the
measured spread between workers: the usual sample-size rule, (quantile of the test + quantile
of the power) x standard error within the margin, with 80 % power.

SciPy is imported inside the functions (analysis of stored results only)."""

from __future__ import annotations

import math
from collections.abc import Callable

MIN_WORKERS = 3  # the fewest fresh workers a side a verdict accepts (timing/compare.py)
MOST_WORKERS_ESTIMATED = 200  # past this, "undecided" says more workers are not a plan
PLANNING_POWER_Z = 0.8416  # the normal quantile of 80 %: "likely"


def t_quantile(q: float, df: float) -> float:
    from scipy.stats import t as student

    return float(student.ppf(q, df))


def workers_needed(
    difference: float, between_sd: float, run_drift: float, threshold: float, alpha: float
) -> int | None:
    """Workers per side that would likely decide a comparison whose true log difference and
    between-worker spread are the measured ones: the fewest with which the test would show the
    change (its interval excluding 1) or the equivalence (its interval inside the threshold)
    with 80 % probability (the usual sample-size rule: quantile of the test plus that of the
    power, times the standard error, within the margin). None when no number up to
    ``MOST_WORKERS_ESTIMATED`` would, e.g. because the run-to-run drift alone is wider."""
    to_significance = abs(difference)
    to_equivalence = math.log1p(threshold) - abs(difference)

    def decides(n: int) -> bool:
        se = math.sqrt(2 * between_sd**2 / n + 2 * run_drift**2)
        if (t_quantile(1 - alpha / 2, 2 * n - 2) + PLANNING_POWER_Z) * se < to_significance:
            return True
        return (t_quantile(1 - alpha, 2 * n - 2) + PLANNING_POWER_Z) * se < to_equivalence

    return _fewest(decides)


def workers_to_separate(distance: float, between_sd: float, alpha: float) -> int | None:
    """Workers per side whose 1 - alpha interval of a log ratio would, with 80 % probability,
    keep clear of a bound ``distance`` (in logs) from the measured ratio (a claim's verdict);
    None past ``MOST_WORKERS_ESTIMATED``."""

    def decides(n: int) -> bool:
        se = math.sqrt(2 * between_sd**2 / n)
        return (t_quantile(1 - alpha / 2, 2 * n - 2) + PLANNING_POWER_Z) * se < distance

    return _fewest(decides)


def _fewest(decides: Callable[[int], bool]) -> int | None:
    """The fewest workers in [MIN_WORKERS, MOST_WORKERS_ESTIMATED] that decide, by bisection
    (more workers never decide less: the standard error and the t quantile both fall)."""
    if not decides(MOST_WORKERS_ESTIMATED):
        return None
    low, high = MIN_WORKERS, MOST_WORKERS_ESTIMATED
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if decides(middle) else (middle + 1, high)
    return low
