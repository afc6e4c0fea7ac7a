"""``stackwars history --workload W --stack S``: stored results over time, with steps."""

from __future__ import annotations

import argparse

from stackwars import api
from stackwars.report.console import report_console
from stackwars.report.history import history_table, series_by_params, with_steps


def history(args: argparse.Namespace, argv: list[str]) -> int:
    rows = api.history(args.workload, args.stack, args.param, args.db)
    threshold = api.threshold(args.threshold)
    console = report_console()
    for title, series in series_by_params(rows).items():
        console.print(history_table(title, with_steps(series, threshold)))
    return 0
