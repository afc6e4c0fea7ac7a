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
    """The identity of the machine ``cell`` ran on (its fingerprint, and its Ray node's kind);
    None when it ran nowhere (a skipped cell, a task lost with its node) or was stored before
    cells recorded their machine."""
    fingerprint = cell.node.get("fingerprint")
    if not fingerprint:
        return None
    kind = node_kind(cell)
    return f"{fingerprint} {kind}" if kind else fingerprint


def node_kind(cell: Cell) -> str:
    """``Ray node CPU=2 GPU=1 ...``: the resources of the Ray node ``cell`` ran on ('' off Ray)."""
    resources = cell.node.get("ray_resources")
    if not resources:
        return ""
    return " ".join(["Ray node", *(f"{name}={amount:g}" for name, amount in resources.items())])


def machine_label(cell: Cell) -> str:
    """``host (fingerprint[, Ray node ...])``, how tables and comparisons name a machine."""
    fingerprint = cell.node.get("fingerprint")
    if not fingerprint:
        return "no machine recorded"
    kind = node_kind(cell)
    where = f"{fingerprint}, {kind}" if kind else fingerprint
    return f"{cell.node.get('hostname') or '?'} ({where})"


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
