"""A paired cell of two speeds, as data: its speeds, its time within them and the time its
share of slow processes adds, each compared by round (``timing/speeds.py`` says why and how;
``results/comparison.py``'s ``decide`` gates on both, in place of the cell's whole time)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from stackwars.timing.compare import Comparison, compare_paired
from stackwars.timing.sequential import Looks
from stackwars.timing.speeds import Known, Speeds, speed_levels, split, within_speed

# The two tests that stand for a split cell's time in the gate's family.
WITHIN_SPEED = "time within its speeds"
SPEED_SHARE = "share of its slow speed"


@dataclass(frozen=True)
class SpeedSplit:
    speeds: Speeds
    within: Comparison  # each round's times over their speeds' levels, paired
    share: Comparison  # each round's speed levels, paired: the time the slow share adds
    known: Known | None = None  # what the A/A session the split was planned on measured

    def describe(self) -> str:
        before = ""
        if self.known is not None and self.known.slow_share is not None:
            before = f" ({self.known.slow_share:.0%} in the noise table's A/A rounds)"
        return (
            f"{self.speeds.describe()}{before}; within its speeds {_change(self.within)}; its "
            f"share of the slow speed adds {_change(self.share)}"
        )


def _change(result: Comparison) -> str:
    if math.isnan(result.ci_low):
        return f"{(result.ratio - 1) * 100:+.1f}% ({result.verdict})"
    return (
        f"{(result.ratio - 1) * 100:+.1f}% [{(result.ci_low - 1) * 100:+.1f}%, "
        f"{(result.ci_high - 1) * 100:+.1f}%] ({result.verdict})"
    )


def speed_split(
    baseline: Sequence[float],
    candidate: Sequence[float],
    looks: Looks,
    *,
    threshold: float,
    alpha: float,
    indices: Sequence[int] = (),
    known: Known | None = None,
) -> SpeedSplit | None:
    """A session's rounds of one cell (each round's baseline and candidate time) split at its
    two speeds and compared within them and by their share; None when its times do not part
    (``known``: what an A/A session measured of its speeds; None: the pooled speeds' own)."""
    speeds = split([math.log(t) for t in (*baseline, *candidate)], known)
    if speeds is None:
        return None
    within = compare_paired(
        within_speed(speeds, baseline), within_speed(speeds, candidate), looks,
        threshold=threshold, alpha=alpha, indices=indices,
    )  # fmt: skip
    share = compare_paired(
        speed_levels(speeds, baseline), speed_levels(speeds, candidate), looks,
        threshold=threshold, alpha=alpha, indices=indices, trim=0.0,
    )  # fmt: skip
    return SpeedSplit(speeds, within, share, known)
