"""Westfall and Young's step-down max-T (1993) over a session's whole family, by joint sign
flips of whole rounds: the gate's fail rule when a session looks once (issue 54).

A session's evidence is one paired log ratio per hypothesis (a cell x measure) and round:
``log(candidate) - log(baseline)`` of the round's two workers. When nothing changed and the
side that goes first is drawn at random each round (``instruments/ab/service.py``), the two
workers of a round are exchangeable, so flipping the sign of every ratio of one round at once
leaves the joint distribution of all the rounds unchanged, whatever the dependence between the
cells of a round (a burst that slows a whole side, a round effect shared by every cell). The
2^n patterns of n rounds are therefore equally likely under the null, and the distribution of
the largest Student t over any set of hypotheses is known exactly: its share of patterns.

Step-down (Westfall and Young, algorithm 2.8): order the hypotheses by their observed t,
largest first; the k-th one's adjusted p-value is the share of patterns whose largest t over
the hypotheses ranked k and after is at least its observed t, made monotone (never below the
one before it). Rejecting where the adjusted p-value is below ``alpha`` holds the family's
chance of any false rejection at ``alpha`` in the strong sense (subset pivotality holds: the
flips of a subset act on it alone). The smallest possible p-value is 2^-n, against Holm's
need of 2^-n < alpha / m for the first of m tests: with 30 cells Holm cannot reject before 10
rounds, max-T from 5.

Up to ``EXACT_FLIP_ROUNDS`` rounds every pattern is counted; beyond, as many patterns drawn
at random (seeded, the identity among them), whose p-value (1 + at least as large) / (1 +
drawn) stays valid. A hypothesis missing from a round (a cell that failed that round) has no
value there (NaN): its t uses its own rounds, and a flip changes only the values present.

NumPy is imported inside the functions (analysis only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stackwars.timing.sequential import EXACT_FLIP_ROUNDS, sign_patterns

PROCEDURE = "westfall-young max-T"


def flip_t(values: Any, signs: Any) -> Any:
    """Each hypothesis's Student t against 0 under each sign pattern: ``values`` (m, n) with
    NaN where missing, ``signs`` (P, n) -> (m, P). A hypothesis with no spread reads +inf or
    -inf by the sign of its mean (0 at 0); one with fewer than two values, 0 (no evidence)."""
    import numpy as np

    present = ~np.isnan(values)
    x = np.where(present, values, 0.0)
    count = present.sum(axis=1, keepdims=True).astype(np.float64)
    sums = x @ signs.T  # (m, P)
    squares = (x**2).sum(axis=1, keepdims=True)  # unchanged by any flip
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = sums / count
        variance = np.maximum(squares - sums**2 / count, 0.0) / (count - 1)
        t = mean / np.sqrt(variance / count)
        flat = np.sign(mean) * np.inf  # nan at a mean of 0: no evidence either way
    # No spread, up to the rounding of squares - sums^2 / count: every value the same.
    t = np.where(variance > 1e-12 * squares / count, t, flat)
    return np.where((count >= 2) & ~np.isnan(t), t, 0.0)


def adjusted_p_values(values: Sequence[Sequence[float]]) -> list[float]:
    """Step-down max-T adjusted one-sided p-values (small: the ratios lie above 0) of each
    hypothesis (a row of ``values``: its paired log ratio in each round, NaN where it did
    not run; every row as long as the session's rounds)."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return []
    m, n = data.shape
    signs = np.asarray(sign_patterns(n))
    drawn = n > EXACT_FLIP_ROUNDS  # the identity pattern is then added to the count
    t = flip_t(data, signs)
    observed = flip_t(data, np.ones((1, n)))[:, 0]
    order = np.argsort(-observed, kind="stable")
    # tail[k, p]: the largest t of the hypotheses ranked k and after, under pattern p.
    tail = np.maximum.accumulate(t[order][::-1], axis=0)[::-1]
    at_least = (tail >= observed[order][:, None] - 1e-12).sum(axis=1)
    p = (at_least + drawn) / (signs.shape[0] + drawn)
    p = np.maximum.accumulate(p)  # step-down: never below the hypothesis ranked before
    adjusted = np.empty(m)
    adjusted[order] = p
    return [float(value) for value in adjusted]


def rejected(values: Sequence[Sequence[float]], alpha: float) -> list[bool]:
    """Which hypotheses the step-down max-T rejects at family-wise level ``alpha``."""
    return [p < alpha for p in adjusted_p_values(values)]
