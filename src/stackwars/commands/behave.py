"""``stackwars behave``: how each stack behaves when ordinary Python meets its compiler."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table
from rich.text import Text

from stackwars import api, probes
from stackwars.behave import PROBE_TIMEOUT_S, behave_run, default_jobs
from stackwars.config import RunOptions
from stackwars.report.behave import behave_report
from stackwars.report.console import report_console
from stackwars.results.behave import Outcome, outcome_from_dict


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
    executor = api.open_executor(args.executor, args.ray_address, RunOptions(jobs=jobs))
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
