"""Comparison statistics on synthetic samples with known answers."""

from __future__ import annotations

import math
import random

import pytest

from stackwars.timing.compare import (
    bootstrap_ratio_ci,
    compare,
    geometric_mean,
    mann_whitney_p,
    verdict,
)


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


def test_same_distribution_is_no_clear_difference() -> None:
    result = compare([noisy(1e-3, seed=1)], [noisy(1e-3, seed=2)])
    assert result.verdict == "no clear difference"
    assert result.ci_low <= 1.0 <= result.ci_high
    assert result.ratio == pytest.approx(1.0, abs=0.01)


def test_twice_as_slow_is_slower_with_a_tight_interval() -> None:
    result = compare([noisy(1e-3, seed=1)], [noisy(2e-3, seed=2)])
    assert result.verdict == "slower"
    assert result.ratio == pytest.approx(2.0, rel=0.01)
    assert 1.9 < result.ci_low < result.ratio < result.ci_high < 2.1
    assert result.p_value < 1e-10


def test_faster_is_faster() -> None:
    assert compare([noisy(1e-3, seed=1)], [noisy(0.5e-3, seed=2)]).verdict == "faster"


def test_significant_but_small_changes_stay_below_the_threshold() -> None:
    base, cand = [noisy(1e-3, noise=0.001, seed=1)], [noisy(1.03e-3, noise=0.001, seed=2)]
    small = compare(base, cand)
    assert small.p_value < 1e-10
    assert small.verdict == "no clear difference"
    assert compare(base, cand, threshold=0.02).verdict == "slower"


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
