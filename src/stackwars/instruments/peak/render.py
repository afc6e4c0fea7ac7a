"""The machine's peak as labelled display strings (``stackwars env``)."""

from __future__ import annotations

from stackwars.results.peak import Peak


def peak_rows(peak: Peak) -> dict[str, str]:
    """The peak as labelled display strings (for ``stackwars env --peak``)."""
    best = peak.details.get("best", {})
    rows = {
        f"GEMM {dtype}": f"{rate / 1e9:.1f} GFLOP/s ({best.get(f'gemm_{dtype}', '?')})"
        for dtype, rate in peak.flops_per_s.items()
    }
    rows["bandwidth"] = (
        f"{peak.bandwidth_bytes_per_s / 1e9:.1f} GB/s STREAM triad ({best.get('bandwidth', '?')})"
    )
    rows["measured"] = peak.measured + (" (quick: not a peak)" if peak.details.get("quick") else "")
    return rows
