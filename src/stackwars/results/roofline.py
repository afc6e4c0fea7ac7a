"""Where a cell sits under this machine's roofline: pure functions of a Cell and a Peak
(written out by ``report/roofline.py``).

The roofline bound of a computation with ``F`` FLOPs moving ``B`` bytes (arithmetic intensity
``I = F / B``) is ``min(peak FLOP/s, I × bandwidth)``. The achieved fraction is the cell's
FLOP/s over that bound, computed as the roofline's shortest possible time over the measured
median, ``max(F / peak, B / bandwidth) / median``: the same number when ``F > 0``, and for
a workload with no FLOPs (a copy) it is the fraction of the bandwidth reached.

Work counts are the workload's analytic minimum (each input read once, each output written
once), so a fraction above 1 means the data stayed in a cache, or the peak was measured on a
busy machine.
"""

from __future__ import annotations

from typing import Literal

from stackwars.results.peak import Peak
from stackwars.results.schema import Cell

BoundKind = Literal["compute", "memory"]


def arithmetic_intensity(flops: float | None, nbytes: float | None) -> float | None:
    """FLOPs per byte; None when either count is unknown or no bytes move."""
    if flops is None or nbytes is None or nbytes <= 0:
        return None
    return flops / nbytes


def roofline_bound(peak: Peak, dtype: str, intensity: float) -> float:
    """Attainable FLOP/s at ``intensity``; KeyError for a dtype the peak has no GEMM for."""
    return min(peak.flops_per_s[dtype], intensity * peak.bandwidth_bytes_per_s)


def bound_kind(peak: Peak, dtype: str, intensity: float) -> BoundKind:
    """``memory`` left of the ridge point (peak FLOP/s / bandwidth), ``compute`` from it on."""
    if intensity * peak.bandwidth_bytes_per_s < peak.flops_per_s[dtype]:
        return "memory"
    return "compute"


def cell_dtype(cell: Cell) -> str | None:
    """The dtype the cell computed in: the one parity saw, else the one it asked for.

    A cell with outputs of several dtypes is placed by its requested dtype when that is one of
    them, and not at all otherwise.
    """
    requested = cell.params.get("dtype", "float32")
    computed = cell.parity.computed_dtype
    if not computed:
        return requested
    names = computed.split(",")
    if len(names) == 1:
        return names[0]
    return requested if requested in names else None


def roofline_fraction(cell: Cell, peak: Peak) -> float | None:
    """Achieved FLOP/s over the roofline bound; None when the cell cannot be placed.

    None when the cell is not ok, lacks a median or work counts, or computed in a dtype the
    peak has no GEMM number for (integers, bfloat16).
    """
    median, flops, nbytes = cell.steady.median_s, cell.work.flops, cell.work.bytes
    dtype = cell_dtype(cell)
    if cell.status != "ok" or median is None or median <= 0 or flops is None:
        return None
    if nbytes is None or nbytes <= 0 or dtype not in peak.flops_per_s:
        return None
    shortest_s = max(flops / peak.flops_per_s[dtype], nbytes / peak.bandwidth_bytes_per_s)
    return shortest_s / median
