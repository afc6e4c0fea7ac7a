"""A run's IR captures as data: what ``run --capture-ir`` found for one cell (the store keeps
the texts in its ``captures`` table)."""

from __future__ import annotations

from dataclasses import dataclass

from stackwars.results.schema import Cell


@dataclass(frozen=True)
class RunCapture:
    """One ok cell's IR, captured after its run: each stage's text, and the stages that could
    not be captured (with why)."""

    cell: Cell
    texts: dict[str, str]
    unavailable: dict[str, str]
