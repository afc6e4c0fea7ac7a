"""``stackwars behave``: every probe on every stack, each in a fresh worker, as data.

What a probe did on a stack is classified in its worker (``instruments/behave/worker.py``) from
what happened; this module only plans the probes and stacks as tasks (the worker's parent
half, ``instruments/behave/task.py``) and draws their outcomes from an executor through the run
loop (``runner/session.py``): ``jobs`` at a time here, or on a Ray cluster.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

from stackwars import workloads
from stackwars.config import default_memory_budget
from stackwars.errors import UsageError
from stackwars.frameworks import default_stacks, parse_stacks
from stackwars.instruments.behave import probes
from stackwars.instruments.behave.data import INSTRUMENT, OUTCOME_FORMAT, Outcome
from stackwars.instruments.behave.task import ProbeTask
from stackwars.results import metadata
from stackwars.results.run import Run, new_run_id, now, tally
from stackwars.results.store import Store
from stackwars.runner.child import Limits
from stackwars.runner.executors import LocalExecutor
from stackwars.runner.session import drain
from stackwars.runner.tasks import QUIET, Caches, Executor

PROBE_TIMEOUT_S = 300.0
# Each worker spends most of its life importing its framework, one core's work: on this
# project's 2-core machine two at a time halve the command's time.
MAX_DEFAULT_JOBS = 2
# One compile cache for the whole command: probes observe behaviour, not first-run time, and a
# warm Inductor cache saves seconds per torch.compile worker.
SHARED_CACHE = Caches("warm")


def default_jobs() -> int:
    return max(1, min(MAX_DEFAULT_JOBS, os.cpu_count() or 1))


def probe_tasks(
    names: Sequence[str],
    stacks: str | None,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    workload_files: Sequence[str] = (),
    jobs: int = 1,
) -> list[ProbeTask]:
    """Every probe named (all when none) on every stack given (all when None), in probe order,
    then stack order; each worker's memory budget is this machine's shared by ``jobs``."""
    chosen = [probes.get(name).name for name in names] or list(probes.registry())
    stack_list = [str(stack) for stack in (parse_stacks(stacks) if stacks else default_stacks())]
    if jobs < 1:
        raise UsageError(f"--jobs {jobs} must be at least 1")
    for path in workload_files:
        workloads.load_workload_file(path)
    limits = Limits(timeout_s, default_memory_budget() // jobs)
    cells = [(probe, stack) for probe in chosen for stack in stack_list]
    return [
        ProbeTask(probe, stack, limits, tuple(workload_files), index)
        for index, (probe, stack) in enumerate(cells)
    ]


def behave(
    names: Sequence[str] = (),
    stacks: str | None = None,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    workload_files: Sequence[str] = (),
    jobs: int = 1,
    on_outcome: Callable[[Outcome], None] = lambda outcome: None,
    executor: Executor | None = None,
) -> list[Outcome]:
    """Every probe named (all when none) on every stack given (all when None), on ``executor``
    (None: ``jobs`` workers at a time here); outcomes in probe order, then stack order,
    whatever order they end in (``on_outcome`` hears each as it ends)."""
    tasks = probe_tasks(
        names, stacks, timeout_s=timeout_s, workload_files=workload_files, jobs=jobs
    )
    return _outcomes(tasks, executor or LocalExecutor(jobs), on_outcome)


def _outcomes(
    tasks: Sequence[ProbeTask],
    executor: Executor,
    on_outcome: Callable[[Outcome], None],
    run: Run | None = None,
) -> list[Outcome]:
    found: dict[tuple[str, str], Outcome] = {}

    def keep(outcome: Outcome) -> None:
        found[outcome.probe, outcome.stack] = outcome
        on_outcome(outcome)

    drain(executor, tasks, caches=SHARED_CACHE, reporter=QUIET, keep=keep, run=run)
    return [found[task.probe, task.stack] for task in tasks]


def behave_run(
    names: Sequence[str],
    stacks: str | None,
    results: Store,
    *,
    argv: Sequence[str] = (),
    label: str = "",
    timeout_s: float = PROBE_TIMEOUT_S,
    workload_files: Sequence[str] = (),
    jobs: int = 1,
    on_outcome: Callable[[Outcome], None] = lambda outcome: None,
    executor: Executor | None = None,
) -> Run:
    """:func:`behave`, stored as a run of kind ``behave`` (each outcome the moment it ends; a
    run cut short by Ctrl-C is stored as interrupted)."""
    tasks = probe_tasks(  # bad input is refused before anything is stored
        names, stacks, timeout_s=timeout_s, workload_files=workload_files, jobs=jobs
    )
    record = Run(
        id=new_run_id(),
        started=now(),
        machine=metadata.machine_info(),
        versions=metadata.framework_versions(),
        argv=list(argv),
        options={"probes": list(names), "stacks": stacks, "timeout_s": timeout_s, "jobs": jobs},
        identity=metadata.run_identity(label),
        kind="behave",
    )
    results.begin_run(record)

    def keep(outcome: Outcome) -> None:
        data = dataclasses.asdict(outcome)
        record.keep(INSTRUMENT, OUTCOME_FORMAT, data)
        results.add_data(record, INSTRUMENT, OUTCOME_FORMAT, data, tally=tally(data))
        on_outcome(outcome)

    try:
        ordered = _outcomes(tasks, executor or LocalExecutor(jobs), keep, record)
        record.outcomes = [dataclasses.asdict(outcome) for outcome in ordered]
    finally:
        results.finish_run(record)
    return record
