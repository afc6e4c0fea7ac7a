"""``stackwars profile``'s cells: one per stack, the same workload and parameters, on cpu."""

from __future__ import annotations

from stackwars import workloads
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stacks
from stackwars.runner import plan
from stackwars.runner.protocol import CellSpec


def profile_cells(
    workload: str, params: tuple[str, ...], stacks: str, workload_files: tuple[str, ...] = ()
) -> list[CellSpec]:
    """One cell per stack to profile (one value per parameter), on cpu."""
    for path in workload_files:
        workloads.load_workload_file(path)
    found = workloads.get(workload)
    values = plan.parse_param_args(found, params)
    if any(len(v) > 1 for v in values.values()):
        raise UsageError("profile compares one cell across stacks: give one value per --param")
    return plan.cells_for(found, values, parse_stacks(stacks), "cpu")
