"""``stackwars claims [FILE ...|--builtin]`` and ``stackwars claim "<one line>"``: check
published performance claims on this machine, store the verdicts with the run, print them."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.text import Text

from stackwars import adaptive, api, claimcheck
from stackwars.claims.line import parse_line
from stackwars.claims.spec import Claim, with_overrides
from stackwars.claims.verdict import FAILS
from stackwars.report.claims import claims_markdown, claims_table, verdict_counts
from stackwars.report.console import report_console, warn
from stackwars.report.progress import Progress
from stackwars.results.jsonio import write_atomically
from stackwars.timing.compare import MIN_WORKERS

EXIT_CLAIM_FAILS = 1


def claims(args: argparse.Namespace, argv: list[str]) -> int:
    return _check(claimcheck.load_claims(args.files, args.builtin, args.only), args, argv)


def claim(args: argparse.Namespace, argv: list[str]) -> int:
    return _check([parse_line(args.claim)], args, argv)


def _check(chosen: list[Claim], args: argparse.Namespace, argv: list[str]) -> int:
    repeat = adaptive.parse_repeat(args.repeat)
    settings = (
        None if repeat else adaptive.Adaptive(MIN_WORKERS, args.max_workers, args.time_budget)
    )
    measure = api.Measure(
        timeout_s=args.timeout,
        memory_budget=args.memory_budget,
        budget_s=args.budget,
        repeat=repeat or MIN_WORKERS,
        order_seed=args.order_seed,
    )
    prepared = claimcheck.prepare(with_overrides(chosen, args.param), measure, argv, args.label)
    console = report_console()
    for warning in prepared.planned.warnings:
        warn(warning)
    results = api.open_store(args.db)
    cells = prepared.planned.cells
    stacks = [cell.spec.stack for cell in cells if not cell.skip_reason]
    with Progress(len(cells), quiet=args.quiet, stacks=stacks) as progress:
        record = claimcheck.measure(prepared, results, progress, settings, on_round=progress.more)

    def note(text: str) -> None:
        if not args.quiet:
            console.print(Text(text))

    judged = claimcheck.conclude(prepared, record, results, note)
    console.print(claims_table(judged, f"Claims checked in run {record.id}"))
    console.print(
        Text(
            f"run {record.id}: {verdict_counts(judged)}; {len(record.cells)} cell(s) stored in "
            f"{results.path} ('stackwars show {record.id}' shows them)"
        )
    )
    if args.markdown:
        write_atomically(Path(args.markdown), claims_markdown(judged))
    if args.json:
        record.write_json(Path(args.json))
    failed = any(result.verdict == FAILS for result in judged)
    return EXIT_CLAIM_FAILS if args.strict and failed else 0
