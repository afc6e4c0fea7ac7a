"""``stackwars claims [FILE ...|--builtin]`` and ``stackwars claim "<one line>"``: check
published performance claims on this machine, store the verdicts with the run, print them."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.text import Text

from stackwars.commands.options import Subparsers, add_db
from stackwars.instruments.claims import service as claimcheck
from stackwars.instruments.claims.files import FORMAT_HELP
from stackwars.instruments.claims.line import parse_line
from stackwars.instruments.claims.render import claims_markdown, claims_table, verdict_counts
from stackwars.instruments.claims.spec import Claim, with_overrides
from stackwars.instruments.claims.verdict import FAILS
from stackwars.report.console import report_console, warn
from stackwars.report.progress import Progress
from stackwars.results.jsonio import write_atomically
from stackwars.service import adaptive, api
from stackwars.timing.compare import DEFAULT_ALPHA, MIN_WORKERS

EXIT_CLAIM_FAILS = 1
# Both commands' description.
WHAT = (
    "Measure the cells the claims are about (each once, in --repeat interleaved fresh "
    "workers), and judge each claim by its value's 95% interval. The verdicts are stored "
    "with the run ('show', 'report'). Exit 1 with --strict when a claim fails."
)


def add_claims(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "claims",
        help="check claims from files, or the built-in ones (the seeds', Keras's) on this machine",
        description=WHAT,
        # argparse formats %(prog)s in descriptions and epilogs only
        epilog="example: stackwars claims --builtin --repeat 3\n\n" + FORMAT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="claim files (TOML)")
    parser.add_argument(
        "--builtin", action="store_true", help="every quantitative claim of the seeds, and Keras's"
    )
    parser.add_argument("--only", metavar="IDS", help="comma list of ids or patterns (seed002-*)")
    _add_claim_options(parser)
    parser.set_defaults(handler=claims)


def add_claim(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "claim",
        help="check one claim written on one line",
        description=WHAT,
        epilog='example: stackwars claim "jax:jit >= 6x numpy:eager on poly n=10000"\n\n'
        + FORMAT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "claim", metavar="CLAIM", help="e.g. 'jax:jit faster than numpy:eager on gemm'"
    )
    _add_claim_options(parser)
    parser.set_defaults(handler=claim)


def _add_claim_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repeat",
        default="auto",
        metavar="N|auto",
        help=f"fresh workers per cell, interleaved; auto (the default): {MIN_WORKERS}, then one "
        "more round at a time for the cells of claims still inconclusive that more workers "
        "would likely decide, up to --max-workers and --time-budget",
    )
    parser.add_argument(
        "--max-workers", type=int, default=10, metavar="N", help="with --repeat auto (10)"
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=1200.0,
        metavar="S",
        help="with --repeat auto: no round starts that would end past S seconds (1200)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a parameter in every claim whose workload has it, e.g. --param n=32 --param "
        "scale=tiny for a quick check at test size: the verdicts then speak of those sizes, "
        "not the claims' (for a crossover over KEY, a comma list replaces the values swept)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a claim fails")
    parser.add_argument("--budget", type=float, metavar="S", help="steady budget per cell (1)")
    parser.add_argument("--timeout", type=float, metavar="S", help="per cell, seconds (900)")
    parser.add_argument("--memory-budget", metavar="SIZE", help="per worker, e.g. 8GiB")
    parser.add_argument("--order-seed", type=int, default=0, metavar="N", help="of the order (0)")
    add_db(parser)
    parser.add_argument("--json", metavar="PATH", help="also write the run and its claims as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="also write the claims as Markdown")
    parser.add_argument("--label", metavar="TEXT", default="", help="a name for the run")
    parser.add_argument("--quiet", action="store_true", help="no progress, only the claims")


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

    # Each look of --repeat auto shares the budget (adaptive.Adaptive.alpha).
    alpha = settings.alpha if settings is not None else DEFAULT_ALPHA
    judged = claimcheck.conclude(prepared, record, results, note, alpha)
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


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((60, add_claims), (70, add_claim))
