"""Comparisons of cells, as data: the same cells in two sets of runs (several runs a side are
pooled), or every stack against a baseline stack within one run; and the gate's rule.

Statistics come from ``timing/compare.py``; rendering is ``report/comparison.py``'s; the verdict
that carries the gate's outcome, exit status and family with the rows it judged is
``results/verdict.py``'s (``verdict_of``, the one way a gate is applied).

The gate (``decide``) ends in one of three outcomes:

* ``fail``: a cell ``ok`` in the baseline that is not ``ok`` in the candidate, or absent from
  it (a crash, a timeout, a parity mismatch, a lost cell; ``--allow-failures`` lists it
  without failing), or a regression: a cell whose time (``--fail-above``) or peak memory
  (``--fail-memory-above``: the worker tree's resident peak, and the device peak where one was
  measured) is significantly larger, the whole family of these tests controlled together
  (``timing/family.py``: Holm at ``alpha`` over every cell x measure, every look counted),
  and whose estimate is beyond the limit;
* ``pass``: no failure, and every judged cell shown not slower than the pass limit
  (``--pass-below``: by default the larger of ``DEFAULT_PASS_BELOW`` and ``--fail-above``; a
  regression smaller than it is what a pass promises is absent) nor larger in memory than
  ``--fail-memory-above``, each at ``alpha`` (an intersection-union test: the suite passes
  wrongly only if a truly regressed cell passes its own test); a cell between the two limits
  is undecided; so is a cell paired by round one of whose rounds is a slow round: the
  candidate at least twice the pass limit's ratio of the baseline's time (2.2x at 10 %) and
  far above the cell's other rounds
  (``slow_round``: a share of the candidate's processes may be slow, which a rank test and a
  trimmed mean both discount; a pass after n rounds without one rules out such a share above
  1 - 0.05^(1/n) at 95 %);
* ``underpowered``: neither: the cells left undecided are listed with what would decide them.
  A comparison that judged no cell is underpowered, never a pass.

Cells on different machines are shown, never judged (they leave the gate underpowered).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from stackwars.results.aggregate import workers_by_cell
from stackwars.results.counts import CountChange, count_changes
from stackwars.results.machines import mixed_machines
from stackwars.results.schema import Cell
from stackwars.results.speeds import SPEED_SHARE, WITHIN_SPEED, SpeedSplit, speed_split
from stackwars.timing import maxt
from stackwars.timing.compare import (
    DEFAULT_ALPHA,
    INCONCLUSIVE,
    Comparison,
    compare,
    compare_amounts,
    compare_paired,
    compare_run_means,
    geometric_mean,
)
from stackwars.timing.family import HOLM, Family, holm
from stackwars.timing.sequential import Looks, Paired
from stackwars.timing.speeds import Known

# "No regression larger than this" (percent): what a pass shows by default. A gate that must
# show "below 5 %" needs about four times the rounds of one that shows "below 10 %" (a
# cell's rounds grow with 1 / limit squared), and a CI job cannot pay that (issue 54).
DEFAULT_PASS_BELOW = 10.0
NOT_COMPARABLE = "not comparable"
ONLY_CANDIDATE = "only in the candidate run"
ONLY_BASELINE = "only in the baseline"


@dataclass(frozen=True)
class MemoryChange:
    """One memory measure (``what``) compared across workers, larger is worse."""

    what: str  # "peak RSS" or "device peak"
    baseline_bytes: float
    candidate_bytes: float
    result: Comparison


@dataclass(frozen=True)
class ComparisonRow:
    label: str
    baseline_median: float | None
    candidate_median: float | None
    result: Comparison | None
    note: str = ""  # why there is no result, or why the result is not judged
    broken: str = ""  # ok in the baseline, not in the candidate (or absent): what happened
    memory: tuple[MemoryChange, ...] = ()
    counts: tuple[CountChange, ...] = ()  # the deterministic counts that changed (counts.py)
    # A paired cell split at its two speeds (results/speeds.py): the gate judges its time by
    # these two tests in place of ``result``; None for a cell of one speed or not split.
    speeds: SpeedSplit | None = None

    @property
    def judged(self) -> bool:
        return self.result is not None and not self.note


def _ok(cell: Cell) -> bool:
    return cell.status == "ok" and bool(cell.steady.samples_s)


def _broken(base: list[Cell], cand: list[Cell]) -> str:
    """What went wrong in the candidate when every baseline worker was fine ('' otherwise)."""
    if not all(_ok(c) for c in base):
        return ""
    failed = [c for c in cand if not _ok(c)]
    if not failed:
        return ""
    first = failed[0]
    lines = first.reason.strip().splitlines()
    # A traceback's last line names the exception; other reasons lead with their point.
    line = lines[-1] if lines and lines[0].startswith("Traceback") else lines[0] if lines else ""
    reason = f": {line}" if line else ""
    return f"ok in the baseline, {first.status} in the candidate{reason}"


def _row(
    label: str,
    base: list[Cell],
    cand: list[Cell],
    threshold: float,
    *,
    within_process: bool,
    run_drift: float,
    run_drift_df: float = math.inf,
    alpha: float = DEFAULT_ALPHA,
    plan: bool = True,
    levels: Levels | None = None,
) -> ComparisonRow:
    failed = [c for c in base + cand if not _ok(c)]
    if failed:
        statuses = ", ".join(sorted({f"{c.stack} {c.status}" for c in failed}))
        note = f"{NOT_COMPARABLE}: {statuses}"
        return ComparisonRow(label, None, None, None, note, _broken(base, cand))
    levels = levels or {}
    result = compare(
        [c.steady.samples_s for c in base],
        [c.steady.samples_s for c in cand],
        threshold=threshold,
        within_process=within_process,
        run_drift=run_drift,
        run_drift_df=run_drift_df,
        alpha=alpha,
        plan=plan,
        levels_sd=levels.get((base[0].stack, base[0].device, STEADY_TIME), 0.0),
    )
    base_median = _pooled_median(base)
    mixed = mixed_machines(base + cand)
    if mixed:
        result = dataclasses.replace(result, verdict=INCONCLUSIVE, reason=mixed, evidence=None)
    memory = () if mixed else _memory(base, cand, threshold, levels, plan)
    counts = () if mixed else count_changes(base, cand)
    return ComparisonRow(
        label, base_median, base_median * result.ratio, result, mixed, "", memory, counts
    )


def _peak_rss(cell: Cell) -> int | None:
    return cell.memory.peak_tree_rss_bytes or cell.memory.peak_rss_bytes


def _device_peak(cell: Cell) -> int | None:
    return cell.memory.device_peak_bytes


MEASURES: tuple[tuple[str, Callable[[Cell], int | None]], ...] = (
    ("peak RSS", _peak_rss),
    ("device peak", _device_peak),
)


# A stack, its device and a measure ("steady time" or a memory measure) -> half the widest
# spread of log values among one cell's workers of that stack on one side (``stack_levels``).
Levels = Mapping[tuple[str, str, str], float]
STEADY_TIME = "steady time"


def stack_levels(groups: Iterable[list[Cell]]) -> dict[tuple[str, str, str], float]:
    """For each stack, device and measure (a worker's steady median, each memory measure),
    half the widest spread of log values among the workers of one cell on one side
    (``groups``: each the workers of one cell on one side): the floor ``compare`` puts under
    the spread between that stack's workers, so that workers landing on levels (speeds, peaks)
    are seen as levels in every cell of the stack. One side's workers ran the same code: their
    spread is the stack's, never a change."""
    widest: dict[tuple[str, str, str], float] = {}
    measures = ((STEADY_TIME, _steady_median), *MEASURES)
    for cells in groups:
        for what, read in measures:
            values = [float(read(cell) or 0) for cell in cells if _ok(cell)]
            if len(values) < 2 or not all(values):
                continue
            key = (cells[0].stack, cells[0].device, what)
            spread = math.log(max(values) / min(values)) / 2
            widest[key] = max(widest.get(key, 0.0), spread)
    return widest


def _memory(
    base: list[Cell], cand: list[Cell], threshold: float, levels: Levels, plan: bool
) -> tuple[MemoryChange, ...]:
    """Each memory measure every worker of both sides recorded, compared as amounts (one a
    worker) with the stack's levels as the floor of their spread. No run-to-run drift is
    added: a peak is an amount of memory, which a neighbour's load or the clock does not
    move."""
    changes = []
    for what, read in MEASURES:
        values_b = [float(read(c) or 0) for c in base]
        values_c = [float(read(c) or 0) for c in cand]
        if not all(values_b) or not all(values_c):
            continue
        floor = levels.get((base[0].stack, base[0].device, what), 0.0)
        result = compare_amounts(values_b, values_c, floor, threshold=threshold, plan=plan)
        median_b = sorted(values_b)[len(values_b) // 2]
        changes.append(MemoryChange(what, median_b, median_b * result.ratio, result))
    return tuple(changes)


def _steady_median(cell: Cell) -> float | None:
    return _pooled_median([cell]) if cell.steady.samples_s else None


def _pooled_median(cells: list[Cell]) -> float:
    pooled = sorted(value for cell in cells for value in cell.steady.samples_s)
    middle = len(pooled) // 2
    return pooled[middle] if len(pooled) % 2 else (pooled[middle - 1] + pooled[middle]) / 2


def label(cell: Cell) -> str:
    params = ", ".join(f"{k}={v}" for k, v in cell.params.items())
    host = " →host" if cell.to_host else ""
    return f"{cell.workload}({params}) {cell.stack}{host} @ {cell.device}"


def compare_runs(
    baseline: Iterable[Cell],
    candidate: Iterable[Cell],
    threshold: float,
    within_process: bool = False,
    run_drift: float = 0.0,
    *,
    run_drift_df: float = math.inf,
    alpha: float = DEFAULT_ALPHA,
    plan: bool = True,
) -> list[ComparisonRow]:
    """The cells both sides measured, baseline first (each side the cells of one or more
    runs, pooled by cell); cells on one side only are noted, and a baseline cell missing from
    the candidate is a broken candidate. ``run_drift`` (estimated with ``run_drift_df``
    degrees of freedom) is the run-to-run term of two single separate runs; ``plan=False``
    leaves out the workers that would decide (for callers that judge the cells again)."""
    base, cand = workers_by_cell(baseline), workers_by_cell(candidate)
    levels = stack_levels([*base.values(), *cand.values()])
    rows = []
    for key, cells in base.items():
        if key in cand:
            rows.append(
                _row(
                    label(cells[0]), cells, cand[key], threshold,
                    within_process=within_process, run_drift=run_drift,
                    run_drift_df=run_drift_df, alpha=alpha, plan=plan, levels=levels,
                )
            )  # fmt: skip
            continue
        lost = "absent from the candidate" if all(_ok(c) for c in cells) else ""
        rows.append(ComparisonRow(label(cells[0]), None, None, None, ONLY_BASELINE, lost))
    rows.extend(
        ComparisonRow(label(cells[0]), None, None, None, ONLY_CANDIDATE)
        for key, cells in cand.items()
        if key not in base
    )
    return rows


Rounds = list[list[Cell]]  # a session's rounds of one side, in order: each round's cells


def compare_rounds(
    baseline: Rounds,
    candidate: Rounds,
    threshold: float,
    looks: Looks,
    alpha: float,
    *,
    split: Mapping[str, Known | None] | None = None,
) -> list[ComparisonRow]:
    """A session's rounds (``stackwars ab``), each cell paired by round
    (``timing/compare.py``'s ``compare_paired``): broken and missing cells as in
    ``compare_runs``. ``split``: the cells (by label) to split at their two speeds where their
    times part (``results/speeds.py``), each with what an A/A session measured of its speeds
    (None: the session's own deviation within a speed)."""
    if len(baseline) != len(candidate):
        raise ValueError(f"{len(baseline)} baseline and {len(candidate)} candidate rounds")
    pooled = compare_runs(
        [cell for cells in baseline for cell in cells],
        [cell for cells in candidate for cell in cells],
        threshold,
        alpha=alpha,
        plan=False,
    )
    by_label = {row.label: row for row in pooled}
    per_round = [
        (workers_by_cell(b), workers_by_cell(c)) for b, c in zip(baseline, candidate, strict=True)
    ]
    rows = []
    for key, workers in workers_by_cell(cell for cells in baseline for cell in cells).items():
        row = by_label[label(workers[0])]
        if row.judged:
            row = _paired_row(
                row,
                [(i, b[key][0], c[key][0]) for i, (b, c) in enumerate(per_round)
                 if key in b and key in c],
                threshold,
                looks,
                alpha,
                split=split,
            )  # fmt: skip
        rows.append(row)
    rows.extend(row for row in pooled if row.note == ONLY_CANDIDATE)
    return rows


def _paired_row(
    row: ComparisonRow,
    pairs: list[tuple[int, Cell, Cell]],
    threshold: float,
    looks: Looks,
    alpha: float,
    *,
    split: Mapping[str, Known | None] | None,
) -> ComparisonRow:
    """``row`` (every worker ok) judged again from ``pairs``: each round's index, baseline and
    candidate worker, for the rounds in which both sides ran it; split at its speeds when
    ``split`` names it."""
    indices = [index for index, _, _ in pairs]
    base = [_pooled_median([b]) for _, b, _ in pairs]
    cand = [_pooled_median([c]) for _, _, c in pairs]
    result = compare_paired(base, cand, looks, threshold=threshold, alpha=alpha, indices=indices)
    speeds = None
    if split is not None and row.label in split:
        speeds = speed_split(base, cand, looks, threshold=threshold, alpha=alpha,
                             indices=indices, known=split[row.label])  # fmt: skip
    memory = []
    for change in row.memory:
        read = dict(MEASURES)[change.what]
        values = [(float(read(b) or 0), float(read(c) or 0)) for _, b, c in pairs]
        paired = compare_paired(
            [b for b, _ in values], [c for _, c in values], looks, threshold=threshold,
            alpha=alpha, indices=indices,
        )  # fmt: skip
        memory.append(dataclasses.replace(change, result=paired))
    candidate_median = None if row.baseline_median is None else row.baseline_median * result.ratio
    return dataclasses.replace(
        row, candidate_median=candidate_median, result=result, memory=tuple(memory),
        speeds=speeds,
    )  # fmt: skip


def compare_run_sets(
    baseline: list[list[Cell]], candidate: list[list[Cell]], threshold: float, alpha: float
) -> list[ComparisonRow]:
    """Several separate runs on a side (``compare A1,A2,A3 B``): the runs, not their
    workers, are the units of each cell's time (``compare_run_means``: the run-to-run
    component estimated from these runs, with its uncertainty); memory is compared over the
    pooled workers, which a run's machine state does not move."""
    pooled = compare_runs(
        [cell for run in baseline for cell in run],
        [cell for run in candidate for cell in run],
        threshold,
        alpha=alpha,
        plan=False,
    )
    return [
        _by_runs(row, baseline, candidate, threshold, alpha) if row.judged else row
        for row in pooled
    ]


def _by_runs(
    row: ComparisonRow,
    baseline: list[list[Cell]],
    candidate: list[list[Cell]],
    threshold: float,
    alpha: float,
) -> ComparisonRow:
    base, cand = _run_medians(baseline, row.label), _run_medians(candidate, row.label)
    result = compare_run_means(base, cand, threshold=threshold, alpha=alpha)
    median = row.baseline_median
    candidate_median = None if median is None else median * result.ratio
    return dataclasses.replace(row, result=result, candidate_median=candidate_median)


def _run_medians(runs: list[list[Cell]], wanted: str) -> list[list[float]]:
    """Each run's worker medians of the cell labelled ``wanted`` (runs without it left out)."""
    medians = [[_pooled_median([cell]) for cell in run if label(cell) == wanted] for run in runs]
    return [run for run in medians if run]


def compare_stacks(
    cells: Iterable[Cell],
    baseline: str,
    threshold: float,
    within_process: bool = False,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> list[ComparisonRow]:
    """Every stack against ``baseline`` for each workload, parameters, device and host setting."""
    groups = workers_by_cell(cells)
    rows = []
    for key, base in groups.items():
        if key[2] != baseline:
            continue
        for other_key, other in groups.items():
            if other_key[2] != baseline and other_key[:2] + other_key[3:] == key[:2] + key[3:]:
                text = f"{label(other[0])} vs {baseline}"
                row = _row(
                    text, base, other, threshold,
                    within_process=within_process, run_drift=0, alpha=alpha,
                )  # fmt: skip
                # Another stack failing where the baseline stack ran is a finding, not a
                # broken candidate.
                rows.append(dataclasses.replace(row, broken=""))
    return rows


def geometric_mean_ratio(rows: Iterable[ComparisonRow]) -> float | None:
    # Rows with a note are not judged (their cells ran on different machines).
    ratios = [row.result.ratio for row in rows if row.result is not None and not row.note]
    return geometric_mean(ratios) if ratios else None


@dataclass(frozen=True)
class Gate:
    """What fails a comparison (module docstring); None/False leave a rule out."""

    fail_above: float | None = None
    fail_memory_above: float | None = None
    allow_failures: bool = False
    alpha: float = DEFAULT_ALPHA  # the family's false-alarm budget per suite run
    fail_on_undecided: bool = False  # underpowered counts as a failure
    # A cell passes on time when shown slower by less than this (percent); None: the larger
    # of DEFAULT_PASS_BELOW and fail_above. Between the two limits a cell is undecided.
    pass_below: float | None = None
    # A deterministic count that changed (counts.py: every worker of each side agreeing)
    # fails its cell, beside the timed rules.
    fail_on_count_change: bool = False

    @property
    def active(self) -> bool:
        return self.fail_above is not None or self.fail_memory_above is not None

    @property
    def time_pass_limit(self) -> float | None:
        """The limit a cell's time must be shown below to pass (percent)."""
        if self.pass_below is not None:
            return self.pass_below
        return None if self.fail_above is None else max(DEFAULT_PASS_BELOW, self.fail_above)


PASS, FAIL, UNDERPOWERED = "pass", "fail", "underpowered"
# A row's state in the gate: failed, shown within the limits, undecided, or outside the gate
# (a new cell, one failing in the baseline too, a failure --allow-failures lets through).
PASSED, UNDECIDED_ROW, NOT_JUDGED = "pass", "undecided", "not judged"
# A row left undecided that the noise measured before the session said it could not decide
# (ab's noise triage): listed with the rounds it needs, it does not hold the outcome open. It
# can still fail.
NOT_GATED = "not gated"


TIME = "time"  # a row's whole time's test (a split cell's are results/speeds.py's two)


@dataclass(frozen=True)
class Hypothesis:
    """One regression test of the family: a row's time or one of its memory measures."""

    row: int
    what: str  # TIME, WITHIN_SPEED, SPEED_SHARE, "peak RSS", "device peak"
    result: Comparison
    limit: float  # percent: significantly above 0 and estimated above it fails
    pass_limit: float  # percent: shown below it passes


@dataclass(frozen=True)
class GateVerdict:
    """The gate's outcome over one comparison (module docstring)."""

    outcome: str  # PASS, FAIL or UNDERPOWERED
    family: Family
    failures: tuple[str, ...]  # one line per reason it fails
    undecided: tuple[str, ...]  # one line per cell left open, with what would decide it
    states: tuple[str, ...]  # per row: FAIL, PASSED, UNDECIDED_ROW or NOT_JUDGED
    # per row: the line of the regression (time, memory or a count) that fails it, '' for none
    regressions: tuple[str, ...] = ()
    # one line per cell not gated in this job: undecided, and too noisy to decide in it
    not_gated: tuple[str, ...] = ()

    def headline(self) -> str:
        """The first line of a report: the outcome, and why."""
        judged = sum(state not in (NOT_JUDGED, NOT_GATED) for state in self.states)
        if self.outcome == FAIL and not self.failures:
            why = f"{len(self.undecided)} undecided cell(s), and --fail-on-undecided"
        elif self.outcome == FAIL:
            why = f"{len(self.failures)} failure(s)"
        elif self.outcome == PASS:
            why = f"all {judged} judged cells shown within the limits"
        elif judged == 0:
            why = "no cell could be judged: nothing was compared"
        else:
            why = f"{len(self.undecided)} of {judged} judged cells undecided"
        if self.not_gated:
            why += f", {len(self.not_gated)} not gated in this job"
        return f"Gate: {self.outcome.upper()} ({why}; {self.family.describe()})"


def _hypotheses(rows: list[ComparisonRow], gate: Gate) -> list[Hypothesis]:
    tests = []
    for index, row in enumerate(rows):
        if not row.judged:
            continue
        assert row.result is not None
        if gate.fail_above is not None and gate.time_pass_limit is not None:
            tests.extend(
                Hypothesis(index, what, result, gate.fail_above, gate.time_pass_limit)
                for what, result in _time_tests(row)
            )
        if gate.fail_memory_above is not None:
            limit = gate.fail_memory_above
            tests.extend(
                Hypothesis(index, change.what, change.result, limit, limit) for change in row.memory
            )
    return tests


def _time_tests(row: ComparisonRow) -> list[tuple[str, Comparison]]:
    """What stands for a judged row's time in the family: its time, or for a cell split at
    its two speeds its time within them and the time its share of the slow one adds."""
    assert row.result is not None
    if row.speeds is None:
        return [(TIME, row.result)]
    return [(WITHIN_SPEED, row.speeds.within), (SPEED_SHARE, row.speeds.share)]


def _passes(test: Hypothesis, alpha: float) -> bool:
    """Shown not larger than the pass limit, at ``alpha`` (one cell's part of the pass)."""
    return test.result.p_below(math.log1p(test.pass_limit / 100)) < alpha


def _failure_line(rows: list[ComparisonRow], test: Hypothesis) -> str:
    row = rows[test.row]
    if test.what == TIME:
        return f"REGRESSION above {test.limit:g}%: {row.label}: {test.result.describe()}"
    if test.what in (WITHIN_SPEED, SPEED_SHARE):
        return (
            f"REGRESSION above {test.limit:g}%: {row.label}: {test.what}: {test.result.describe()}"
        )
    return f"MEMORY above {test.limit:g}%: {row.label}: {test.what} {test.result.describe()}"


def _open_line(row: ComparisonRow, held: str = "") -> str:
    if row.result is None or not row.judged:
        return f"undecided: {row.label}: {row.note}"
    if row.speeds is not None:
        return f"undecided: {row.label}: {row.speeds.describe()}{'; ' + held if held else ''}"
    reason = held or row.result.reason or "more workers would decide it"
    return f"undecided: {row.label}: {row.result.verdict}; {reason}"


# A slow round: the candidate took at least SLOW_ROUND_FACTOR times the pass limit's ratio of
# the baseline's time in it (2.2x at the default 10 %: a share of processes slower than that
# breaks what a pass promises, while under a pass limit of 100 % a tenth of processes at 4x is
# within it), and more than SLOW_ROUND_DEVIATIONS robust deviations (1.4826 x the median absolute
# deviation: the standard deviation for normal rounds) above the cell's median round. A pass
# is refused while a cell has one: a share of the candidate's processes may be slow, which the
# rank test and the trimmed mean discount (issue 54: 4x in 15 % of processes passed its cell
# 39-57 % of the time). The rule is the exact test of that share: with no slow round in n
# rounds, a share above 1 - 0.05^(1/n) is ruled out at 95 %. Calibrated on A/A rounds
# (benchmarks/power/slow_rounds.py, docs/gate.md): this machine's rounds of unchanged code
# reach 1.5-1.8x in either direction, which six deviations alone called slow in every recipe
# session; none reached 2x, while a 4x round stays beyond both bounds; rounds of micro-second
# cells (the README's ab line, n=32) reach 2.2x, which its pass limit of 100 % keeps below 4x
# (the deviations keep a
# two-speed cell, whose rounds spread by several times either way, from being held by its own
# modes: a 4x share cannot be seen there).
SLOW_ROUND_FACTOR = 2.0
SLOW_ROUND_DEVIATIONS = 4.0
SLOW_ROUND_FROM = 5  # rounds: fewer give no spread to stand out from
# The slow share a pass promises to see (issue 54's hole: 4x in 10-15 % of processes). A cell
# whose A/A spread puts such a round within SLOW_ROUND_DEVIATIONS of its others (a cell of two
# speeds: docs/gate.md's table sees 0 of 306 such rounds there, and 91-100 % in every other
# cell) cannot show the share absent, so it is not passed (``_not_gated``).
SEEN_SHARE_FACTOR = 4.0
# The tests whose rounds the slow-round rule reads: a share's rounds are whole speeds apart.
SLOW_ROUNDS_IN = (TIME, WITHIN_SPEED)


def slow_round(result: Comparison, pass_limit: float, aa_spread: float = 0.0) -> str:
    """Why a paired cell cannot pass though its rounds' centre is within ``pass_limit``
    (percent): its slowest round, when that is a slow round (above); '' when none is. The
    deviations are the larger of the session's robust spread and ``aa_spread``, the cell's
    spread in the machine's A/A rounds (the noise table's): a cell whose unchanged code runs
    at two speeds has rounds far from its median either way, which its A/A spread measures
    and the session's median deviation may not."""
    evidence = result.evidence
    if not isinstance(evidence, Paired) or evidence.rounds < SLOW_ROUND_FROM:
        return ""
    ratios = evidence.log_ratios
    centre, largest = _median(ratios), max(ratios)
    spread = max(1.4826 * _median([abs(x - centre) for x in ratios]), aa_spread)
    floor = math.log(SLOW_ROUND_FACTOR) + math.log1p(pass_limit / 100)
    if largest < floor or largest - centre <= SLOW_ROUND_DEVIATIONS * spread:
        return ""
    return (
        f"a round at {math.exp(largest):.2f}x, at least {math.exp(floor):g}x and far above "
        f"the others (median {math.exp(centre):.3f}x): a share of the candidate's processes "
        "may be slow"
    )


def _hides_a_slow_share(aa_spread: float) -> bool:
    """Whether a cell whose A/A rounds spread by ``aa_spread`` (a round's paired log ratio's
    deviation) hides a round SEEN_SHARE_FACTOR times slow within its own spread, where
    ``slow_round`` cannot see it."""
    return SLOW_ROUND_DEVIATIONS * aa_spread >= math.log(SEEN_SHARE_FACTOR)


def _speeds_hide_a_slow_share(split: SpeedSplit, pass_limit: float) -> str:
    """Why a cell split at its speeds cannot show a share of slow processes absent, '' when
    it can: a process SEEN_SHARE_FACTOR times slow at the fast speed is classed with the slow
    speed, and stands out from it as a slow round only when it lands at least the slow-round
    floor above it."""
    lands = SEEN_SHARE_FACTOR / split.speeds.ratio
    floor = SLOW_ROUND_FACTOR * (1 + pass_limit / 100)
    if lands >= floor:
        return ""
    return (
        f"its slow speed is {split.speeds.ratio:.2f}x its fast one: a process "
        f"{SEEN_SHARE_FACTOR:g}x slow at the fast speed lands {lands:.2f}x the slow one, below "
        f"the {floor:g}x a slow round needs, so a share of slow processes could not be seen "
        "and it is not passed"
    )


def _median(values: Iterable[float]) -> float:
    ordered = sorted(values)
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


def decide(
    rows: list[ComparisonRow],
    gate: Gate,
    looks: str = "one look",
    *,
    failed_before: Mapping[str, str] | None = None,
    not_gated: Mapping[str, str] | None = None,
    aa_spreads: Mapping[str, float] | None = None,
) -> GateVerdict:
    """The gate's outcome (module docstring) over ``rows``, the family's looks described by
    ``looks``; ``failed_before``: cells (by label) a sequential session failed at an earlier
    look, with that look's line: they stay failed (their rejection is already counted);
    ``not_gated``: cells (by label) the noise measured before the session said it cannot
    decide, with why: left undecided, they are listed apart and do not hold the outcome open
    (they stay in the family: a cell among them can still fail)."""
    tests = _hypotheses(rows, gate)
    rejected, procedure = _fail_family(tests, gate.alpha)
    marks = _judge_failures(rows, gate, zip(tests, rejected, strict=True), failed_before or {})
    held = _judge_passes(rows, tests, marks.states, gate.alpha, aa_spreads or {})
    # A slow round is the candidate's own evidence: the triage made before it cannot excuse it.
    excusable = dict(not_gated or {})
    for index in held:
        excusable.pop(rows[index].label, None)
    untested = _not_gated(rows, marks.states, excusable, aa_spreads or {}, gate.time_pass_limit)
    undecided = tuple(
        _open_line(row, held.get(index, ""))
        for index, (row, state) in enumerate(zip(rows, marks.states, strict=True))
        if state == UNDECIDED_ROW
    )
    family = Family(gate.alpha, len(tests), looks, procedure)
    outcome = _outcome(marks.failures, undecided, marks.states, gate)
    return GateVerdict(outcome, family, tuple(marks.failures), undecided, tuple(marks.states),
                       tuple(marks.regressions), untested)  # fmt: skip


def _judge_failures(
    rows: list[ComparisonRow],
    gate: Gate,
    tested: Iterable[tuple[Hypothesis, bool]],
    failed_before: Mapping[str, str],
) -> _Marks:
    """Each row broken, failed (a regression the family rejects beyond its limit, a count
    changed, a failure at an earlier look) or held open by a note; the rest not judged yet."""
    marks = _Marks([NOT_JUDGED] * len(rows), [""] * len(rows), [])
    for index, row in enumerate(rows):
        if row.broken and not gate.allow_failures:
            marks.fail(index, f"BROKEN: {row.label}: {row.broken}", regression=False)
        elif row.note and not row.broken and not _outside_gate(row):
            marks.states[index] = UNDECIDED_ROW
    for test, significant in tested:
        if significant and (test.result.ratio - 1) * 100 > test.limit:
            marks.fail(test.row, _failure_line(rows, test))
    for index, row in enumerate(rows):
        if gate.fail_on_count_change and row.counts:
            changed = "; ".join(change.describe() for change in row.counts)
            marks.fail(index, f"COUNT CHANGED: {row.label}: {changed}")
        earlier = failed_before.get(row.label)
        if earlier and marks.states[index] != FAIL:
            marks.fail(index, f"{earlier}; a failed cell stays failed")
    return marks


def _judge_passes(
    rows: list[ComparisonRow],
    tests: list[Hypothesis],
    states: list[str],
    alpha: float,
    aa_spreads: Mapping[str, float],
) -> dict[int, str]:
    """Mark each tested row not failed passed (in ``states``) when every test of it shows it
    within its pass limit and no round of it was slow, else undecided; the rows a slow round
    alone held from passing, with why."""
    held: dict[int, str] = {}
    for index in {test.row for test in tests}:
        if states[index] == FAIL:
            continue
        mine = [test for test in tests if test.row == index]
        shown = all(_passes(test, alpha) for test in mine)
        # Within its speeds a cell's rounds spread as one speed's: its own rounds measure it.
        spread = aa_spreads.get(rows[index].label, 0.0) if rows[index].speeds is None else 0.0
        slow = "".join(
            slow_round(t.result, t.pass_limit, spread) for t in mine if t.what in SLOW_ROUNDS_IN
        )
        if shown and slow:
            held[index] = slow
        states[index] = PASSED if shown and not slow else UNDECIDED_ROW
    return held


def _not_gated(
    rows: list[ComparisonRow],
    states: list[str],
    why: Mapping[str, str],
    aa_spreads: Mapping[str, float],
    pass_limit: float | None,
) -> tuple[str, ...]:
    """Mark not gated (in ``states``) the rows left undecided that ``why`` names, and the rows
    passed that could not have seen a share of slow processes (``_hidden_share``); their
    lines. A passed row the triage left out for its rounds alone stays passed: its pass test
    holds at its level, and the slow-round rule saw its rounds. One whose spread hides a 4x
    round is not: simulated sessions passed two-speed cells with a 4x share in 15-18 % of
    sessions (docs/evidence.md, "The recipe's gate, simulated")."""
    lines = []
    for index, row in enumerate(rows):
        hidden = _hidden_share(row, aa_spreads.get(row.label, 0.0), pass_limit)
        reasons = [why[row.label]] if states[index] == UNDECIDED_ROW and row.label in why else []
        if states[index] == PASSED and hidden:
            reasons.append(hidden)
        if reasons:
            states[index] = NOT_GATED
            lines.append(f"not gated in this job: {row.label}: {'; '.join(reasons)}")
    return tuple(lines)


def _hidden_share(row: ComparisonRow, aa_spread: float, pass_limit: float | None) -> str:
    """Why ``row`` could not see a share of processes SEEN_SHARE_FACTOR times slow, '' when
    it could: within its A/A spread (a cell of one speed), or within its slow speed (a cell
    split at its speeds)."""
    if row.speeds is not None and pass_limit is not None:
        return _speeds_hide_a_slow_share(row.speeds, pass_limit)
    if row.speeds is None and _hides_a_slow_share(aa_spread):
        return (
            f"its A/A rounds spread {aa_spread * 100:.0f}% a round, within which a round "
            f"{SEEN_SHARE_FACTOR:g}x slow stands less than {SLOW_ROUND_DEVIATIONS:g} "
            "deviations out: a share of slow processes could not be seen, so it is not passed"
        )
    return ""


@dataclass
class _Marks:
    """What ``decide`` has found so far: each row's state and regression line, and every
    failure line in order."""

    states: list[str]
    regressions: list[str]
    failures: list[str]

    def fail(self, index: int, line: str, *, regression: bool = True) -> None:
        self.failures.append(line)
        self.states[index] = FAIL
        if regression and not self.regressions[index]:
            self.regressions[index] = line


def _fail_family(tests: list[Hypothesis], alpha: float) -> tuple[list[bool], str]:
    """Which regression tests the family rejects, and by what procedure: a session that looks
    once, its cells paired by round, by step-down max-T over joint sign flips of its rounds
    (``timing/maxt.py``: exact, any dependence between cells, a floor of 2^-n instead of
    Holm's 2^-n < alpha / m); anything else (separate runs, a sequential session whose
    p-values count every look) by Holm over each test's own p-value."""
    rounds = _joint_rounds(tests)
    if rounds is not None:
        return maxt.rejected(rounds, alpha), maxt.PROCEDURE
    return holm([test.result.p_above(0.0) for test in tests], alpha), HOLM


def _joint_rounds(tests: list[Hypothesis]) -> list[list[float]] | None:
    """Each test's paired log ratio in every round of the session (NaN where it did not
    run), when every test is a one-look paired session's; None otherwise."""
    evidence = [test.result.evidence for test in tests]
    paired = [found for found in evidence if isinstance(found, Paired)]
    if not tests or len(paired) < len(tests) or any(p.looks.count != 1 for p in paired):
        return None
    by_round = [found.by_round() for found in paired]
    rounds = 1 + max((max(found, default=-1) for found in by_round), default=-1)
    return [[found.get(index, math.nan) for index in range(rounds)] for found in by_round]


def _outside_gate(row: ComparisonRow) -> bool:
    """A row with nothing the change could have broken: a new cell, or one that was not ok in
    the baseline (a broken row is the gate's unless --allow-failures let it through)."""
    return row.note in (ONLY_CANDIDATE, ONLY_BASELINE) or row.note.startswith(NOT_COMPARABLE)


def _outcome(failures: list[str], undecided: tuple[str, ...], states: list[str], gate: Gate) -> str:
    if failures:
        return FAIL
    if undecided or all(state in (NOT_JUDGED, NOT_GATED) for state in states):
        return FAIL if gate.fail_on_undecided else UNDERPOWERED
    return PASS
