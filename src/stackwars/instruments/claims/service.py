"""``stackwars claims`` and ``stackwars claim``: the cells a set of claims needs, each measured
once (in ``--repeat`` interleaved fresh workers, through the ordinary run), every claim judged
from them, and the judgements stored with the run.

A claim that needs what this machine lacks (an accelerator, a stack that is not registered or
not installed, an implementation a workload does not have) is ``not checkable here`` with the
reason, decided before any worker starts; none of its cells run.
"""

from __future__ import annotations

import fnmatch
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stackwars import workloads
from stackwars.errors import UsageError
from stackwars.frameworks import FRAMEWORKS, split_stack, stack_missing_reason
from stackwars.instruments.claims.files import builtin_sets, load_file
from stackwars.instruments.claims.line import to_line
from stackwars.instruments.claims.spec import COUNT, CROSSOVER, Claim, Side
from stackwars.instruments.claims.verdict import (
    INCONCLUSIVE,
    INSTRUMENT,
    NOT_CHECKABLE,
    RESULT_FORMAT,
    ClaimResult,
    Judgement,
    judge_count,
    judge_crossover,
    judge_exact,
    judge_factor,
    not_checkable,
)
from stackwars.ir.analyse import analyse
from stackwars.ir.capture import stages
from stackwars.ir.normalise import normalise
from stackwars.results import metadata
from stackwars.results.aggregate import workers_by_cell
from stackwars.results.compile import graphs_per_call
from stackwars.results.run import Run
from stackwars.results.schema import Cell, CellKey, CellSpec
from stackwars.results.store import Store
from stackwars.runner import plan
from stackwars.runner.session import Reporter
from stackwars.runner.tasks import Executor
from stackwars.service import adaptive, api, execution
from stackwars.suites import Suite
from stackwars.timing.compare import DEFAULT_ALPHA, Samples

# A verdict rests on the variation between fresh workers, so each worker needs a fair median,
# not a 1 % one, and no claim reads the latency of single calls: short budgets keep the
# built-in set within 15 minutes at --repeat 3.
CLAIMS_TIMING = {"steady_budget_s": 1.0, "warmup_budget_s": 2.0, "latency_budget_s": 0.2}
IR_STAGE = "stablehlo"
Pair = tuple[Side, CellSpec]


@dataclass
class ClaimCheck:
    """Claims ready to check: the run planned for the cells they need, the IR captures, and
    the claims that cannot be checked here (id -> why)."""

    claims: list[Claim]
    planned: api.PlannedRun
    ir: list[CellSpec]
    unavailable: dict[str, str] = field(default_factory=dict)


def load_claims(files: Sequence[str], builtin: bool, only: str | None = None) -> list[Claim]:
    """The claims of the files named and (``builtin``) the shipped sets; ``only``: a comma list
    of ids or patterns (``seed002-*``)."""
    sets = (builtin_sets() if builtin else []) + [load_file(Path(name)) for name in files]
    if not sets:
        raise UsageError("name a claim file or --builtin; example: stackwars claims --builtin")
    claims = [claim for claim_set in sets for claim in claim_set.claims]
    ids = [claim.id for claim in claims]
    twice = sorted({name for name in ids if ids.count(name) > 1})
    if twice:
        raise UsageError(f"claim id {twice[0]!r} appears in two claim sets; rename one")
    if only is None:
        return claims
    patterns = [part.strip() for part in only.split(",") if part.strip()]
    chosen = [c for c in claims if any(fnmatch.fnmatchcase(c.id, p) for p in patterns)]
    if not chosen:
        raise UsageError(f"--only {only!r} matches no claim; the claims: {', '.join(ids)}")
    return chosen


def cells_of(claim: Claim) -> list[CellSpec]:
    """The cells a claim reads (for ir-lines, the cell whose IR it counts)."""
    workload = workloads.get(claim.workload)
    values = claim.sweep[1] if claim.sweep is not None else (None,)
    return [
        CellSpec(
            claim.workload,
            workload.resolve(claim.params_of(side, value)),
            side.stack,
            claim.device_of(side),
            side.to_host,
        )
        for value in values
        for side in claim.sides()
    ]


def unavailable(claim: Claim, accelerators: set[str]) -> str:
    """Why a claim cannot be checked on this machine ('' when it can)."""
    for side in claim.sides():
        kind = claim.device_of(side).partition(":")[0]
        if kind != "cpu" and kind not in accelerators:
            seen = ", ".join(sorted(accelerators)) or "none"
            return (
                f"needs a {kind.upper()} ({side.stack} on {claim.device_of(side)}); "
                f"this machine has none (accelerators it shows: {seen})"
            )
        reason = _stack_reason(side)
        if reason:
            return reason
    for spec in cells_of(claim):
        reason = plan.skip_reason(spec)
        if reason:
            return f"{spec.label()}: {reason}"
        if claim.statistic == "ir-lines" and IR_STAGE not in stages(spec.stack):
            return f"{spec.stack} gives no {IR_STAGE} (no compiler IR of that kind)"
    return ""


def _stack_reason(side: Side) -> str:
    framework, mode, _ = split_stack(side.stack)
    info = FRAMEWORKS.get(framework)
    if info is None or mode not in info.modes:
        return f"stack {side.stack} is not registered in this stackwars ('stackwars list stacks')"
    missing = stack_missing_reason(framework, mode)
    return f"stack {side.stack} is not installed: {missing}" if missing else ""


def prepare(
    claims: Sequence[Claim],
    measure: api.Measure,
    argv: Sequence[str] = (),
    label: str = "",
    accelerators: set[str] | None = None,
) -> ClaimCheck:
    """The union of the cells the checkable claims need, each once, planned as one run."""
    if accelerators is None:
        accelerators = {found["kind"] for found in metadata.detect_accelerators()}
    skipped = {c.id: why for c in claims if (why := unavailable(c, accelerators))}
    timed: dict[CellKey, CellSpec] = {}
    ir: dict[CellKey, CellSpec] = {}
    for claim in claims:
        if claim.id not in skipped:
            into = ir if claim.statistic == "ir-lines" else timed
            into.update((spec.key(), spec) for spec in cells_of(claim))
    suite = Suite("claims", "the cells of the claims checked", (), timing=CLAIMS_TIMING)
    options = api.run_options(measure, "cpu", suite, ())
    planned = api.plan_cells(list(timed.values()), options, measure, argv, label)
    return ClaimCheck(list(claims), planned, list(ir.values()), skipped)


def measure(
    prepared: ClaimCheck,
    results: Store,
    reporter: Reporter,
    settings: adaptive.Adaptive | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    on_round: Callable[[Sequence[str]], None] = lambda stacks: None,
    executor: Executor | None = None,
) -> Run:
    """Run the planned cells (each stored as it ends) through the service's one path for a
    run, on ``executor`` (None: here, one at a time); with ``settings`` (``--repeat auto``),
    then add workers to the cells of undecided claims (adaptive.py), telling ``on_round`` the
    stacks of each added round."""
    sampling = execution.Sampling()
    if settings is not None:
        question = undecided_cells(prepared, settings)
        sampling = execution.Sampling(limits=settings, question=question)
    executed = execution.execute_run(
        prepared.planned, results, reporter, executor=executor, sampling=sampling,
        on_round=on_round, clock=clock,
    )  # fmt: skip
    return executed.record


def undecided_cells(prepared: ClaimCheck, settings: adaptive.Adaptive) -> adaptive.Wanting:
    """The cells of every claim still inconclusive, at the level each look uses
    (``settings.alpha``), that at most ``settings.max_workers`` workers a side would likely
    decide (the others are left: more workers would not answer them)."""
    max_workers = settings.max_workers

    def wanting(record: Run) -> list[CellSpec]:
        specs: dict[CellKey, CellSpec] = {}
        for claim in prepared.claims:
            if claim.id in prepared.unavailable or claim.statistic == "ir-lines":
                continue
            result = judge(claim, record.cells, {}, alpha=settings.alpha)
            needed = result.workers_needed
            if result.verdict == INCONCLUSIVE and needed is not None and needed <= max_workers:
                specs.update((spec.key(), spec) for spec in cells_of(claim))
        return list(specs.values())

    return wanting


def conclude(
    prepared: ClaimCheck,
    record: Run,
    results: Store,
    on_note: Callable[[str], None] = lambda text: None,
    alpha: float = DEFAULT_ALPHA,
) -> list[ClaimResult]:
    """Capture the IR the claims count, judge every claim from the run's cells at ``alpha``
    (``Adaptive.alpha`` after --repeat auto) and store each judgement with the run."""
    lines: dict[CellKey, int | str] = {}
    for spec in prepared.ir:
        on_note(f"capturing the {IR_STAGE} of {spec.label()}")
        lines[spec.key()] = ir_lines(spec, prepared.planned)
    judged = [
        judge(claim, record.cells, lines, prepared.unavailable.get(claim.id, ""), alpha)
        for claim in prepared.claims
    ]
    for result in judged:
        data = result.to_dict()
        record.keep(INSTRUMENT, RESULT_FORMAT, data)
        results.add_data(record, INSTRUMENT, RESULT_FORMAT, data)
    return judged


def ir_lines(spec: CellSpec, planned: api.PlannedRun) -> int | str:
    """Lines of the cell's normalised StableHLO (what ``stackwars ir`` counts), or why none."""
    with tempfile.TemporaryDirectory(prefix="stackwars-claim-ir-") as scratch:
        index = api.capture_stack(spec, planned.options, Path(scratch))
        name = index["stages"].get(IR_STAGE)
        if name is None:
            failed = index["unavailable"]
            return str(failed.get(IR_STAGE) or failed.get("*") or "not captured")[-300:]
        return analyse(normalise((Path(scratch) / name).read_text(encoding="utf-8"))).lines


def judge(
    claim: Claim,
    cells: Sequence[Cell],
    lines: Mapping[CellKey, int | str],
    missing: str = "",
    alpha: float = DEFAULT_ALPHA,
) -> ClaimResult:
    """One claim's value, ``1 - alpha`` interval and verdict from the run's cells (every
    worker)."""
    specs = cells_of(claim)
    if missing:
        judgement = not_checkable(missing)
    elif claim.statistic == "ir-lines":
        found = lines.get(specs[0].key(), "not captured")
        judgement = (
            judge_exact(found, claim.relation)
            if isinstance(found, int)
            else Judgement(INCONCLUSIVE, reason=f"no {IR_STAGE}: {found}")
        )
    else:
        workers = workers_by_cell(cells)
        judgement = _problem(specs, workers) or _measured(claim, specs, workers, alpha)
    unit = UNITS.get(claim.statistic, "x")
    return ClaimResult(
        id=claim.id,
        statement=to_line(claim),
        statistic=claim.statistic,
        relation=claim.relation.text,
        verdict=judgement.verdict,
        value=judgement.value,
        low=judgement.low,
        high=judgement.high,
        unit=claim.sweep[0] if claim.sweep is not None else unit,
        reason=judgement.reason,
        source=claim.source,
        quote=claim.quote,
        note=claim.note,
        cells=tuple(dict.fromkeys(spec.label() for spec in specs)),
        workers=judgement.workers,
        workers_needed=judgement.workers_needed,
    )


def _problem(specs: Sequence[CellSpec], workers: Mapping[CellKey, list[Cell]]) -> Judgement | None:
    """Why the cells cannot be judged (a cell that never ran, or did not end ok), if so."""
    for spec in specs:
        found = workers.get(spec.key(), [])
        if not found:
            return Judgement(INCONCLUSIVE, reason=f"{spec.label()} was not measured")
        for cell in found:
            if cell.status == "ok":
                continue
            why = f"{spec.label()} ended {cell.status}: {cell.reason.strip()[-300:]}"
            # Hardware or memory this machine lacks is not the claim's fault; a crash is the
            # measurement's, and says nothing either way.
            lacking = cell.status in ("unsupported", "oom")
            return Judgement(NOT_CHECKABLE if lacking else INCONCLUSIVE, reason=why)
    return None


# What a count statistic reads from each worker's cell (None: the cell does not say).
COUNTED: dict[str, Callable[[Cell], float | None]] = {
    "runs-to-steady": lambda cell: cell.runs_to_steady,
    "second-run-compiles": lambda cell: cell.compiles.second_run,
    "graphs-per-call": graphs_per_call,
}


UNITS = {
    "runs-to-steady": "runs",
    "second-run-compiles": "compiles",
    "graphs-per-call": "graphs",
    "ir-lines": "lines",
}


def _measured(
    claim: Claim, specs: Sequence[CellSpec], workers: Mapping[CellKey, list[Cell]], alpha: float
) -> Judgement:
    sides = claim.sides()
    if claim.kind == COUNT:
        counts = [COUNTED[claim.statistic](cell) for cell in workers[specs[0].key()]]
        if any(count is None for count in counts):
            return Judgement(INCONCLUSIVE, reason=f"{specs[0].label()}: no {claim.statistic}")
        return judge_count([float(count or 0) for count in counts], claim.relation)
    try:
        if claim.kind == CROSSOVER:
            assert claim.sweep is not None
            points = [
                (float(value), _samples(*mine, workers), _samples(*theirs, workers))
                for value, (mine, theirs) in zip(
                    claim.sweep[1], _by_value(sides, specs), strict=True
                )
            ]
            return judge_crossover(points, claim.relation, alpha)
        subject, baseline = (_samples(*pair, workers) for pair in zip(sides, specs, strict=True))
        return judge_factor(subject, baseline, claim.relation, alpha)
    except _NoData as exc:
        return Judgement(INCONCLUSIVE, reason=str(exc))


def _by_value(sides: Sequence[Side], specs: Sequence[CellSpec]) -> list[list[Pair]]:
    """cells_of's specs (every side at each swept value) as (side, spec) pairs per value."""
    count = len(sides)
    return [
        list(zip(sides, specs[i : i + count], strict=True)) for i in range(0, len(specs), count)
    ]


class _NoData(Exception):
    pass


def _samples(side: Side, spec: CellSpec, workers: Mapping[CellKey, list[Cell]]) -> Samples:
    """Each worker's values of the side's statistic (steady: every block's per-call time)."""
    found: list[list[float]] = []
    for cell in workers[spec.key()]:
        if side.statistic in ("steady", "crossover"):
            values = list(cell.steady.samples_s)
        elif side.statistic == "first-run":
            values = [cell.times.first_run_s] if cell.times.first_run_s else []
        else:
            peak = _held(cell) if side.statistic == "held-memory" else _peak(cell)
            values = [float(peak)] if peak else []
        if not values:
            raise _NoData(f"{cell.label()} recorded no {side.statistic}")
        found.append(values)
    return found


def _peak(cell: Cell) -> int | None:
    """The accelerator's peak where one was measured, else the worker process's."""
    return cell.memory.device_peak_bytes or cell.memory.peak_rss_bytes


def _held(cell: Cell) -> int | None:
    """What the work holds beyond its framework: the accelerator's peak where one was measured
    (the framework's arrays alone), else the worker's peak RSS less its RSS once the framework
    was imported and initialised (the interpreter, the libraries and, for torch:xla, JAX's
    runtime left out)."""
    memory = cell.memory
    if memory.device_peak_bytes:
        return memory.device_peak_bytes
    if memory.peak_rss_bytes is None or memory.rss_after_import_bytes is None:
        return None
    return max(memory.peak_rss_bytes - memory.rss_after_import_bytes, 0) or None
