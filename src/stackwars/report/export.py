"""A run as CSV: one row per cell, dotted column names (``steady.median_s``); a behave run
one row per probe and stack."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from stackwars.results import flat
from stackwars.results.run import Run


def to_csv(record: Run) -> str:
    rows = flat.rows([record])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=flat.columns(rows), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def outcomes_csv(outcomes: Sequence[dict[str, Any]]) -> str:
    columns = list(dict.fromkeys(key for outcome in outcomes for key in outcome))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(
        {
            key: value if isinstance(value, str | int | float) or value is None else str(value)
            for key, value in outcome.items()
        }
        for outcome in outcomes
    )
    return buffer.getvalue()
