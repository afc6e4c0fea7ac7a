"""The seam between the bisection and the gate: two releases' cells in, one verdict a cell out
(``slower``, ``faster``, ``same`` or ``undecided``, with the ratio and its interval).

Everything the bisection knows of statistics passes through :func:`judge` (and
:func:`judged`, which also answers the gate's verdict the step shows); it uses the gate
(``results/comparison.py``'s rows, ``results/verdict.py``'s verdict: Holm over the step's
cells), so that another gate replaces this one module.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from stackwars.frameworks import Stack, split_stack
from stackwars.instruments.ab.bisect.search import FASTER, SAME, SLOWER, UNDECIDED
from stackwars.results.comparison import FAIL, PASSED, ComparisonRow, compare_runs
from stackwars.results.schema import Cell
from stackwars.results.verdict import ONE_LOOK, Verdict, gate_settings, verdict_of
from stackwars.timing.compare import INCONCLUSIVE, Comparison
from stackwars.timing.family import holm


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
    """Each cell both releases measured, judged as one gate family at ``alpha`` (Holm): ``slower``
    when the gate fails it (significantly slower, by more than ``threshold``), ``faster`` for
    the same rule turned round (Holm over the cells' "not faster", estimated faster by more
    than ``threshold``), ``same`` when the gate
    shows it within the threshold, ``undecided`` otherwise (or when the cell failed). A step
    that looks after several rounds passes ``alpha`` divided by its looks."""
    return judged(older, newer, threshold, alpha)[1]


def judged(
    older: Sequence[Cell],
    newer: Sequence[Cell],
    threshold: float,
    alpha: float,
    looks: str = ONE_LOOK,
) -> tuple[Verdict, list[Judgement]]:
    """:func:`judge`'s judgements, with the gate's verdict they come from (its family's looks
    described by ``looks``)."""
    rows = compare_runs(_unplaced(older), _unplaced(newer), threshold, alpha=alpha)
    limit = threshold * 100  # bisect reads "not slower" against the same limit as "slower"
    verdict = verdict_of(rows, gate_settings(limit, alpha_pct=alpha * 100, pass_below=limit), looks)
    faster = _significantly_faster(rows, alpha)
    judgements = [
        _judgement(row, state, threshold, index in faster)
        for index, (row, state) in enumerate(zip(rows, verdict.states, strict=True))
    ]
    return verdict, judgements


def _significantly_faster(rows: Sequence[ComparisonRow], alpha: float) -> set[int]:
    """The rows the gate's regression rule, turned round, names faster: Holm over every
    judged row's one-sided p-value against "not faster" at ``alpha``, as the gate's family is
    over "not slower" (the estimate beyond the threshold is ``_judgement``'s check)."""
    judged = [i for i, row in enumerate(rows) if row.judged and row.result is not None]
    p_values = [_result(rows[i]).p_below(0.0) for i in judged]
    return {i for i, rejected in zip(judged, holm(p_values, alpha), strict=True) if rejected}


def _result(row: ComparisonRow) -> Comparison:
    assert row.result is not None
    return row.result


def _unplaced(cells: Sequence[Cell]) -> list[Cell]:
    """The cells with their stack's environment left out of its name: each release runs the
    same stacks in an environment of its own, and the comparison pairs cells by stack."""
    unplaced = []
    for cell in cells:
        framework, mode, _ = split_stack(cell.stack)
        unplaced.append(dataclasses.replace(cell, stack=str(Stack(framework, mode))))
    return unplaced


def _judgement(row: ComparisonRow, state: str, threshold: float, faster: bool) -> Judgement:
    result = row.result
    if result is None or row.note:
        return Judgement(row.label, UNDECIDED, detail=row.broken or row.note, hopeless=True)
    if result.verdict == INCONCLUSIVE:  # too few workers: its interval is not the gate's
        return Judgement(row.label, UNDECIDED, result.ratio, math.nan, math.nan, result.describe())
    if state == FAIL:
        word = SLOWER
    elif faster and (1 / result.ratio - 1) > threshold:
        word = FASTER  # the gate's rule turned round: significant, estimated beyond it
    elif state == PASSED:
        word = SAME
    else:
        word = UNDECIDED
    return Judgement(
        row.label, word, result.ratio, result.ci_low, result.ci_high, result.describe()
    )
