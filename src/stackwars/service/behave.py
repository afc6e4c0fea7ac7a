"""``stackwars behave``: every probe on every stack, each in a fresh worker, as data.

What a probe did on a stack is classified in its worker (``runner/behave_worker.py``) from
what happened; this module only plans the cells, starts the workers and collects outcomes.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import Any

from stackwars import probes, workloads
from stackwars.config import default_memory_budget
from stackwars.errors import UsageError
from stackwars.frameworks import default_stacks, parse_stacks, stack_missing_reason
from stackwars.results import metadata
from stackwars.results.behave import Outcome
from stackwars.results.run import Run, new_run_id, now
from stackwars.results.store import Store
from stackwars.runner.child import ChildEnd, Limits, run_child

PROBE_TIMEOUT_S = 300.0
# Each worker spends most of its life importing its framework, one core's work: on this
# project's 2-core machine two at a time halve the command's time.
MAX_DEFAULT_JOBS = 2


def default_jobs() -> int:
    return max(1, min(MAX_DEFAULT_JOBS, os.cpu_count() or 1))


WORKER = "stackwars.runner.behave_worker"


def behave(
    names: Sequence[str] = (),
    stacks: str | None = None,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    workload_files: Sequence[str] = (),
    jobs: int = 1,
    on_outcome: Callable[[Outcome], None] = lambda outcome: None,
) -> list[Outcome]:
    """Every probe named (all when none) on every stack given (all when None), ``jobs``
    workers at a time; outcomes in probe order, then stack order, whatever order they end in
    (``on_outcome`` hears each as it ends)."""
    chosen = [probes.get(name).name for name in names] or list(probes.registry())
    stack_list = [str(stack) for stack in (parse_stacks(stacks) if stacks else default_stacks())]
    if jobs < 1:
        raise UsageError(f"--jobs {jobs} must be at least 1")
    for path in workload_files:
        workloads.load_workload_file(path)
    cells = [(probe, stack) for probe in chosen for stack in stack_list]
    # One compile cache for the whole command: probes observe behaviour, not first-run time,
    # and a warm Inductor cache saves seconds per torch.compile worker.
    with tempfile.TemporaryDirectory(prefix="stackwars-behave-") as cache:
        limits = Limits(timeout_s, default_memory_budget() // jobs)

        def one(cell: tuple[str, str]) -> Outcome:
            return _one(*cell, limits, workload_files, cache)

        found = {(o.probe, o.stack): o for o in _in_parallel(one, cells, jobs, on_outcome)}
    return [found[cell] for cell in cells]


def _in_parallel(
    work: Callable[[tuple[str, str]], Outcome],
    cells: list[tuple[str, str]],
    jobs: int,
    on_outcome: Callable[[Outcome], None],
) -> list[Outcome]:
    """``work`` on every cell, ``jobs`` at a time, each outcome passed on as it ends.

    The threads only wait for their worker process. They are daemons so that Ctrl-C ends the
    command at once: the workers then die with their parent (runner/child.py)."""
    todo: queue.Queue[tuple[str, str]] = queue.Queue()
    done: queue.Queue[Outcome | BaseException] = queue.Queue()
    for cell in cells:
        todo.put(cell)

    def drain() -> None:
        while True:
            try:
                cell = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put(work(cell))
            except BaseException as exc:  # handed to the caller's thread, raised there
                done.put(exc)

    for _ in range(min(jobs, len(cells))):
        threading.Thread(target=drain, daemon=True).start()
    outcomes = []
    while len(outcomes) < len(cells):
        item = done.get()
        if isinstance(item, BaseException):
            raise item
        on_outcome(item)
        outcomes.append(item)
    return outcomes


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
) -> Run:
    """:func:`behave`, stored as a run of kind ``behave`` (each outcome the moment it ends; a
    run cut short by Ctrl-C is stored as interrupted)."""
    for name in names:  # refused before anything is stored
        probes.get(name)
    if stacks:
        parse_stacks(stacks)
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
        record.outcomes.append(data)
        results.add_outcome(record, data)
        on_outcome(outcome)

    try:
        ordered = behave(
            names,
            stacks,
            timeout_s=timeout_s,
            workload_files=workload_files,
            jobs=jobs,
            on_outcome=keep,
        )
        record.outcomes = [dataclasses.asdict(outcome) for outcome in ordered]
        record.status = "complete"
    except KeyboardInterrupt:
        record.status = "interrupted"
        raise
    finally:
        record.finished = now()
        results.finish_run(record)
    return record


def _one(
    probe: str, stack: str, limits: Limits, workload_files: Sequence[str], cache: str
) -> Outcome:
    framework, _, mode = stack.partition(":")
    missing = stack_missing_reason(framework, mode)
    if missing:
        return Outcome(probe, stack, "unsupported", missing)
    request = {
        "probe": probe,
        "stack": stack,
        "cache_dir": cache,
        "workload_files": list(workload_files),
    }
    end = _run(probe, request, limits)
    if end.ok and end.result is not None:
        result = end.result
        return Outcome(
            probe,
            stack,
            result["outcome"],
            result["detail"],
            result.get("compiles"),
            result.get("calls"),
        )
    return Outcome(probe, stack, end.status, end.detail)


def _run(probe: str, request: dict[str, Any], limits: Limits) -> ChildEnd:
    """The probe's worker; for a probe across processes, then a second fresh worker that
    compares its draws with the first one's (and whose answer is the outcome)."""
    end = run_child(WORKER, "behave", request, limits)
    if probes.get(probe).across_processes and end.ok and end.result and "draws" in end.result:
        end = run_child(WORKER, "behave", {**request, "earlier": end.result["draws"]}, limits)
    return end
