"""``stackwars history --workload W --stack S``: stored results over time, with steps."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from stackwars.commands.options import Subparsers, add_db, add_threshold, threshold_pct
from stackwars.report.console import report_console
from stackwars.report.history import history_file, history_json, history_markdown, history_table
from stackwars.results.history import series_by_params, with_steps
from stackwars.results.jsonio import write_atomically
from stackwars.service import api


def add_history(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "history", help="stored results of one workload on one stack over time, with steps"
    )
    parser.add_argument("--workload", required=True)
    parser.add_argument("--stack", required=True, help="framework:mode")
    parser.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="only these parameters"
    )
    add_db(parser)
    parser.add_argument("--label", metavar="TEXT", help="only runs with this label")
    parser.add_argument(
        "--machine", metavar="FINGERPRINT", help="only runs of this machine (see 'runs')"
    )
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables as Markdown")
    parser.add_argument("--json", metavar="PATH", help="also write the series as JSON")
    add_threshold(parser)
    parser.set_defaults(handler=history)


def history(args: argparse.Namespace, argv: list[str]) -> int:
    rows, machines = api.history(
        args.workload, args.stack, args.param, args.db, label=args.label, machine=args.machine
    )
    threshold = api.threshold(threshold_pct(args))
    console = report_console()
    markdown, data = [], {}
    for title, series in series_by_params(rows, machines).items():
        points = with_steps(series, threshold)
        console.print(history_table(title, points))
        markdown.append(history_markdown(title, points))
        data[title] = history_json(points)
    if args.markdown:
        Path(args.markdown).write_text("\n".join(markdown), encoding="utf-8")
    if args.json:
        write_atomically(Path(args.json), json.dumps(history_file(data), indent=1))
    return 0


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((130, add_history),)
