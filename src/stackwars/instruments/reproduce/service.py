"""An edition, measured: each part of ``plan.py`` in turn, through the service every other
command uses for it, within one time budget, on one kind of machine.

Each part is one stored run (``stackwars runs`` lists them, labelled ``edition ID: PART``).
The edition file is rewritten after every part, so that an interrupt loses at most the part
that was running (marked ``interrupted``) and ``--resume`` goes on from the first part not
done: a cells part's run goes on where it stopped, or, where the store lacks that run (the
edition's file copied to another machine of the same kind), the cells the file holds stay and
a new run measures the others. A part that would start after the budget is spent is ``not
run`` with that reason, never dropped: the findings list it. A part that reuses
(``Part.reuse``) lists the cells an earlier part measured instead of measuring them again.
The claims part may add workers to undecided claims only within its share of the budget
(``CLAIMS_SHARE``); what stays undecided says so in the findings. :func:`reproduce` is the
whole of it, for the command and for notebooks alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
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
from stackwars.instruments.reproduce.render.findings import findings_markdown
from stackwars.results import metadata
from stackwars.results.captures import RunCapture
from stackwars.results.jsonio import write_atomically
from stackwars.results.run import Run, new_run_id, now
from stackwars.results.schema import Cell, CellKey, cell_key
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


@dataclass(frozen=True)
class Reproduced:
    """An edition measured by :func:`reproduce`: the edition, its file and its findings."""

    edition: files.Edition
    path: Path
    findings: Path

    @property
    def not_run(self) -> list[str]:
        """Each part not done, with why."""
        return [f"{p.name} ({p.reason})" for p in self.edition.parts if p.status != files.DONE]


def reproduce(
    out: str | Path = "stackwars-edition",
    *,
    scale: str | None = None,
    budget_s: float | None = None,
    resume: bool = False,
    db: str | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    ray_resources: Sequence[str] = (),
    reporter_for: ReporterFor | None = None,
    on_note: Callable[[str], None] = lambda text: None,
    markdown: str | Path | None = None,
    command: Sequence[str] = ("stackwars.reproduce()",),
) -> Reproduced:
    """The seeds' experiments as one edition in folder ``out`` (``edition.json``) and its
    findings (``markdown``, by default ``out/findings.md``): the path ``stackwars reproduce``
    takes, for notebooks too. ``scale`` is ``full`` (default) or ``tiny``; ``budget_s`` the
    seconds the whole may take (:data:`DEFAULT_BUDGET_S`); ``resume`` goes on with the edition
    in ``out`` (its scale kept, a new ``budget_s`` given to parts the old one left out); the
    runs go to the store ``db`` (else ``$STACKWARS_DB``, else ``./stackwars.sqlite``);
    ``executor="ray"`` sends the cells to the Ray cluster at ``ray_address`` (its nodes
    offering ``ray_resources``, as ``--ray-resource`` says); ``reporter_for``
    shows each part's cells (none by default), ``on_note`` each line of progress, the first
    naming the edition, its folder and its store. Example::

        reproduce("edition", scale="tiny").not_run  # [] once every part is done
    """
    path = edition_path(Path(out))
    if resume:
        edition = with_budget(resume_edition(path), budget_s)
        if scale not in (None, edition.scale):
            raise UsageError(
                f"the edition in {path.parent} is at --scale {edition.scale} and a resume keeps "
                "it: drop --scale, or start another edition with another --out"
            )
    else:
        budget = DEFAULT_BUDGET_S if budget_s is None else budget_s  # 0 is refused, not defaulted
        edition = begin(scale or "full", budget, list(command))
    results = api.open_store(db)
    on_note(f"edition {edition.id} ({edition.scale}) in {path.parent}; runs in {results.path}")
    finished = measure(
        edition, path, results, reporter_for or _silent, on_note=on_note, command=list(command),
        where=Where(executor, ray_address, tuple(ray_resources)),
    )  # fmt: skip
    findings = Path(markdown) if markdown else path.parent / "findings.md"
    size = path.stat().st_size
    write_atomically(findings, findings_markdown(finished, size_bytes=size))
    return Reproduced(finished, path, findings)


@contextmanager
def _silent(cells: int, stacks: Sequence[str]) -> Iterator[PartReporter]:
    yield _SilentPart()


class _SilentPart(api.SilentReporter):
    def more(self, stacks: Sequence[str]) -> None:
        del stacks


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


def resume_edition(path: Path) -> files.Edition:
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
            resumed, spent, measured_before(plan[kept.name], current.parts[:index], plan),
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
        elsewhere = [
            entry for entry in kept.cells if entry.get("run_id") not in (None, kept.run_id)
        ]
        kept.cells = elsewhere + files.compact_cells(results.load_run(kept.run_id).cells)


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
    # What earlier parts measured that this one may list instead of measuring (Part.reuse).
    reusable: dict[CellKey, dict[str, Any]] = field(default_factory=dict)


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
    reused = _reused(selection, context.reusable)
    carried = _carried(kept, context)
    if context.resumed is not None and not carried:
        planned = api.plan_resume(context.results, context.resumed)
    else:
        leave_out = set(reused) | {entry_key(entry) for entry in carried}
        planned = api.plan_run(selection, measure, context.argv, context.label, leave_out)
    kept.run_id = planned.record.id
    kept.cells = carried + list(reused.values())  # what a cut keeps besides the run's cells
    after = [CaptureAfterRun()] if part.capture_ir else []
    stacks = [cell.spec.stack for cell in planned.cells if not cell.skip_reason]
    executor = context.where.open(planned.options)
    with context.reporter_for(len(planned.cells), stacks) as reporter:
        executed = execution.execute_run(
            planned, context.results, reporter, executor=executor, after=after
        )
    kept.cells = carried + files.compact_cells(executed.record.cells) + list(reused.values())
    captures = [found for found in executed.found.get("ir", []) if isinstance(found, RunCapture)]
    kept.ir = files.compact_ir(captures)


def _carried(kept: files.PartResult, context: _Context) -> list[dict[str, Any]]:
    """The cells an interrupted part's earlier session measured, when this store lacks its
    run (an edition file resumed on another machine of the same kind, or with another --db):
    kept as they are, each naming the run that measured it, and not measured again (their IR,
    where the part captures it, stays in that run's store). Empty when the run is here: it
    is resumed as any run is."""
    if context.resumed is None or context.resumed in context.results.run_ids():
        return []
    return [
        {**entry, "run_id": entry.get("run_id") or context.resumed}
        for entry in kept.cells
        if "measured_in" not in entry
    ]


def entry_key(entry: dict[str, Any]) -> CellKey:
    """A compact cell's key (``files.compact_cells``)."""
    return cell_key(
        entry["workload"], entry["params"], entry["stack"], entry["device"], entry["to_host"]
    )


def measured_before(
    part: Part, earlier: Sequence[files.PartResult], plan: dict[str, Part]
) -> dict[CellKey, dict[str, Any]]:
    """The cells ``part`` may list instead of measuring (none unless it reuses): each cell an
    earlier cells part measured ok with its inputs placed alike, as that part's first
    measurement of it, named by ``measured_in``. Claims' cells are not taken: their runs are
    the claims' own (workers added where undecided)."""
    if not part.reuse:
        return {}
    found: dict[CellKey, dict[str, Any]] = {}
    for done in earlier:
        source = plan[done.name]
        if source.kind != CELLS or source.inputs != part.inputs:
            continue
        for entry in done.cells:
            key = entry_key(entry)
            if entry["status"] == "ok" and "measured_in" not in entry and key not in found:
                found[key] = {**entry, "measured_in": done.name,
                              "run_id": entry.get("run_id") or done.run_id}  # fmt: skip
    return found


def _reused(
    selection: api.Selection, reusable: dict[CellKey, dict[str, Any]]
) -> dict[CellKey, dict[str, Any]]:
    """Of the cells ``selection`` asks for, those an earlier part measured, in its order."""
    if not reusable:
        return {}
    chosen, _ = api.choose_cells(selection)
    return {spec.key(): reusable[spec.key()] for spec in chosen if spec.key() in reusable}


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
    here = set(results.run_ids())
    for part in current.parts:
        if part.run_id is not None and part.run_id in here:  # else measured with another store
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
