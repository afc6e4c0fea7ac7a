"""Comparison statistics on synthetic samples with known answers."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from stackwars.results.comparison import FAIL, ComparisonRow, Gate, decide
from stackwars.timing import compare as compare_module
from stackwars.timing.compare import (
    DEFAULT_ALPHA,
    EQUIVALENT,
    FASTER,
    FASTER_SMALL,
    INCONCLUSIVE,
    SLOWER,
    SLOWER_SMALL,
    SLOWER_UNSURE,
    UNDECIDED,
    Comparison,
    LogDifference,
    Samples,
    bootstrap_ratio_ci,
    compare,
    geometric_mean,
    judge,
    mann_whitney_p,
)
from stackwars.timing.sample_size import Measured, workers_needed
from stackwars.timing.stats import median_ci


def noisy(center: float, n: int = 200, noise: float = 0.02, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, noise)) for _ in range(n)]


def judged(baseline: Samples, candidate: Samples, **options: Any) -> Comparison:
    """``compare`` without the workers-needed estimate (a simulation these loops never read)."""
    return compare(baseline, candidate, plan=False, **options)


def fails_alone(result: Comparison, percent: float) -> bool:
    """Whether the gate fails a suite of this one cell at one-sided alpha / 2, the level the
    per-cell rules here were written for."""
    row = ComparisonRow("cell", 1.0, result.ratio, result)
    return decide([row], Gate(fail_above=percent, alpha=DEFAULT_ALPHA / 2)).outcome == FAIL


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


def test_same_distribution_within_one_process_is_equivalent() -> None:
    result = within([noisy(1e-3, seed=1)], [noisy(1e-3, seed=2)])
    assert result.verdict == EQUIVALENT
    assert result.ci_low <= 1.0 <= result.ci_high
    assert result.ratio == pytest.approx(1.0, abs=0.01)


def test_twice_as_slow_is_slower_with_a_tight_interval() -> None:
    result = within([noisy(1e-3, seed=1)], [noisy(2e-3, seed=2)])
    assert result.verdict == SLOWER
    assert result.ratio == pytest.approx(2.0, rel=0.01)
    assert 1.9 < result.ci_low < result.ratio < result.ci_high < 2.1
    assert result.p_value < 1e-10


def test_faster_is_faster() -> None:
    assert within([noisy(1e-3, seed=1)], [noisy(0.5e-3, seed=2)]).verdict == FASTER


def test_significant_but_small_changes_are_called_within_the_threshold() -> None:
    base, cand = [noisy(1e-3, noise=0.001, seed=1)], [noisy(1.03e-3, noise=0.001, seed=2)]
    small = within(base, cand)
    assert small.p_value < 1e-10
    assert small.verdict == SLOWER_SMALL
    assert not fails_alone(small, 5)
    assert within(base, cand, threshold=0.02).verdict == SLOWER


@pytest.mark.parametrize(
    ("significant", "ratio", "interval", "equivalence", "words"),
    [
        (True, 1.5, (1.4, 1.6), (1.42, 1.58), SLOWER),
        (True, 0.6, (0.5, 0.7), (0.52, 0.68), FASTER),
        # The torch:eager: +14.3 %, 95 % interval 1.014-1.213, p = 0.033.
        (True, 1.143, (1.014, 1.213), (1.03, 1.20), SLOWER_UNSURE),
        (True, 1.02, (1.01, 1.03), (1.012, 1.028), SLOWER_SMALL),
        (True, 0.98, (0.97, 0.99), (0.972, 0.988), FASTER_SMALL),
        (False, 1.01, (0.97, 1.06), (0.98, 1.04), EQUIVALENT),
        (False, 1.05, (0.9, 1.25), (0.92, 1.2), UNDECIDED),
    ],
)
def test_the_verdict_words(
    significant: bool,
    ratio: float,
    interval: tuple[float, float],
    equivalence: tuple[float, float],
    words: str,
) -> None:
    assert judge(significant, ratio, interval, equivalence, 0.05) == words


def test_a_significant_change_past_the_limit_fails_the_gate_whatever_its_interval() -> None:
    """The issue's +14 % whose interval reached below +5 %: the old rule called it "no clear
    difference" and passed it."""
    evidence = LogDifference(math.log(1.143), 0.045, 4.0, 0.05)  # two-sided p about 0.03
    result = Comparison(
        1.143, 1.014, 1.213, 0.033, SLOWER_UNSURE, 0.05, workers=(3, 3), evidence=evidence
    )
    assert fails_alone(result, 5)
    assert not fails_alone(result, 15)  # the point is below 15 %
    wide = LogDifference(math.log(1.143), 0.09, 4.0, 0.1)  # two-sided p about 0.2
    undecided = Comparison(1.143, 0.98, 1.3, 0.2, UNDECIDED, 0.05, workers=(3, 3), evidence=wide)
    assert not fails_alone(undecided, 5)  # not significant: never a failure


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
    assert by_worker.verdict == UNDECIDED
    assert by_worker.workers_needed is None or by_worker.workers_needed > 3
    assert "workers a side" in by_worker.reason


def test_three_workers_per_side_see_a_real_change() -> None:
    result = compare(process_workers(1e-3, seed=3), process_workers(2e-3, seed=4))
    assert result.verdict == SLOWER
    assert result.ratio == pytest.approx(2.0, rel=0.25)


def test_simulated_a_a_pairs_rarely_cry_wolf() -> None:
    """Identical code measured twice, 3 workers a side, realistic process noise: the gate
    fails at most alpha / 2 of 400 pairs (binomial allowance: 2.5 % expected, 5 % allowed)."""
    alarms = sum(
        fails_alone(judged(process_workers(1e-3, 2 * s), process_workers(1e-3, 2 * s + 1)), 5)
        for s in range(400)
    )
    assert alarms <= 20


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


def runs_with_drift(center: float, seed: int, drift: float, count: int = 3) -> list[list[float]]:
    """One run's workers: the run lands ``drift`` (log-normal) around ``center`` and each
    worker 3 % around the run (a machine state shared by the run's workers)."""
    rng = random.Random(seed)
    run_center = center * math.exp(rng.gauss(0, drift))
    return [
        noisy(run_center * math.exp(rng.gauss(0, 0.03)), n=50, noise=0.01, seed=seed * 10 + i)
        for i in range(count)
    ]


def test_separate_runs_that_drift_cry_wolf_unless_the_drift_is_counted() -> None:
    """Issue 29: workers of one run share its machine state, so identical code in two runs
    looks different. With the run-to-run drift in the variance, the alarms fall to alpha / 2."""
    pairs = [
        (runs_with_drift(1e-3, 2 * s, drift=0.04), runs_with_drift(1e-3, 2 * s + 1, drift=0.04))
        for s in range(300)
    ]
    blind = sum(fails_alone(judged(a, b), 5) for a, b in pairs)
    counted = sum(fails_alone(judged(a, b, run_drift=0.04), 5) for a, b in pairs)
    assert blind > 30  # far beyond 2.5 % of 300
    assert counted <= 15


def test_equivalent_needs_the_interval_inside_the_threshold() -> None:
    tight = [noisy(1e-3 * (1 + 0.002 * i), n=50, noise=0.005, seed=i) for i in range(6)]
    other = [noisy(1e-3 * (1 + 0.002 * i), n=50, noise=0.005, seed=20 + i) for i in range(6)]
    assert compare(tight, other).verdict == EQUIVALENT


@pytest.mark.parametrize(
    ("change", "spread"), [(1.10, 0.06), (1.10, 0.10), (1.0, 0.06), (1.03, 0.04)]
)
def test_workers_needed_reaches_its_power_with_the_test_actually_used(
    change: float, spread: float
) -> None:
    """The estimate promises 80 % of comparisons decided at that size: simulate them with
    ``compare`` itself (trimmed from 5 workers a side; a change, an equal pair, a change
    inside the threshold) and find at least 80 %, less three binomial standard errors."""
    needed = workers_needed(Measured(math.log(change), spread), 0.05, 0.05)
    assert needed is not None
    trials = 150
    decided = 0
    for seed in range(trials):
        base = process_workers(1e-3, seed=3 * seed, count=needed, spread=spread)
        cand = process_workers(change * 1e-3, seed=3 * seed + 1, count=needed, spread=spread)
        decided += compare(base, cand).verdict != UNDECIDED
    assert decided >= (0.8 - 3 * math.sqrt(0.8 * 0.2 / trials)) * trials, (needed, decided)


def test_workers_needed_with_an_estimated_drift_reaches_its_power() -> None:
    """Two separate runs a side apart by a run drift of 2 % estimated with 5 degrees of
    freedom, the drift the larger part of the error: the real test takes its degrees of freedom
    from the drift's too (Satterthwaite), so the estimate must, and asks more workers than a
    drift known exactly; simulated with ``compare`` itself, each side's run moved by its own
    drift, at least 80 % are decided, less three binomial standard errors."""
    drift, df, spread, change = 0.02, 5.0, 0.08, 1.15
    needed = workers_needed(Measured(math.log(change), spread, drift, df), 0.05, 0.05)
    as_if_known = workers_needed(Measured(math.log(change), spread, drift), 0.05, 0.05)
    assert needed is not None and as_if_known is not None and needed > as_if_known
    trials, decided, rng = 150, 0, random.Random(7)
    for seed in range(trials):
        moved = [math.exp(rng.gauss(0, drift)) for _ in range(2)]
        base = process_workers(1e-3 * moved[0], seed=3 * seed, count=needed, spread=spread)
        cand = process_workers(
            change * 1e-3 * moved[1], seed=3 * seed + 1, count=needed, spread=spread
        )
        result = compare(base, cand, run_drift=drift, run_drift_df=df)
        decided += result.verdict != UNDECIDED
    assert decided >= (0.8 - 3 * math.sqrt(0.8 * 0.2 / trials)) * trials, (needed, decided)


def test_no_number_of_workers_beats_the_drift_of_separate_runs() -> None:
    assert workers_needed(Measured(math.log(1.08), 0.02, 0.06), 0.05, 0.05) is None
    base = [noisy(1e-3 * (1 + 0.01 * i), n=30, seed=i) for i in range(3)]
    cand = [noisy(1.08e-3 * (1 + 0.01 * i), n=30, seed=9 + i) for i in range(3)]
    result = compare(base, cand, run_drift=0.06)
    assert result.verdict == UNDECIDED and result.workers_needed is None
    assert "stackwars ab" in result.reason
    assert result.components is not None and result.components.run_drift == 0.06


def test_variance_components_are_reported() -> None:
    base = process_workers(1e-3, seed=5, count=5, spread=0.1)
    cand = process_workers(1e-3, seed=6, count=5, spread=0.1)
    components = compare(base, cand).components
    assert components is not None
    assert 0.03 < components.between_workers < 0.25  # the simulated 10 %
    assert components.within_worker < 0.01  # 2 % blocks, 100 of them: about 0.25 %


def with_a_wild_worker(workers: list[list[float]], factor: float) -> list[list[float]]:
    """The last worker disturbed as one was here (a test run beside it: 40 ms, not 1.5 ms)."""
    return [*workers[:-1], [x * factor for x in workers[-1]]]


def test_one_wild_worker_does_not_hide_a_real_regression(monkeypatch: pytest.MonkeyPatch) -> None:
    base = process_workers(1e-3, seed=11, count=7, spread=0.03)
    cand = with_a_wild_worker(process_workers(1.15e-3, seed=12, count=7, spread=0.03), 25.0)
    result = compare(base, cand)
    assert result.verdict in (SLOWER, SLOWER_UNSURE) and fails_alone(result, 5)
    assert result.ratio == pytest.approx(1.15, rel=0.05)
    # Untrimmed, the wild worker's variance swamps the 15 %: what the gate did before.
    monkeypatch.setattr(compare_module, "TRIM", 0.0)
    assert not fails_alone(judged(base, cand), 5)


@pytest.mark.parametrize("count", [5, 7, 10])
def test_trimmed_a_a_pairs_with_wild_workers_rarely_cry_wolf(count: int) -> None:
    """Identical code, a worker in ten disturbed 2-30x on either side: the gate fails at most
    alpha / 2 of 300 pairs (2.5 % expected, 5 % allowed)."""
    rng = random.Random(count)

    def side(seed: int) -> list[list[float]]:
        workers = process_workers(1e-3, seed=seed, count=count, spread=0.06)
        return [[x * rng.uniform(2, 30) for x in w] if rng.random() < 0.1 else w for w in workers]

    alarms = sum(fails_alone(judged(side(2 * s), side(2 * s + 1)), 5) for s in range(300))
    assert alarms <= 15
