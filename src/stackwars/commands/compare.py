"""``stackwars compare RUN_A RUN_B``: the same cells in two runs, with verdicts."""

from __future__ import annotations

import argparse

from stackwars import api
from stackwars.report.comparison import ComparisonRow, comparison_report, regressions
from stackwars.report.console import report_console

EXIT_REGRESSION = 1


def compare(args: argparse.Namespace, argv: list[str]) -> int:
    baseline, candidate, rows = api.compare(args.run_a, args.run_b, args.threshold, args.db)
    title = f"{candidate.id} against {baseline.id} (threshold {args.threshold:g}%)"
    return show_comparison(rows, title, args.fail_above)


def show_comparison(rows: list[ComparisonRow], title: str, fail_above: float | None) -> int:
    """Print a comparison; the exit status says whether a regression passed the limit."""
    console = report_console()
    for part in comparison_report(rows, title, fail_above):
        console.print(part)
    failed = fail_above is not None and regressions(rows, fail_above)
    return EXIT_REGRESSION if failed else 0
