"""Warnings, with numbers, for measurements that deserve less trust than their median suggests.

Each check looks at the raw measurement only, so the same rules apply to every stack.
"""

from __future__ import annotations

import statistics

from stackwars.timing.compare import mann_whitney_p
from stackwars.timing.timer import Measurement

# IQR above this share of the median: the samples disagree enough that the median hides it.
SPREAD_LIMIT = 0.10
# The second half of the steady phase differing from the first by more than this, and
# significantly so, means the level moved while it was measured (thermal, another process).
DRIFT_LIMIT = 0.05
DRIFT_ALPHA = 0.01
MIN_BLOCKS_FOR_DRIFT = 20


def measurement_warnings(m: Measurement) -> list[str]:
    warnings = []
    if m.compiles_steady:
        warnings.append(
            f"{m.compiles_steady} compilation(s) during steady state: the steady time includes "
            "compile time"
        )
    if not m.warmup_settled:
        warnings.append(f"warm-up did not settle in {len(m.runs_s)} runs")
    if not m.stable:
        half = m.summary().ci_half_width_rel
        warnings.append(
            f"not stable: 95% CI half-width {half:.1%} of the median after "
            f"{len(m.block_s)} blocks in {m.steady_wall_s:.2f} s"
        )
    warnings.extend(filter(None, (spread_warning(m.samples_s), drift_warning(m.samples_s))))
    return warnings


def spread_warning(samples: list[float]) -> str:
    if len(samples) < 4:
        return ""
    quartiles = statistics.quantiles(samples, n=4, method="inclusive")
    median = statistics.median(samples)
    spread = (quartiles[2] - quartiles[0]) / median if median > 0 else 0.0
    if spread <= SPREAD_LIMIT:
        return ""
    return f"spread: IQR is {spread:.0%} of the median (above {SPREAD_LIMIT:.0%})"


def drift_warning(samples: list[float]) -> str:
    if len(samples) < MIN_BLOCKS_FOR_DRIFT:
        return ""
    middle = len(samples) // 2
    first, second = samples[:middle], samples[middle:]
    change = statistics.median(second) / statistics.median(first) - 1
    if abs(change) <= DRIFT_LIMIT:
        return ""
    p_value = mann_whitney_p(first, second)
    if p_value >= DRIFT_ALPHA:
        return ""
    direction = "slower" if change > 0 else "faster"
    return (
        f"drift: the second half of the steady phase is {abs(change):.1%} {direction} "
        f"than the first (p={p_value:.2g})"
    )
