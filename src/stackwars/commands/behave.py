"""``stackwars behave``: how each stack behaves when ordinary Python meets its compiler."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from rich.table import Table

from stackwars import probes
from stackwars.behave import PROBE_TIMEOUT_S, behave
from stackwars.report.behave import behave_details, behave_matrix
from stackwars.report.console import report_console
from stackwars.results.behave import Outcome
from stackwars.results.jsonio import write_atomically


def behave_command(args: argparse.Namespace, argv: list[str]) -> int:
    console = report_console()
    if args.list:
        table = Table("probe", "what a user expects")
        for probe in probes.registry().values():
            table.add_row(probe.name, probe.description)
        console.print(table)
        return 0
    names = [name.strip() for name in (args.probes or "").split(",") if name.strip()]

    def progress(outcome: Outcome) -> None:
        if not args.quiet:
            console.print(f"{outcome.probe} on {outcome.stack}: {outcome.outcome}", highlight=False)

    outcomes = behave(
        names,
        args.stacks,
        timeout_s=args.timeout or PROBE_TIMEOUT_S,
        workload_files=[str(Path(p).resolve()) for p in args.workload_file],
        on_outcome=progress,
    )
    console.print(behave_matrix(outcomes))
    if args.details:
        for line in behave_details(outcomes):
            console.print(line, highlight=False, soft_wrap=True)
    if args.json:
        data = [dataclasses.asdict(outcome) for outcome in outcomes]
        write_atomically(Path(args.json), json.dumps(data, indent=1))
    return 0
