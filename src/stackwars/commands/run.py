"""``stackwars run``: plan the cells, run each in a worker, store and show the results."""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.commands.ir import capture_stack
from stackwars.commands.listing import usable_peak
from stackwars.commands.maxbatch import print_max_batches
from stackwars.config import RunOptions, default_memory_budget, parse_device, parse_size
from stackwars.errors import UsageError
from stackwars.frameworks import all_stacks
from stackwars.frameworks import parse_stacks as parse_stack_list
from stackwars.ir.capture import stages
from stackwars.report.console import report_console
from stackwars.report.progress import Progress
from stackwars.report.table import build_tables, render_markdown, render_rich
from stackwars.results import metadata, store
from stackwars.results.aggregate import merge_repeats
from stackwars.results.run import Run, new_run_id, now
from stackwars.results.schema import Cell
from stackwars.runner import plan, session
from stackwars.runner.protocol import CellSpec
from stackwars.suites import get_suite
from stackwars.timing.timer import TimingConfig

EXIT_NOT_ALL_OK = 1


def timing_config(args: argparse.Namespace, overrides: dict[str, float]) -> TimingConfig:
    values: dict[str, Any] = dict(overrides)
    if args.target_ci is not None:
        if not 0 < args.target_ci < 100:
            raise UsageError(f"--target-ci {args.target_ci} must be a percentage in (0, 100)")
        values["target_rel_ci"] = args.target_ci / 100
    if args.budget is not None:
        if args.budget <= 0:
            raise UsageError(f"--budget {args.budget} must be a positive number of seconds")
        values["steady_budget_s"] = args.budget
    return dataclasses.replace(TimingConfig(), **values)


def run_options(args: argparse.Namespace, overrides: dict[str, float]) -> RunOptions:
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout} must be a positive number of seconds")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads {args.threads} must be at least 1")
    budget = parse_size(args.memory_budget) if args.memory_budget else default_memory_budget()
    return RunOptions(
        device=parse_device(args.device),
        timeout_s=args.timeout or RunOptions.timeout_s,
        memory_budget=budget,
        cache=args.cache,
        threads=args.threads,
        x64=args.x64,
        seed=args.seed,
        timing=timing_config(args, overrides),
        workload_files=tuple(str(Path(p).resolve()) for p in args.workload_file),
        force=args.force,
    )


def chosen_cells(args: argparse.Namespace, device: str) -> tuple[list[CellSpec], dict[str, float]]:
    """The cells asked for, and the suite's timing overrides (none for a single workload)."""
    stacks = parse_stack_list(args.stacks) if args.stacks else None
    if args.workload:
        workload = workloads.get(args.workload)
        values = plan.parse_param_args(workload, args.param)
        cells = plan.cells_for(workload, values, stacks or all_stacks(), device)
        overrides: dict[str, float] = {}
    else:
        suite = get_suite(args.suite or "quick")
        values = plan.suite_param_args(suite, args.param)
        cells, overrides = plan.suite_cells(suite, stacks, device, values), suite.timing
    if args.to_host:
        cells = [dataclasses.replace(cell, to_host=True) for cell in cells]
    if not cells:
        raise UsageError("nothing to run: the stacks chosen do not meet the suite's stacks")
    return cells, overrides


def run(args: argparse.Namespace, argv: list[str]) -> int:
    results = None
    if args.resume:
        record, options, remaining, results = _resumed(args)
    else:
        for path in args.workload_file:
            workloads.load_workload_file(path)
        chosen, overrides = chosen_cells(args, parse_device(args.device))
        options = run_options(args, overrides)
        if args.find_max_batch:
            return print_max_batches(chosen, options.memory_budget)
        cells = plan.schedule(chosen, args.repeat, args.order_seed)
        remaining = cells
        record = Run(
            id=new_run_id(),
            started=now(),
            machine={**metadata.machine_info(), "blas_env": metadata.blas_environment()},
            versions=metadata.framework_versions(),
            argv=argv,
            options=options.to_dict(),
            planned=[dataclasses.asdict(cell) for cell in cells],
        )
    planned = plan.plan(remaining, options.memory_budget, options.force)
    results = results or store.Store(store.default_path(args.db))
    for warning in machine_warnings(record.machine):
        report_console().print(f"warning: {warning}")
    results.begin_run(record)
    _execute(record, planned, options, results, args)
    if args.capture_ir:
        capture_ir(record, options, results)
    strict_failure = args.strict and any(cell.status != "ok" for cell in record.cells)
    return EXIT_NOT_ALL_OK if strict_failure else 0


def _resumed(args: argparse.Namespace) -> tuple[Run, RunOptions, list[CellSpec], store.Store]:
    """The stored run, its options, and the cells it has not finished."""
    if args.suite or args.workload or args.param or args.stacks or args.find_max_batch:
        raise UsageError(
            "--resume continues a stored run as it was planned; drop the other "
            "selection options (--suite, --workload, --param, --stacks, --find-max-batch)"
        )
    results = store.Store(store.default_path(args.db))
    record = results.load_run(args.resume)
    if not record.planned:
        raise UsageError(f"run {record.id} stored no plan to resume; start a new run")
    options = RunOptions.from_dict(record.options)
    for path in options.workload_files:
        workloads.load_workload_file(path)
    done = {(cell.key(), cell.repeat) for cell in record.cells}
    cells = [CellSpec(**spec) for spec in record.planned]
    remaining = [cell for cell in cells if (cell.key(), cell.repeat) not in done]
    record.status, record.finished = "running", None
    return record, options, remaining, results


def _execute(
    record: Run,
    planned: list[plan.PlannedCell],
    options: RunOptions,
    results: store.Store,
    args: argparse.Namespace,
) -> None:
    json_path = Path(args.json) if args.json else None
    sinks: list[session.Sink] = [results.add_cell]
    if json_path:
        sinks.append(lambda current, _cell: current.write_json(json_path))
    try:
        with Progress(total=len(planned), quiet=args.quiet) as progress:
            session.execute(planned, options, record, sinks, progress)
    finally:
        results.finish_run(record)
        if json_path:
            record.write_json(json_path)
    console = report_console()
    tables = build_tables(merge_repeats(record.cells), usable_peak(console, record.machine))
    console.print(render_rich(tables))
    if args.markdown:
        Path(args.markdown).write_text(render_markdown(tables), encoding="utf-8")
    console.print(f"run {record.id}: {status_counts(record.cells)}; stored in {results.path}")


def capture_ir(record: Run, options: RunOptions, results: store.Store) -> None:
    """Capture the IR of every ok cell whose stack has a compiler, once per cell key, and
    store it with the run."""
    seen: set[tuple[str, str, str, str, bool]] = set()
    console = report_console()
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
        console.print(f"IR of {cell.label()}: {len(texts)} stage(s) stored; missing: {missing}")


def machine_warnings(machine: dict[str, Any]) -> list[str]:
    """Machine settings that make every number of the run less stable, with the fix."""
    warnings = []
    governor = machine.get("governor")
    if governor not in (None, "performance"):
        warnings.append(
            f"the CPU frequency governor is {governor!r}: clock speed follows load, so times "
            "vary; for stable numbers set it to 'performance' (cpupower frequency-set -g "
            "performance)"
        )
    load = machine.get("load_average")
    if load and load[0] > 0.5:
        warnings.append(
            f"the 1-minute load average is {load[0]:.2f} before the run started: other work "
            "shares the machine (each cell reports what it saw as background_cores)"
        )
    return warnings


def status_counts(cells: list[Cell]) -> str:
    counts: dict[str, int] = {}
    for cell in cells:
        counts[cell.status] = counts.get(cell.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "no cells"
