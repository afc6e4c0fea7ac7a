"""The worker: measures one cell in a fresh process and writes its result (see protocol.py).

Usage: ``python -m stackwars.runner.worker REQUEST.json RESULT.json``. This is the only
process that imports a framework. Every failure of the work becomes a result with a status;
the worker exits non-zero only when it cannot even write that result.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.frameworks import (
    FRAMEWORKS,
    distribution_version,
    influential_environment,
    load_framework,
)
from stackwars.frameworks.base import DeviceUnavailable, Framework, RunSettings
from stackwars.ir.analyse import analyse
from stackwars.ir.normalise import normalise
from stackwars.results.schema import (
    Cell,
    Compiles,
    Cpu,
    Memory,
    Program,
    Steady,
    WorkCounts,
    Worker,
)
from stackwars.runner.child import ProgressWriter, serve
from stackwars.runner.failure import error_reason
from stackwars.runner.high_water import high_water_bytes, reset_high_water
from stackwars.runner.protocol import Request
from stackwars.runner.speed_mode import speed_mode_facts
from stackwars.timing.quality import measurement_warnings
from stackwars.timing.timer import Measurement, Timer
from stackwars.workloads.base import Bound, Stateful, Workload

Call = Callable[[], Any]

# Input dtypes that turn JAX's 64-bit mode on under --x64 auto (without it JAX computes them
# in 32 bits); 64-bit integers (indices, counts) alone do not: they say nothing of precision.
WIDE_DTYPES = ("float64", "complex128")
OOM_MARKERS = ("RESOURCE_EXHAUSTED", "out of memory", "OutOfMemoryError", "ResourceExhausted")


class OwnWorkerNeeded(Exception):
    """A cell a shared worker cannot measure (its settings are not those the framework started
    with): the parent measures it in a worker of its own, and says why."""


@dataclass(frozen=True)
class Started:
    """A framework imported and started in this worker: the settings it started with and what
    its cells record of that start (environment, BLAS, the framework's effective settings,
    versions)."""

    framework: Framework
    settings: RunSettings
    record: dict[str, Any]


class CellFailed(Exception):
    """Ends a cell early with a status other than ok."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def peak_rss_bytes() -> int:
    """This process's peak resident set: the kernel's high-water mark of its own image (since
    the last reset, runner/high_water.py), else ru_maxrss. Linux carries into ru_maxrss the peak
    of the image a process had before exec, so a worker started from a large parent read the
    parent's size as its own (2026-11-29: a numpy cell's 45 MiB read as the 107 MiB of the run
    that started it, a test's as 2.4 GB)."""
    own = high_water_bytes()
    if own is not None:
        return own
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def home_environment(settings: RunSettings) -> dict[str, str]:
    """Keep the caches and config frameworks write under home inside this cell's folder; a
    pristine cell also gets its own temporary folder, where Inductor keeps its headers."""
    folder = Path(settings.cache_dir)
    environment = {"KERAS_HOME": str(folder / "keras"), "MPLCONFIGDIR": str(folder / "mpl")}
    if settings.cache == "pristine":
        (folder / "tmp").mkdir(parents=True, exist_ok=True)
        environment["TMPDIR"] = str(folder / "tmp")
    return environment


def cell_settings(
    settings: RunSettings, workload: Workload, params: Mapping[str, Any]
) -> RunSettings:
    """The request's settings plus what the workload asks of the framework (the devices a
    map over devices needs), applied before the framework starts and recorded with the cell."""
    return dataclasses.replace(settings, host_devices=workload.host_devices(params))


def inherited_environment(framework: str, pinned: dict[str, str]) -> dict[str, str]:
    """The user's environment variables that this stack reads and does not pin itself."""
    return {
        name: value
        for name, value in influential_environment(framework).items()
        if name not in pinned
    }


def blas_libraries() -> list[dict[str, Any]]:
    """The BLAS and OpenMP libraries loaded in this process, with their threads and the kernel
    each selected (threadpoolctl). XLA (jax, tensorflow) has its own kernels, not listed."""
    from threadpoolctl import threadpool_info

    keys = ("user_api", "internal_api", "version", "num_threads", "threading_layer")
    return [
        {key: library.get(key) for key in (*keys, "architecture", "prefix")}
        for library in threadpool_info()
    ]


def package_versions(distributions: tuple[str, ...]) -> dict[str, str | None]:
    """The installed versions of ``distributions`` and of Python, as this worker sees them:
    what the cell ran with, in whichever environment its worker ran."""
    return {
        "python": platform.python_version(),
        **{name: distribution_version(name) for name in distributions},
    }


def timed(action: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


def classify(exc: BaseException) -> CellFailed:
    """An exception from the work, as a status and a reason: an error's leads with the
    exception and the fix when its cause is known, the traceback's tail after (failure.py)."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError) or any(marker in text for marker in OOM_MARKERS):
        return CellFailed("oom", text[:2000])
    if isinstance(exc, NotImplementedError | DeviceUnavailable):
        # The stack says it cannot run this (torchax cannot lower an op, or run autograd), or
        # its framework sees no such device here (the reason says why and the fix).
        return CellFailed("unsupported", text[:2000])
    return CellFailed("error", error_reason(exc))


Progress = Callable[[str, bool], None]  # what the worker is doing; True: a new phase


PER_CALL = "per-call"
PER_CALL_STATEFUL = (
    "--inputs per-call places a workload's arguments inside every call; a model binds its "
    "inputs to its weights once, in the framework's own objects, so it runs only with "
    "--inputs resident"
)


@dataclass(frozen=True)
class Prepared:
    """What a cell timed, kept for a worker that does more with it (the profile worker):
    the framework set up, the prepared function, its arguments on the device, the function
    before the mode was applied (what IR capture compiles), and, with ``--inputs per-call``,
    the host inputs every call places on the device itself."""

    framework: Framework
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    unprepared: Callable[..., Any]
    host_inputs: tuple[Any, ...] | None = None

    def arguments(self) -> tuple[Any, ...]:
        """A call's arguments: placed once (resident), or placed now from the host inputs
        with the framework's own placement, which waits until they are there (per-call)."""
        if self.host_inputs is None:
            return self.args
        return self.framework.to_device(self.host_inputs)

    def call(self) -> Any:
        return self.fn(*self.arguments())


class CellRun:
    """The timing protocol for one cell, stage by stage, filling ``self.cell``."""

    def __init__(
        self,
        request: Request,
        progress: Progress | None = None,
        started: Started | None = None,
        worker: Worker | None = None,
    ) -> None:
        """``started``: the framework an earlier cell of this worker started (--workers
        per-stack), ``worker`` saying how many cells came before this one."""
        self.request = request
        self.started = started
        # A later cell of a shared worker: whether its peaks could be told from earlier cells'.
        self.own_peaks = False
        self.progress: Progress = progress or (lambda text, change: None)
        spec = request.cell
        self.cell = Cell(
            workload=spec.workload,
            params=dict(spec.params),
            stack=spec.stack,
            device=spec.device,
            to_host=spec.to_host,
            repeat=spec.repeat,
            worker=worker or Worker(),
        )
        self.workload = workloads.get(spec.workload)
        self.params = self.workload.resolve(spec.params)
        self.prepared: Prepared | None = None
        self.first_run_peak: int | None = None  # the high-water mark reset after the first run

    def run(self) -> Cell:
        """The cell measured, also when the work failed (its status says how); raises
        OwnWorkerNeeded alone, for a cell a shared worker cannot measure."""
        try:
            self._run()
        except OwnWorkerNeeded:
            raise
        except CellFailed as failed:
            self.cell.status, self.cell.reason = failed.status, failed.reason
        except Exception as exc:
            failed = classify(exc)
            self.cell.status, self.cell.reason = failed.status, failed.reason
        self.cell.memory.peak_rss_bytes = self._process_peak()
        return self.cell

    def _process_peak(self) -> int | None:
        """The whole process's peak: its two parts' larger when the mark was reset. A later
        cell of a shared worker has the high-water mark since it began (None where the mark
        cannot be reset: the process's peak may be an earlier cell's)."""
        if self.cell.worker.position == 0:
            return max(peak_rss_bytes(), self.first_run_peak or 0)
        if not self.own_peaks:
            return None
        return max(high_water_bytes() or 0, self.first_run_peak or 0)

    def _first_run_ended(self, framework: Framework, total_s: float) -> None:
        """The first run's phases, and its peak resident set, the mark then reset so that
        the timed runs' peak is their own (runner/high_water.py)."""
        self.cell.first_run_breakdown.update(framework.first_run_phases(total_s))
        peak = high_water_bytes()
        if peak is not None and reset_high_water():
            self.first_run_peak = self.cell.memory.first_run_peak_rss_bytes = peak

    def _run(self) -> None:
        spec = self.request.cell
        settings = cell_settings(self.request.settings, self.workload, self.params)
        builder = self.workload.builder(spec.framework)
        if builder is None:
            raise CellFailed(
                "unsupported", f"workload {spec.workload!r} has no {spec.framework} implementation"
            )
        if self.started is None:
            self.started, settings, early_inputs = self._start(settings)
        else:
            settings, early_inputs = self._join(self.started, settings)
        framework = self.started.framework
        self.cell.settings = {
            **self.started.record,
            "run": vars(settings),
            "timing": vars(self.request.timing),
            "seed": self.request.seed,
        }
        self.progress("making inputs and placing them", True)
        inputs = early_inputs or self.workload.make_inputs(self.params, self.request.seed)
        prepared, bound = self._prepare(framework, builder(self.params), inputs, settings)
        self.prepared = prepared
        measurement = self._measure(prepared)
        if self.first_run_peak is not None:
            self.cell.memory.timed_peak_rss_bytes = high_water_bytes()
        self._record(framework, measurement)
        self.cell.memory.peak_rss_bytes = self._process_peak()
        self.progress("counting one call's allocations", True)
        call, _, sync = self._calls(prepared)
        self.cell.memory.call_peak_bytes = framework.call_peak_bytes(lambda: sync(call()))
        self.progress("reading the compiled program", True)
        self._read_program(framework, prepared)
        self.progress("parity against the reference", True)
        self._check_parity(framework, prepared.fn, prepared.args, inputs, bound)

    def _start(self, settings: RunSettings) -> tuple[Started, RunSettings, tuple[Any, ...] | None]:
        """The framework imported and its runtime started for this cell, each timed; the
        settings it started with (x64 decided from the inputs when asked) and the inputs made
        for that decision, if any."""
        spec = self.request.cell
        framework = load_framework(spec.framework, spec.mode)
        environment = {**home_environment(settings), **framework.environment(settings)}
        inherited = inherited_environment(spec.framework, environment)
        os.environ.update(environment)
        # tempfile caches the temporary folder; make it see a TMPDIR set just now.
        tempfile.tempdir = None
        times = self.cell.times
        self.progress(f"importing {spec.framework}", True)
        try:
            _, times.import_s = timed(framework.load)
        except ImportError as exc:
            hint = FRAMEWORKS[spec.framework].install_hint(spec.mode)
            raise CellFailed("unsupported", f"{exc}; fix: {hint}") from exc
        settings, early_inputs, decided = self._x64_from_inputs(framework, settings)
        environment.update(decided)  # recorded as init applies it
        self.progress("starting the runtime", True)
        effective, times.init_s = timed(lambda: framework.init(settings))
        record = {
            "environment": environment,
            "inherited_environment": inherited,
            "blas": blas_libraries(),
            "framework": {**effective, **framework.runtime_settings()},
            "versions": package_versions(FRAMEWORKS[spec.framework].distributions),
        }
        self.cell.memory.rss_after_import_bytes = peak_rss_bytes()
        return Started(framework, settings, record), settings, early_inputs

    def _join(
        self, started: Started, settings: RunSettings
    ) -> tuple[RunSettings, tuple[Any, ...] | None]:
        """This cell's settings in a worker an earlier cell started (--workers per-stack), and
        the inputs made to decide them; OwnWorkerNeeded when they are not the settings the
        framework started with (it cannot start twice: TensorFlow refuses its threads set
        again, JAX its 64-bit mode). The high-water mark is reset, so the peaks this cell
        records are its own."""
        settings, early_inputs, _ = self._x64_from_inputs(started.framework, settings)
        if settings != started.settings:
            differ = {
                name: value
                for name, value in vars(settings).items()
                if vars(started.settings)[name] != value
            }
            raise OwnWorkerNeeded(
                f"it runs with {differ}, the worker's framework started with "
                f"{ {name: vars(started.settings)[name] for name in differ} }"
            )
        self.own_peaks = reset_high_water()
        return settings, early_inputs

    def _read_program(self, framework: Framework, prepared: Prepared) -> None:
        """The program's dialect, operations and FLOPs (Cell.program); one that cannot be read
        is a warning, not a failure: the timed runs stand."""
        try:
            program = framework.compiled_program(prepared.fn, prepared.args)
        except Exception as exc:  # the framework's own error, whatever its type
            self.cell.warnings.append(f"the compiled program could not be read: {exc!r}")
            return
        if program is not None:
            found = analyse(normalise(program.text))
            # A StableHLO call is counted once more under its callee's name: not twice here.
            ops = sum(n for op, n in found.ops.items() if not op.startswith("call @"))
            self.cell.program = Program(found.dialect, ops, program.flops)

    def _x64_from_inputs(
        self, framework: Framework, settings: RunSettings
    ) -> tuple[RunSettings, tuple[Any, ...] | None, dict[str, str]]:
        """The settings with x64 decided from the inputs when the parent left it to them
        (``Request.x64_from_inputs``) and the stack reads it, the inputs made for that, and
        the environment variables the decision sets. The inputs are made after the
        framework's import, whose time stays its own, and before its runtime starts, while
        JAX still takes the setting."""
        plain = framework.environment(settings)
        wide = framework.environment(dataclasses.replace(settings, x64=True))
        reads_x64 = {name for name, value in wide.items() if plain.get(name) != value}
        if not self.request.x64_from_inputs or not reads_x64:
            return settings, None, {}
        inputs = self.workload.make_inputs(self.params, self.request.seed)
        wanted = any(str(getattr(x, "dtype", "")) in WIDE_DTYPES for x in inputs)
        chosen = wide if wanted else plain
        decided = {name: chosen[name] for name in reads_x64}
        return dataclasses.replace(settings, x64=wanted), inputs, decided

    def _prepare(
        self, framework: Framework, built: Any, inputs: tuple[Any, ...], settings: RunSettings
    ) -> tuple[Prepared, Bound | None]:
        """The cell prepared, and its stateful binding if there is one; with --inputs
        per-call, the host inputs each call places itself."""
        per_call = settings.inputs == PER_CALL
        if per_call and isinstance(built, Stateful):
            raise CellFailed("unsupported", PER_CALL_STATEFUL)
        fn, args, bound = self._setup(framework, built, inputs)
        unprepared = built if bound is None else bound.fn
        host = tuple(inputs) if per_call else None
        return Prepared(framework, fn, args, unprepared, host), bound

    def _setup(
        self, framework: Framework, built: Any, inputs: tuple[Any, ...]
    ) -> tuple[Callable[..., Any], tuple[Any, ...], Bound | None]:
        """The prepared function, its arguments, and the stateful binding if there is one.
        A stateful workload places its state itself (a model's weights go straight into the
        framework's own objects), so its transfer time is part of its setup time."""
        mode, times = self.request.cell.mode, self.cell.times
        if not isinstance(built, Stateful):
            arrays, times.transfer_s = timed(lambda: framework.to_device(inputs))
            fn, times.setup_s = timed(lambda: framework.prepare(built, mode))
            return fn, arrays, None
        start = time.perf_counter()
        bound: Bound = built.bind(inputs, framework.to_device, mode)
        fn = framework.prepare(bound.fn, mode)
        times.setup_s = time.perf_counter() - start
        return fn, bound.args, bound

    def _calls(self, prepared: Prepared) -> tuple[Call, Call, Callable[[Any], None]]:
        """The call the timer times, the first call and their synchronisation."""
        framework, fn = prepared.framework, prepared.fn
        if self.request.cell.to_host:
            # The copy to host waits for the result, so it is the synchronisation.
            def call() -> Any:
                return framework.to_host(prepared.call())

            def first() -> Any:
                return framework.to_host(framework.first_call(fn, prepared.arguments()))

            return call, first, lambda out: None
        return prepared.call, lambda: framework.first_call(fn, prepared.arguments()), framework.sync

    def _measure(self, prepared: Prepared) -> Measurement:
        framework = prepared.framework
        call, first, sync = self._calls(prepared)
        timer = Timer(
            call,
            sync,
            config=self.request.timing,
            first_call=first,
            on_first_run=lambda total: self._first_run_ended(framework, total),
            compile_count=framework.compile_count,
            counters=framework.counters,
            measure_latency=framework.is_async() and not self.request.cell.to_host,
            on_phase=self.progress,
        )
        return timer.measure()

    def _record(self, framework: Framework, m: Measurement) -> None:
        cell, summary = self.cell, m.summary()
        cell.times.first_run_s, cell.times.second_run_s = m.first_run_s, m.second_run_s
        if framework.is_async() and not cell.to_host:
            cell.times.dispatch_s = m.dispatch_per_call_s()
            cell.latency_samples_s = m.latency_s
            cell.times.latency_s = statistics.median(m.latency_s) if m.latency_s else None
        cell.runs_to_steady, cell.warmup_s = m.runs_to_steady, m.runs_s
        cell.steady = Steady(
            median_s=summary.median,
            ci95_low_s=summary.ci95_low,
            ci95_high_s=summary.ci95_high,
            iqr_s=summary.iqr,
            mad_s=summary.mad,
            min_s=summary.min,
            mean_s=summary.mean,
            std_s=summary.std,
            blocks=len(m.block_s),
            inner_loops=m.inner_loops,
            stable=m.stable,
            samples_s=m.samples_s,
        )
        cell.compiles = Compiles(
            first_run=m.compiles_first_run,
            second_run=m.compiles_second_run,
            steady=m.compiles_steady,
        )
        cell.counters = m.counters
        calls = m.calls
        cell.cpu = Cpu(
            user_s_per_call=m.steady_usage.user_s / calls,
            sys_s_per_call=m.steady_usage.sys_s / calls,
            page_faults_per_call=m.steady_usage.faults / calls,
        )
        stats = framework.device_memory_stats()
        device = framework.device_memory(stats)
        cell.memory = Memory(
            device_peak_bytes=device.peak_bytes,
            device_reserved_bytes=device.reserved_bytes,
            device_limit_bytes=device.limit_bytes,
            rss_after_import_bytes=cell.memory.rss_after_import_bytes,
            first_run_peak_rss_bytes=cell.memory.first_run_peak_rss_bytes,
            timed_peak_rss_bytes=cell.memory.timed_peak_rss_bytes,
        )
        if stats is not None:
            cell.settings["device_memory_stats"] = stats
        cell.settings["speed_mode"] = speed_mode_facts()  # what could set its speed (issue 34)
        work = self.workload.work(self.params)
        cell.work = WorkCounts(flops=work.flops, bytes=work.bytes)
        cell.gflops = work.flops / summary.median / 1e9 if summary.median > 0 else None
        cell.warnings.extend(measurement_warnings(m))

    def _check_parity(
        self,
        framework: Framework,
        fn: Callable[..., Any],
        args: Any,
        inputs: Any,
        bound: Bound | None,
    ) -> None:
        # Imported here, not at the top: parity needs NumPy, and NumPy must not be loaded
        # before the framework's import is timed (for the numpy stack it is the framework).
        from stackwars.runner import parity

        computed = None
        if bound is None:
            outputs = framework.to_host(fn(*args))
        else:
            bound.reset()
            # The reset's copies run apart: in the step's graph they would make it a graph of
            # its own, compiled again (4 s for a tiny ResNet's train step on torch-xla).
            framework.settle()
            outputs, computed = bound.host_outputs(fn(*args)), bound.computed_dtype
        reference = self.workload.reference(self.params, inputs)
        if reference is None:
            # Nothing in this process can say what is right: the parent compares stacks.
            self.cell.parity = parity.fingerprint(outputs, inputs, self.params, computed)
            self.cell.status = "ok"
            return
        control = self.workload.control(self.params, inputs) if self.workload.control else None
        settings = self.request.settings
        # On a GPU, any precision but "highest" lets some framework's float32 matmuls or
        # convolutions run in TF32 (JAX's and TensorFlow's default, cuDNN's convolutions).
        tf32 = settings.device.startswith("gpu") and settings.matmul_precision != "highest"
        asked = parity.Asked(self.request.rtol, self.request.atol, tf32=tf32)
        self.cell.parity, reason = parity.check(
            self.workload, self.params, outputs, reference, computed=computed, control=control,
            asked=asked,
        )  # fmt: skip
        arrays = [x for x in inputs if hasattr(x, "dtype")]
        narrowed = self._dtype_note(parity.computed_dtype(arrays))
        if narrowed:
            self.cell.warnings.append(narrowed)
        if reason:
            raise CellFailed("mismatch", f"{reason}; {narrowed}" if narrowed else reason)
        self.cell.status = "ok"

    def _dtype_note(self, inputs_dtype: str) -> str:
        """When the stack computed another dtype than its dtype parameter asks for or, without
        one, than its inputs are: what it computed, and the option that changes it. The
        inputs' dtype becomes the requested one when no parameter names it."""
        result = self.cell.parity
        by_parameter = bool(result.requested_dtype)
        result.requested_dtype = result.requested_dtype or inputs_dtype
        requested, computed = result.requested_dtype, result.computed_dtype
        if not requested or not computed or requested == computed:
            return ""
        asked = "asked for" if by_parameter else "the inputs are"
        if self.cell.settings.get("framework", {}).get("x64") is False:
            fix = "--x64 on computes in 64 bits (JAX computes 32 bits without it)"
        else:
            fix = f"the implementation converts: keep its arithmetic in {requested}"
        return f"{asked} {requested}, the stack computed {computed}: {fix}"


def measure(data: dict[str, Any]) -> dict[str, Any]:
    request = Request.from_dict(data)
    for path in request.workload_files:
        workloads.load_workload_file(path)
    return CellRun(request, ProgressWriter()).run().to_dict()


def main(argv: list[str]) -> int:
    return serve(argv, "timing", measure)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
