"""Repeated cells (``--repeat N``: the same cell in N fresh workers) merged into one result.

The merged cell pools every worker's steady samples; its median is the pooled median and its
interval a hierarchical bootstrap (workers, then blocks), because the variation between fresh
processes is usually larger than within one. Times before steady state are the median over
workers; peaks are the maximum. Cells that did not end ok are kept apart, as they are, and so
are workers that ran on different machines (a Ray cluster's nodes): they are never pooled.
"""

from __future__ import annotations

import copy
import math
import statistics
from collections.abc import Collection, Iterable

from stackwars.results.machines import machine_of
from stackwars.results.schema import Cell, CellKey
from stackwars.timing.compare import bootstrap_median_ci, within_worker_sd
from stackwars.timing.stats import summarize

# Workers disagree when their medians spread by more than DISAGREE_SPREAD and by more than
# DISAGREE_FACTOR times what each worker's own blocks allow: the cell has more than one speed
# across processes (jax:jit SELU 2000² lands near 1.1 ms or 4.6 ms here), and one worker's
# confident number would be an accident of which one ran.
DISAGREE_SPREAD = 0.10
DISAGREE_FACTOR = 10.0

TIME_FIELDS = (
    "import_s",
    "init_s",
    "transfer_s",
    "setup_s",
    "first_run_s",
    "second_run_s",
    "dispatch_s",
)


def workers_by_cell(cells: Iterable[Cell]) -> dict[CellKey, list[Cell]]:
    """Each cell's workers (every status), in first-seen order."""
    groups: dict[CellKey, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.key(), []).append(cell)
    return groups


def ok_once(cells: Iterable[Cell], stacks: Collection[str] = ()) -> list[Cell]:
    """The first ok worker of each cell (of ``stacks``; empty: every stack), in run order:
    what a step after the run (IR capture, profiling) measures once per cell."""
    seen: set[CellKey] = set()
    chosen = []
    for cell in cells:
        if cell.status != "ok" or cell.key() in seen or (stacks and cell.stack not in stacks):
            continue
        seen.add(cell.key())
        chosen.append(cell)
    return chosen


def merge_repeats(cells: Iterable[Cell]) -> list[Cell]:
    """One cell per key and machine among the ok cells, in first-seen order; other cells
    unchanged."""
    groups: dict[tuple[CellKey, str | None], list[Cell]] = {}
    order: list[Cell | tuple[CellKey, str | None]] = []
    for cell in cells:
        if cell.status != "ok" or not cell.steady.samples_s:
            order.append(cell)
            continue
        group = (cell.key(), machine_of(cell))
        if group not in groups:
            groups[group] = []
            order.append(group)
        groups[group].append(cell)
    return [item if isinstance(item, Cell) else _merge(groups[item]) for item in order]


def _merge(workers: list[Cell]) -> Cell:
    if len(workers) == 1:
        return workers[0]
    cell = copy.deepcopy(workers[0])
    samples = [worker.steady.samples_s for worker in workers]
    pooled = [value for worker in samples for value in worker]
    summary = summarize(pooled)
    low, high = bootstrap_median_ci(samples)
    steady = cell.steady
    steady.median_s, steady.ci95_low_s, steady.ci95_high_s = summary.median, low, high
    steady.iqr_s, steady.mad_s, steady.min_s = summary.iqr, summary.mad, summary.min
    steady.mean_s, steady.std_s, steady.samples_s = summary.mean, summary.std, pooled
    steady.blocks = sum(worker.steady.blocks for worker in workers)
    steady.stable = all(worker.steady.stable for worker in workers)
    for name in TIME_FIELDS:
        values = [getattr(w.times, name) for w in workers if getattr(w.times, name) is not None]
        setattr(cell.times, name, statistics.median(values) if values else None)
    cell.first_run_breakdown = _median_phases([w.first_run_breakdown for w in workers])
    _merge_warm_starts(cell, workers)
    cell.runs_to_steady = max((w.runs_to_steady or 0) for w in workers)
    cell.memory.peak_rss_bytes = max((w.memory.peak_rss_bytes or 0) for w in workers)
    if cell.work.flops and summary.median > 0:
        cell.gflops = cell.work.flops / summary.median / 1e9
    cell.settings["merged_workers"] = len(workers)
    cell.warnings = sorted({w for worker in workers for w in worker.warnings})
    cell.warnings.append(_spread_note(workers))
    cell.settings["variance"] = variance_components(samples)
    disagreement = workers_disagree(samples)
    if disagreement:
        cell.settings["workers_disagree"] = disagreement
        cell.warnings.append(f"unstable across workers: {disagreement}")
    return cell


def variance_components(samples: list[list[float]]) -> dict[str, float]:
    """Standard deviations (of log times, about relative) between the workers' medians and of
    one worker's median from its own blocks: where more repetitions would pay."""
    logs = [math.log(statistics.median(worker)) for worker in samples if worker]
    between = statistics.stdev(logs) if len(logs) > 1 else 0.0
    return {"between_workers": between, "within_worker": within_worker_sd(samples)}


def workers_disagree(samples: list[list[float]]) -> str:
    """Why fresh workers' medians disagree far beyond their own intervals ('' when not)."""
    medians = sorted(statistics.median(worker) for worker in samples if worker)
    if len(medians) < 2 or medians[0] <= 0 or medians[-1] / medians[0] - 1 <= DISAGREE_SPREAD:
        return ""
    logs = [math.log(m) for m in medians]
    between = statistics.stdev(logs)
    within = within_worker_sd(samples)
    if within > 0 and between < DISAGREE_FACTOR * within:
        return ""
    listed = ", ".join(f"{m * 1e3:.4g} ms" for m in medians)
    return (
        f"worker medians {listed}: spread {medians[-1] / medians[0] - 1:.0%}, each worker's own "
        f"median known to ±{within * 196:.1f}%; processes land at different speeds (bimodal?), "
        "run more workers (--repeat) before trusting one number"
    )


def _median_phases(breakdowns: list[dict[str, float]]) -> dict[str, float]:
    """Each phase's median over the workers that report it."""
    names = dict.fromkeys(name for phases in breakdowns for name in phases)
    return {
        name: statistics.median(phases[name] for phases in breakdowns if name in phases)
        for name in names
    }


def _merge_warm_starts(cell: Cell, workers: list[Cell]) -> None:
    measured = [w.warm_start for w in workers if w.warm_start.first_run_s is not None]
    if not measured:
        return
    start = cell.warm_start
    start.status, start.reason = "ok", ""
    start.first_run_s = statistics.median(s.first_run_s or 0.0 for s in measured)
    start.first_run_breakdown = _median_phases([s.first_run_breakdown for s in measured])


def _spread_note(workers: list[Cell]) -> str:
    medians = sorted(w.steady.median_s or 0.0 for w in workers)
    spread = (medians[-1] - medians[0]) / medians[0] if medians[0] > 0 else float("inf")
    listed = ", ".join(f"{m * 1e3:.4g} ms" for m in medians)
    return f"{len(workers)} workers, medians {listed} (spread {spread:.1%})"
