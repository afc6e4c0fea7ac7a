"""The service layer: what measures or touches the results store, typed options in, data out.

Commands (``commands/``, and the instruments' ``command.py``) call it, or an instrument's own
``service.py`` above it, for every run and store access (the functions of ``runs.py``,
``comparisons.py``, ``history.py`` and ``machine.py`` are re-exported here) and render with
``report/``; where nothing is measured or stored they read lower layers directly
(``results/`` types, merging and JSON, names and parsing, ``runner/plan.py``, ``ir``
analysis). Notebooks call the same functions (``stackwars.run`` is :func:`run`). Nothing here
prints: progress goes to the ``Reporter`` given, and every failure a user can cause is a
:class:`stackwars.errors.UsageError` that says how to fix it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.config import (
    RunOptions,
    jobs_warnings,
    option_warnings,
    workers_warnings,
)
from stackwars.errors import UsageError
from stackwars.frameworks import (
    influential_environment,
)
from stackwars.results import metadata, store
from stackwars.results.run import Run, new_run_id, now, owner_alive, this_process
from stackwars.results.schema import Cell, CellKey, CellSpec
from stackwars.runner import executors, plan, session

# Re-exported (the imports marked F401): IR captures (a run's, claims', stackwars ir's), the
# devices and BLAS libraries each framework sees (stackwars env), executors.
from stackwars.runner.child import Interpreter  # noqa: F401
from stackwars.runner.executors import open_executor  # noqa: F401 (re-exported)
from stackwars.runner.ir_task import IR_TIMEOUT_S, capture_run_ir, capture_stack  # noqa: F401
from stackwars.runner.probe_tasks import probe_frameworks  # noqa: F401
from stackwars.service.choices import Measure, Selection, choose_cells, run_options

# Re-exported: the service layer's reading side, a module per subject.
from stackwars.service.comparisons import (  # noqa: F401
    compare,
    compare_with_stack,
    load_side,
    machine_mismatch,
    side_mismatch,
    threshold,
)
from stackwars.service.history import history  # noqa: F401
from stackwars.service.machine import machine_warnings, usable_peak  # noqa: F401
from stackwars.service.runs import import_run, load_run, open_store, read_run_file  # noqa: F401


@dataclass
class PlannedRun:
    """A run ready to execute: its record (already holding any finished cells), the cells
    still to run with their skip reasons, and the options they run with."""

    record: Run
    cells: list[plan.PlannedCell]
    options: RunOptions
    warnings: list[str] = field(default_factory=list)


def plan_run(
    selection: Selection,
    measure: Measure,
    argv: Sequence[str] = (),
    label: str = "",
    leave_out: Collection[CellKey] = frozenset(),
) -> PlannedRun:
    """A new run of the cells selected, planned (nothing measured yet); ``label`` names it in
    ``runs`` and comparisons. A selected cell whose key ``leave_out`` holds is not planned
    (an edition's part whose cell an earlier part measured)."""
    chosen, suite = choose_cells(selection)
    chosen = [spec for spec in chosen if spec.key() not in leave_out]
    options = run_options(measure, selection.device, suite, selection.workload_files)
    return plan_cells(chosen, options, measure, argv, label)


def plan_cells(
    chosen: Sequence[CellSpec],
    options: RunOptions,
    measure: Measure,
    argv: Sequence[str] = (),
    label: str = "",
) -> PlannedRun:
    """A new run of cells the caller chose (the claims service: what its claims need), each
    ``measure.repeat`` times in interleaved fresh workers."""
    cells = plan.schedule(chosen, measure.repeat, measure.order_seed, options.workers)
    record = _new_run(options, cells, argv, label)
    planned = plan.plan_for(cells, options)
    warnings = machine_warnings(record.machine) + option_warnings(options)
    warnings += jobs_warnings(options) + workers_warnings(options)
    return PlannedRun(record, planned, options, warnings)


def plan_rerun(
    results: store.Store, run_id: str, argv: Sequence[str] = (), label: str = ""
) -> PlannedRun:
    """A new run of a stored run's plan, exactly: the same cells in the same order, with the
    same options (limits, budgets, seed, workload files)."""
    old = results.load_run(run_id)
    if not old.planned:
        raise UsageError(f"run {old.id} stored no plan to repeat")
    options = RunOptions.from_dict(old.options)
    for path in options.workload_files:
        workloads.load_workload_file(path)
    cells = [CellSpec(**spec) for spec in old.planned]
    record = _new_run(options, cells, argv, label)
    planned = plan.plan_for(cells, options)
    warnings = machine_warnings(record.machine) + jobs_warnings(options)
    warnings += workers_warnings(options)
    return PlannedRun(record, planned, options, warnings)


def _new_run(
    options: RunOptions, cells: Sequence[CellSpec], argv: Sequence[str], label: str
) -> Run:
    return Run(
        id=new_run_id(),
        started=now(),
        machine={
            **metadata.machine_info(),
            "blas_env": metadata.blas_environment(),
            "influential_environment": influential_environment(),
        },
        versions=metadata.framework_versions(),
        argv=list(argv),
        options=options.to_dict(),
        planned=[dataclasses.asdict(cell) for cell in cells],
        identity=metadata.run_identity(label),
    )


def plan_resume(results: store.Store, run_id: str) -> PlannedRun:
    """A stored run that did not finish (interrupted, abandoned, or with cells lost with their
    Ray node), with what it still needs."""
    record = results.load_run(run_id)
    if not record.planned:
        raise UsageError(f"run {record.id} stored no plan to resume; start a new run")
    if record.status == "running" and owner_alive(record.owner):
        raise UsageError(
            f"run {record.id} is still running (process {record.owner['pid']} on this host); "
            "wait for it to end, or stop it, before resuming"
        )
    record.owner = this_process()
    options = RunOptions.from_dict(record.options)
    for path in options.workload_files:
        workloads.load_workload_file(path)
    lost = [cell for cell in record.cells if cell.node.get("lost")]
    if lost:  # never measured: their Ray node left mid-run; measured now, in their place
        results.forget_cells(record, lost)
        record.cells = [cell for cell in record.cells if not cell.node.get("lost")]
    done = {(cell.key(), cell.repeat) for cell in record.cells}
    cells = [CellSpec(**spec) for spec in record.planned]
    remaining = [cell for cell in cells if (cell.key(), cell.repeat) not in done]
    record.status, record.finished = "running", None
    planned = plan.plan_for(remaining, options)
    return PlannedRun(record, planned, options, machine_warnings(record.machine))


class RunWriter:
    """The one writer of a run while it runs (``execution.execute_run`` holds it): each cell
    into the store the moment it ends, cells again when the pilot or the second look
    annotated them, what an after-run step found (through the step's own ``keep``), and after
    each of these the run's JSON file (``json_path``) rewritten whole."""

    def __init__(self, results: store.Store, json_path: Path | None = None) -> None:
        self.results = results
        self.json_path = json_path

    def begin(self, record: Run) -> None:
        self.results.begin_run(record)

    def add_cell(self, record: Run, cell: Cell) -> None:
        self.results.add_cell(record, cell)
        self._json(record)

    def finish(self, record: Run) -> None:
        self.results.finish_run(record)
        self._json(record)

    def annotated(self, record: Run, cells: Sequence[Cell]) -> None:
        """Cells of ``record`` whose settings changed after they were stored, stored again."""
        for cell in cells:
            self.results.update_cell(record, cell)
        if cells:
            self._json(record)

    def after_run(
        self, keep: Callable[[store.Store, Run, Any], None], record: Run, found: Any
    ) -> None:
        """What an after-run step found, kept by the step's ``keep`` (its instrument's
        service: the store and the record), then the JSON file."""
        keep(self.results, record, found)
        self._json(record)

    def _json(self, record: Run) -> None:
        if self.json_path:
            record.write_json(self.json_path)


def execute(
    planned: PlannedRun,
    results: store.Store,
    reporter: session.Reporter,
    json_path: Path | None = None,
    executor: session.Executor | None = None,
) -> Run:
    """Run the planned cells on ``executor`` (None: one at a time on this machine; see
    :func:`open_executor`), storing each the moment it ends (and rewriting ``json_path``); the
    run is stored as interrupted when Ctrl-C stops it. Only the cells: a whole run, with its
    sampling and after-run steps, is ``execution.execute_run``."""
    runner = executor or executors.LocalExecutor(planned.options.jobs)
    return execute_into(planned, RunWriter(results, json_path), reporter, runner)


def execute_into(
    planned: PlannedRun,
    writer: RunWriter,
    reporter: session.Reporter,
    executor: session.Executor,
) -> Run:
    """The planned cells measured on ``executor``, each written by ``writer`` as it ends."""
    record = planned.record
    writer.begin(record)
    try:
        session.execute(
            planned.cells, planned.options, record, [writer.add_cell], reporter, executor=executor
        )
    finally:
        writer.finish(record)
    return record


def measure_again(
    planned: PlannedRun, reporter: session.Reporter, executor: session.Executor
) -> list[Cell]:
    """The planned cells measured into a scratch run: neither stored nor added to the planned
    run's record (a check of it, ``run --second-look``)."""
    record = planned.record
    scratch = Run(record.id, now(), record.machine, record.versions, [])
    session.execute(planned.cells, planned.options, scratch, [], reporter, executor=executor)
    return scratch.cells


class SilentReporter:
    """A reporter that shows nothing (runs started from Python, benchmarks)."""

    def start_cell(self, label: str) -> None:
        del label

    def phase(self, text: str) -> None:
        del text

    def end_cell(self, cell: Cell) -> None:
        del cell
