"""The profile worker: one cell on one stack, timed and then profiled with the framework's own
profiler, in a fresh process.

Started through ``runner/child.py`` with ``{"request": Request, "out_dir": absolute path,
"calls": N}``. The cell is built and measured exactly as a timing worker does it
(``worker.CellRun``: set-up, warm-up, the timing protocol's steady state, parity), which gives
the unprofiled steady time; then N more steady calls run inside the profiler. Where the stack
compiles to XLA, its optimized HLO is captured (``ir/``) and each XLA operation of the profile
is named by what its instruction runs. Answers with a ``profiling.result.Profile``; the
profiler's files go into out_dir. Like the timing worker, it always answers: failures are data.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.ir.capture import capturer, stages
from stackwars.ir.hlo import Instruction, instructions
from stackwars.profiling import analyse
from stackwars.profiling.capture import no_profiler_reason, profile_function, profiler
from stackwars.profiling.result import Profile
from stackwars.results.schema import Cell
from stackwars.runner.child import ProgressWriter, serve
from stackwars.runner.failure import error_reason
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun, Prepared

HLO_STAGE = "optimized_hlo"


def profile_cell(request: Request, out_dir: Path, calls: int) -> Profile:
    spec = request.cell
    profile = Profile(
        stack=spec.stack, workload=spec.workload, params=dict(spec.params), device=spec.device
    )
    found = profiler(spec.stack)
    if found is None:
        profile.status, profile.reason = "unsupported", no_profiler_reason(spec.stack)
        return profile
    profile.blind_spots = found.blind_spots
    # Read by the framework when it is imported, which the cell run does next.
    os.environ.update(found.environment)
    progress = ProgressWriter()
    run = CellRun(request, progress)
    cell = run.run()
    _steady(profile, cell)
    if cell.status != "ok" or run.prepared is None:
        profile.status, profile.reason = cell.status, cell.reason or "the cell did not run"
        return profile
    try:
        return _profile(profile, run.prepared, out_dir, calls, progress)
    except Exception as exc:  # the cell ran, its profile failed: say why, as data
        profile.status, profile.reason = "error", error_reason(exc)
        return profile


def _profile(
    profile: Profile, prepared: Prepared, out_dir: Path, calls: int, progress: ProgressWriter
) -> Profile:
    progress("profiling", True)
    trace = profile_function(profile.stack)(
        lambda: prepared.framework.sync(prepared.call()), calls, out_dir
    )
    progress("optimized HLO", True)
    hlo = _optimized_hlo(profile.stack, prepared, out_dir, profile)
    return analyse.fill(profile, trace, hlo)


def _steady(profile: Profile, cell: Cell) -> None:
    """The unprofiled steady state, its CPU time and page faults, and the threads the
    framework says it uses."""
    steady = cell.steady
    if steady is not None:
        profile.steady_s = steady.median_s
        if steady.ci95_low_s is not None and steady.ci95_high_s is not None:
            profile.steady_ci95_s = (steady.ci95_low_s, steady.ci95_high_s)
    profile.cpu = dataclasses.asdict(cell.cpu)
    settings = (cell.settings or {}).get("framework", {})
    profile.framework_threads = {k: v for k, v in settings.items() if "thread" in k}


def _optimized_hlo(
    stack: str, prepared: Prepared, out_dir: Path, profile: Profile
) -> dict[str, Instruction]:
    """The optimized HLO's instructions for a stack that compiles to XLA ({} for others),
    captured the way ``stackwars ir`` captures it and kept beside the trace."""
    if HLO_STAGE not in stages(stack):
        return {}
    captured, failed = capturer(stack)(prepared.unprepared, prepared.args, prepared.framework)
    if HLO_STAGE not in captured:
        reason = failed.get(HLO_STAGE, "not captured")
        profile.notes.append(f"no optimized HLO to name XLA's operations with: {reason}")
        return {}
    path = out_dir / f"{HLO_STAGE}.txt"
    path.write_text(captured[HLO_STAGE], encoding="utf-8")
    profile.files[HLO_STAGE] = str(path)
    return instructions(captured[HLO_STAGE])


def answer(data: dict[str, Any]) -> dict[str, Any]:
    request = Request.from_dict(data["request"])
    out_dir = Path(data["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in request.workload_files:
        workloads.load_workload_file(path)
    return profile_cell(request, out_dir, int(data["calls"])).to_dict()


def main(argv: list[str]) -> int:
    return serve(argv, "profile", answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
