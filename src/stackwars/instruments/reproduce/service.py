"""An edition, measured: each part of ``plan.py`` in turn, through the service every other
command uses for it, within one time budget, on one kind of machine.

Each part is one stored run (``stackwars runs`` lists them, labelled ``edition ID: PART``).
The edition file is rewritten after every part, so that an interrupt loses at most the part
that was running (marked ``interrupted``) and ``--resume`` goes on from the first part not
done. A part that would start after the budget is spent is ``not run`` with that reason, never
dropped: the findings list it. The claims part may add workers to undecided claims only
within its share of the budget (``CLAIMS_SHARE``); what stays undecided says so in the
findings.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from stackwars.config import INPUT_MODES, RunOptions
from stackwars.errors import UsageError
from stackwars.instruments.behave.data import Outcome
from stackwars.instruments.behave.service import PROBE_TIMEOUT_S, behave_run, default_jobs
from stackwars.instruments.claims import service as claimcheck
from stackwars.instruments.claims.spec import Claim, with_overrides
from stackwars.instruments.ir.service import CaptureAfterRun
from stackwars.instruments.reproduce import data as files
from stackwars.instruments.reproduce.plan import CELLS, CLAIMS, PROBES, Part, parts_at
from stackwars.results import metadata
from stackwars.results.captures import RunCapture
from stackwars.results.run import Run, new_run_id, now
from stackwars.results.schema import Cell
from stackwars.results.store import Store
from stackwars.runner.session import Reporter
from stackwars.runner.tasks import Executor
from stackwars.service import adaptive, api, execution
from stackwars.timing.compare import DEFAULT_ALPHA, MIN_WORKERS
from stackwars.version import __version__

# About three hours on the project's 2-core machine (issue 53's target).
DEFAULT_BUDGET_S = 3 * 3600.0
# The claims' added workers may use this share of the whole budget; the suites need the rest.
CLAIMS_SHARE = 0.4
# At test size: the shortest timing that still gives each worker a median.
TINY_STEADY_BUDGET_S = 0.05
EDITION_FILE = "edition.json"
DEFAULT_INPUTS = INPUT_MODES[0]
OUTCOME_KEYS = ("probe", "stack", "outcome", "detail")  # what the edition keeps of a probe's
SOURCE = Path(__file__).resolve().parents[3]  # the checkout that holds src/stackwars


class PartReporter(Reporter, Protocol):
    def more(self, stacks: Sequence[str]) -> None:
        """Cells added while a part runs (the claims' added workers)."""
        ...


# (cells, stacks of the workers to start) -> the reporter a part's run reports to.
ReporterFor = Callable[[int, Sequence[str]], AbstractContextManager[PartReporter]]


@dataclass(frozen=True)
class Where:
    """Where the cells run: ``executor`` (local or ray), its address and resources."""

    executor: str = "local"
    ray_address: str | None = None
    ray_resources: tuple[str, ...] = ()

    def open(self, options: RunOptions) -> Executor:
        return api.open_executor(self.executor, self.ray_address, options, self.ray_resources)


def begin(scale: str, budget_s: float, argv: Sequence[str]) -> files.Edition:
    """A new edition at ``scale`` (nothing measured yet)."""
    if budget_s <= 0:
        raise UsageError(f"--time-budget {budget_s:g} must be a number of seconds above 0")
    parts = parts_at(scale)
    machine = metadata.machine_info()
    identity = metadata.run_identity("")
    return files.Edition(
        id=new_run_id(),
        scale=scale,
        started=now(),
        budget_s=budget_s,
        command=list(argv),
        stackwars=__version__,
        source=metadata.git_state(SOURCE),
        machine={
            **machine,
            "fingerprint": identity["fingerprint"],
            "hostname": identity["hostname"],
            "blas_env": metadata.blas_environment(),
        },
        versions=metadata.framework_versions(),
        parts=[files.PartResult(p.name, p.seed, p.question, p.kind) for p in parts],
    )


def resume(path: Path) -> files.Edition:
    """The edition in ``path``, to go on with; one begun on another kind of machine is
    refused (an edition is one machine's)."""
    if not path.is_file():
        raise UsageError(
            f"no edition to resume in {path.parent}: start one with 'stackwars reproduce "
            f"--out {path.parent}', or name the folder that holds one with --out"
        )
    found = files.read_edition(path)
    here = metadata.run_identity("")["fingerprint"]
    if found.machine.get("fingerprint") != here:
        raise UsageError(
            f"{path} was begun on another machine ({found.machine.get('cpu_model')}, fingerprint "
            f"{found.machine.get('fingerprint')}; this one is {here}): an edition is one "
            "machine's; start a new one with --out in another folder"
        )
    return found


def measure(
    current: files.Edition,
    path: Path,
    results: Store,
    reporter_for: ReporterFor,
    *,
    where: Where = Where(),
    on_note: Callable[[str], None] = lambda text: None,
    clock: Callable[[], float] = time.monotonic,
    command: Sequence[str] | None = None,
) -> files.Edition:
    """Measure every part of ``current`` not yet done, in order, writing ``path`` after each
    (and when interrupted); the budget counts from this call, less the time the parts already
    done took. ``command`` is this call's command line (a resume's), kept by each part it
    measures; by default the one that began the edition."""
    start = clock() - sum(part.duration_s or 0.0 for part in current.parts)
    plan = {part.name: part for part in parts_at(current.scale)}
    for index, kept in enumerate(current.parts):
        if kept.status == files.DONE:
            continue
        left = current.budget_s - (clock() - start)
        if left <= 0:
            kept.status, kept.reason = files.NOT_RUN, _spent(current.budget_s)
            continue
        on_note(f"part {index + 1}/{len(current.parts)}: {kept.name} ({kept.seed}), {left:.0f} s "
                "of the budget left")  # fmt: skip
        resumed = kept.run_id if kept.status == files.INTERRUPTED else None
        if resumed is not None and plan[kept.name].kind == CELLS:
            kept.earlier.append(_session(kept))  # its run, and cells, go on
        kept.started, began, before = now(), clock(), kept.duration_s or 0.0
        kept.source = metadata.git_state(SOURCE)
        kept.command = ran = list(command or current.command)

        def spent() -> bool:
            return clock() - start > current.budget_s

        context = _Context(
            results, _deadline(reporter_for, spent), where, f"edition {current.id}: {kept.name}",
            ran, current.scale == "tiny", min(left, CLAIMS_SHARE * current.budget_s),
            resumed, spent,
        )  # fmt: skip
        try:
            _measure_part(plan[kept.name], kept, context)
        except TimeBudgetSpent:
            _cut(kept, results, _spent_during(current.budget_s))
        except KeyboardInterrupt:
            _cut(kept, results, "interrupted (Ctrl-C); --resume continues it")
            kept.duration_s = before + clock() - began
            _write(current, path, results)
            raise
        else:
            kept.status, kept.reason = files.DONE, ""
        kept.duration_s = before + clock() - began
        _write(current, path, results)
    current.ended, current.duration_s = now(), clock() - start
    _write(current, path, results)
    return current


def _session(kept: files.PartResult) -> dict[str, Any]:
    """Who measured ``kept`` so far, before a resume continues it."""
    return {"started": kept.started, "source": kept.source, "command": kept.command,
            "duration_s": kept.duration_s}  # fmt: skip


def _spent(budget_s: float) -> str:
    return (
        f"the time budget ({budget_s:.0f} s) was spent before this part began; "
        "--resume with a larger --time-budget runs it"
    )


def _spent_during(budget_s: float) -> str:
    return (
        f"the time budget ({budget_s:.0f} s) was spent during this part: its run keeps the "
        "cells that ended; --resume with a larger --time-budget continues it"
    )


class TimeBudgetSpent(KeyboardInterrupt):
    """A cell of a part ended after the edition's budget was spent. A KeyboardInterrupt, so
    that the run loop stops as it does on Ctrl-C: every cell that ended is kept, the workers
    still running are stopped, and the run is stored interrupted, to be resumed."""


def _deadline(reporter_for: ReporterFor, spent: Callable[[], bool]) -> ReporterFor:
    """``reporter_for``'s reporters, each raising :class:`TimeBudgetSpent` once a cell ends
    with the budget spent (a cell is never cut short: its worker's time is its own)."""

    @contextmanager
    def watched(cells: int, stacks: Sequence[str]) -> Iterator[PartReporter]:
        with reporter_for(cells, stacks) as inner:
            yield _Watched(inner, spent)

    return watched


@dataclass(frozen=True)
class _Watched:
    inner: PartReporter
    spent: Callable[[], bool]

    def start_cell(self, label: str) -> None:
        self.inner.start_cell(label)

    def phase(self, text: str) -> None:
        self.inner.phase(text)

    def end_cell(self, cell: Cell) -> None:
        self.inner.end_cell(cell)
        if self.spent():
            raise TimeBudgetSpent

    def more(self, stacks: Sequence[str]) -> None:
        self.inner.more(stacks)


def _cut(kept: files.PartResult, results: Store, why: str) -> None:
    """A part stopped before its end: interrupted, with the cells its run kept."""
    kept.status, kept.reason = files.INTERRUPTED, why
    if kept.run_id is not None and kept.run_id in results.run_ids():
        kept.cells = files.compact_cells(results.load_run(kept.run_id).cells)


@dataclass(frozen=True)
class _Context:
    """What every part's measurement needs besides the part itself."""

    results: Store
    reporter_for: ReporterFor
    where: Where
    label: str
    argv: Sequence[str]
    tiny: bool
    claims_budget_s: float  # what the claims' added workers may take
    # The run of a part interrupted before: a cells part goes on with it; probes and claims
    # are measured again.
    resumed: str | None = None
    spent: Callable[[], bool] = lambda: False  # whether the edition's budget is spent


def _measure_part(part: Part, kept: files.PartResult, context: _Context) -> None:
    measures = {CELLS: _cells, PROBES: _probes, CLAIMS: _claims}
    measures[part.kind](part, kept, context)


def _measure_options(part: Part, tiny: bool, repeat: int = 1) -> api.Measure:
    budget_s = TINY_STEADY_BUDGET_S if tiny else None
    return api.Measure(budget_s=budget_s, repeat=repeat, inputs=part.inputs)


def _cells(part: Part, kept: files.PartResult, context: _Context) -> None:
    selection = api.Selection(
        suite=part.suite, workload=part.workload, params=part.params, stacks=part.stacks
    )
    measure = _measure_options(part, context.tiny)
    if context.resumed is not None:
        planned = api.plan_resume(context.results, context.resumed)
    else:
        planned = api.plan_run(selection, measure, context.argv, context.label)
    kept.run_id = planned.record.id
    after = [CaptureAfterRun()] if part.capture_ir else []
    stacks = [cell.spec.stack for cell in planned.cells if not cell.skip_reason]
    executor = context.where.open(planned.options)
    with context.reporter_for(len(planned.cells), stacks) as reporter:
        executed = execution.execute_run(
            planned, context.results, reporter, executor=executor, after=after
        )
    kept.cells = files.compact_cells(executed.record.cells)
    captures = [found for found in executed.found.get("ir", []) if isinstance(found, RunCapture)]
    kept.ir = files.compact_ir(captures)


def _probes(part: Part, kept: files.PartResult, context: _Context) -> None:
    jobs = 1 if context.where.executor == "ray" else default_jobs()
    executor = context.where.open(RunOptions(jobs=jobs))

    def seen(outcome: Outcome) -> None:
        kept.outcomes.append({key: getattr(outcome, key) for key in OUTCOME_KEYS})
        if context.spent():  # as a cell's end does for a cells part (_Watched)
            raise TimeBudgetSpent

    kept.outcomes = []
    try:
        record = behave_run(
            list(part.probes), part.stacks, context.results, argv=context.argv,
            label=context.label, timeout_s=PROBE_TIMEOUT_S, jobs=jobs, executor=executor,
            on_outcome=seen,
        )  # fmt: skip
    except TimeBudgetSpent:
        kept.run_id = _labelled(context.results, context.label)
        raise
    finally:
        executor.close()
    kept.run_id = record.id


def _labelled(results: Store, label: str) -> str | None:
    """The newest run stored under ``label`` (a run cut short, whose id was not returned)."""
    for run_id in reversed(results.run_ids()):
        if results.load_run(run_id).identity.get("label") == label:
            return run_id
    return None


def _claims(part: Part, kept: files.PartResult, context: _Context) -> None:
    chosen = chosen_claims(part)
    measure = _measure_options(part, context.tiny, MIN_WORKERS)
    prepared = claimcheck.prepare(chosen, measure, context.argv, context.label)
    kept.run_id = prepared.planned.record.id
    # At test size each claim's cells get the fewest workers a verdict accepts, no more.
    settings = (
        None
        if context.tiny
        else adaptive.Adaptive(MIN_WORKERS, time_budget_s=context.claims_budget_s)
    )
    cells = prepared.planned.cells
    stacks = [cell.spec.stack for cell in cells if not cell.skip_reason]
    executor = context.where.open(prepared.planned.options)
    alpha = settings.alpha if settings is not None else DEFAULT_ALPHA
    try:
        with context.reporter_for(len(cells), stacks) as reporter:
            record = claimcheck.measure(
                prepared, context.results, reporter, settings, on_round=reporter.more,
                executor=executor,
            )  # fmt: skip
    except TimeBudgetSpent:
        # Judged from the cells that ended: a claim whose cells did not run says so.
        record = context.results.load_run(kept.run_id)
        _judge(prepared, record, kept, context.results, alpha)
        raise
    _judge(prepared, record, kept, context.results, alpha)


def _judge(
    prepared: claimcheck.ClaimCheck, record: Run, kept: files.PartResult, results: Store,
    alpha: float,
) -> None:  # fmt: skip
    judged = claimcheck.conclude(prepared, record, results, alpha=alpha)
    kept.claims = [result.to_dict() for result in judged]
    kept.cells = files.compact_cells(record.cells)


def chosen_claims(part: Part) -> list[Claim]:
    """The part's built-in claims with its parameters, renamed for a second reading."""
    chosen = claimcheck.load_claims([], builtin=True, only=",".join(part.claims))
    params = dict(part.claim_params)
    chosen = [
        with_overrides([claim], params[claim.id])[0] if claim.id in params else claim
        for claim in chosen
    ]
    if part.inputs == DEFAULT_INPUTS:
        return chosen
    reading = f"inputs {part.inputs}: each timed call places them on the device"
    return [
        replace(claim, id=f"{claim.id}-{part.inputs}", note=f"{claim.note}; {reading}")
        for claim in chosen
    ]


def edition_path(out: Path) -> Path:
    return out / EDITION_FILE


def _write(current: files.Edition, path: Path, results: Store) -> None:
    """The edition's file, and the edition kept with each part's run so far (show and the
    report of any of them show its findings)."""
    current.write(path)
    payload = current.to_dict()
    for part in current.parts:
        if part.run_id is not None:
            run = results.load_run(part.run_id)
            results.add_data(run, files.INSTRUMENT, files.EDITION_FORMAT, payload, key=files.KEY)


def with_budget(current: files.Edition, budget_s: float | None) -> files.Edition:
    """``current`` with a new budget (``--resume --time-budget``), parts not run because the
    old one was spent given their chance again."""
    if budget_s is None:
        return current
    for part in current.parts:
        if part.status == files.NOT_RUN:
            part.reason = ""
    return replace(current, budget_s=budget_s)
