"""``stackwars ir``'s cells: one per stack, one value per parameter, on one device; the
capture itself is the core's (``runner/ir_task.py``: a run's ``--capture-ir`` and claims' IR
lines use it too)."""

from __future__ import annotations

from collections.abc import Sequence

from stackwars import workloads
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stack, parse_stacks
from stackwars.runner import plan
from stackwars.runner.protocol import CellSpec
from stackwars.service.choices import Selection


def ir_cells(selection: Selection, diff: Sequence[str] = (), device: str = "cpu") -> list[CellSpec]:
    """One cell per stack for IR capture on ``device``; ``diff`` names two of the stacks to
    compare."""
    for path in selection.workload_files:
        workloads.load_workload_file(path)
    workload = workloads.get(selection.workload or "")
    values = plan.parse_param_args(workload, selection.params)
    if any(len(v) > 1 for v in values.values()):
        raise UsageError("ir captures one cell per stack: give one value per --param")
    names = selection.stacks or ",".join(diff)
    if not names:
        raise UsageError("name the stacks: --stacks jax:jit,torch:xla or --diff A B")
    stacks = parse_stacks(names)
    for name in diff:
        if parse_stack(name) not in stacks:
            raise UsageError(f"--diff {name} must be one of --stacks")
    return plan.cells_for(workload, values, stacks, device)
