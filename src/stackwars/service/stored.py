"""Reading what was stored: the results store, exported run files, comparisons of two runs,
a cell's history. Part of the service layer (``api.py`` re-exports every name here), apart so
that each module stays one subject.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path

from stackwars.errors import ParameterError, UsageError
from stackwars.frameworks import parse_stack
from stackwars.results import store
from stackwars.results.comparison import (
    ComparisonRow,
    compare_run_sets,
    compare_runs,
    compare_stacks,
)
from stackwars.results.machines import machine_of
from stackwars.results.run import Run
from stackwars.results.schema import SCHEMA_VERSION, Cell
from stackwars.timing.compare import (
    DEFAULT_ALPHA,
    DEFAULT_RUN_DRIFT,
    DEFAULT_RUN_DRIFT_DF,
    INCONCLUSIVE,
)


def open_store(db: str | None = None, must_exist: bool = False) -> store.Store:
    """The results store at ``db``, else ``$STACKWARS_DB``, else ``./stackwars.sqlite``."""
    path = store.default_path(db)
    return store.Store.existing(path) if must_exist else store.Store(path)


def threshold(percent: float) -> float:
    """A --threshold percentage as a fraction, checked."""
    if not 0 <= percent < 100:
        raise UsageError(f"--threshold {percent} must be a percentage in [0, 100)")
    return percent / 100


def compare(
    run_a: str,
    run_b: str,
    threshold_pct: float = 5.0,
    db: str | None = None,
    within_process: bool = False,
    *,
    run_drift_pct: float | None = None,
) -> tuple[Run, Run, list[ComparisonRow]]:
    """The cells both sides share: ratio, interval, test and verdict for each, workers as the
    unit (``within_process`` accepts one worker's blocks as the evidence). A side is a run id,
    ``latest`` or an exported .json, or several joined by commas, whose workers are pooled.
    With several runs on a side, the runs are the units of each cell's time (their spread
    holds the run-to-run component); two single runs add ``run_drift_pct`` (default
    ``DEFAULT_RUN_DRIFT``, with the degrees of freedom of its estimate) as run-to-run variance.
    Runs from different machines are not judged. The runs returned stand for their sides
    (the first of each)."""
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
        rows = compare_run_sets(base, cand, fraction, DEFAULT_ALPHA)
    else:
        drift, drift_df = run_drift(run_drift_pct)
        rows = compare_runs(
            [cell for cells in base for cell in cells],
            [cell for cells in cand for cell in cells],
            fraction,
            within_process,
            drift,
            run_drift_df=drift_df,
        )
    mismatch = side_mismatch(baseline, candidate)
    rows = [not_judged(row, mismatch) for row in rows] if mismatch else rows
    return baseline[0], candidate[0], rows


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
    record: Run, baseline: str, threshold_pct: float, within_process: bool = False
) -> list[ComparisonRow]:
    """Every stack of a run against one of its stacks."""
    rows = compare_stacks(record.cells, baseline, threshold(threshold_pct), within_process)
    if not rows:
        raise UsageError(f"stack {baseline!r} has no cells in run {record.id}")
    return rows


def load_run(run: str, db: str | None = None) -> Run:
    """A stored run (an id or ``latest``), or a run exported as JSON (``export --format json``,
    ``run --json``): a path to an existing ``.json`` file, from any machine or store."""
    path = Path(run)
    if path.suffix == ".json" and path.is_file():
        return read_run_file(path)
    return open_store(db, must_exist=True).load_run(run)


def read_run_file(path: Path) -> Run:
    """A run from its JSON export; one line saying what is wrong when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        version = data["schema_version"]
        if version > SCHEMA_VERSION:
            raise UsageError(
                f"{path} is a result file of schema version {version}; this stackwars reads up "
                f"to {SCHEMA_VERSION} (upgrade stackwars)"
            )
        return Run.from_dict(data)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"{path} is not a stackwars run file ({type(exc).__name__}: {exc}); write one with "
            "'stackwars export RUN --format json' or 'stackwars run --json PATH'"
        ) from None


def import_run(path: Path, db: str | None = None) -> Run:
    """Add an exported run to a store (e.g. a baseline downloaded as a CI artefact)."""
    record = read_run_file(path)
    results = open_store(db)
    if record.id in results.run_ids():
        raise UsageError(f"run {record.id} is already in {results.path}; nothing imported")
    results.begin_run(record)
    for cell in record.cells:
        results.add_cell(record, cell)
    for outcome in record.outcomes:
        results.add_outcome(record, outcome)
    for claim in record.claims:
        results.add_claim(record, claim)
    for profile in record.profiles:
        results.add_profile(record, profile)
    results.finish_run(record)
    return record


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


def history(
    workload: str,
    stack: str,
    params: Sequence[str] = (),
    db: str | None = None,
    *,
    label: str | None = None,
    machine: str | None = None,
) -> tuple[list[tuple[str, str, Cell]], dict[str, str]]:
    """(run id, run start, cell) of every stored cell of a workload on a stack, oldest first,
    keeping those whose parameters match ``params`` (``"n=1024"``) and whose run has ``label``
    and ran on ``machine`` (a fingerprint, as ``runs`` shows it); and each run's machine."""
    name = str(parse_stack(stack))
    wanted = dict(_param_filter(text) for text in params)
    results = open_store(db, must_exist=True)
    identities = results.identities()
    machines = {run_id: ident.get("fingerprint", "") for run_id, ident in identities.items()}

    def kept(run_id: str, cell: Cell) -> bool:
        identity = identities.get(run_id, {})
        return (
            all(str(cell.params.get(k)) == v for k, v in wanted.items())
            and (label is None or identity.get("label") == label)
            and (machine is None or identity.get("fingerprint") == machine)
        )

    rows = [row for row in results.cells_of(workload, name) if kept(row[0], row[2])]
    if not rows:
        given = [*params, *([f"label {label}"] if label else [])]
        given += [f"machine {machine}"] if machine else []
        which = f" with {', '.join(given)}" if given else ""
        raise UsageError(f"no stored results of {workload} on {name}{which}; see 'stackwars runs'")
    return rows, machines


def _param_filter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise ParameterError(f"--param {text!r} is not KEY=VALUE; example: --param n=1024")
    return name.strip(), value.strip()
