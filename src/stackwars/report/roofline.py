"""A cell's place under this machine's roofline as the tables write it; the numbers are
``results/roofline.py``'s."""

from __future__ import annotations

from stackwars.results.peak import Peak
from stackwars.results.roofline import (
    arithmetic_intensity,
    bound_kind,
    cell_dtype,
    roofline_fraction,
)
from stackwars.results.schema import Cell


def format_roofline(cell: Cell, peak: Peak) -> str:
    """``"AI 0.75 F/B, 38% of memory bound"``; ``""`` when the cell cannot be placed."""
    fraction = roofline_fraction(cell, peak)
    intensity = arithmetic_intensity(cell.work.flops, cell.work.bytes)
    dtype = cell_dtype(cell)
    if fraction is None or intensity is None or dtype is None:
        return ""
    kind = bound_kind(peak, dtype, intensity)
    return f"AI {_significant(intensity)} F/B, {_percent(fraction)} of {kind} bound"


def _significant(value: float) -> str:
    """Three significant digits, without scientific notation from 1000 up."""
    return f"{value:.0f}" if value >= 1000 else f"{value:.3g}"


def _percent(fraction: float) -> str:
    percent = fraction * 100
    return f"{percent:.0f}%" if percent >= 10 else f"{percent:.2g}%"
