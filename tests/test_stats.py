"""Statistics and steady-state detection on values with known answers."""

from __future__ import annotations

import math
import random

import pytest

from stackwars.timing import stats, steady


@pytest.mark.parametrize(
    ("n", "ranks"),
    # Published 95 % ranks for the median (1-based: n=10 -> 2..9, n=20 -> 6..15,
    # n=100 -> 40..61), here 0-based.
    [(5, None), (6, (0, 5)), (10, (1, 8)), (20, (5, 14)), (100, (39, 60))],
)
def test_median_ci_ranks_match_the_binomial_table(n: int, ranks: tuple[int, int] | None) -> None:
    assert stats.median_ci_ranks(n) == ranks


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = random.Random(7)
    trials, covered = 2000, 0
    for _ in range(trials):
        # Skewed data: the median of Exp(1) is ln 2.
        sample = sorted(rng.expovariate(1.0) for _ in range(30))
        low, high = stats.median_ci(sample)
        covered += low <= math.log(2) <= high
    assert 0.93 <= covered / trials <= 0.99


def test_summarize_known_values() -> None:
    summary = stats.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert summary.median == 3.0
    assert summary.min == 1.0
    assert summary.mean == 22.0
    assert summary.iqr == 2.0  # quartiles 2 and 4 by linear interpolation
    assert summary.mad == 1.0
    assert summary.count == 5
    assert math.isinf(summary.ci_half_width_rel)  # five values give no 95 % interval


def test_summarize_refuses_no_values() -> None:
    with pytest.raises(ValueError, match="at least one"):
        stats.summarize([])


def test_quantile_matches_linear_interpolation() -> None:
    assert stats.quantile([0.0, 10.0], 0.25) == 2.5
    assert stats.quantile([5.0], 0.9) == 5.0


def test_is_stationary_compares_two_windows() -> None:
    assert steady.is_stationary([9, 9, 1, 1, 1, 1, 1, 1], window=3, tolerance=0.1)
    assert not steady.is_stationary([9, 9, 9, 1, 1, 1], window=3, tolerance=0.1)
    assert not steady.is_stationary([1, 1, 1], window=3, tolerance=0.1)


def test_runs_to_steady_counts_leading_slow_runs_only() -> None:
    assert steady.runs_to_steady([50, 1, 1, 1], reference=1, tolerance=0.2) == 1
    assert steady.runs_to_steady([50, 40, 1, 1], reference=1, tolerance=0.2) == 2
    assert steady.runs_to_steady([1, 1, 1, 9, 1, 1], reference=1, tolerance=0.2) == 0
    # Two slow runs in a row later on mean the series had not settled before them.
    assert steady.runs_to_steady([50, 1, 1, 9, 9, 1, 1], reference=1, tolerance=0.2) == 5
