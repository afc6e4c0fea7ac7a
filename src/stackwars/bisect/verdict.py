"""The seam between the bisection and the gate: two releases' cells in, one verdict a cell out
(``slower``, ``faster``, ``same`` or ``undecided``, with the ratio and its interval).

Everything the bisection knows of statistics passes through :func:`judge`; it uses today's
gate (``results/comparison.py``'s rows, ``timing/compare.py``'s verdicts, ``service/ab.py``'s
rule for a settled cell), so that a new gate replaces this one module.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from stackwars.bisect.search import FASTER, SAME, SLOWER, UNDECIDED
from stackwars.frameworks import Stack, split_stack
from stackwars.results.comparison import ComparisonRow, Gate, compare_runs
from stackwars.results.schema import Cell
from stackwars.service import ab
from stackwars.timing.compare import INCONCLUSIVE, SIGNIFICANTLY_FASTER


@dataclass(frozen=True)
class Judgement:
    """One cell: the newer release against the older one (ratio above 1 is slower)."""

    label: str
    word: str  # search.WORDS
    ratio: float = math.nan
    low: float = math.nan
    high: float = math.nan
    detail: str = ""  # the gate's own words (or why there is no ratio)
    # More rounds cannot decide it: the cell failed (error, mismatch, ...) or ran on one side.
    hopeless: bool = False


def judge(
    older: Sequence[Cell], newer: Sequence[Cell], threshold: float, alpha: float
) -> list[Judgement]:
    """Each cell both releases measured: ``slower`` when the gate fails it (significantly
    slower, by more than ``threshold``), ``faster`` for the same rule turned round, ``same``
    when the gate's rule says more rounds are useless otherwise (its interval shows no
    slowdown beyond the threshold), ``undecided`` while none is shown (or the cell failed)."""
    rows = compare_runs(_unplaced(older), _unplaced(newer), threshold, alpha=alpha)
    return [_judgement(row, threshold) for row in rows]


def _unplaced(cells: Sequence[Cell]) -> list[Cell]:
    """The cells with their stack's environment left out of its name: each release runs the
    same stacks in an environment of its own, and the comparison pairs cells by stack."""
    unplaced = []
    for cell in cells:
        framework, mode, _ = split_stack(cell.stack)
        unplaced.append(dataclasses.replace(cell, stack=str(Stack(framework, mode))))
    return unplaced


def _judgement(row: ComparisonRow, threshold: float) -> Judgement:
    result = row.result
    if result is None or row.note:
        return Judgement(row.label, UNDECIDED, detail=row.broken or row.note, hopeless=True)
    if result.verdict == INCONCLUSIVE:  # too few workers: its interval is not the gate's
        return Judgement(row.label, UNDECIDED, result.ratio, math.nan, math.nan, result.describe())
    gate = Gate(fail_above=threshold * 100)
    if row.regression_above(threshold * 100):
        word = SLOWER
    elif result.verdict in SIGNIFICANTLY_FASTER and 1 / result.ratio - 1 > threshold:
        word = FASTER  # the gate's rule turned round: a speed-up beyond the threshold
    elif ab.settled(row, gate):
        word = SAME
    else:
        word = UNDECIDED
    return Judgement(
        row.label, word, result.ratio, result.ci_low, result.ci_high, result.describe()
    )
