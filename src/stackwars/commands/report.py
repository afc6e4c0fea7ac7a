"""``stackwars report [RUN ...]``: one self-contained HTML file (or Markdown with its figures
beside it) showing everything the runs measured."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from stackwars.commands.options import Subparsers, add_db, add_threshold, threshold_pct
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stack
from stackwars.profiling.result import Profile
from stackwars.report.console import report_console
from stackwars.report.html.data import ReportInputs, build_report
from stackwars.report.html.figures import draw_figures
from stackwars.report.html.markdown import render_markdown
from stackwars.report.html.page import render_html
from stackwars.report.table import format_bytes
from stackwars.results.jsonio import write_atomically
from stackwars.results.run import Run
from stackwars.service import api


def add_report(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="one self-contained HTML file (or Markdown) with plots of stored runs",
        description=(
            "Write one HTML file that opens offline (styles and plots inside): per workload "
            "steady time with its interval, speed-up, first-run phases and memory; sweeps "
            "and crossovers; warm-up series; CPU, page faults and dispatch; comparisons "
            "between the runs given; IR; the fairness manifest, every warning and every cell "
            "that did not end ok. --format md writes Markdown with the plots as SVG files."
        ),
        epilog="example: stackwars report latest --baseline numpy:eager --out report.html",
    )
    parser.add_argument(
        "runs", nargs="*", metavar="RUN", help="run ids, 'latest' or exported .json (latest)"
    )
    parser.add_argument("--baseline", metavar="STACK", help="speed-ups against this stack")
    parser.add_argument("--out", metavar="PATH", help="report.html, or report.md with --format md")
    parser.add_argument("--format", choices=("html", "md"), help="default: from --out, else html")
    add_db(parser)
    add_threshold(parser)
    parser.add_argument(
        "--within-process",
        action="store_true",
        help="judge cells of one worker per side by the blocks of one process",
    )
    parser.add_argument(
        "--profiles",
        action="append",
        default=[],
        metavar="PATH",
        help="profiles 'stackwars profile --json' wrote, shown beside the runs' own "
        "(run --profile) in 'Where the time goes'",
    )
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace, argv: list[str]) -> int:
    refs = args.runs or ["latest"]
    runs = [_timing_run(ref, args.db) for ref in refs]
    out, form = _output(args.out, args.format)
    data = build_report(_inputs(args, refs, runs))
    figures = draw_figures(data)
    if form == "md":
        folder = out.with_name(f"{out.stem}-plots")
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in figures.items():
            write_atomically(folder / f"{name}.svg", text)
        files = {name: f"{folder.name}/{name}.svg" for name in figures}
        write_atomically(out, render_markdown(data, files))
        where = f"{out} and {len(figures)} figure(s) in {folder}"
    else:
        write_atomically(out, render_html(data, figures))
        where = f"{out} ({format_bytes(out.stat().st_size)}, {len(figures)} figure(s) inside)"
    report_console().print(f"report of {len(runs)} run(s) written to {where}")
    return 0


def _timing_run(ref: str, db: str | None) -> Run:
    record = api.load_run(ref, db)
    if record.kind != "timing":
        raise UsageError(
            f"run {record.id} is a {record.kind} run, with no timings to report; "
            "'stackwars behave' prints its matrix"
        )
    return record


def _output(out: str | None, form: str | None) -> tuple[Path, str]:
    """Where to write, and in which format: --format, else the suffix of --out, else html."""
    if form is None:
        form = "md" if out and Path(out).suffix.lower() == ".md" else "html"
    return Path(out or f"report.{form}"), form


def _inputs(args: argparse.Namespace, refs: list[str], runs: list[Run]) -> ReportInputs:
    baseline = None if args.baseline is None else str(parse_stack(args.baseline))
    if baseline and not any(cell.stack == baseline for run in runs for cell in run.cells):
        raise UsageError(f"--baseline {baseline} has no cell in the run(s) given")
    comparisons = [
        (done.baseline, done.candidate, done.verdict.rows, done.verdict.mismatch)
        for done in (
            api.compare(refs[0], ref, threshold_pct(args), args.db, args.within_process)
            for ref in refs[1:]
        )
    ]
    peak, stale = api.usable_peak(runs[0].machine, runs[0].options.get("device", "cpu"))
    run_warnings = {run.id: api.machine_warnings(run.machine) for run in runs}
    if stale:
        run_warnings[runs[0].id] = [*run_warnings[runs[0].id], f"roofline not shown: {stale}"]
    return ReportInputs(
        runs=runs,
        baseline=baseline,
        peak=peak,
        comparisons=comparisons,
        captures=_captures(runs, args.db),
        run_warnings=run_warnings,
        threshold=api.threshold(threshold_pct(args)),
        profile_files=[(path, _profile_file(Path(path))) for path in args.profiles],
    )


def _profile_file(path: Path) -> list[Profile]:
    """The profiles of a ``stackwars profile --json`` file, refused in one line if it is not
    one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [Profile.from_dict(profile) for profile in data["profiles"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"--profiles {path}: not a file 'stackwars profile --json' wrote ({exc})"
        ) from None


def _captures(runs: list[Run], db: str | None) -> dict[str, dict[str, dict[str, str]]]:
    """The IR the store holds for each run (none for runs read from exported files alone)."""
    try:
        results = api.open_store(db, must_exist=True)
    except UsageError:  # no store: every run came from an exported file
        return {}
    stored = set(results.run_ids())
    return {run.id: results.captures(run.id) for run in runs if run.id in stored}


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((140, add_report),)
