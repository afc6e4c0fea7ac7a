"""What instruments show of a run, found rather than listed (as ``commands.discover()`` finds
commands): every ``render.py`` (or ``render/`` folder) under ``stackwars/instruments/`` may
declare ``SECTIONS``, its sections as :class:`InstrumentSection`. ``stackwars show`` prints
each section of a run, and ``stackwars report`` lays each out after the core's section it
names, so the core's show and report name no instrument: an instrument that keeps data with a
run (``Store.add_data``) shows it by adding its section to its own ``render.py``.

``FOLDERS`` is where discovery looks: the instruments' package, and more (folder, module
prefix) pairs a test or a plug-in adds.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stackwars import instruments
from stackwars.report.html.blocks import Block
from stackwars.results.run import Run

FOLDERS: list[tuple[str, str]] = [
    (folder, "stackwars.instruments.") for folder in instruments.__path__
]


def _nothing(run: Run) -> str:
    del run
    return ""


@dataclass(frozen=True)
class InstrumentSection:
    """One section an instrument shows of runs.

    ``id`` and ``heading``: the report's anchor and heading; ``after``: the id of the core's
    report section it follows (``report/html/data.py``'s ``SECTIONS``); ``kinds``: the kinds
    of run ``show`` prints it for (a run of another kind than ``timing`` has no cells: ``show``
    prints only its sections); ``console(run, details)``: what ``show`` prints (rich
    renderables; none: nothing to show); ``markdown(run)``: what ``show --markdown`` adds;
    ``report(inputs)``: the blocks of the report's section (``inputs`` is
    ``report/html/data.py``'s ``ReportInputs``: the runs and what the command gathered), or
    none for a section that says ``empty`` instead (why nothing is shown)."""

    id: str
    heading: str
    after: str
    console: Callable[[Run, bool], Sequence[Any]]
    report: Callable[[Any], Sequence[Block]]
    empty: str
    markdown: Callable[[Run], str] = _nothing
    kinds: tuple[str, ...] = ("timing",)


def discover() -> list[InstrumentSection]:
    """Every instrument's sections, in the order of their modules' names."""
    names = sorted(
        name
        for folder, prefix in FOLDERS
        for name in instruments.role_modules("render", [folder], prefix)
    )
    found: list[InstrumentSection] = []
    for name in names:
        found += getattr(importlib.import_module(name), "SECTIONS", ())
    ids = [section.id for section in found]
    duplicated = {id for id in ids if ids.count(id) > 1}
    assert not duplicated, f"two sections are called {sorted(duplicated)}"
    return found
