"""``stackwars run``: arguments -> api (plan, execute, capture IR) -> tables."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from stackwars import adaptive, api
from stackwars.errors import UsageError
from stackwars.report.console import report_console, warn
from stackwars.report.derived import derived_tables
from stackwars.report.maxbatch import max_batch_table
from stackwars.report.progress import Progress
from stackwars.report.table import build_tables, render_markdown, render_rich, status_counts
from stackwars.results.aggregate import merge_repeats
from stackwars.results.run import Run
from stackwars.timing.compare import MIN_WORKERS

EXIT_NOT_ALL_OK = 1


def selection(args: argparse.Namespace) -> api.Selection:
    return api.Selection(
        suite=args.suite,
        workload=args.workload,
        suite_file=args.suite_file,
        params=tuple(args.param),
        stacks=args.stacks,
        device=args.device,
        to_host=args.to_host,
        workload_files=tuple(args.workload_file),
    )


def measure(args: argparse.Namespace) -> api.Measure:
    return api.Measure(
        timeout_s=args.timeout,
        memory_budget=args.memory_budget,
        device_memory_budget=args.device_memory_budget,
        target_ci_pct=args.target_ci,
        budget_s=args.budget,
        cache=args.cache,
        cache_dir=args.cache_dir,
        preallocate=args.preallocate,
        memory_fraction=args.memory_fraction,
        allocator_conf=args.allocator_conf,
        matmul_precision=args.matmul_precision,
        threads=args.threads,
        x64=args.x64,
        force=args.force,
        seed=args.seed,
        repeat=adaptive.parse_repeat(args.repeat) or MIN_WORKERS,
        order_seed=args.order_seed,
        jobs=args.jobs,
    )


def run(args: argparse.Namespace, argv: list[str]) -> int:
    console = report_console()
    if args.find_max_batch and not args.resume:
        answers, options = api.max_batches(selection(args), measure(args))
        console.print(
            max_batch_table(
                answers, options.memory_budget, options.device, options.device_memory_budget
            )
        )
        return 0
    resumed = args.resume is not None
    planned = (
        _resumed(args)
        if resumed
        else api.plan_run(selection(args), measure(args), argv, args.label or "")
    )
    return execute_and_show(planned, args)


def rerun(args: argparse.Namespace, argv: list[str]) -> int:
    planned = api.plan_rerun(api.open_store(args.db, must_exist=True), args.run, argv, args.label)
    return execute_and_show(planned, args)


def execute_and_show(planned: api.PlannedRun, args: argparse.Namespace) -> int:
    """Run the planned cells with progress, then print (and write) the tables."""
    console = report_console()
    # Connected first: an executor that cannot start is one line, with nothing stored.
    executor = api.open_executor(args.executor, args.ray_address, planned.options)
    try:
        results = api.open_store(args.db)
        for warning in planned.warnings:
            warn(warning)
        json_path = Path(args.json) if args.json else None
        stacks = [cell.spec.stack for cell in planned.cells if not cell.skip_reason]
        with Progress(len(planned.cells), quiet=args.quiet, stacks=stacks) as progress:

            def execute(part: api.PlannedRun) -> Run:
                return api.execute(part, results, progress, json_path, executor)

            if getattr(args, "repeat", None) == adaptive.AUTO and not args.resume:
                wanting = adaptive.wide_cells()
                record = adaptive.grow(
                    planned,
                    execute,
                    wanting,
                    settings=adaptive.Adaptive(),
                    clock=time.monotonic,
                    on_round=progress.more,
                )
            else:
                record = execute(planned)
    finally:
        executor.close()
    peak, stale = api.usable_peak(record.machine, record.options.get("device", "cpu"))
    if stale:
        warn(stale)
    tables = build_tables(merge_repeats(record.cells), peak)
    console.print(render_rich(tables))
    derived, derived_markdown = derived_tables(record.cells)
    for table in derived:
        console.print(table)
    if args.markdown:
        markdown = render_markdown(tables) + derived_markdown
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    console.print(f"run {record.id}: {status_counts(record.cells)}; stored in {results.path}")
    if getattr(args, "capture_ir", False):
        for line in api.capture_run_ir(record, planned.options, results):
            console.print(line)
    strict_failure = args.strict and any(cell.status != "ok" for cell in record.cells)
    return EXIT_NOT_ALL_OK if strict_failure else 0


def _resumed(args: argparse.Namespace) -> api.PlannedRun:
    if (
        args.suite
        or args.workload
        or args.param
        or args.stacks
        or args.find_max_batch
        or args.label
    ):
        raise UsageError(
            "--resume continues a stored run as it was planned; drop the other "
            "selection options (--suite, --suite-file, --workload, --param, --stacks, "
            "--find-max-batch, --label)"
        )
    return api.plan_resume(api.open_store(args.db), args.resume)
