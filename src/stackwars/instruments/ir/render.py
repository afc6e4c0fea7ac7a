"""What ``run --capture-ir`` printed after the run: a line per cell captured."""

from __future__ import annotations

from collections.abc import Sequence

from stackwars.results.captures import RunCapture


def after_run_lines(captures: Sequence[RunCapture]) -> list[str]:
    """Per cell: how many stages were stored, and which could not be captured."""
    return [
        f"IR of {capture.cell.label()}: {len(capture.texts)} stage(s) stored; "
        f"missing: {', '.join(capture.unavailable) or 'none'}"
        for capture in captures
    ]
