"""Variants: ok cells of one workload that differ in exactly one text parameter (``style``:
a Python loop, vmap or code vectorised by hand; ``api``: torch.func or torch.autograd), found
here and shown by ``report/variants.py`` as one table per group with a column per value and
each value's speed-up over the first.

This answers "is vmap of good use?" per stack in one look: the loop's time, vmap's, the
hand-written code's, and the ratios, each from the same run (numeric parameters are sweeps,
``results/crossover.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from stackwars import workloads
from stackwars.errors import StackwarsError
from stackwars.results.schema import Cell

Fixed = tuple[tuple[str, object], ...]
GroupKey = tuple[str, str, Fixed, str, bool]  # workload, parameter, the others, device, host


@dataclass(frozen=True)
class Variants:
    workload: str
    param: str
    values: tuple[str, ...]  # in the order first measured: the first is the reference
    fixed: Fixed
    rows: dict[str, dict[str, Cell]]  # stack -> value -> cell

    def title(self) -> str:
        fixed = ", ".join(f"{k}={v}" for k, v in self.fixed)
        return f"{self.workload}({fixed}) by {self.param}"


def find_variants(cells: Iterable[Cell]) -> list[Variants]:
    """Every group of ok cells with a steady median that differ in one text parameter only,
    when two or more of its values were measured."""
    groups: dict[GroupKey, dict[str, dict[str, Cell]]] = {}
    for cell in cells:
        if cell.status != "ok" or not cell.steady.median_s:
            continue
        for param, value in cell.params.items():
            if not isinstance(value, str) or param == "dtype":
                continue
            fixed: Fixed = tuple(sorted((k, v) for k, v in cell.params.items() if k != param))
            key = (cell.workload, param, fixed, cell.device, cell.to_host)
            groups.setdefault(key, {}).setdefault(cell.stack, {})[value] = cell
    found = []
    for (workload, param, fixed, _device, _host), rows in groups.items():
        seen = dict.fromkeys(value for row in rows.values() for value in row)
        values = tuple(sorted(seen, key=_choice_order(workload, param, list(seen))))
        if len(values) > 1:
            found.append(Variants(workload, param, values, fixed, rows))
    return found


def _choice_order(workload: str, param: str, seen: list[str]) -> Callable[[str], int]:
    """The order the workload lists the parameter's choices in (loop, vmap, vectorised), else
    the order first measured."""
    try:
        choices = [str(choice) for choice in workloads.get(workload).param(param).choices]
    except StackwarsError:  # a workload no longer registered (an old run's workload file)
        choices = []
    order = choices + [value for value in seen if value not in choices]
    return order.index
