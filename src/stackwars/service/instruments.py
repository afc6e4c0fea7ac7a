"""The service layer's instruments besides runs: the machine's warnings and peak, IR capture,
per-operation profiles, the selftest, the BLAS probe, and the side worker of an A/B session
(re-exported from ``runner/sides.py``). Part of the service layer (``api.py`` re-exports every
name here): typed arguments in, data out, nothing printed; each starts its workers through
``runner/child.py``.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.config import RunOptions, default_memory_budget
from stackwars.errors import UsageError
from stackwars.frameworks import (
    FRAMEWORKS,
    Stack,
    missing_reason,
    parse_stacks,
    stack_missing_reason,
)
from stackwars.frameworks.base import DeviceSupport, split_device
from stackwars.ir.capture import stages
from stackwars.profiling.capture import no_profiler_reason, profiler
from stackwars.profiling.result import Profile
from stackwars.results import store
from stackwars.results.peak import Peak, load_peak, save_peak, stale_reason
from stackwars.results.run import Run
from stackwars.results.selftest import StackResult
from stackwars.runner import plan, session
from stackwars.runner.child import Interpreter, Limits, Listener, run_child  # noqa: F401
from stackwars.runner.peak import measure_peak
from stackwars.runner.protocol import CellSpec
from stackwars.runner.sides import run_side, side_version  # noqa: F401  (re-exported)
from stackwars.timing.timer import TimingConfig

IR_TIMEOUT_S = 600.0
# run --profile: steady calls profiled per cell, and the budget of their unprofiled timing
# (stackwars profile's defaults).
PROFILE_CALLS = 20
PROFILE_BUDGET_S = 1.0
# A stack takes seconds; torch.compile's cold compiles make it about half a minute on 2 cores.
SELFTEST_TIMEOUT_S = 300.0
BLAS_PROBE_TIMEOUT_S = 120.0
# Asking for a TPU where there is none takes TensorFlow seconds; a TPU VM's runtime, longer.
DEVICE_PROBE_TIMEOUT_S = 180.0


def machine_warnings(machine: Mapping[str, Any]) -> list[str]:
    """Machine settings that make every number of the run less stable, with the fix."""
    warnings = []
    governor = machine.get("governor")
    if governor not in (None, "performance"):
        warnings.append(
            f"the CPU frequency governor is {governor!r}: clock speed follows load, so times "
            "vary; for stable numbers set it to 'performance' (cpupower frequency-set -g "
            "performance)"
        )
    warnings.extend(_environment_warnings(machine))
    load = machine.get("load_average")
    if load and load[0] > 0.5:
        warnings.append(
            f"the 1-minute load average is {load[0]:.2f} before the run started: other work "
            "shares the machine (each cell reports what it saw as background_cores)"
        )
    return warnings


def _environment_warnings(machine: Mapping[str, Any]) -> list[str]:
    warnings = []
    kernel_choice = {
        name: value
        for name, value in machine.get("blas_env", {}).items()
        if name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") and value is not None
    }
    if kernel_choice:
        settings = ", ".join(f"{name}={value}" for name, value in kernel_choice.items())
        warnings.append(
            f"{settings} is set: OpenBLAS (numpy's BLAS, and torch's on CPU) runs the kernels "
            "of that core type instead of the ones it would pick for this CPU, which can halve "
            "NumPy's GEMM; each cell records the kernel it ran (settings.blas). To measure the "
            "library's own choice, unset both for this command"
        )
    inherited = machine.get("influential_environment", {})
    if inherited:
        settings = ", ".join(f"{name}={value}" for name, value in inherited.items())
        warnings.append(
            f"your environment sets {settings}: every stack that reads them and does not pin "
            "them runs with them (each cell records them in settings.inherited_environment)"
        )
    return warnings


def usable_peak(machine: Mapping[str, Any], device: str = "cpu") -> tuple[Peak | None, str]:
    """The stored peak of ``device`` when it describes this machine, else None and why (empty
    when there is none at all)."""
    peak = load_peak(device=device)
    if peak is None:
        return None, ""
    stale = stale_reason(peak, dict(machine))
    return (None, stale) if stale else (peak, "")


def measure_and_store_peak(quick: bool = False, device: str = "cpu") -> tuple[Peak, Path]:
    """Measure this machine's peak on ``device`` (~4 minutes on the cpu; ``quick``: seconds,
    not a peak) and store it where tables find it."""
    peak = measure_peak(quick, device=device)
    return peak, save_peak(peak)


def capture_stack(spec: CellSpec, options: RunOptions, out_dir: Path) -> dict[str, Any]:
    """Run the IR worker for one stack; its index, or the reason it failed for every stage."""
    out_dir = out_dir.resolve()  # the worker runs in its own folder
    with tempfile.TemporaryDirectory(prefix="stackwars-ir-") as scratch:
        request = session.request_for(spec, options, Path(scratch) / "cache")
        end = run_child(
            "stackwars.runner.ir_worker",
            "ir",
            {"request": request.to_dict(), "out_dir": str(out_dir)},
            Limits(options.timeout_s, options.memory_budget),
        )
    if end.ok and end.result is not None:
        return end.result
    return {"stack": spec.stack, "stages": {}, "unavailable": {"*": end.detail}}


def profile_cells(
    workload: str, params: tuple[str, ...], stacks: str, workload_files: tuple[str, ...] = ()
) -> list[CellSpec]:
    """One cell per stack to profile (one value per parameter), on cpu."""
    for path in workload_files:
        workloads.load_workload_file(path)
    found = workloads.get(workload)
    values = plan.parse_param_args(found, params)
    if any(len(v) > 1 for v in values.values()):
        raise UsageError("profile compares one cell across stacks: give one value per --param")
    return plan.cells_for(found, values, parse_stacks(stacks), "cpu")


def profile_stack(
    spec: CellSpec,
    options: RunOptions,
    out_dir: Path,
    calls: int,
    on_progress: Listener | None = None,
) -> Profile:
    """Time and profile one cell in a profile worker, the profiler's files in ``out_dir``; a
    stack without a profiler, or one not installed, is unsupported without a worker."""
    reason = stack_missing_reason(spec.framework, spec.mode)
    if profiler(spec.stack) is None:
        reason = no_profiler_reason(spec.stack)
    if reason is not None:
        return _no_profile(spec, "unsupported", reason)
    out_dir = out_dir.resolve()  # the worker runs in its own folder
    with tempfile.TemporaryDirectory(prefix="stackwars-profile-") as scratch:
        request = session.request_for(spec, options, Path(scratch) / "cache")
        end = run_child(
            "stackwars.runner.profile_worker",
            "profile",
            {"request": request.to_dict(), "out_dir": str(out_dir), "calls": calls},
            Limits(options.timeout_s, options.memory_budget),
            on_progress=on_progress,
        )
    if end.ok and end.result is not None:
        return Profile.from_dict(end.result)
    return _no_profile(spec, end.status, end.detail)


def _no_profile(spec: CellSpec, status: str, reason: str) -> Profile:
    return Profile(spec.stack, spec.workload, dict(spec.params), status, reason, device=spec.device)


def profile_folder(spec: CellSpec) -> str:
    """A cell's folder name for its profiler's files: workload, parameters, stack."""
    params = "-".join(f"{key}={value}" for key, value in spec.params.items())
    return re.sub(r"[^\w.=-]+", "_", f"{spec.workload}-{params}-{spec.stack}")


def profile_run(
    record: Run,
    options: RunOptions,
    results: store.Store,
    root: Path,
    *,
    stacks: Collection[str] = (),
    on_progress: Callable[[str, str], None] | None = None,
) -> list[Profile]:
    """Profile a run's ok cells (once per cell; ``stacks``: only theirs), each in a fresh
    profile worker after every timed cell has ended, so that no timed number changes; each
    profile is stored with the run as it ends, its raw trace under ``root``. The unprofiled
    steady state is timed again in the profile worker within PROFILE_BUDGET_S."""
    budget = TimingConfig(steady_budget_s=PROFILE_BUDGET_S, warmup_budget_s=2 * PROFILE_BUDGET_S)
    profiling = dataclasses.replace(options, timing=budget)
    seen: set[tuple[str, str, str, str, bool]] = set()
    profiles = []
    for cell in record.cells:
        if cell.status != "ok" or cell.key() in seen or (stacks and cell.stack not in stacks):
            continue
        seen.add(cell.key())
        spec = CellSpec(cell.workload, cell.params, cell.stack, cell.device, cell.to_host)

        def progress(text: str, label: str = spec.label()) -> None:
            if on_progress is not None:
                on_progress(label, text)

        found = profile_stack(spec, profiling, root / profile_folder(spec), PROFILE_CALLS, progress)
        results.add_profile(record, found.to_dict())
        record.profiles.append(found.to_dict())
        profiles.append(found)
    return profiles


def capture_run_ir(record: Run, options: RunOptions, results: store.Store) -> list[str]:
    """Capture and store the IR of every ok cell of a run whose stack has a compiler, once
    per cell key; one line per cell saying what was stored."""
    seen: set[tuple[str, str, str, str, bool]] = set()
    lines = []
    for cell in record.cells:
        if cell.status != "ok" or cell.key() in seen or not stages(cell.stack):
            continue
        seen.add(cell.key())
        spec = CellSpec(cell.workload, cell.params, cell.stack, cell.device, cell.to_host)
        with tempfile.TemporaryDirectory(prefix="stackwars-ir-") as scratch:
            index = capture_stack(spec, options, Path(scratch))
            texts = {
                stage: (Path(scratch) / name).read_text(encoding="utf-8")
                for stage, name in index["stages"].items()
            }
        results.add_captures(record, cell, texts)
        missing = ", ".join(index["unavailable"]) or "none"
        lines.append(f"IR of {cell.label()}: {len(texts)} stage(s) stored; missing: {missing}")
    return lines


def selftest_stack(stack: Stack, device: str, timeout_s: float) -> StackResult:
    """One stack's selftest; unsupported without a worker when it cannot run here."""
    reason = stack_missing_reason(stack.framework, stack.mode)
    devices = FRAMEWORKS[stack.framework].devices_for(stack.mode)
    if reason is None and split_device(device)[0] not in devices:
        reason = f"{stack} runs on {', '.join(devices)}, not {device}"
    if reason is not None:
        return StackResult(str(stack), "unsupported", reason)
    return run_selftest_worker(stack, device, timeout_s)


def run_selftest_worker(stack: Stack, device: str, timeout_s: float) -> StackResult:
    """The selftest worker's answer; a worker that does not answer becomes its status."""
    with tempfile.TemporaryDirectory(prefix="stackwars-selftest-") as scratch:
        request = {"stack": str(stack), "device": device, "cache_dir": f"{scratch}/cache"}
        limits = Limits(timeout_s, default_memory_budget())
        end = run_child("stackwars.runner.selftest_worker", "selftest", request, limits)
    if end.ok and end.result is not None:
        return StackResult.from_dict(end.result)
    detail = end.detail
    if end.status == "timeout":
        detail = f"still running after {timeout_s:g} s; raise it with --timeout"
    return StackResult(str(stack), end.status, detail)


def device_support() -> dict[str, list[DeviceSupport] | str]:
    """Per installed framework (and per mode with a runtime of its own: torch:xla), the device
    kinds it sees in a fresh worker and why not, or why it could not be asked."""
    probed: dict[str, list[DeviceSupport] | str] = {}
    limits = Limits(DEVICE_PROBE_TIMEOUT_S, default_memory_budget())
    for name, info in FRAMEWORKS.items():
        # A layer over another framework (Keras) sees that framework's devices.
        if info.runs_on is not None or missing_reason(name) is not None:
            continue
        own = {f"{name}:{mode}": mode for mode, special in info.mode_implementations.items()}
        for label, mode in {name: None, **own}.items():
            if mode is not None and stack_missing_reason(name, mode) is not None:
                continue
            request = {"framework": name, "mode": mode}
            end = run_child("stackwars.runner.devices_worker", "devices", request, limits)
            result = end.result if end.ok and end.result is not None else {}
            if "support" in result:
                entries = result["support"]
                probed[label] = [
                    DeviceSupport(e["kind"], tuple(e["devices"]), e["reason"]) for e in entries
                ]
            else:
                probed[label] = result.get("missing") or end.detail[-300:]
    return probed


def blas_libraries() -> dict[str, list[dict[str, Any]] | str]:
    """Per installed framework, the BLAS libraries its worker process loads (or why not)."""
    probed: dict[str, list[dict[str, Any]] | str] = {}
    limits = Limits(BLAS_PROBE_TIMEOUT_S, default_memory_budget())
    for name, info in FRAMEWORKS.items():
        # A layer over another framework (Keras) loads that framework's libraries.
        if info.runs_on is not None or missing_reason(name) is not None:
            continue
        end = run_child("stackwars.runner.blas_worker", "blas", {"framework": name}, limits)
        ok = end.ok and end.result is not None
        probed[name] = end.result["libraries"] if ok and end.result else end.detail[-300:]
    return probed
