"""``stackwars history --workload W --stack S``: stored results over time, with steps."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from stackwars import api
from stackwars.report.console import report_console
from stackwars.report.history import history_file, history_json, history_markdown, history_table
from stackwars.results.history import series_by_params, with_steps
from stackwars.results.jsonio import write_atomically


def history(args: argparse.Namespace, argv: list[str]) -> int:
    rows, machines = api.history(
        args.workload, args.stack, args.param, args.db, label=args.label, machine=args.machine
    )
    threshold = api.threshold(args.threshold)
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
