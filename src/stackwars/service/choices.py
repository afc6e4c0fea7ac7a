"""What a user asks a run for, checked: which cells (:class:`Selection`) and how to measure
them (:class:`Measure`), turned into cell specs and ``RunOptions``; a bad value is a
:class:`stackwars.errors.UsageError` that says what is allowed. Part of the service layer,
re-exported by ``api.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.config import (
    CACHE_MODES,
    INPUT_MODES,
    MATMUL_PRECISIONS,
    PER_STACK,
    WORKER_MODES,
    RunOptions,
    check_fraction,
    choose,
    default_device_budget,
    default_memory_budget,
    device_memory,
    parse_device,
    parse_size,
)
from stackwars.errors import UsageError
from stackwars.frameworks import default_stacks, parse_stacks
from stackwars.results import metadata
from stackwars.results.schema import CellSpec
from stackwars.runner import plan
from stackwars.suite_files import load_suite_file
from stackwars.suites import Suite, get_suite
from stackwars.timing.timer import TimingConfig


@dataclass(frozen=True)
class Selection:
    """Which cells: a suite (default ``quick``) or workloads (``"gemm"``, ``"gemm,selu"``),
    with parameter values written as on the command line (``"n=256,1024"``,
    ``"n=64..4096:x2"``), stacks as a comma list (``"numpy,jax:jit"``; None: every stack), the
    device, and whether results go to host."""

    suite: str | None = None
    workload: str | None = None
    suite_file: str | None = None  # a TOML suite (suite_files.py)
    params: tuple[str, ...] = ()
    stacks: str | None = None
    device: str = "cpu"
    to_host: bool = False
    workload_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measure:
    """How to measure: limits, timing budgets and fairness settings; None: the defaults."""

    timeout_s: float | None = None
    memory_budget: str | None = None  # "8GiB"; None: 75 % of the memory available now
    device_memory_budget: str | None = None  # None: 90 % of the GPU's (nvidia-smi)
    target_ci_pct: float | None = None
    budget_s: float | None = None
    cache: str | None = None  # cold, warm, pristine, cold-then-warm; None: the suite's, or cold
    cache_dir: str | None = None  # keep compile caches here across runs (implies warm)
    threads: int | None = None
    x64: str = "auto"
    rtol: float | None = None  # parity's, replacing the workloads' (RunOptions.rtol)
    atol: float | None = None
    force: bool = False
    preallocate: bool = False
    memory_fraction: float | None = None  # of the device's memory, for JAX and torch
    allocator_conf: str | None = None  # PYTORCH_CUDA_ALLOC_CONF for torch on a gpu
    matmul_precision: str = "highest"  # highest, high or default (config.MATMUL_PRECISIONS)
    inputs: str = "resident"  # or per-call: placed on the device inside every timed call
    jobs: int = 1  # cells at a time on this machine (--jobs; config.RunOptions.jobs)
    workers: str = "per-cell"  # or per-stack: a stack's cells in one worker (config.WORKER_MODES)
    seed: int = 0
    repeat: int = 1
    order_seed: int = 0


def choose_cells(selection: Selection) -> tuple[list[CellSpec], Suite | None]:
    """The cells asked for, and the suite they come from (None for a single workload)."""
    if sum(map(bool, (selection.suite, selection.workload, selection.suite_file))) > 1:
        raise UsageError("choose one of a suite, a suite file or a workload")
    for path in selection.workload_files:
        workloads.load_workload_file(path)
    device = parse_device(selection.device)
    stacks = parse_stacks(selection.stacks) if selection.stacks else None
    if selection.workload:
        cells = plan.workload_cells(
            selection.workload, selection.params, stacks or default_stacks(), device
        )
        suite = None
    else:
        suite = (
            load_suite_file(Path(selection.suite_file))
            if selection.suite_file
            else get_suite(selection.suite or "quick")
        )
        values = plan.suite_param_args(suite, selection.params)
        cells = plan.suite_cells(suite, stacks, device, values)
    if selection.to_host:
        cells = [dataclasses.replace(cell, to_host=True) for cell in cells]
    if not cells:
        raise UsageError("nothing to run: the stacks chosen do not meet the suite's stacks")
    return cells, suite


def run_options(
    measure: Measure, device: str, suite: Suite | None, workload_files: Sequence[str]
) -> RunOptions:
    """Checked options of a run; a bad value is refused with what is allowed."""
    if measure.timeout_s is not None and measure.timeout_s <= 0:
        raise UsageError(f"--timeout {measure.timeout_s} must be a positive number of seconds")
    if measure.threads is not None and measure.threads < 1:
        raise UsageError(f"--threads {measure.threads} must be at least 1")
    if measure.jobs < 1:
        raise UsageError(f"--jobs {measure.jobs} must be at least 1")
    for name, value in (("--rtol", measure.rtol), ("--atol", measure.atol)):
        if value is not None and not value > 0:
            raise UsageError(f"{name} {value} must be a positive number, e.g. 1e-8")
    budget = parse_size(measure.memory_budget) if measure.memory_budget else None
    cache, cache_root = _cache(measure, suite)
    device = parse_device(device)
    gpu_memory = metadata.gpu_memory_bytes()
    return RunOptions(
        device=device,
        device_memory_budget=parse_size(measure.device_memory_budget)
        if measure.device_memory_budget
        else default_device_budget(device, gpu_memory),
        device_memory_total=device_memory(device, gpu_memory),
        timeout_s=measure.timeout_s or RunOptions.timeout_s,
        # Workers side by side share the memory: the default budget is split between them.
        memory_budget=budget or default_memory_budget() // measure.jobs,
        cache=cache,
        threads=measure.threads,
        x64=measure.x64,
        rtol=measure.rtol,
        atol=measure.atol,
        seed=measure.seed,
        timing=_timing(measure, suite.timing if suite else {}),
        workload_files=tuple(str(Path(p).resolve()) for p in workload_files),
        cache_root=cache_root,
        force=measure.force,
        preallocate=measure.preallocate,
        memory_fraction=check_fraction(measure.memory_fraction),
        allocator_conf=measure.allocator_conf or "",
        matmul_precision=choose("matmul precision", measure.matmul_precision, MATMUL_PRECISIONS),
        inputs=choose("inputs", measure.inputs, INPUT_MODES),
        jobs=measure.jobs,
        workers=_workers(measure.workers, cache),
    )


def _workers(workers: str, cache: str) -> str:
    """The --workers mode, refused with cold-then-warm: that measures each cell's first run
    again in a fresh worker, which a cell's first run in a shared worker is not."""
    choose("workers", workers, WORKER_MODES)
    if workers == PER_STACK and cache == "cold-then-warm":
        raise UsageError(
            "--cache cold-then-warm measures each cell's first run again after a fresh "
            "worker's, and --workers per-stack gives a cell no fresh worker: use --workers "
            "per-cell (the default) with it, or another --cache"
        )
    return workers


def _cache(measure: Measure, suite: Suite | None) -> tuple[str, Path | None]:
    """The compile-cache mode (asked, else the suite's, else cold) and where caches live."""
    cache = measure.cache or (suite.cache if suite else None) or "cold"
    choose("cache mode", cache, CACHE_MODES)
    if not measure.cache_dir:
        return cache, None
    if measure.cache not in (None, "warm"):
        raise UsageError(
            f"--cache-dir keeps compile caches from one run to the next, which --cache "
            f"{measure.cache} does not do; drop --cache {measure.cache} (--cache-dir means warm)"
        )
    root = Path(measure.cache_dir).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise UsageError(f"--cache-dir {measure.cache_dir} is a file; give a folder")
    return "warm", root


def _timing(measure: Measure, overrides: Mapping[str, float]) -> TimingConfig:
    values: dict[str, Any] = dict(overrides)
    if measure.target_ci_pct is not None:
        if not 0 < measure.target_ci_pct < 100:
            raise UsageError(
                f"--target-ci {measure.target_ci_pct} must be a percentage in (0, 100)"
            )
        values["target_rel_ci"] = measure.target_ci_pct / 100
    if measure.budget_s is not None:
        if measure.budget_s <= 0:
            raise UsageError(f"--budget {measure.budget_s} must be a positive number of seconds")
        values["steady_budget_s"] = measure.budget_s
    return dataclasses.replace(TimingConfig(), **values)
