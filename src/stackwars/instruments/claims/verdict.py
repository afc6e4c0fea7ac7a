"""Judging a claim from measured samples: the value, its 95 % interval and the verdict.

Pure logic on numbers (no cells, no workers): the claims service (``service.py``) hands in
per-worker samples. A factor is the ratio of medians baseline / subject, with the interval of
``timing/compare.py`` (its t test over per-worker medians, the worker as the unit; with fewer
than ``MIN_WORKERS`` workers a side, its within-process bootstrap, and no verdict). The verdict
compares the whole interval with the range the relation claims:

* ``holds``: the interval lies inside the claimed range;
* ``fails``: the interval lies wholly outside it;
* ``inconclusive``: the interval straddles a bound of the range (or too few workers); for a
  factor or a crossover, with the workers a side that would likely decide it
  (``Judgement.workers_needed``, from the measured spread between workers: what ``claims
  --repeat auto`` adds workers for); for a count, with why no number of workers would (a
  count holds when every worker's does and fails when none does, so workers that disagree stay
  so however many more run);
* ``not checkable here``: decided before measuring, by the service layer (hardware, stack or
  memory this machine lacks), with the reason.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stackwars.instruments.claims.spec import Relation
from stackwars.timing.compare import DEFAULT_ALPHA, MIN_WORKERS, Comparison, Samples, compare
from stackwars.timing.sample_size import MOST_WORKERS_ESTIMATED, workers_to_separate

# What the instrument keeps with a run (the store's instrument_data): each claim judged,
# ``ClaimResult.to_dict()``, a payload of format RESULT_FORMAT. History: 1 (2026-11-24, store
# version 5's claims table), the fields of ClaimResult.
INSTRUMENT = "claims"
RESULT_FORMAT = 1

HOLDS, FAILS, INCONCLUSIVE, NOT_CHECKABLE = "holds", "fails", "inconclusive", "not checkable here"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_CHECKABLE)


@dataclass(frozen=True)
class Judgement:
    verdict: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    reason: str = ""
    workers: tuple[int, int] = (0, 0)  # subject, baseline
    workers_needed: int | None = None  # an inconclusive factor: workers a side likely to decide


@dataclass(frozen=True)
class ClaimResult:
    """A checked claim as stored with its run (``to_dict``) and shown by ``show``/``report``."""

    id: str
    statement: str  # the one-line form, with the sizes it ran at
    statistic: str
    relation: str
    verdict: str
    value: float | None
    low: float | None
    high: float | None
    unit: str  # "x" (a factor), "runs", "lines", or the swept parameter's name
    reason: str
    source: str
    quote: str
    note: str
    cells: tuple[str, ...] = ()  # the cells it was judged from
    workers: tuple[int, int] = (0, 0)
    workers_needed: int | None = None  # inconclusive: workers a side that would likely decide

    def to_dict(self) -> dict[str, Any]:
        """As JSON holds it (lists, not tuples), so that a run in memory equals it stored."""
        return {
            **dataclasses.asdict(self),
            "cells": list(self.cells),
            "workers": list(self.workers),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClaimResult:
        values: dict[str, Any] = {name: data.get(name) for name in cls.__dataclass_fields__}
        values["cells"] = tuple(values["cells"] or ())
        values["workers"] = tuple(values["workers"] or (0, 0))
        return cls(**values)


def against(relation: Relation, low: float, high: float) -> tuple[str, str]:
    """The verdict of an interval [low, high] on the claimed range, and why."""
    inside_low = relation.low is None or low >= relation.low
    inside_high = relation.high is None or high <= relation.high
    claimed = describe_range(relation)
    if inside_low and inside_high:
        return HOLDS, f"the whole interval lies in the claimed range ({claimed})"
    below = relation.low is not None and high < relation.low
    above = relation.high is not None and low > relation.high
    if below or above:
        return FAILS, f"the whole interval lies outside the claimed range ({claimed})"
    bound = relation.low if not inside_low else relation.high
    return INCONCLUSIVE, f"the interval straddles the claimed bound {bound:g}{relation.unit}"


def describe_range(relation: Relation) -> str:
    unit = relation.unit
    if relation.low is not None and relation.high is not None:
        return f"{relation.low:.4g}{unit} to {relation.high:.4g}{unit}"
    if relation.low is not None:
        return f"at least {relation.low:.4g}{unit}"
    return f"at most {relation.high:.4g}{unit}"


def _too_few(workers: tuple[int, ...]) -> str:
    counts = " and ".join(str(n) for n in workers)
    return (
        f"{counts} worker(s); a verdict needs at least {MIN_WORKERS} fresh workers per side "
        f"(--repeat {MIN_WORKERS}): the interval shown is within one process"
    )


def judge_factor(
    subject: Samples, baseline: Samples, relation: Relation, alpha: float = DEFAULT_ALPHA
) -> Judgement:
    """baseline / subject (above 1 the subject is faster or smaller) against the relation,
    with a ``1 - alpha`` interval."""
    result = compare(baseline, subject, alpha=alpha)  # its ratio is subject / baseline
    value, low, high = 1 / result.ratio, 1 / result.ci_high, 1 / result.ci_low
    workers = (result.workers[1], result.workers[0])
    if min(workers) < MIN_WORKERS:
        return Judgement(INCONCLUSIVE, value, low, high, _too_few(workers), workers)
    verdict, why = against(relation, low, high)
    if verdict != INCONCLUSIVE or result.components is None:
        return Judgement(verdict, value, low, high, why, workers)
    bound = relation.low if relation.low is not None and low < relation.low else relation.high
    assert bound is not None  # an interval straddles a bound that exists
    needed = workers_to_separate(
        abs(math.log(value / bound)), result.components.between_workers, alpha
    )
    why += (
        f"; about {needed} workers a side would likely decide it"
        if needed
        else f"; the value is too close to it for {MOST_WORKERS_ESTIMATED} workers a side"
    )
    return Judgement(verdict, value, low, high, why, workers, needed)


def judge_count(values: Sequence[float], relation: Relation) -> Judgement:
    """A count per worker (runs to steady): the median, the range over workers shown as its
    interval; holds when every worker's count is in the claimed range, fails when none is."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values to judge")
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    low, high = ordered[0], ordered[-1]
    workers = (len(ordered), 0)
    if len(ordered) < MIN_WORKERS:
        return Judgement(INCONCLUSIVE, median, low, high, _too_few((len(ordered),)), workers)
    inside, claimed = _inside(ordered, relation), describe_range(relation)
    if inside == len(ordered):
        why = f"every worker's count lies in the claimed range ({claimed})"
        return Judgement(HOLDS, median, low, high, why, workers)
    if inside == 0:
        # Not the range's verdict: counts 1 and 3 straddle a claimed 2 with no worker at 2.
        why = f"no worker's count lies in the claimed range ({claimed})"
        return Judgement(FAILS, median, low, high, why, workers)
    why = (
        f"the workers disagree ({inside} of {len(ordered)} in the claimed range, {claimed}), and "
        "more workers would not decide it: a count holds or fails only when every worker does"
    )
    return Judgement(INCONCLUSIVE, median, low, high, why, workers)


def _inside(values: Sequence[float], relation: Relation) -> int:
    return sum(
        (relation.low is None or value >= relation.low)
        and (relation.high is None or value <= relation.high)
        for value in values
    )


def judge_exact(value: float, relation: Relation) -> Judgement:
    """A value that does not vary between processes (lines of a compiler's IR)."""
    verdict, why = against(relation, value, value)
    return Judgement(verdict, value, value, value, why.replace("whole interval", "value"))


def judge_crossover(
    points: Sequence[tuple[float, Samples, Samples]],
    relation: Relation,
    alpha: float = DEFAULT_ALPHA,
) -> Judgement:
    """``points``: (swept value, subject samples, baseline samples), in increasing value. The
    value judged is where the subject overtakes the baseline for good (interpolated in log-log
    between the two values around it, as ``results/crossover.py`` does), its interval those two
    values; the stacks must be told apart at both."""
    if len(points) < 2:
        return Judgement(INCONCLUSIVE, reason="a crossover needs two or more swept values")
    results = [compare(baseline, subject, alpha=alpha) for _, subject, baseline in points]
    workers = (min(r.workers[1] for r in results), min(r.workers[0] for r in results))
    if min(workers) < MIN_WORKERS:
        return Judgement(INCONCLUSIVE, reason=_too_few(workers), workers=workers)
    values = [value for value, _, _ in points]
    factors = [1 / r.ratio for r in results]
    # +1: the subject is faster (whole interval above 1×), -1: the baseline is, 0: unclear
    clear = [1 if 1 / r.ci_high > 1 else -1 if 1 / r.ci_low < 1 else 0 for r in results]
    start = len(points)
    while start > 0 and factors[start - 1] > 1:
        start -= 1
    if start in (0, len(points)):
        return _no_crossing(start == 0, values, clear, results, workers, alpha=alpha)
    low, high = values[start - 1], values[start]
    at = _crossing(low, high, factors[start - 1], factors[start])
    if clear[start - 1] != -1 or clear[start] != 1:
        why = f"the two stacks cannot be told apart at {low:g} or {high:g} (intervals reach 1×)"
        needed = _workers_to_tell_apart(results[start - 1 : start + 1], alpha)
        return Judgement(INCONCLUSIVE, at, low, high, why + _needed(needed), workers, needed)
    # The crossing lies strictly between the two values: one that is a bound is outside it.
    beyond = (relation.high is not None and low >= relation.high) or (
        relation.low is not None and high <= relation.low
    )
    if beyond:
        why = f"the crossing lies between {low:g} and {high:g}, outside {describe_range(relation)}"
        return Judgement(FAILS, at, low, high, why, workers)
    verdict, why = against(relation, low, high)
    return Judgement(verdict, at, low, high, why, workers)


def _no_crossing(
    at_start: bool,
    values: Sequence[float],
    clear: Sequence[int],
    results: Sequence[Comparison],
    workers: tuple[int, int],
    *,
    alpha: float,
) -> Judgement:
    """The subject faster at every swept value, or at none: fails when the end value shows it,
    else inconclusive with the workers that would tell the stacks apart there."""
    end = 0 if at_start else -1
    if at_start:
        why = f"the subject is faster already at the smallest value ({values[0]:g})"
    else:
        why = f"the subject is not faster at the largest value ({values[-1]:g})"
    if clear[end] == (1 if at_start else -1):
        return Judgement(FAILS, reason=why, workers=workers)
    needed = _workers_to_tell_apart([results[end]], alpha)
    return Judgement(
        INCONCLUSIVE, reason=why + _needed(needed), workers=workers, workers_needed=needed
    )


def _workers_to_tell_apart(results: Sequence[Comparison], alpha: float) -> int | None:
    """Workers a side that would likely separate each comparison's ratio from 1× (None when
    some one would need more than ``MOST_WORKERS_ESTIMATED``)."""
    needs = [
        workers_to_separate(abs(math.log(r.ratio)), r.components.between_workers, alpha)
        if r.components is not None and r.ratio != 1
        else None
        for r in results
    ]
    return None if None in needs else max(n for n in needs if n is not None)


def _needed(needed: int | None) -> str:
    if needed is None:
        return f"; the stacks are too close there for {MOST_WORKERS_ESTIMATED} workers a side"
    return f"; about {needed} workers a side would likely decide it"


def _crossing(low: float, high: float, factor_low: float, factor_high: float) -> float:
    """Where log(factor) passes 0, linear in log(value) between the two values."""
    below, above = math.log(factor_low), math.log(factor_high)
    fraction = below / (below - above)
    return math.exp(math.log(low) + fraction * (math.log(high) - math.log(low)))


def not_checkable(reason: str) -> Judgement:
    return Judgement(NOT_CHECKABLE, reason=reason)
