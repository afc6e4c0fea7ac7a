"""The fail rule of a session that looks once: step-down max-T over joint sign flips of its
rounds (timing/maxt.py), checked against its definition computed plainly, on simulated A/A
sessions, and in the gate's decision."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import numpy as np
import pytest

from stackwars.results.comparison import FAIL, ComparisonRow, Gate, decide
from stackwars.timing import maxt
from stackwars.timing.compare import compare_paired
from stackwars.timing.family import HOLM
from stackwars.timing.sequential import Looks


def plain_t(values: list[float]) -> float:
    kept = [x for x in values if not math.isnan(x)]
    if len(kept) < 2:
        return 0.0
    spread = statistics.stdev(kept)
    if spread == 0:
        mean = statistics.fmean(kept)
        return 0.0 if mean == 0 else math.copysign(math.inf, mean)
    return statistics.fmean(kept) / (spread / math.sqrt(len(kept)))


def by_definition(rows: list[list[float]]) -> list[float]:
    """Westfall and Young's step-down adjusted p-values, literally: every pattern, every
    tail set of the ranking, the running maximum."""
    n = len(rows[0])
    patterns = list(itertools.product((1, -1), repeat=n))
    observed = [plain_t(row) for row in rows]
    order = sorted(range(len(rows)), key=lambda i: -observed[i])
    flipped = [[plain_t([s * x for s, x in zip(p, row, strict=True)]) for row in rows]
               for p in patterns]  # fmt: skip
    adjusted, running = [0.0] * len(rows), 0.0
    for rank, index in enumerate(order):
        tail = order[rank:]
        share = sum(max(t[i] for i in tail) >= observed[index] - 1e-12 for t in flipped)
        running = max(running, share / len(patterns))
        adjusted[index] = running
    return adjusted


def test_the_adjusted_p_values_are_the_definition_s() -> None:
    rng = random.Random(3)
    for _ in range(5):
        rows = [[rng.gauss(0.05 * (i == 0), 0.1) for _ in range(6)] for i in range(4)]
        rows[2][3] = math.nan  # a cell that missed a round
        assert maxt.adjusted_p_values(rows) == pytest.approx(by_definition(rows))


def test_its_floor_is_one_pattern_in_2_to_the_rounds_whatever_the_family_size() -> None:
    """Six rounds all slower in one cell of thirty: 2^-6 = 0.016 < 0.05, where Holm's first
    level (0.05 / 30) lies below any six-round sign-flip p-value."""
    rng = random.Random(5)
    rows = [[rng.gauss(0, 0.05) for _ in range(6)] for _ in range(29)]
    rows.insert(0, [0.10, 0.12, 0.09, 0.11, 0.10, 0.13])
    adjusted = maxt.adjusted_p_values(rows)
    assert adjusted[0] == pytest.approx(1 / 64)
    assert maxt.rejected(rows, 0.05)[0] and 1 / 64 > 0.05 / 30


def test_a_a_sessions_with_shared_round_effects_reject_at_most_alpha() -> None:
    """12 cells, 8 rounds, every round a shared effect on one side (a burst) plus each cell's
    own noise of 2 to 10 %, which side it hit drawn at random: the chance of any rejection
    stays within alpha's Monte Carlo error."""
    rng = np.random.default_rng(11)
    sessions, cells, rounds, alpha = 600, 12, 8, 0.05
    spread = np.array([0.02, 0.05, 0.10] * 4)[:, None]
    false = 0
    for _ in range(sessions):
        burst = rng.normal(0, 0.10, rounds) * rng.choice((1.0, -1.0), rounds)
        ratios = rng.normal(0, 1, (cells, rounds)) * spread + burst
        false += any(maxt.rejected(ratios.tolist(), alpha))
    se = math.sqrt(alpha * (1 - alpha) / sessions)
    assert false / sessions <= alpha + 3 * se


def paired_row(name: str, change: float, rounds: int, looks: Looks, seed: int) -> ComparisonRow:
    rng = random.Random(seed)
    base = [1.0 * math.exp(rng.gauss(0, 0.02)) for _ in range(rounds)]
    cand = [b * (1 + change) * math.exp(rng.gauss(0, 0.02)) for b in base]
    result = compare_paired(base, cand, looks)
    return ComparisonRow(name, 1.0, result.ratio, result)


def test_a_session_that_looks_once_fails_by_max_t_and_one_that_looks_often_by_holm() -> None:
    """Thirty quiet cells, one 20 % slower, six rounds: the one-look family names it; the
    same rows in a design that looks after every round cannot (Holm's floor)."""
    once = Looks(6, 6)
    rows = [paired_row("slow", 0.20, 6, once, 0)]
    rows += [paired_row(f"same{i}", 0.0, 6, once, i + 1) for i in range(29)]
    verdict = decide(rows, Gate(fail_above=5))
    assert verdict.family.procedure == maxt.PROCEDURE and verdict.states[0] == FAIL
    assert FAIL not in verdict.states[1:]
    often = Looks(3, 10)
    rows = [paired_row("slow", 0.20, 6, often, 0)]
    rows += [paired_row(f"same{i}", 0.0, 6, often, i + 1) for i in range(29)]
    verdict = decide(rows, Gate(fail_above=5))
    assert verdict.family.procedure == HOLM and verdict.states[0] != FAIL
