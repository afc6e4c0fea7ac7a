"""``stackwars behave`` as a matrix: probes down, stacks across, one outcome per cell."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from stackwars.results.behave import Outcome

STYLES = {"works": "green", "unsupported": "dim", "error": "red", "silently different": "magenta"}


def behave_matrix(outcomes: Sequence[Outcome]) -> Table:
    stacks = list(dict.fromkeys(o.stack for o in outcomes))
    probes = list(dict.fromkeys(o.probe for o in outcomes))
    cells = {(o.probe, o.stack): o for o in outcomes}
    table = Table("probe", *stacks, title="How each stack behaves")
    for probe in probes:
        row = [Text(probe)]
        for stack in stacks:
            outcome = cells.get((probe, stack))
            text = outcome.outcome if outcome else ""
            row.append(Text(text, style=STYLES.get(text.split(" ")[0], "yellow")))
        table.add_row(*row)
    return table


def behave_details(outcomes: Sequence[Outcome]) -> list[str]:
    """One line per cell: what happened, in the worker's words."""
    return [f"{o.probe} on {o.stack}: {o.outcome}: {' '.join(o.detail.split())}" for o in outcomes]
