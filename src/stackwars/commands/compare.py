"""``stackwars compare RUN_A RUN_B``: the same cells in two runs, with verdicts; also as
Markdown (a pull request, a CI job summary) and JSON."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from stackwars import api
from stackwars.report.comparison import (
    comparison_json,
    comparison_markdown,
    comparison_report,
    regressions,
)
from stackwars.report.console import report_console
from stackwars.results.jsonio import write_atomically

EXIT_REGRESSION = 1


def compare(args: argparse.Namespace, argv: list[str]) -> int:
    baseline, candidate, rows = api.compare(
        args.run_a, args.run_b, args.threshold, args.db, args.within_process
    )
    title = f"{candidate.id} against {baseline.id} (threshold {args.threshold:g}%)"
    console = report_console()
    mismatch = api.machine_mismatch(baseline, candidate)
    if mismatch:
        console.print(f"warning: {mismatch}; no cell is judged")
    for part in comparison_report(rows, title, args.fail_above):
        console.print(part)
    markdown = comparison_markdown(rows, title, args.fail_above)
    if args.markdown:
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    if args.json:
        write_atomically(Path(args.json), json.dumps(comparison_json(rows), indent=1))
    if args.github_summary:
        console.print(append_github_summary(markdown))
    failed = args.fail_above is not None and regressions(rows, args.fail_above)
    return EXIT_REGRESSION if failed else 0


def append_github_summary(markdown: str) -> str:
    """Append to the job summary GitHub Actions reads; what was done, in one line."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return "warning: GITHUB_STEP_SUMMARY is not set (not in GitHub Actions); nothing appended"
    with Path(path).open("a", encoding="utf-8") as summary:
        summary.write(markdown + "\n")
    return f"comparison appended to the job summary ({path})"
