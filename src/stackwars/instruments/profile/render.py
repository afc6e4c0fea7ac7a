"""What the profile instrument shows of runs: the report's "Where the time goes" section, each
profiled cell's stacks side by side (``report/html/profiles.py``'s views of the profiles a run
keeps, ``run --profile``, and of ``report --profiles`` files)."""

from __future__ import annotations

from typing import Any

from stackwars.report.html.blocks import Block, Folded, Heading, Paragraph, TableBlock
from stackwars.report.html.profiles import EMPTY, profile_views
from stackwars.report.profile import ADDS_UP_CAPTION, OPERATION_COLUMNS
from stackwars.report.sections import InstrumentSection


def _reported(inputs: Any) -> list[Block]:
    views = profile_views(inputs.runs, inputs.profile_files)
    if not views:
        return []
    blocks: list[Block] = [Paragraph(ADDS_UP_CAPTION)]
    for view in views:
        blocks += [Heading(view.title, view.anchor), TableBlock(view.columns, view.rows)]
        blocks += [
            Folded(title, (TableBlock(OPERATION_COLUMNS, rows, wide=frozenset({0, 6})),))
            for title, rows in view.operations
        ]
        blocks += [Paragraph(note) for note in view.notes]
    return blocks


# The report's section of profiles (report/sections.py finds it); show prints none.
SECTIONS = (
    InstrumentSection(
        id="profiles",
        heading="Where the time goes: per-operation profiles",
        after="explain",
        console=lambda run, details: [],
        report=_reported,
        empty=EMPTY,
    ),
)
