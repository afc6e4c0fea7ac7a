"""Comparisons of stored runs (``stackwars compare``): two sides of one or more runs each, or
every stack of a run against one of its stacks, with the machine check that keeps runs of
different machines from being judged, judged by the gate: each answers the one verdict
(``results/verdict.py``) the commands render and exit with. Re-exported by ``api.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from stackwars.errors import UsageError
from stackwars.results.comparison import (
    ComparisonRow,
    compare_run_sets,
    compare_runs,
    compare_stacks,
)
from stackwars.results.machines import machine_of
from stackwars.results.run import Run
from stackwars.results.verdict import DEFAULT_ALPHA_PCT, Verdict, gate_settings, verdict_of
from stackwars.service.runs import load_run
from stackwars.timing.compare import (
    DEFAULT_RUN_DRIFT,
    DEFAULT_RUN_DRIFT_DF,
    INCONCLUSIVE,
)


def threshold(percent: float) -> float:
    """A --threshold percentage as a fraction, checked."""
    if not 0 <= percent < 100:
        raise UsageError(f"--threshold {percent} must be a percentage in [0, 100)")
    return percent / 100


@dataclass(frozen=True)
class Compared:
    """Two sides compared and judged: the runs that stand for them (the first of each) and
    the gate's verdict over the cells they share (``verdict.rows``)."""

    baseline: Run
    candidate: Run
    verdict: Verdict


def compare(
    run_a: str,
    run_b: str,
    threshold_pct: float = 5.0,
    db: str | None = None,
    within_process: bool = False,
    *,
    run_drift_pct: float | None = None,
    fail_above: float | None = None,
    fail_memory_above: float | None = None,
    alpha_pct: float = DEFAULT_ALPHA_PCT,
    allow_failures: bool = False,
    fail_on_undecided: bool = False,
    pass_below: float | None = None,
    fail_on_count_change: bool = False,
) -> Compared:
    """The cells both sides share: ratio, interval, test and verdict for each, workers as the
    unit (``within_process`` accepts one worker's blocks as the evidence), judged by the gate
    the keywords ask for (as ``stackwars compare``'s options of the same names: percentages;
    without ``fail_above`` or ``fail_memory_above`` there is no gate and the outcome is
    None). A side is a run id, ``latest`` or an exported .json, or several joined by commas,
    whose workers are pooled. With several runs on a side, the runs are the units of each
    cell's time (their spread holds the run-to-run component); two single runs add
    ``run_drift_pct`` (default ``DEFAULT_RUN_DRIFT``, with the degrees of freedom of its
    estimate) as run-to-run variance. Runs from different machines are not judged
    (``verdict.mismatch`` says why). In a notebook::

        import stackwars

        result = stackwars.compare("baseline.json", "candidate.json", fail_above=5)
        verdict = result.verdict
        verdict.outcome       # "pass", "fail" or "underpowered" (None without a limit)
        verdict.exit_status   # 0, 1 or 3, as `stackwars compare` exits
        verdict.headline()    # "Gate: PASS (all 3 judged cells shown within the limits; ...)"
        for row, state in zip(verdict.rows, verdict.states):
            print(row.label, row.result and row.result.ratio, state)
    """
    gate = gate_settings(
        fail_above, fail_memory_above, alpha_pct=alpha_pct, allow_failures=allow_failures,
        fail_on_undecided=fail_on_undecided, pass_below=pass_below,
        fail_on_count_change=fail_on_count_change,
    )  # fmt: skip
    baseline, candidate = load_side(run_a, db), load_side(run_b, db)
    for record in (*baseline, *candidate):
        if record.kind != "timing":
            raise UsageError(
                f"run {record.id} is a {record.kind} run, with no timings to compare; "
                "compare two runs of 'stackwars run' (see 'stackwars runs')"
            )
    base = [record.cells for record in baseline]
    cand = [record.cells for record in candidate]
    fraction = threshold(threshold_pct)
    if max(len(base), len(cand)) >= 2 and not within_process:
        rows = compare_run_sets(base, cand, fraction, gate.alpha)
    else:
        drift, drift_df = run_drift(run_drift_pct)
        rows = compare_runs(
            [cell for cells in base for cell in cells],
            [cell for cells in cand for cell in cells],
            fraction,
            within_process,
            drift,
            run_drift_df=drift_df,
            alpha=gate.alpha,
        )
    mismatch = side_mismatch(baseline, candidate)
    rows = [not_judged(row, mismatch) for row in rows] if mismatch else rows
    return Compared(baseline[0], candidate[0], verdict_of(rows, gate, mismatch=mismatch))


def load_side(runs: str, db: str | None = None) -> list[Run]:
    """One side of a comparison: runs (ids, ``latest`` or .json files) joined by commas."""
    names = [name.strip() for name in runs.split(",") if name.strip()]
    if not names:
        raise UsageError(f"{runs!r} names no run; give a run id, 'latest' or a .json file")
    return [load_run(name, db) for name in names]


def run_drift(percent: float | None) -> tuple[float, float]:
    """The run-to-run standard deviation to add to a comparison of two single runs (a
    fraction) and its degrees of freedom: the measured default with those of its estimate, or
    the user's ``--run-drift``, taken as given."""
    if percent is None:
        return DEFAULT_RUN_DRIFT, DEFAULT_RUN_DRIFT_DF
    if not 0 <= percent < 100:
        raise UsageError(f"--run-drift {percent} must be a percentage in [0, 100)")
    return percent / 100, math.inf


def side_mismatch(baseline: Sequence[Run], candidate: Sequence[Run]) -> str:
    """Why the sides' times are not comparable ('' when every run is of one machine)."""
    records = [*baseline, *candidate]
    for record in records[1:]:
        mismatch = machine_mismatch(records[0], record)
        if mismatch:
            return mismatch
    return ""


def compare_with_stack(
    record: Run,
    baseline: str,
    threshold_pct: float = 5.0,
    within_process: bool = False,
    *,
    fail_above: float | None = None,
    fail_memory_above: float | None = None,
    alpha_pct: float = DEFAULT_ALPHA_PCT,
    allow_failures: bool = False,
    fail_on_undecided: bool = False,
    pass_below: float | None = None,
    fail_on_count_change: bool = False,
) -> Verdict:
    """Every stack of a run against one of its stacks, judged by the gate the keywords ask
    for (as :func:`compare`'s)."""
    gate = gate_settings(
        fail_above, fail_memory_above, alpha_pct=alpha_pct, allow_failures=allow_failures,
        fail_on_undecided=fail_on_undecided, pass_below=pass_below,
        fail_on_count_change=fail_on_count_change,
    )  # fmt: skip
    rows = compare_stacks(
        record.cells, baseline, threshold(threshold_pct), within_process, alpha=gate.alpha
    )
    if not rows:
        raise UsageError(f"stack {baseline!r} has no cells in run {record.id}")
    return verdict_of(rows, gate)


def machine_mismatch(baseline: Run, candidate: Run) -> str:
    """Why two runs' times are not comparable ('' when they ran on the same machine, or a run
    is too old to say). When every timed cell of both runs records its machine (a run on a Ray
    cluster spans several), each compared cell is checked instead (report.comparison)."""
    if _cells_say_where(baseline) and _cells_say_where(candidate):
        return ""
    prints = (baseline.identity.get("fingerprint"), candidate.identity.get("fingerprint"))
    if None in prints or prints[0] == prints[1]:
        return ""
    hosts = (baseline.identity.get("hostname"), candidate.identity.get("hostname"))
    return (
        f"the runs come from different machines (fingerprint {prints[0]} on {hosts[0]}, "
        f"{prints[1]} on {hosts[1]}): compare runs measured on one machine"
    )


def _cells_say_where(record: Run) -> bool:
    return all(machine_of(cell) for cell in record.cells if cell.status == "ok")


def not_judged(row: ComparisonRow, why: str) -> ComparisonRow:
    """The row with its verdict turned inconclusive for ``why`` (it can fail no gate)."""
    if row.result is None:
        return row
    result = dataclasses.replace(row.result, verdict=INCONCLUSIVE, reason=why, evidence=None)
    return dataclasses.replace(row, result=result)
