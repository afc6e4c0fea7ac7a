"""Comparison statistics on synthetic samples with known answers."""

from __future__ import annotations

import math
import random

import pytest

from stackwars.timing.compare import (
    INCONCLUSIVE,
    Comparison,
    bootstrap_ratio_ci,
    compare,
    geometric_mean,
    mann_whitney_p,
    verdict,
)
from stackwars.timing.stats import median_ci


def noisy(center: float, n: int = 200, noise: float = 0.02, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, noise)) for _ in range(n)]


def test_mann_whitney_matches_the_normal_approximation_by_hand() -> None:
    # U = 0; mean 4.5; variance 3*3*7/12 = 5.25; z = (4.5 - 0.5) / sqrt(5.25).
    expected = math.erfc((4.0 / math.sqrt(5.25)) / math.sqrt(2))
    assert mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(expected)
    assert mann_whitney_p([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)


def test_all_ties_give_no_evidence() -> None:
    assert mann_whitney_p([2.0] * 5, [2.0] * 7) == 1.0


def within(
    baseline: list[list[float]], candidate: list[list[float]], threshold: float = 0.05
) -> Comparison:
    return compare(baseline, candidate, within_process=True, threshold=threshold)


def test_same_distribution_is_no_clear_difference() -> None:
    result = within([noisy(1e-3, seed=1)], [noisy(1e-3, seed=2)])
    assert result.verdict == "no clear difference"
    assert result.ci_low <= 1.0 <= result.ci_high
    assert result.ratio == pytest.approx(1.0, abs=0.01)


def test_twice_as_slow_is_slower_with_a_tight_interval() -> None:
    result = within([noisy(1e-3, seed=1)], [noisy(2e-3, seed=2)])
    assert result.verdict == "slower"
    assert result.ratio == pytest.approx(2.0, rel=0.01)
    assert 1.9 < result.ci_low < result.ratio < result.ci_high < 2.1
    assert result.p_value < 1e-10


def test_faster_is_faster() -> None:
    assert within([noisy(1e-3, seed=1)], [noisy(0.5e-3, seed=2)]).verdict == "faster"


def test_significant_but_small_changes_stay_below_the_threshold() -> None:
    base, cand = [noisy(1e-3, noise=0.001, seed=1)], [noisy(1.03e-3, noise=0.001, seed=2)]
    small = within(base, cand)
    assert small.p_value < 1e-10
    assert small.verdict == "no clear difference"
    assert within(base, cand, threshold=0.02).verdict == "slower"


def test_verdict_needs_both_tests() -> None:
    assert verdict(1.5, (1.4, 1.6), 0.2, 0.05, 0.05) == "no clear difference"  # p too large
    assert verdict(1.5, (0.9, 1.6), 0.001, 0.05, 0.05) == "no clear difference"  # CI holds 1
    assert verdict(1.5, (1.4, 1.6), 0.001, 0.05, 0.05) == "slower"


def test_workers_are_the_unit_of_the_bootstrap() -> None:
    # Three workers each, tight inside a worker but 20 % apart between workers: resampling
    # workers must widen the interval well beyond what pooling all blocks would give.
    levels = (0.9e-3, 1.0e-3, 1.1e-3)
    base = [noisy(level, noise=0.001, seed=i) for i, level in enumerate(levels)]
    cand = [noisy(level, noise=0.001, seed=10 + i) for i, level in enumerate(levels)]
    by_worker = bootstrap_ratio_ci(base, cand)
    pooled = bootstrap_ratio_ci([[v for w in base for v in w]], [[v for w in cand for v in w]])
    assert by_worker[1] - by_worker[0] > 3 * (pooled[1] - pooled[0])


def test_bootstrap_is_reproducible_under_a_seed() -> None:
    base, cand = [noisy(1e-3, seed=1)], [noisy(1.1e-3, seed=2)]
    assert bootstrap_ratio_ci(base, cand, seed=3) == bootstrap_ratio_ci(base, cand, seed=3)


def test_geometric_mean() -> None:
    assert geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    assert geometric_mean([4.0]) == pytest.approx(4.0)


def test_fewer_than_three_workers_per_side_is_inconclusive_and_says_why() -> None:
    result = compare([noisy(1e-3, seed=1)], [noisy(2e-3, seed=2)])
    assert result.verdict == INCONCLUSIVE
    assert result.ratio == pytest.approx(2.0, rel=0.01)
    assert result.workers == (1, 1)
    assert "at least 3 fresh workers per side" in result.reason
    assert "--within-process" in result.describe()


def process_workers(
    center: float, seed: int, count: int = 3, spread: float = 0.13
) -> list[list[float]]:
    """Workers whose process lands ``spread`` (log-normal) around ``center``, each with 100
    blocks of 2 % noise: the between-process variation docs/results.md measured here."""
    rng = random.Random(seed)
    return [
        noisy(center * math.exp(rng.gauss(0, spread)), n=100, seed=seed * 100 + i)
        for i in range(count)
    ]


def test_the_worker_is_the_unit_of_evidence() -> None:
    base, cand = process_workers(1e-3, seed=1), process_workers(1e-3, seed=2)
    pooled = within(base, cand)
    by_worker = compare(base, cand)
    assert by_worker.unit == "worker" and pooled.unit == "block"
    # Blocks treated as independent see a "difference" that is only where processes landed.
    assert pooled.p_value < 0.05
    assert by_worker.p_value > 0.05
    assert by_worker.verdict == "no clear difference"


def test_three_workers_per_side_see_a_real_change() -> None:
    result = compare(process_workers(1e-3, seed=3), process_workers(2e-3, seed=4))
    assert result.verdict == "slower"
    assert result.ratio == pytest.approx(2.0, rel=0.25)


def test_simulated_a_a_pairs_rarely_cry_wolf() -> None:
    """Identical code measured twice, 3 workers a side, realistic process noise: the gate must
    say "no clear difference" for at least 95 % of 200 seeds at a 5 % threshold."""
    seeds = range(200)
    verdicts = [
        compare(process_workers(1e-3, 2 * s), process_workers(1e-3, 2 * s + 1)).verdict
        for s in seeds
    ]
    assert verdicts.count("no clear difference") >= 190


def test_mann_whitney_is_scipys() -> None:
    from scipy.stats import mannwhitneyu

    a, b = noisy(1.0, n=40, seed=5), noisy(1.01, n=50, seed=6)
    expected = mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue
    assert mann_whitney_p(a, b) == pytest.approx(expected)


@pytest.mark.parametrize("n", [5, 9, 20, 57, 200])
def test_the_median_interval_is_scipys_quantile_test_interval(n: int) -> None:
    from scipy.stats import quantile_test

    values = sorted(noisy(1.0, n=n, noise=0.3, seed=n))
    expected = quantile_test(values, q=1, p=0.5).confidence_interval(confidence_level=0.95)
    if math.isnan(expected.low):  # too few values for 95 %: scipy says nan, stackwars infinite
        assert median_ci(values) == (-math.inf, math.inf)
    else:
        assert median_ci(values) == (expected.low, expected.high)
