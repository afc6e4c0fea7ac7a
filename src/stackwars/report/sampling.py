"""How a run chose its workers, in one line each: what ``--second-look`` checked and found, and
what ``--repeat auto``'s pilot planned (``service/adaptive.py`` keeps both in the cells'
settings)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from stackwars.results.schema import Cell


def second_look_line(cells: Sequence[Cell]) -> str:
    """What --second-look checked, and found."""
    ok = [cell for cell in cells if cell.status == "ok"]
    looked = [cell for cell in ok if cell.settings.get("second_look", {}).get("status") == "ok"]
    apart = [cell for cell in looked if cell.settings.get("workers_disagree")]
    return (
        f"second look: {len(looked)} of {len(ok)} ok cells measured again in a fresh worker "
        f"(--second-look, not in their numbers); {len(apart)} whose two workers disagree (≋); "
        "the others rest on one process (--repeat 3 measures every cell across processes)"
    )


def pilot_line(cells: Sequence[Cell]) -> str:
    """What --repeat auto's pilot planned for each cell (each worker's cell given), and where
    the time budget stopped a cell short of it; '' when no pilot ran."""
    workers = Counter(cell.key() for cell in cells)
    piloted = [cell for cell in cells if "pilot" in cell.settings]
    if not piloted:
        return ""
    planned = [cell.settings["pilot"]["planned_workers"] for cell in piloted]
    short = sum(1 for cell, n in zip(piloted, planned, strict=True) if workers[cell.key()] < n)
    line = (
        f"--repeat auto: a pilot of {piloted[0].settings['pilot']['workers']} workers a cell "
        f"(not in the numbers) planned {min(planned)} to {max(planned)} workers for a "
        "±3 % interval across workers"
    )
    if short:
        line += f"; {short} cell(s) stopped short of it at the time budget"
    return line
