"""Run one cell in a fresh timing worker (through ``runner/child.py``), or a stack's cells in
one shared worker (``--workers per-stack``), and what the parent adds to each result: the
worker's wall time, the process tree's peak memory (a worker of its own only: a shared
worker's tree held several cells), and the CPU other processes used meanwhile. A worker killed
for memory or time, or that died without a result, becomes a cell with that status (``oom``,
``timeout``, ``error``) and the reason: in a shared worker, the cell it was measuring, the
cells after it measured in a new shared worker.
"""

from __future__ import annotations

import json
import resource
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from stackwars.results.schema import Cell
from stackwars.runner.child import ChildEnd, Limits, Listener, run_child
from stackwars.runner.environments import interpreter_for
from stackwars.runner.protocol import Request
from stackwars.runner.shared_worker import KIND as SHARED_KIND
from stackwars.runner.shared_worker import cell_file

# Other processes using more than this many cores on average while a cell ran: its numbers
# shared the machine and deserve a warning.
BACKGROUND_LIMIT_CORES = 0.25


class BackgroundMeter:
    """CPU time that neither this process nor its (waited-for) children used, over a span.

    The machine's busy time comes from /proc/stat (psutil.cpu_times); ours and our children's
    from getrusage, which counts a worker and every descendant it waited for (Inductor's
    compile processes) once the worker has been waited for.
    """

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.busy = self._machine_busy()
        self.ours = self._our_cpu()

    @staticmethod
    def _machine_busy() -> float:
        times = psutil.cpu_times()
        return sum(
            getattr(times, name, 0.0)
            for name in ("user", "nice", "system", "irq", "softirq", "steal")
        )

    @staticmethod
    def _our_cpu() -> float:
        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            usage = resource.getrusage(who)
            total += usage.ru_utime + usage.ru_stime
        return total

    def cores(self) -> float:
        """Average number of cores other processes kept busy since the meter started."""
        wall = time.monotonic() - self.start
        other = (self._machine_busy() - self.busy) - (self._our_cpu() - self.ours)
        return max(0.0, other) / wall if wall > 0 else 0.0


def background_warning(cores: float) -> str:
    if cores <= BACKGROUND_LIMIT_CORES:
        return ""
    return (
        f"background load: other processes kept {cores:.2f} CPU cores busy on average while "
        f"this cell ran (of {psutil.cpu_count()}); its numbers shared the machine"
    )


def run_in_worker(
    request: Request,
    timeout_s: float,
    budget_bytes: int,
    on_progress: Listener | None = None,
) -> Cell:
    """Measure ``request.cell`` in a fresh worker; every outcome comes back as a Cell.
    ``on_progress`` hears the worker's phases as it goes."""
    started = time.monotonic()
    meter = BackgroundMeter()
    limits = Limits(timeout_s, budget_bytes)
    end = run_child(
        "stackwars.runner.worker",
        "timing",
        request.to_dict(),
        limits,
        on_progress=on_progress,
        interpreter=interpreter_for(request.cell.environment),
    )
    if end.ok and end.result is not None:
        cell = Cell.from_dict(end.result)
    else:
        cell = failed_cell(request, end.status, _reason(request, end))
    cell.wall_s = time.monotonic() - started
    cell.memory.peak_tree_rss_bytes = end.peak_tree_rss
    if end.status not in ("oom", "timeout"):  # killed descendants are not ours to count
        cores = meter.cores()
        cell.settings["background_cores"] = cores
        cell.warnings.extend(filter(None, [background_warning(cores)]))
    return cell


def run_in_shared_worker(
    requests: Sequence[Request],
    timeout_s: float,
    budget_bytes: int,
    on_progress: Listener | None = None,
) -> list[Cell]:
    """Measure ``requests``' cells in this order in one shared worker (runner/shared_worker.py)
    under the memory budget and the cells' timeouts together; every outcome comes back as a
    Cell, in the same order. A cell the worker cannot measure is measured in a worker of its
    own, with a warning saying why."""
    cells: list[Cell] = []
    remaining = list(requests)
    while remaining:
        answers, end, meter = _shared_round(remaining, timeout_s, budget_bytes, on_progress)
        measured = [Cell.from_dict(a["cell"]) for a in answers if isinstance(a.get("cell"), dict)]
        _background(measured, meter, end, alone=len(remaining) == 1)
        shared = iter(measured)
        for request, answer in zip(remaining, answers, strict=False):
            if "cell" in answer:
                cells.append(next(shared))
            else:  # measured apart, after the others: its own worker's figures
                cells.append(_own_worker(request, str(answer.get("own_worker")), timeout_s,
                                         budget_bytes, on_progress))  # fmt: skip
        if len(answers) == len(remaining):
            break
        # The worker ended early: the cell it was measuring takes how it ended.
        lost = remaining[len(answers)]
        cells.append(failed_cell(lost, end.status if not end.ok else "error", _reason(lost, end)))
        remaining = remaining[len(answers) + 1 :]
    return cells


def _shared_round(
    requests: Sequence[Request],
    timeout_s: float,
    budget_bytes: int,
    on_progress: Listener | None,
) -> tuple[list[dict[str, Any]], ChildEnd, BackgroundMeter]:
    """One shared worker over ``requests``: the answers of the cells it finished (in order,
    read from its cell files, also when it was killed), how it ended, and the background
    load meanwhile."""
    meter = BackgroundMeter()
    limits = Limits(timeout_s * len(requests), budget_bytes)
    with tempfile.TemporaryDirectory(prefix="stackwars-cells-") as name:
        folder = Path(name)
        end = run_child(
            "stackwars.runner.shared_worker",
            SHARED_KIND,
            {"cells": [request.to_dict() for request in requests]},
            limits,
            scratch=folder,
            on_progress=on_progress,
            interpreter=interpreter_for(requests[0].cell.environment),
        )
        answers = []
        for position in range(len(requests)):
            path = cell_file(folder, position)
            if not path.is_file():
                break
            answers.append(json.loads(path.read_text(encoding="utf-8")))
    if end.ok and len(answers) < len(requests):
        end.status, end.detail = "error", "the shared worker ended without measuring every cell"
    return answers, end, meter


def _own_worker(
    request: Request,
    why: str,
    timeout_s: float,
    budget_bytes: int,
    on_progress: Listener | None,
) -> Cell:
    """A cell the shared worker could not measure, measured in a worker of its own and saying
    why."""
    cell = run_in_worker(request, timeout_s, budget_bytes, on_progress)
    cell.warnings.append(f"measured in a worker of its own, not its stack's shared one: {why}")
    return cell


def _background(cells: Sequence[Cell], meter: BackgroundMeter, end: ChildEnd, alone: bool) -> None:
    """What the parent adds to a shared worker's cells: the background load over its life, on
    each (it was measured once, over them all), and, for a worker that had one cell only, its
    process tree's peak, as for a worker of its own."""
    cores = meter.cores() if end.status not in ("oom", "timeout") else None
    for cell in cells:
        if alone:
            cell.memory.peak_tree_rss_bytes = end.peak_tree_rss
        if cores is not None:
            cell.settings["background_cores"] = cores
            cell.warnings.extend(filter(None, [background_warning(cores)]))


def _reason(request: Request, end: ChildEnd) -> str:
    if end.status == "error":
        return f"worker for {request.cell.label()}: {end.detail}"
    return end.detail


def failed_cell(request: Request, status: str, reason: str) -> Cell:
    spec = request.cell
    return Cell(
        workload=spec.workload,
        params=dict(spec.params),
        stack=spec.stack,
        device=spec.device,
        to_host=spec.to_host,
        repeat=spec.repeat,
        status=status,
        reason=reason,
    )
