"""``stackwars compare RUN_A RUN_B``: the same cells in two runs (or two sets of runs), with
verdicts and the gate; also as Markdown (a pull request, a CI job summary) and JSON."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from stackwars.commands.options import (
    Subparsers,
    add_db,
    add_gate_options,
    add_verdict_options,
    gate_options,
    threshold_pct,
)
from stackwars.report.comparison import comparison_json, comparison_markdown, comparison_report
from stackwars.report.console import report_console, warn
from stackwars.results.jsonio import write_atomically
from stackwars.service import api


def add_compare(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="the same cells in two runs: ratio, interval, test, verdict",
        description="Each cell's fresh workers are its units: the ratio of their medians, "
        "and Yuen's trimmed t on their log medians, plus the run-to-run drift (--run-drift) "
        "when each side is one run. The spread between a cell's workers is taken as at least "
        "the levels its stack's workers showed on one side in any cell: workers land at two "
        "speeds (numpy's threaded GEMM), and three a side that each landed at one speed are no "
        "evidence of a change. Several runs a side are compared run by run (each run's mean "
        "one unit). With a limit (--fail-above) the whole comparison is one gate: pass, fail "
        "or underpowered (docs/ci.md).",
    )
    parser.add_argument(
        "run_a",
        metavar="RUN_A",
        help="the baseline: a run id, 'latest', or an exported .json; several joined by commas "
        "are compared run by run (same machine only)",
    )
    parser.add_argument("run_b", metavar="RUN_B", help="the candidate, the same way")
    add_db(parser)
    parser.add_argument("--markdown", metavar="PATH", help="also write the report as Markdown")
    parser.add_argument("--json", metavar="PATH", help="also write the comparison as JSON")
    parser.add_argument(
        "--github-summary",
        action="store_true",
        help="append the Markdown report to $GITHUB_STEP_SUMMARY (GitHub Actions)",
    )
    add_verdict_options(parser)
    add_gate_options(parser)
    parser.add_argument(
        "--run-drift",
        type=float,
        metavar="PCT",
        help="run-to-run standard deviation added when each side is one run, taken as given "
        "(default: the value measured here, 4 %%, counted with the uncertainty of its six-run "
        "estimate, docs/log.md); 0 trusts the runs' own workers. Several runs a side are "
        "compared run by run and need none",
    )
    parser.set_defaults(handler=compare)


def compare(args: argparse.Namespace, argv: list[str]) -> int:
    compared = api.compare(
        args.run_a,
        args.run_b,
        threshold_pct(args),
        args.db,
        args.within_process,
        run_drift_pct=args.run_drift,
        **gate_options(args),
    )
    verdict = compared.verdict
    title = f"{args.run_b} against {args.run_a} (threshold {threshold_pct(args):g}%)"
    if "," not in args.run_a + args.run_b:
        title = f"{compared.candidate.id} against {compared.baseline.id} "
        title += f"(threshold {threshold_pct(args):g}%)"
    console = report_console()
    if verdict.mismatch:
        warn(f"{verdict.mismatch}; no cell is judged")
    for part in comparison_report(verdict, title):
        console.print(part)
    markdown = comparison_markdown(verdict, title)
    if args.markdown:
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    if args.json:
        write_atomically(Path(args.json), json.dumps(comparison_json(verdict), indent=1))
    if args.github_summary:
        appended = append_github_summary(markdown)
        if appended:
            console.print(appended)
    return verdict.exit_status


def append_github_summary(markdown: str) -> str:
    """Append to the job summary GitHub Actions reads; what was done, in one line ('' and a
    warning when there is no summary to append to)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        warn("GITHUB_STEP_SUMMARY is not set (not in GitHub Actions); nothing appended")
        return ""
    with Path(path).open("a", encoding="utf-8") as summary:
        summary.write(markdown + "\n")
    return f"comparison appended to the job summary ({path})"


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((120, add_compare),)
