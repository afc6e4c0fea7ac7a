"""The gate's family of tests: every cell x {time, memory} of one ``compare`` or ``ab``
(every look included, ``timing/sequential.py``) is one family with one false-alarm budget.

The procedure is Holm's step-down (Holm 1979): sort the p-values, compare the k-th smallest
with ``alpha / (m - k + 1)``, stop at the first that is not below. It bounds the chance of
naming *any* unchanged cell as a regression by ``alpha``, whatever the dependence between
cells (the family-wise error rate, in the strong sense: also when other cells really changed).
Benjamini-Hochberg would be more powerful when many cells regress at once, but it bounds only
the expected share of false names among the cells named: a change that slows one cell would
let BH name unchanged cells beside it, and a team acts on each name (a bisect, a revert). A
gate's usual day is one change touching a few cells, where Holm loses little.

A session that looks once, its cells paired by round, is judged instead by step-down max-T
over joint sign flips of its rounds (``timing/maxt.py``): the same strong control, exact
under the exchangeability the session's random side order makes, and without Holm's need
of 2^-n < alpha / m before any cell of m can fail.

Passing is the other direction: the suite passes when every cell is shown not slower than the
limit. That is an intersection of per-cell claims, each tested at ``alpha`` with no correction
(the intersection-union principle, Berger 1982): to pass wrongly, the one cell that truly
regressed must pass its own test, which happens with probability at most ``alpha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HOLM = "holm"
DEFAULT_FAMILY_ALPHA = 0.05  # false alarms per suite run


@dataclass(frozen=True)
class Family:
    """What one gate's verdict is controlled over: ``hypotheses`` one-sided regression tests
    (cells x measures) at ``alpha`` together, by ``procedure``, over ``looks``."""

    alpha: float
    hypotheses: int
    looks: str  # "one look" or "rounds F to L"
    procedure: str = HOLM

    def describe(self) -> str:
        return (
            f"family: {self.hypotheses} regression tests (cells x measures, {self.looks}), "
            f"false alarms at most {self.alpha * 100:g} % per suite run ({self.procedure.title()})"
        )


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Which hypotheses Holm's step-down rejects at family-wise level ``alpha``."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, index in enumerate(order):
        if p_values[index] >= alpha / (len(p_values) - rank):
            break
        rejected[index] = True
    return rejected


def holm_level(alpha: float, hypotheses: int) -> float:
    """The level the smallest p-value of a family must beat (Holm's first step)."""
    return alpha / max(hypotheses, 1)
