"""Which machine each cell ran on, for the readers that must not mix machines.

A run on one machine records that machine in every cell's ``node``; a run on a Ray cluster
records each cell's own node, and nodes may differ in CPU, memory or accelerators. Times from
different hardware are not comparable, so tables group cells by machine and comparisons say
when the cells they put side by side ran on different machines. Cells from files older than
``node`` (schema version 1) carry none: all of a run's cells ran on its machine then.
"""

from __future__ import annotations

from collections.abc import Iterable

from stackwars.results.schema import Cell


def machine_of(cell: Cell) -> str | None:
    """The fingerprint of the machine ``cell`` ran on; None when it ran nowhere (a skipped
    cell, a task lost with its node) or was stored before cells recorded their machine."""
    return cell.node.get("fingerprint") or None


def machine_label(cell: Cell) -> str:
    """``host (fingerprint)``, how tables and comparisons name a cell's machine."""
    fingerprint = machine_of(cell)
    if fingerprint is None:
        return "no machine recorded"
    return f"{cell.node.get('hostname') or '?'} ({fingerprint})"


def machines(cells: Iterable[Cell]) -> dict[str, str]:
    """Each fingerprint among ``cells`` with its label, in first-seen order."""
    found: dict[str, str] = {}
    for cell in cells:
        fingerprint = machine_of(cell)
        if fingerprint is not None and fingerprint not in found:
            found[fingerprint] = machine_label(cell)
    return found


def mixed_machines(cells: Iterable[Cell]) -> str:
    """Why ``cells`` may not be judged against each other ('' when they ran on one machine,
    or do not say where they ran)."""
    found = machines(cells)
    if len(found) < 2:
        return ""
    return (
        f"the cells ran on different machines ({', '.join(found.values())}): times from "
        "different hardware are not compared"
    )
