"""Run one job in fresh processes and time its whole life (framework import included).

stackwars runs through its own worker (``run_in_worker``, as ``stackwars run`` does); a peer
runs ``harness.py`` by path, which for pyperf spawns pyperf's own worker processes. Either
way this process imports no framework.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from peers.cells import Job
from peers.harness import PeerBudgets
from stackwars.config import default_memory_budget
from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import CellSpec
from stackwars.runner.child import kill_tree
from stackwars.runner.isolate import BackgroundMeter, run_in_worker
from stackwars.runner.protocol import Request
from stackwars.runner.session import wants_x64
from stackwars.timing.stats import summarize
from stackwars.timing.timer import TimingConfig

HARNESS_SCRIPT = Path(__file__).with_name("harness.py")
INPUT_SEED = 0
OUTPUT_TAIL_CHARS = 1500


@dataclass(frozen=True)
class Budgets:
    """How long each harness measures, how peers synchronise, and when a job is given up."""

    timing: TimingConfig
    peers: PeerBudgets
    sync: str  # "async": peers sync each call only on asynchronous stacks; "always"
    timeout_s: float


def run_job(job: Job, budgets: Budgets) -> dict[str, Any]:
    """The job's record: what it measured, or why it failed, and its wall time."""
    with tempfile.TemporaryDirectory(prefix="stackwars-peers-") as scratch:
        start, meter = time.monotonic(), BackgroundMeter()
        if job.harness == "stackwars":
            measured = _stackwars(job, budgets, Path(scratch))
        else:
            measured = _peer(job, budgets, Path(scratch))
        wall_s, background = time.monotonic() - start, meter.cores()
    return {
        "harness": job.harness,
        "cell": job.cell.name,
        "stack": job.stack,
        "repeat": job.repeat,
        "wall_s": wall_s,
        # Cores other processes kept busy meanwhile: a job that shared the machine says so.
        "background_cores": background,
        **measured,
    }


def _stackwars(job: Job, budgets: Budgets, scratch: Path) -> dict[str, Any]:
    spec = CellSpec(job.cell.workload, dict(job.cell.params), job.stack, repeat=job.repeat)
    settings = RunSettings(cache_dir=str(scratch), x64=wants_x64(spec, "auto"))
    request = Request(cell=spec, settings=settings, timing=budgets.timing, seed=INPUT_SEED)
    cell = run_in_worker(request, budgets.timeout_s, default_memory_budget())
    steady = cell.steady
    if cell.status != "ok" or not steady.median_s:
        return {"status": cell.status, "detail": cell.reason[-OUTPUT_TAIL_CHARS:]}
    # On asynchronous stacks the peers wait for every call, so the comparable stackwars
    # number is its single-call latency; its pipelined steady median is kept beside it.
    summary = summarize(cell.latency_samples_s or steady.samples_s)
    return {
        "status": "ok",
        "median_s": summary.median,
        "pipelined_median_s": steady.median_s,
        "measure": "call+sync latency" if cell.latency_samples_s else "steady median",
        "precision": summary.ci_half_width_rel,
        "precision_kind": "95% CI half-width/median",
        "samples": summary.count,
        "stable": steady.stable,
        "warnings": cell.warnings,
        "runtime": cell.settings.get("framework", {}),
    }


def _peer(job: Job, budgets: Budgets, scratch: Path) -> dict[str, Any]:
    job_path, result_path = scratch / "job.json", scratch / "result.json"
    description = {
        "harness": job.harness,
        "workload": job.cell.workload,
        "params": job.cell.params,
        "stack": job.stack,
        "seed": INPUT_SEED,
        "sync": budgets.sync,
        "budgets": asdict(budgets.peers),
        "cache_dir": str(scratch),
    }
    job_path.write_text(json.dumps(description), encoding="utf-8")
    command = [sys.executable, str(HARNESS_SCRIPT), "--job", str(job_path)]
    output = _run([*command, "--result", str(result_path)], scratch, budgets.timeout_s)
    if not result_path.exists():
        return {"status": "error", "detail": output[-OUTPUT_TAIL_CHARS:]}
    return {"status": "ok", **json.loads(result_path.read_text(encoding="utf-8"))}


def _run(command: list[str], cwd: Path, timeout_s: float) -> str:
    """Run a command in its own session; past the timeout its whole tree (pyperf's workers
    included) is killed. Returns its output."""
    output_path = cwd / "output.txt"
    with output_path.open("wb") as output:
        popen = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            output.write(f"\ntimed out after {timeout_s:g} s\n".encode())
        finally:
            if popen.poll() is None:
                kill_tree(popen)
    return output_path.read_text(encoding="utf-8", errors="replace")
