"""Run one cell in a fresh worker process, under a wall-clock timeout and a memory budget.

The parent never imports a framework. It polls the resident memory of the worker's whole
process tree (Inductor compiles in child processes) and kills the tree when it passes the
budget (``oom``) or the timeout (``timeout``). A worker that dies without a result is an
``error`` with the tail of its output, or ``oom`` when the kernel killed it with SIGKILL.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from stackwars.results.schema import Cell
from stackwars.runner.protocol import Request

POLL_S = 0.05
OUTPUT_TAIL_CHARS = 3000
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


@dataclass
class Watch:
    """What the parent saw of a worker while it ran."""

    peak_tree_rss: int = 0
    killed_for: str = ""  # "", "oom" or "timeout"
    detail: str = ""


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (0 once it is gone)."""
    total = 0
    try:
        members = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


def kill_tree(popen: subprocess.Popen[bytes]) -> None:
    """Kill the worker's process group (the worker and every child it started)."""
    try:
        os.killpg(popen.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    popen.wait()


def watch(popen: subprocess.Popen[bytes], timeout_s: float, budget_bytes: int) -> Watch:
    seen = Watch()
    process = psutil.Process(popen.pid)
    deadline = time.monotonic() + timeout_s
    while popen.poll() is None:
        rss = tree_rss(process)
        seen.peak_tree_rss = max(seen.peak_tree_rss, rss)
        if rss > budget_bytes:
            seen.killed_for = "oom"
            seen.detail = (
                f"resident memory {rss / 2**30:.2f} GiB passed the memory budget "
                f"{budget_bytes / 2**30:.2f} GiB; the worker was killed "
                "(raise it with --memory-budget, or use a smaller size)"
            )
        elif time.monotonic() > deadline:
            seen.killed_for = "timeout"
            seen.detail = (
                f"still running after the {timeout_s:g} s timeout; raise it with --timeout"
            )
        if seen.killed_for:
            kill_tree(popen)
            break
        time.sleep(POLL_S)
    return seen


def run_child(
    module: str, args: list[str], folder: Path, timeout_s: float, budget_bytes: int
) -> tuple[int, Watch, Path]:
    """Run ``python -m module args...`` in a new session under the timeout and the budget;
    return its exit status, what was seen of it, and the file holding its output."""
    output_path = folder / "output.txt"
    with output_path.open("wb") as output:
        popen = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=folder,
        )
        try:
            seen = watch(popen, timeout_s, budget_bytes)
        finally:
            # Whatever interrupted the parent, no worker is left running.
            if popen.poll() is None:
                kill_tree(popen)
    return popen.returncode, seen, output_path


def output_tail(output_path: Path) -> str:
    return output_path.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL_CHARS:]


def run_in_worker(request: Request, timeout_s: float, budget_bytes: int) -> Cell:
    """Measure ``request.cell`` in a fresh worker; every outcome comes back as a Cell."""
    with tempfile.TemporaryDirectory(prefix="stackwars-worker-") as scratch:
        folder = Path(scratch)
        request_path, result_path = folder / "request.json", folder / "result.json"
        request_path.write_text(request.to_json(), encoding="utf-8")
        started = time.monotonic()
        meter = BackgroundMeter()
        returncode, seen, output_path = run_child(
            "stackwars.runner.worker",
            [str(request_path), str(result_path)],
            folder,
            timeout_s,
            budget_bytes,
        )
        cell = _outcome(request, returncode, seen, result_path, output_path)
        cell.wall_s = time.monotonic() - started
        cell.memory.peak_tree_rss_bytes = seen.peak_tree_rss
        if not seen.killed_for:  # killed descendants are not ours to count any more
            cores = meter.cores()
            cell.settings["background_cores"] = cores
            cell.warnings.extend(filter(None, [background_warning(cores)]))
        return cell


def _outcome(
    request: Request, returncode: int, seen: Watch, result_path: Path, output_path: Path
) -> Cell:
    spec = request.cell
    if seen.killed_for:
        return failed_cell(request, seen.killed_for, seen.detail)
    if result_path.exists():
        return Cell.from_dict(json.loads(result_path.read_text(encoding="utf-8")))
    tail = output_tail(output_path)
    if returncode == -signal.SIGKILL:
        return failed_cell(
            request, "oom", f"killed by SIGKILL from outside (the kernel's OOM killer?)\n{tail}"
        )
    how = (
        f"killed by {signal.Signals(-returncode).name}"
        if returncode < 0
        else f"exited with status {returncode}"
    )
    return failed_cell(
        request, "error", f"worker for {spec.label()} {how} without a result\n{tail}"
    )


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
