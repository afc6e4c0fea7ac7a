"""``stackwars bisect --stacks S --good V --bad W -- RUN_OPTIONS``: its arguments and its
handler (found by ``commands.discover``)."""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path
from typing import Any, TypeAlias

from rich.text import Text

from stackwars.commands.options import add_alpha
from stackwars.errors import UsageError
from stackwars.instruments.ab import service as ab
from stackwars.instruments.ab.bisect import plan as planning
from stackwars.instruments.ab.bisect import render, service
from stackwars.report.console import report_console

# Written as a string: argparse's action class is not subscriptable at run time.
Subparsers: TypeAlias = "argparse._SubParsersAction[Any]"
# Exit statuses besides 0 (one release named) and 2 (bad input).
EXIT_NOT_REPRODUCIBLE = 1
EXIT_NOT_NARROWED = 3
OWNED = ("--stacks",)


def add_bisect(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "bisect",
        help="which release of a framework made cells slower (or faster): interleaved "
        "comparisons release against release, an environment each",
        description=(
            "Find the first release of a framework where cells changed: the releases from "
            "--good to --bad come from the package index; each runs in an environment of its "
            "own (<framework>-<version>, made once and reused); good against bad is compared "
            "first, and what it shows (slower, else faster) is the change looked for (none: "
            "it says so and stops); then a release between at a time against the last good "
            "one, each an interleaved A/B session as in 'stackwars ab'. Exit 0 when one "
            "release is named, 1 when the change is not reproducible (good and bad shown the "
            "same), 3 when it stopped without naming one (good against bad undecided, "
            "releases passed over, the time budget, good or bad not installable)."
        ),
        epilog="example: stackwars bisect --stacks jax:eager --good 0.9.2 --bad 0.10.2 -- "
        "--workload selu --param n=2000",
    )
    _add_versions(parser)
    _add_measure(parser)
    parser.add_argument("--out", metavar="DIR", help="folder for the steps' rounds")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    parser.add_argument(
        "run_options",
        nargs=argparse.REMAINDER,
        metavar="-- RUN_OPTIONS",
        help="after --: the stackwars run options of the cells (workload, params, budgets)",
    )
    parser.set_defaults(handler=bisect_command)


def _add_versions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stacks", required=True, help="the stacks, of one framework (e.g. jax:eager)"
    )
    parser.add_argument(
        "--good",
        required=True,
        metavar="VERSION",
        help="an earlier release, without the change; or a date (YYYY-MM-DD): the newest "
        "release uploaded to PyPI by then",
    )
    parser.add_argument(
        "--bad",
        required=True,
        metavar="VERSION",
        help="a later release, with it; or a date, as for --good",
    )
    parser.add_argument(
        "--versions",
        metavar="LIST",
        help="the releases to search, comma-separated, instead of the package index's",
    )
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="PACKAGE==VERSION",
        help="also pinned in every release's environment (e.g. optax==0.2.4; repeat for more)",
    )


def _add_measure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threshold",
        type=float,
        default=5.0,
        metavar="PCT",
        help="smallest change a step calls slower or faster (5)",
    )
    add_alpha(parser)
    parser.add_argument("--min-rounds", type=int, default=3, help="rounds before a look (3)")
    parser.add_argument("--max-rounds", type=int, default=10, help="rounds a step at most (10)")
    parser.add_argument(
        "--time-budget", type=float, default=1800.0, metavar="S", help="seconds at most (1800)"
    )


def bisect_command(args: argparse.Namespace, argv: list[str]) -> int:
    request = request_of(args)
    console = report_console()

    def show(line: str) -> None:
        console.print(Text(line), highlight=False, soft_wrap=True)

    if args.dry_run:
        states = service.planned_states(request.plan)
        for line in render.plan_lines(request.plan, request.run_options, states, request.out_dir):
            show(line)
        return 0
    bisection = service.run(request, lambda event: show(render.event_line(event)), ab.default_clock)
    for line in render.summary_lines(bisection):
        show(line)
    if bisection.reproducible is False:
        return EXIT_NOT_REPRODUCIBLE
    return 0 if bisection.reproducible and bisection.search.named else EXIT_NOT_NARROWED


def request_of(args: argparse.Namespace) -> service.Request:
    """The bisection asked for, checked (a UsageError for bad input)."""
    options = list(args.run_options)
    if options[:1] == ["--"]:
        options = options[1:]
    for option in options:
        if option.split("=", 1)[0] in OWNED:
            raise UsageError(
                f"{option} after --: give the stacks as bisect's --stacks (each release's "
                "environment is added to them)"
            )
    available, elsewhere = _releases(args)
    good, bad = _versions(args)
    plan = planning.plan(args.stacks, good, bad, available, args.pin, elsewhere=elsewhere)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    request = service.Request(
        plan=plan,
        run_options=tuple(options),
        out_dir=Path(args.out or Path("stackwars-bisect") / stamp),
        threshold=args.threshold / 100,
        min_rounds=args.min_rounds,
        max_rounds=args.max_rounds,
        time_budget_s=args.time_budget,
        alpha_pct=args.alpha,
    )
    service.check(request)
    return request


def _versions(args: argparse.Namespace) -> tuple[str, str]:
    """--good and --bad as releases: a date (YYYY-MM-DD) is the newest release uploaded by
    then, from PyPI's upload times."""
    if not (planning.is_date(args.good) or planning.is_date(args.bad)):
        return args.good, args.bad
    framework, _ = planning.framework_of(args.stacks)
    uploads = service.upload_dates(planning.packages(framework)[0])

    def resolved(option: str, text: str) -> str:
        return planning.release_on(text, uploads, option) if planning.is_date(text) else text

    return resolved("--good", args.good), resolved("--bad", args.bad)


def _releases(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The releases this Python can install (--versions, else the index's), and those the
    index has for other Pythons only."""
    if args.versions:
        return [v.strip() for v in args.versions.split(",")], []
    framework, _ = planning.framework_of(args.stacks)
    package = planning.packages(framework)[0]
    everywhere = service.index_versions(package, "--ignore-requires-python")
    return service.index_versions(package), everywhere


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((170, add_bisect),)
