"""``stackwars profile``'s service: its cells (one per stack, the same workload and parameters,
on cpu), each timed and profiled in a fresh worker, as data (nothing printed)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from stackwars import workloads
from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stacks
from stackwars.instruments.profile import task
from stackwars.instruments.profile.data import INSTRUMENT
from stackwars.profiling.result import PROFILE_FORMAT, Profile
from stackwars.results.run import Run
from stackwars.results.schema import CellSpec
from stackwars.results.store import Store
from stackwars.runner import plan
from stackwars.runner.child import Listener


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


@dataclass(frozen=True)
class ProfileAfterRun:
    """``run --profile``, an after-run step (``service.execution.AfterRun``): each ok cell (of
    ``stacks``; empty: every stack) profiled in a fresh worker after the run, each profile
    stored with the run as it ends, the raw traces beside the store
    (``stackwars-profiles/RUN``)."""

    stacks: frozenset[str] = frozenset()
    name: str = "profile"

    @classmethod
    def of(cls, text: str) -> ProfileAfterRun:
        """``--profile``'s value: a comma list of stacks, or '*' (every stack); bad names are
        refused before anything runs."""
        if text == "*":
            return cls()
        return cls(frozenset(str(stack) for stack in parse_stacks(text)))

    def findings(
        self, record: Run, options: RunOptions, files: Path, on_progress: Callable[[str], None]
    ) -> Iterator[Profile]:
        root = files / "stackwars-profiles" / record.id
        yield from task.profile_run(
            record,
            options,
            root,
            stacks=self.stacks,
            on_progress=lambda label, text: on_progress(f"{label}: {text}"),
        )

    def keep(self, results: Store, record: Run, finding: Profile) -> None:
        record.keep(INSTRUMENT, PROFILE_FORMAT, finding.to_dict())
        results.add_data(record, INSTRUMENT, PROFILE_FORMAT, finding.to_dict())
