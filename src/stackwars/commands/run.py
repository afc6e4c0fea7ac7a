"""``stackwars run``: arguments -> api (plan, execute, capture IR) -> tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from stackwars.commands.options import (
    Subparsers,
    add_db,
    add_executor,
    add_framework_settings,
    framework_settings,
)
from stackwars.config import CACHE_MODES, INPUT_MODES, WORKER_MODES
from stackwars.errors import UsageError
from stackwars.instruments.ir import render as ir_render
from stackwars.instruments.ir.service import CaptureAfterRun
from stackwars.instruments.maxbatch.render import max_batch_table
from stackwars.instruments.maxbatch.service import max_batches
from stackwars.instruments.profile.service import ProfileAfterRun
from stackwars.report import profile as profile_render
from stackwars.report.console import report_console, warn
from stackwars.report.derived import derived_tables
from stackwars.report.progress import Progress
from stackwars.report.sampling import pilot_line, second_look_line
from stackwars.report.table import build_tables, render_markdown, render_rich, status_counts
from stackwars.results.aggregate import merge_repeats
from stackwars.results.run import Run
from stackwars.results.store import Store
from stackwars.service import adaptive, api, execution

EXIT_NOT_ALL_OK = 1
RUN_EXAMPLES = """\
examples:
  stackwars run                                   the quick suite on every installed stack
  stackwars run --suite seed-blog --json out.json seed 000's GEMM and SELU at full size
  stackwars run --workload gemm --param n=256,1024 --stacks numpy,jax:jit,torch:*
  stackwars run --workload poly --param n=64..4096:x2 --stacks numpy,jax:jit
  stackwars run --workload-file my_workloads.py --workload my_op
  stackwars run --suite stack-wars --executor ray --ray-address 10.0.0.1:6379
                                                  each cell a task on a Ray cluster

Each cell runs in a fresh worker process. Every cell's result is stored in the results
store (--db) the moment it ends; Ctrl-C keeps what finished and marks the run interrupted.
"""


def add_run(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="measure cells (default: the quick suite)",
        description="Measure workloads on stacks, one fresh worker per cell.",
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = parser.add_argument_group("what to run")
    choice = what.add_mutually_exclusive_group()
    choice.add_argument("--suite", help="a named suite (see 'stackwars list suites')")
    choice.add_argument(
        "--workload",
        help="workloads, a comma list (see 'stackwars list workloads'); a --param goes to "
        "each of them that has it",
    )
    choice.add_argument(
        "--suite-file", metavar="PATH", help="a suite written in TOML (see docs/methodology.md)"
    )
    what.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="workload parameter values; a list or a range lo..hi:x2 expands into one cell each",
    )
    what.add_argument("--stacks", help="comma list of framework:mode; 'torch' means every mode")
    what.add_argument("--device", default="cpu", help="cpu, gpu, gpu:1 or tpu (default cpu)")
    what.add_argument("--to-host", action="store_true", help="time the copy of results to host")
    what.add_argument(
        "--workload-file",
        action="append",
        default=[],
        metavar="PATH",
        help="a Python file that registers more workloads",
    )
    _add_run_limits(parser)
    _add_run_timing(parser)
    add_framework_settings(parser)
    _add_run_parity(parser)
    _add_run_caches(parser)
    _add_run_output(parser)
    add_executor(parser, "cells")
    parser.set_defaults(handler=run)


def add_rerun(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "rerun", help="measure a stored run's plan again, exactly (same cells, same options)"
    )
    parser.add_argument("run", metavar="RUN", help="a run id or 'latest'")
    _add_rerun_output(parser)
    add_executor(parser, "cells")
    parser.set_defaults(handler=rerun)


def _add_run_limits(run: argparse.ArgumentParser) -> None:
    limits = run.add_argument_group("limits")
    limits.add_argument("--timeout", type=float, metavar="S", help="per cell, seconds (900)")
    limits.add_argument(
        "--memory-budget",
        metavar="SIZE",
        help="per worker, e.g. 8GiB (default: 75%% of available memory, split between --jobs)",
    )
    limits.add_argument(
        "--device-memory-budget",
        metavar="SIZE",
        help="what an accelerator cell's predicted device peak must fit, e.g. 70GiB (default: "
        "90%% of the GPU's memory as nvidia-smi reports it; unchecked when unknown)",
    )
    limits.add_argument(
        "--force",
        action="store_true",
        help="run cells whose predicted peak exceeds the memory budget (the watchdog still "
        "stops them at the budget); without it they are reported oom with the prediction",
    )
    limits.add_argument(
        "--find-max-batch",
        action="store_true",
        help="run nothing: for each cell, print the largest batch whose predicted peak fits "
        "the memory budget (workloads with a batch parameter)",
    )
    limits.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="cells measured at a time on this machine (default 1: cells timed side by side "
        "share the cores and disturb each other's timings; more is faster, and the run "
        "records it and warns)",
    )
    limits.add_argument(
        "--workers",
        choices=WORKER_MODES,
        default="per-cell",
        help="per-cell (default): each cell in a fresh worker, every figure its own, a first "
        "run as a user's first call pays it; per-stack: each stack's cells one after another "
        "in one worker, in a drawn order (--order-seed), the framework imported once: much "
        "cheaper rounds for 'stackwars ab', steady times and peaks still each cell's own, "
        "first runs not a fresh process's (each cell records its place in its worker)",
    )


def _add_run_timing(run: argparse.ArgumentParser) -> None:
    timing = run.add_argument_group("timing")
    timing.add_argument(
        "--target-ci",
        type=float,
        metavar="PCT",
        help="stop when the 95%% CI of the median is within PCT %% (1)",
    )
    timing.add_argument(
        "--budget",
        type=float,
        metavar="S",
        help="steady-state time budget per cell, seconds (10; quick: 0.3)",
    )
    timing.add_argument(
        "--repeat",
        default="1",
        metavar="N|auto",
        help="measure each cell in N fresh workers, in random interleaved order; statistics "
        "then treat workers as the unit. auto: a pilot of 3 workers a cell (not in the "
        "numbers) plans how many each cell needs for its interval across workers within "
        "±3 %%, from 3 to 10, within 20 minutes; those are then measured",
    )
    timing.add_argument(
        "--order-seed", type=int, default=0, metavar="N", help="seed of the --repeat order (0)"
    )
    timing.add_argument(
        "--second-look",
        type=float,
        default=adaptive.SECOND_LOOK_S,
        metavar="S",
        help="with --repeat 1: after the cells, a second worker of the cheapest ok cells, as "
        "many as fit S seconds; a cell whose two workers disagree far beyond their own "
        "intervals is marked ≋ (processes landing at different speeds) "
        f"({adaptive.SECOND_LOOK_S:g}; 0: none)",
    )
    timing.add_argument("--seed", type=int, default=0, help="input seed (0)")
    timing.add_argument(
        "--inputs",
        choices=INPUT_MODES,
        default="resident",
        help="resident: inputs placed on the device once, before timing (the default); "
        "per-call: every timed call places the host NumPy inputs itself, the transfer timed "
        "with the work (seed 002's jax.jit(f)(jnp.array(x)); numpy has nothing to place)",
    )


def _add_run_parity(run: argparse.ArgumentParser) -> None:
    parity = run.add_argument_group("parity")
    parity.add_argument(
        "--rtol",
        type=float,
        metavar="R",
        help="relative tolerance of every cell's check against the reference, replacing the "
        "workloads' (float64 about 1.1e-8, float32 2e-6, times each workload's "
        "error_growth); recorded in the run's options. Random draws keep their statistical "
        "check, train steps their comparison across stacks",
    )
    parity.add_argument(
        "--atol",
        type=float,
        metavar="A",
        help="absolute tolerance, in the result's units (default: rtol times the RMS of the "
        "reference)",
    )


def _add_run_caches(run: argparse.ArgumentParser) -> None:
    caches = run.add_argument_group("compile caches")
    caches.add_argument(
        "--cache",
        choices=CACHE_MODES,
        help="fresh per cell (cold, the default), shared (warm), fresh including toolchain "
        "artifacts such as Inductor's headers (pristine), or each cell cold and then its "
        "first run again in a fresh worker with the cache it filled (cold-then-warm; the "
        "compile-cache suite's)",
    )
    caches.add_argument(
        "--cache-dir",
        metavar="PATH",
        help="keep persistent compile caches (JAX's, Inductor's) in PATH across runs: the "
        "first run fills it, later runs start warm (implies --cache warm)",
    )


def _add_run_output(run: argparse.ArgumentParser) -> None:
    output = run.add_argument_group("output")
    output.add_argument("--json", metavar="PATH", help="also write the run as JSON, kept current")
    output.add_argument(
        "--resume",
        metavar="RUN",
        help="finish an interrupted run (an id or 'latest') without redoing finished cells",
    )
    add_db(output)
    output.add_argument("--markdown", metavar="PATH", help="also write the tables as markdown")
    output.add_argument("--strict", action="store_true", help="exit 1 when a cell is not ok")
    output.add_argument(
        "--capture-ir",
        action="store_true",
        help="after the run, capture each compiled cell's IR and store it with the run",
    )
    output.add_argument(
        "--profile",
        nargs="?",
        const="*",
        metavar="STACKS",
        help="after the run, profile each ok cell (or those of STACKS, a comma list) in a "
        "fresh worker, as 'stackwars profile' does; the profiles are stored with the run, "
        "the raw traces beside the store (stackwars-profiles/RUN)",
    )
    output.add_argument("--quiet", action="store_true", help="no progress, only the tables")
    output.add_argument(
        "--label", metavar="TEXT", help="a name for the run, shown by 'runs' (e.g. baseline)"
    )


def _add_rerun_output(rerun: argparse.ArgumentParser) -> None:
    add_db(rerun)
    rerun.add_argument("--json", metavar="PATH", help="also write the run as JSON, kept current")
    rerun.add_argument("--markdown", metavar="PATH", help="also write the tables as markdown")
    rerun.add_argument("--strict", action="store_true", help="exit 1 when a cell is not ok")
    rerun.add_argument("--quiet", action="store_true", help="no progress, only the tables")
    rerun.add_argument("--label", metavar="TEXT", default="", help="a name for the new run")


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
        inputs=args.inputs,
        force=args.force,
        seed=args.seed,
        repeat=execution.workers_per_cell(args.repeat),
        order_seed=args.order_seed,
        jobs=args.jobs,
        workers=args.workers,
        rtol=args.rtol,
        atol=args.atol,
        **framework_settings(args),
    )


def run(args: argparse.Namespace, argv: list[str]) -> int:
    console = report_console()
    if args.find_max_batch and not args.resume:
        answers, options = max_batches(selection(args), measure(args))
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
    """The run measured by the service (its sampling and after-run steps included), with
    progress; then its tables, and what each after-run step found."""
    resumed = getattr(args, "resume", None) is not None
    sampling = execution.Sampling.of(
        getattr(args, "repeat", "1"), getattr(args, "second_look", 0.0), resumed=resumed
    )
    after = _after_run_steps(args)
    # Connected first: an executor that cannot start is one line, with nothing stored.
    executor = api.open_executor(
        args.executor, args.ray_address, planned.options, args.ray_resource
    )
    results = api.open_store(args.db)
    for warning in planned.warnings:
        warn(warning)
    stacks = [cell.spec.stack for cell in planned.cells if not cell.skip_reason]
    with Progress(len(planned.cells), quiet=args.quiet, stacks=stacks) as progress:
        executed = execution.execute_run(
            planned,
            results,
            progress,
            executor=executor,
            json_path=Path(args.json) if args.json else None,
            sampling=sampling,
            after=after,
            on_round=progress.more,
            on_step=progress.after_run,
        )
    record = executed.record
    _show(record, args, results, executed.second_look)
    _show_after_run(executed)
    strict_failure = args.strict and any(cell.status != "ok" for cell in record.cells)
    return EXIT_NOT_ALL_OK if strict_failure else 0


def _after_run_steps(args: argparse.Namespace) -> list[execution.AfterRun]:
    """The steps after the cells the options ask for (bad --profile stacks refused here,
    before anything runs)."""
    steps: list[execution.AfterRun] = []
    if getattr(args, "capture_ir", False):
        steps.append(CaptureAfterRun())
    profile = getattr(args, "profile", None)
    if profile is not None:
        steps.append(ProfileAfterRun.of(profile))
    return steps


def _show_after_run(executed: execution.Executed) -> None:
    console = report_console()
    for line in ir_render.after_run_lines(executed.found.get(CaptureAfterRun.name, [])):
        console.print(line)
    if ProfileAfterRun.name in executed.found:
        profiles = executed.found[ProfileAfterRun.name]
        for shown in profile_render.after_run(profiles):
            console.print(shown, highlight=False)
        console.print(f"{len(profiles)} profile(s) stored with run {executed.record.id}")


def _show(record: Run, args: argparse.Namespace, results: Store, looked: bool) -> None:
    """The run's tables (merged over workers), what they imply, and where it is stored."""
    console = report_console()
    peak, stale = api.usable_peak(record.machine, record.options.get("device", "cpu"))
    if stale:
        warn(stale)
    merged = merge_repeats(record.cells)
    tables = build_tables(merged, peak)
    console.print(render_rich(tables))
    lost = sum(1 for cell in record.cells if cell.node.get("lost"))
    if lost:  # not measurements: the user can have them measured
        warn(
            f"{lost} cell(s) of run {record.id} were lost with their Ray node, never measured: "
            f"'stackwars run --resume {record.id} --executor ray --ray-address HEAD:PORT' "
            "measures them once nodes that can run them are back"
        )
    if looked:
        console.print(second_look_line(merged))
    if pilot_line(record.cells):
        console.print(pilot_line(record.cells))
    derived, derived_markdown = derived_tables(record.cells)
    for table in derived:
        console.print(table)
    if args.markdown:
        markdown = render_markdown(tables) + derived_markdown
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    console.print(f"run {record.id}: {status_counts(record.cells)}; stored in {results.path}")


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


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((10, add_run), (40, add_rerun))
