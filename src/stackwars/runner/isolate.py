"""Run one cell in a fresh timing worker (through ``runner/child.py``), and what the parent
adds to its result: the worker's wall time, the process tree's peak memory, and the CPU other
processes used meanwhile. A worker killed for memory or time, or that died without a result,
becomes a cell with that status (``oom``, ``timeout``, ``error``) and the reason.
"""

from __future__ import annotations

import resource
import time

import psutil

from stackwars.results.schema import Cell
from stackwars.runner.child import ChildEnd, Limits, Listener, run_child
from stackwars.runner.environments import interpreter_for
from stackwars.runner.protocol import Request

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
