"""A run as CSV: one row per cell, dotted column names (``steady.median_s``)."""

from __future__ import annotations

import csv
import io

from stackwars.results import flat
from stackwars.results.run import Run


def to_csv(record: Run) -> str:
    rows = flat.rows([record])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=flat.columns(rows), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
