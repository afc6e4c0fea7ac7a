"""``stackwars profile``'s service: its cells (one per stack, the same workload and parameters,
on cpu), each timed and profiled in a fresh worker, as data (nothing printed)."""

from __future__ import annotations

from pathlib import Path

from stackwars import workloads
from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stacks
from stackwars.instruments.profile import task
from stackwars.profiling.result import Profile
from stackwars.runner import plan
from stackwars.runner.child import Listener
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


def profile_cell(
    spec: CellSpec,
    options: RunOptions,
    out_dir: Path,
    calls: int,
    on_progress: Listener | None = None,
) -> Profile:
    """One cell timed, then ``calls`` steady calls profiled, in a profile worker (the
    profiler's files in ``out_dir``); unsupported without a worker for a stack that has no
    profiler or is not installed."""
    return task.profile_stack(spec, options, out_dir, calls, on_progress)
