"""One-sided tests that stay valid however often a session looks at its data (``stackwars ab``).

A session measures baseline and candidate in rounds (which goes first drawn at random each
round) and looks after every round from ``first`` to ``last``. Its evidence for a cell is
one paired log ratio a round, ``log(candidate) - log(baseline)`` of that round's two
workers: whatever moved the machine during the round moved both, so round-to-round drift
cancels instead of counting as noise.

The statistic at a look of ``n`` rounds is the one-sample trimmed t (Tukey and McLaughlin;
the 20 % trim of ``timing/compare.py``, nothing trimmed below 5 rounds), whose one-sided
p-value is read from Student's t with the kept rounds less one degrees of freedom. Looking
after every round and stopping on a small p-value would make the false-alarm rate grow with
the looks, so the p-value a look reports is **sequential**: the chance, under no change, that
the smallest of those marginal p-values over *every* look the design allows (each round from
``first`` to ``last``) is as small as the one seen now. This is a Pocock-type repeated
significance test, calibrated by simulating that minimum (``reference``): under normal paired
log ratios the trimmed t is free of the unknown spread, so the simulation is exact up to its
Monte Carlo error whatever the cell's noise. A session that looks less often, or stops early
(every cell settled, the time budget), only makes the test more conservative, and a shift of
the true change away from the null moves every look's t the same way, so one-sided composite
nulls (no slower than ``bound``) keep the level too.

Robustness. A disturbed worker makes one round's ratio wild; trimming takes its weight away
from 5 rounds on, and before that it only inflates the spread (a lost look, never a false
alarm). Cells whose processes land at two speeds (1 ms or 5 ms) are not normal at all: when
the first rounds all happen to put the candidate in the slow mode and the baseline in the fast
one, their paired ratios agree closely and any t test calls it a regression (simulated: 3 to
6 times the nominal rate at the levels a Holm family uses). Under no change the two workers
of a round are exchangeable, so each paired ratio is as likely negative as positive, whatever
the modes: the **sign-flip** p-value (the share of the 2^n sign patterns whose signed rank sum
is at least the one seen) is exact for any such distribution. A look's p-value is the larger
of the two, so a verdict needs both the t test's calibrated evidence and rounds enough to be
more than a coin's run of luck: with ``n`` rounds the sign-flip p-value is at least 2^-n, so
a Holm family of ``m`` hypotheses at ``alpha`` cannot fail a cell before log2(m / alpha)
rounds (``rounds_to_reach``), and reaches 2^-n when every round is above the bound.
tests/test_sequential.py measures the A/A rates of normal, disturbed
and two-speed cells, and the power, by simulation with these functions.

NumPy and SciPy are imported inside the functions (analysis only)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Yuen's trimming (timing/compare.py's test, and the looks' here): a fifth of each side's
# workers at either end weigh only as the nearest kept one, so one disturbed worker (40 ms among
# 1.5 ms ones, docs/log.md) cannot swamp the variance; below 5 workers a side nothing is
# trimmed and the test is Welch's t.
TRIM = 0.2
# Paths simulated for the reference: its p-values are exact to about
# sqrt(p / REFERENCE_PATHS), 7 % of p at the smallest level a Holm family of 50 hypotheses uses.
REFERENCE_PATHS = 2**18
REFERENCE_SEED = 34
FEWEST_ROUNDS = 2  # a paired t needs two rounds to see a spread
MOST_ROUNDS = 1000  # past this, "at least N rounds" says more rounds are not a plan
PLANNING_POWER = 0.8  # "likely": the power timing/sample_size.py and the looks plan for
# Up to this many rounds every sign pattern is counted (2^12 = 4096); past it, as many random
# patterns (seeded), whose p-value (1 + at least as large) / (1 + drawn) stays valid.
EXACT_FLIP_ROUNDS = 12


@dataclass(frozen=True)
class Looks:
    """The looks a design allows: after each round from ``first`` to ``last`` (one look,
    ``first == last``, is a fixed-size test and needs no calibration)."""

    first: int
    last: int

    def __post_init__(self) -> None:
        if not FEWEST_ROUNDS <= self.first <= self.last:
            raise ValueError(
                f"looks from round {self.first} to {self.last}: need "
                f"{FEWEST_ROUNDS} <= first <= last"
            )

    @property
    def count(self) -> int:
        return self.last - self.first + 1


def trimmed_t(values: Any, trim: float = TRIM) -> tuple[Any, Any, Any]:
    """(trimmed mean, Yuen's standard error, degrees of freedom) of each row of ``values``
    (an array, rounds along the last axis), ``trim`` of each end trimmed (0: the mean and
    Student's standard error); the standard error is 0 when every kept value is the same."""
    import numpy as np

    ordered = np.sort(np.asarray(values, dtype=np.float64), axis=-1)
    n = ordered.shape[-1]
    cut = int(trim * n)
    kept = ordered[..., cut : n - cut]
    h = kept.shape[-1]
    winsorized = np.clip(ordered, kept[..., :1], kept[..., -1:])
    variance = np.var(winsorized, axis=-1, ddof=1)
    se = np.sqrt((n - 1) * variance / (h * (h - 1)))
    return kept.mean(axis=-1), se, h - 1


def marginal_p_above(values: Any, bound: float = 0.0, trim: float = TRIM) -> Any:
    """One-sided p-value of each row's trimmed t against "the mean is at most ``bound``" (small:
    evidence of a mean above it); 1 when the rows have no spread and sit at or below it."""
    import numpy as np
    from scipy.stats import t as student

    mean, se, df = trimmed_t(values, trim)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.where(se > 0, (mean - bound) / se, np.where(mean > bound, np.inf, -np.inf))
    return student.sf(statistic, df)


@functools.lru_cache(maxsize=16)
def reference(looks: Looks, trim: float = TRIM) -> Any:
    """The sorted smallest marginal p-value (of the ``trim`` trimmed t) over every look of
    ``looks``, for ``REFERENCE_PATHS`` sessions of normal paired log ratios with no change
    (seeded: the same reference every time)."""
    import numpy as np

    rng = np.random.default_rng(REFERENCE_SEED)
    paths = rng.standard_normal((REFERENCE_PATHS, looks.last))
    smallest = np.ones(REFERENCE_PATHS)
    for rounds in range(looks.first, looks.last + 1):
        smallest = np.minimum(smallest, marginal_p_above(paths[:, :rounds], trim=trim))
    return np.sort(smallest)


def sequential_p(marginal: float, looks: Looks, trim: float = TRIM) -> float:
    """The sequential p-value of a look whose marginal p-value (of the ``trim`` trimmed t)
    is ``marginal`` (module docstring): with one look it is the marginal one."""
    if looks.count == 1:
        return marginal
    import numpy as np

    ordered = reference(looks, trim)
    at_most = int(np.searchsorted(ordered, marginal, side="right"))
    return (1 + at_most) / (1 + len(ordered))


def nominal_level(alpha: float, looks: Looks, trim: float = TRIM) -> float:
    """The marginal one-sided level a look must reach for a sequential p-value below
    ``alpha`` (the level that sets a look's interval)."""
    if looks.count == 1:
        return alpha
    ordered = reference(looks, trim)
    index = math.floor(alpha * (1 + len(ordered))) - 1
    return float(ordered[index]) if index >= 0 else 0.0


def flip_p_above(values: Any, bound: float = 0.0) -> Any:
    """Sign-flip p-value of each row against "the paired ratios are symmetric about ``bound``"
    (small: they lie above it): the share of sign patterns of ``values - bound`` whose signed
    rank sum (Wilcoxon's: each round ranked by its size, one wild round weighing no more than
    the largest rank) is at least the observed one. Exact for any distribution symmetric
    about ``bound``; n rounds all above it give 2^-n.

    A trimmed mean in its place (before 2026-11-27) had a floor: flipping the rounds it trims
    leaves it unchanged, so n rounds all above the bound gave 2^-(n - trimmed), and ten rounds
    of a +16 % regression could not reach the first Holm level of a 24-test family
    (p = 0.0078 against 0.0021): fresh A/B sessions caught none."""
    import numpy as np

    centred = np.asarray(values, dtype=np.float64) - bound
    n = centred.shape[-1]
    signs = sign_patterns(n)
    extra = 0 if n <= EXACT_FLIP_ROUNDS else 1
    ranks = average_ranks(np.abs(centred)) * (centred != 0)  # a round at the bound: none
    observed = (np.sign(centred) * ranks).sum(axis=-1)
    flipped = (ranks[..., None, :] * signs).sum(axis=-1)
    # Ranks are whole or half numbers: sums equal in exact arithmetic compare equal.
    at_least = (flipped >= observed[..., None] - 1e-9).sum(axis=-1)
    return (at_least + extra) / (len(signs) + extra)


@functools.lru_cache(maxsize=64)
def sign_patterns(n: int) -> Any:
    """The sign patterns a flip test of ``n`` rounds weighs: all 2^n up to
    ``EXACT_FLIP_ROUNDS`` rounds, beyond that as many drawn at random (seeded: the same
    every time). Read-only: one array per ``n`` for every call."""
    import itertools

    import numpy as np

    if n <= EXACT_FLIP_ROUNDS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    else:
        rng = np.random.default_rng(REFERENCE_SEED)
        signs = rng.choice((1.0, -1.0), size=(2**EXACT_FLIP_ROUNDS, n))
    signs.flags.writeable = False
    return signs


def average_ranks(values: Any) -> Any:
    """Each row's ranks, ties sharing their average (scipy's ``rankdata``, whose per-call cost
    dominated the gate's simulations): the values below it, plus half of the equal ones
    counted with itself. Quadratic in the row's length: rows here are rounds, a few dozen."""

    column, row = values[..., :, None], values[..., None, :]
    below = (row < column).sum(axis=-1)
    equal = (row == column).sum(axis=-1)
    return below + (equal + 1) / 2


def p_above(values: Sequence[float], bound: float, looks: Looks, trim: float = TRIM) -> float:
    """A look's p-value against "the change is at most ``bound``": the larger of the
    sequential trimmed t's and the sign flip's (module docstring)."""
    row = [list(values)]
    sequential = sequential_p(float(marginal_p_above(row, bound, trim)[0]), looks, trim)
    return max(sequential, float(flip_p_above(row, bound)[0]))


def rounds_to_reach(level: float) -> int:
    """The fewest rounds whose sign-flip p-value can be below ``level``."""
    return max(FEWEST_ROUNDS, math.floor(math.log2(1 / level)) + 1)


def rounds_at_least(log_ratios: Sequence[float], margin: float, alpha: float) -> int:
    """A lower bound on the rounds that could decide a cell at its measured spread: the
    sign flip's minimum (``rounds_to_reach``), and the normal sample-size rule for telling its
    mean from 0 or from the ``margin`` (whichever is nearer to deciding) at ``alpha`` with
    80 % power. A bound, not a promise: the sequential calibration asks for more."""
    from scipy.stats import norm

    mean = sum(log_ratios) / len(log_ratios)
    spread = math.sqrt(sum((x - mean) ** 2 for x in log_ratios) / max(len(log_ratios) - 1, 1))
    distance = max(abs(mean), margin - abs(mean))
    z = norm.isf(alpha) + norm.isf(1 - PLANNING_POWER)
    normal = math.ceil((z * spread / distance) ** 2) if distance > 0 else math.inf
    return max(rounds_to_reach(alpha), int(min(normal, MOST_ROUNDS)))


def rounds_to_pass(
    spread: float, margin: float, alpha: float, power: float = PLANNING_POWER
) -> int:
    """The rounds a cell whose paired log ratio spreads by ``spread`` a round (its standard
    deviation, from rounds measured before) needs to be shown below ``margin`` when it did not
    change, at ``alpha`` with ``power`` (80 % by default): the normal sample-size rule, at least
    the sign flip's minimum. Known before the session: the noise triage's measure
    (ab/data.py), which asks each of k cells for the power that lets all k pass together."""
    from scipy.stats import norm

    z = norm.isf(alpha) + norm.isf(1 - power)
    normal = math.ceil((z * spread / margin) ** 2) if margin > 0 else math.inf
    return max(rounds_to_reach(alpha), int(min(normal, MOST_ROUNDS)))


@dataclass(frozen=True)
class Paired:
    """A cell's paired log ratios, one a round in round order, and the design's looks;
    ``indices``: the session's round (from 0) of each ratio, where a cell missed rounds (the
    joint flips of ``timing/maxt.py`` pair the cells of one round); empty: 0, 1, 2, ...;
    ``trim``: the trimmed t's (0 for ratios of a few distinct values, whose trimmed mean is not
    their mean: a share's, ``timing/speeds.py``)"""

    log_ratios: tuple[float, ...]
    looks: Looks
    indices: tuple[int, ...] = ()
    trim: float = TRIM

    @classmethod
    def of(
        cls,
        baseline: Sequence[float],
        candidate: Sequence[float],
        looks: Looks,
        indices: Sequence[int] = (),
        trim: float = TRIM,
    ) -> Paired:
        """From each round's baseline and candidate times (same length, round order)."""
        if len(baseline) != len(candidate):
            raise ValueError(
                f"{len(baseline)} baseline and {len(candidate)} candidate rounds: pair them "
                "by round first"
            )
        if len(baseline) > looks.last:
            raise ValueError(f"{len(baseline)} rounds is past the design's last look")
        ratios = tuple(math.log(c) - math.log(b) for b, c in zip(baseline, candidate, strict=True))
        if indices and len(indices) != len(ratios):
            raise ValueError(f"{len(indices)} round indices for {len(ratios)} rounds")
        return cls(ratios, looks, tuple(indices), trim)

    @property
    def rounds(self) -> int:
        return len(self.log_ratios)

    def by_round(self) -> dict[int, float]:
        """Each ratio under the session's round it came from."""
        return dict(zip(self.indices or range(self.rounds), self.log_ratios, strict=True))

    def p_above(self, bound: float) -> float:
        """p-value against "the change is at most ``bound``" (a log ratio)."""
        return p_above(self.log_ratios, bound, self.looks, self.trim)

    def p_below(self, bound: float) -> float:
        """p-value against "the change is at least ``bound``"."""
        return p_above([-x for x in self.log_ratios], -bound, self.looks, self.trim)

    def interval(self, alpha: float) -> tuple[float, float, float]:
        """(estimate, low, high) of the log ratio: the trimmed mean and the interval whose
        each side misses with probability at most ``alpha / 2`` at any look."""
        from scipy.stats import t as student

        means, errors, df = trimmed_t([self.log_ratios], self.trim)
        mean, se = float(means[0]), float(errors[0])
        level = nominal_level(alpha / 2, self.looks, self.trim)
        half = float(student.isf(level, df)) * se if level > 0 else math.inf
        return mean, mean - half, mean + half
