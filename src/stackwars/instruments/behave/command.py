"""``stackwars behave``: how each stack behaves when ordinary Python meets its compiler."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table
from rich.text import Text

from stackwars.commands.options import Subparsers, add_db, add_executor, add_workload_files
from stackwars.config import RunOptions
from stackwars.instruments.behave import probes
from stackwars.instruments.behave.data import Outcome, outcome_from_dict
from stackwars.instruments.behave.render import behave_report
from stackwars.instruments.behave.service import PROBE_TIMEOUT_S, behave_run, default_jobs
from stackwars.report.console import report_console
from stackwars.service import api


def add_behave(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "behave",
        help="how each stack behaves when ordinary Python meets its compiler (probes)",
        description=(
            "Run small probe programs (seed 000's JIT pitfalls and their fixes, Python side "
            "effects, a new shape) on every stack, each in a fresh worker, and classify what "
            "happened: works, error, fallback, silently different, retraced N, same or new "
            "numbers (random draws), unsupported. The outcomes are stored as a run: "
            "'stackwars runs' lists it, 'show' and 'export' read it."
        ),
        epilog="example: stackwars behave --probes boolean-mask,value-if --stacks jax",
    )
    parser.add_argument("--probes", metavar="A,B", help="comma list (default: every probe)")
    parser.add_argument("--stacks", help="comma list of framework:mode (default: every stack)")
    parser.add_argument("--list", action="store_true", help="list the probes and stop")
    parser.add_argument("--details", action="store_true", help="one line per cell: what happened")
    parser.add_argument("--json", metavar="PATH", help="also write the run (its outcomes) as JSON")
    parser.add_argument("--label", help="a name for this run in 'stackwars runs'")
    add_db(parser)
    parser.add_argument("--timeout", type=float, metavar="S", help="per probe and stack (300)")
    parser.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="workers at a time with --executor local (default: 2, or 1 on a one-core "
        "machine); --jobs 1 leaves each probe's per-call times (the cost of a retrace) "
        "undisturbed by another worker",
    )
    parser.add_argument("--quiet", action="store_true", help="only the matrix")
    add_workload_files(parser)
    add_executor(parser, "probes")
    parser.set_defaults(handler=behave_command)


def behave_command(args: argparse.Namespace, argv: list[str]) -> int:
    console = report_console()
    if args.list:
        table = Table("probe", "what a user expects")
        for probe in probes.registry().values():
            table.add_row(probe.name, Text(probe.description))
        console.print(table)
        return 0
    names = [name.strip() for name in (args.probes or "").split(",") if name.strip()]

    def progress(outcome: Outcome) -> None:
        if not args.quiet:
            console.print(Text(f"{outcome.probe} on {outcome.stack}: {outcome.outcome}"))

    # Ray places the probes itself; --jobs is the local executor's.
    jobs = args.jobs or (1 if args.executor == "ray" else default_jobs())
    # Connected first: an executor that cannot start is one line, with nothing stored.
    options = RunOptions(jobs=jobs)
    executor = api.open_executor(args.executor, args.ray_address, options, args.ray_resource)
    try:
        results = api.open_store(args.db)
        record = behave_run(
            names,
            args.stacks,
            results,
            argv=argv,
            label=args.label or "",
            timeout_s=args.timeout or PROBE_TIMEOUT_S,
            workload_files=[str(Path(p).resolve()) for p in args.workload_file],
            jobs=jobs,
            on_outcome=progress,
            executor=executor,
        )
    finally:
        executor.close()
    outcomes = [outcome_from_dict(data) for data in record.outcomes]
    for part in behave_report(outcomes, args.details):
        console.print(part, highlight=False, soft_wrap=True)
    console.print(f"run {record.id}: {len(record.outcomes)} outcomes; stored in {results.path}")
    if args.json:
        record.write_json(Path(args.json))
    return 0


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((50, add_behave),)
