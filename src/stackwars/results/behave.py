"""One probe's outcome on one stack (``stackwars behave``), as data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    probe: str
    stack: str
    outcome: str  # works, error, silently different, retraced N, unsupported, timeout, oom
    detail: str
    compiles: int | None = None
