"""One probe's outcome on one stack (``stackwars behave``), as data."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# What the instrument keeps with a behave run (the store's instrument_data): each outcome as
# ``dataclasses.asdict(Outcome)``, a payload of format OUTCOME_FORMAT. History: 1 (2026-11-23,
# store version 4's outcomes table), the fields of Outcome.
INSTRUMENT = "behave"
OUTCOME_FORMAT = 1


@dataclass(frozen=True)
class Outcome:
    probe: str
    stack: str
    # works, error, silently different, fallback, retraced N, unsupported, timeout, oom; for a
    # probe of random draws: same numbers, new numbers
    outcome: str
    detail: str
    compiles: int | None = None
    # Per call, in order: [seconds, compilations so far] (what each retrace cost)
    calls: list[list[float]] | None = None


def outcome_from_dict(data: dict[str, Any]) -> Outcome:
    """An outcome as stored or exported; fields this version does not know are ignored."""
    known = {field.name for field in dataclasses.fields(Outcome)}
    return Outcome(**{key: value for key, value in data.items() if key in known})
