"""The parent half of the profile worker (instruments/profile/worker.py): one cell profiled in a
fresh worker, and every ok cell of a run profiled after its timed cells and stored with it."""

from __future__ import annotations

import dataclasses
import re
import tempfile
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from stackwars.config import RunOptions
from stackwars.profiling.capture import no_profiler_reason, profiler
from stackwars.profiling.result import Profile
from stackwars.results.aggregate import ok_once
from stackwars.results.run import Run
from stackwars.results.schema import CellSpec
from stackwars.runner import session
from stackwars.runner.child import Limits, Listener, run_child
from stackwars.runner.environments import interpreter_for, stack_problem
from stackwars.timing.timer import TimingConfig

WORKER = "stackwars.instruments.profile.worker"
# run --profile: steady calls profiled per cell, and the budget of their unprofiled timing
# (stackwars profile's defaults).
PROFILE_CALLS = 20
PROFILE_BUDGET_S = 1.0


def profile_stack(
    spec: CellSpec,
    options: RunOptions,
    out_dir: Path,
    calls: int,
    on_progress: Listener | None = None,
) -> Profile:
    """Time and profile one cell in a profile worker, the profiler's files in ``out_dir``; a
    stack without a profiler, or one not installed, is unsupported without a worker."""
    reason = stack_problem(spec.stack)
    if profiler(spec.stack) is None:
        reason = no_profiler_reason(spec.stack)
    if reason is not None:
        return _no_profile(spec, "unsupported", reason)
    out_dir = out_dir.resolve()  # the worker runs in its own folder
    with tempfile.TemporaryDirectory(prefix="stackwars-profile-") as scratch:
        request = session.request_for(spec, options, Path(scratch) / "cache")
        end = run_child(
            WORKER,
            "profile",
            {"request": request.to_dict(), "out_dir": str(out_dir), "calls": calls},
            Limits(options.timeout_s, options.memory_budget),
            on_progress=on_progress,
            interpreter=interpreter_for(spec.environment),
        )
    if end.ok and end.result is not None:
        return Profile.from_dict(end.result)
    return _no_profile(spec, end.status, end.detail)


def _no_profile(spec: CellSpec, status: str, reason: str) -> Profile:
    return Profile(spec.stack, spec.workload, dict(spec.params), status, reason, device=spec.device)


def profile_folder(spec: CellSpec) -> str:
    """A cell's folder name for its profiler's files: workload, parameters, stack."""
    params = "-".join(f"{key}={value}" for key, value in spec.params.items())
    return re.sub(r"[^\w.=-]+", "_", f"{spec.workload}-{params}-{spec.stack}")


def profile_run(
    record: Run,
    options: RunOptions,
    root: Path,
    *,
    stacks: Collection[str] = (),
    on_progress: Callable[[str, str], None] | None = None,
) -> Iterator[Profile]:
    """Profile a run's ok cells (once per cell; ``stacks``: only theirs), each in a fresh
    profile worker after every timed cell has ended, so that no timed number changes; each
    profile yielded as it ends (the profile instrument's service stores it with the run), its
    raw trace under ``root``. The unprofiled steady state is timed again in the profile
    worker within PROFILE_BUDGET_S."""
    budget = TimingConfig(steady_budget_s=PROFILE_BUDGET_S, warmup_budget_s=2 * PROFILE_BUDGET_S)
    profiling = dataclasses.replace(options, timing=budget)
    for cell in ok_once(record.cells, stacks):
        spec = cell.spec()

        def progress(text: str, label: str = spec.label()) -> None:
            if on_progress is not None:
                on_progress(label, text)

        yield profile_stack(spec, profiling, root / profile_folder(spec), PROFILE_CALLS, progress)
