"""``stackwars behave`` as a matrix: probes down, stacks across, one outcome per cell."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from stackwars.frameworks import all_stacks
from stackwars.instruments.behave import probes
from stackwars.instruments.behave.data import INSTRUMENT, Outcome, outcome_from_dict
from stackwars.report.sections import InstrumentSection
from stackwars.results.run import Run

# By the outcome's first word; anything else (retraced N, timeout, oom) is yellow.
STYLES = {
    "works": "green",
    "unsupported": "dim",
    "error": "red",
    "silently": "magenta",
    "fallback": "cyan",
}


def in_order(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """Probes in the catalogue's order, stacks in the registry's, whatever order the workers
    ended in (names neither knows come after the known ones; sorting is stable)."""
    probe_order = {name: i for i, name in enumerate(probes.registry())}
    return sorted(
        outcomes, key=lambda o: (probe_order.get(o.probe, len(probe_order)), _stack_rank(o))
    )


def _stack_rank(outcome: Outcome) -> int:
    order = [str(stack) for stack in all_stacks()]
    return order.index(outcome.stack) if outcome.stack in order else len(order)


def behave_matrix(outcomes: Sequence[Outcome]) -> Table:
    ordered = in_order(outcomes)
    stacks = list(dict.fromkeys(o.stack for o in sorted(ordered, key=_stack_rank)))
    names = list(dict.fromkeys(o.probe for o in ordered))
    cells = {(o.probe, o.stack): o for o in ordered}
    table = Table("probe", *stacks, title="How each stack behaves")
    for name in names:
        row = [Text(name)]
        for stack in stacks:
            outcome = cells.get((name, stack))
            text = outcome.outcome if outcome else ""
            row.append(Text(text, style=STYLES.get(text.split(" ")[0], "yellow")))
        table.add_row(*row)
    return table


def behave_details(outcomes: Sequence[Outcome]) -> list[Text]:
    """One line per cell: what happened, in the worker's words (as text: an error message's
    brackets, such as x[idx], are not markup)."""
    return [
        Text(f"{o.probe} on {o.stack}: {o.outcome}: {' '.join(o.detail.split())}")
        for o in in_order(outcomes)
    ]


def behave_report(outcomes: Sequence[Outcome], details: bool) -> list[Table | Text]:
    """The matrix, and with ``details`` one line per cell after it."""
    return [behave_matrix(outcomes), *(behave_details(outcomes) if details else [])]


def _shown(run: Run, details: bool) -> list[Table | Text]:
    outcomes = [outcome_from_dict(data) for data in run.entries(INSTRUMENT)]
    return behave_report(outcomes, details)


# What show prints of a behave run (report/sections.py finds it); the report needs timings.
SECTIONS = (
    InstrumentSection(
        id="behave",
        heading="How each stack behaves",
        after="runs",
        console=_shown,
        report=lambda inputs: [],
        empty="",
        kinds=("behave",),
    ),
)
