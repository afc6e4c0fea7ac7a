"""``stackwars reproduce``: every seed experiment as one edition on this machine, then its
findings in Markdown; ``--render`` renders the findings of an edition file again."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from rich.text import Text

from stackwars.commands.options import Subparsers, add_db, add_executor
from stackwars.errors import UsageError
from stackwars.instruments.reproduce import service
from stackwars.instruments.reproduce.data import read_edition
from stackwars.instruments.reproduce.plan import SCALES
from stackwars.instruments.reproduce.render.findings import findings_markdown
from stackwars.report.console import report_console
from stackwars.report.progress import Progress
from stackwars.results.jsonio import write_atomically

EXAMPLES = """\
examples:
  stackwars reproduce                          the edition within a 3-hour budget (on 2
                                               cores the whole needs more: the parts left
                                               out are listed, and --resume runs them)
  stackwars reproduce --scale tiny             each kind of experiment once, at test size
  stackwars reproduce --resume                 go on after an interrupt, in --out's folder
  stackwars reproduce --render edition/edition.json --markdown findings.md

The edition's file (--out/edition.json) holds what each finding needs and where it came from;
the runs themselves go to the results store (--db), one per part ('stackwars runs').
"""


def add_reproduce(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        help="every experiment of the seeds as one edition, and its findings",
        description=(
            "Run every experiment of the seeds (their suites, the pitfall probes, the IR "
            "captures and every built-in claim) one part after another on this machine, within "
            "a time budget, and write the edition's file and its findings in Markdown. A part "
            "the budget leaves out is listed as not run, with why."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--scale",
        choices=tuple(SCALES),
        help="full: the seeds' sizes (default); tiny: each kind of experiment once, test size; "
        "a --resume keeps its edition's scale",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        metavar="S",
        help=f"seconds for the whole edition ({service.DEFAULT_BUDGET_S:.0f}); no part starts "
        "after it is spent, and the claims add workers within "
        f"{service.CLAIMS_SHARE * 100:.0f} %% of it",
    )
    parser.add_argument(
        "--out",
        default="stackwars-edition",
        metavar="DIR",
        help="folder for edition.json and findings.md (default: stackwars-edition)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on with --out's edition from its first part not done; where --db lacks an "
        "interrupted part's run (a copy of the edition on another machine of the same kind), "
        "the cells its file holds are kept and only the others measured",
    )
    parser.add_argument(
        "--render", metavar="EDITION", help="render an edition file's findings; measure nothing"
    )
    parser.add_argument(
        "--markdown", metavar="PATH", help="where the findings go (default: --out/findings.md)"
    )
    parser.add_argument(
        "--earlier",
        action="append",
        default=[],
        metavar="EDITION",
        help="with --render: an earlier edition's file, listed in the findings (repeatable)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress")
    add_db(parser)
    add_executor(parser, "cells")
    parser.set_defaults(handler=reproduce)


def reproduce(args: argparse.Namespace, argv: list[str]) -> int:
    console = report_console()
    if args.render:
        source = Path(args.render)
        edition, size = read_edition(source), source.stat().st_size
        earlier = [read_edition(Path(name)) for name in args.earlier]
        markdown = findings_markdown(edition, earlier, size)
        write_atomically(Path(args.markdown or "findings.md"), markdown)
        return 0
    if args.earlier:
        raise UsageError("--earlier lists earlier editions in rendered findings: use it with "
                         "--render EDITION")  # fmt: skip

    @contextmanager
    def progress(cells: int, stacks: Sequence[str]) -> Iterator[Progress]:
        with Progress(cells, quiet=args.quiet, stacks=stacks) as shown:
            yield shown

    def note(text: str) -> None:
        if not args.quiet:
            console.print(Text(text))

    done = service.reproduce(
        args.out, scale=args.scale, budget_s=args.time_budget, resume=args.resume, db=args.db,
        executor=args.executor, ray_address=args.ray_address, ray_resources=args.ray_resource,
        reporter_for=progress, on_note=note, markdown=args.markdown, command=_command(argv),
    )  # fmt: skip
    console.print(Text(f"findings: {done.findings}; edition: {done.path}"))
    if done.not_run:
        console.print(Text("not run: " + "; ".join(done.not_run)))
    return 0


def _command(argv: Sequence[str]) -> list[str]:
    """The command as a user types it (the shell's argv starts with the program's path)."""
    start = argv.index("reproduce") if "reproduce" in argv else 0
    return ["stackwars", *argv[start:]]


# Where the command stands in ``stackwars --help`` (commands/__init__.py finds it).
COMMANDS = ((65, add_reproduce),)
