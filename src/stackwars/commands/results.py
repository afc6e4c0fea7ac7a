"""``stackwars runs``, ``show`` and ``export``: reading the results store."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from stackwars.commands.options import (
    Subparsers,
    add_db,
    add_gate_options,
    add_verdict_options,
    gate_options,
    threshold_pct,
)
from stackwars.report.comparison import comparison_report
from stackwars.report.console import report_console, warn
from stackwars.report.crossover import sweep_table
from stackwars.report.derived import derived_tables
from stackwars.report.export import outcomes_csv, to_csv
from stackwars.report.sections import InstrumentSection, discover
from stackwars.report.signals import signals_table, speed_mode_table
from stackwars.report.table import build_tables, failure_details, render_markdown, render_rich
from stackwars.report.variants import variants_table
from stackwars.results.aggregate import merge_repeats
from stackwars.results.crossover import crossovers, find_sweeps
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.run import Run, displayed_status
from stackwars.results.schema import Cell
from stackwars.results.variants import find_variants
from stackwars.service import api


def add_runs(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("runs", help="list the stored runs")
    add_db(parser)
    parser.add_argument("--label", metavar="TEXT", help="only runs with this label")
    parser.add_argument(
        "--machine", metavar="FINGERPRINT", help="only runs of this machine (the machine column)"
    )
    parser.set_defaults(handler=runs)


def add_show(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "show", help="the tables of a stored run, with sweeps and crossovers"
    )
    parser.add_argument("run", nargs="?", default="latest", help="a run id or 'latest' (default)")
    add_db(parser)
    parser.add_argument("--markdown", metavar="PATH", help="also write the tables as markdown")
    parser.add_argument("--baseline", metavar="STACK", help="compare every stack with this one")
    parser.add_argument(
        "--details",
        action="store_true",
        help="also the signals the tables leave out: start-up times, first-run phases, "
        "dispatch, CPU and page faults per call, compiles, memory, threads and BLAS, and the "
        "whole reason of each cell not ok (an error's traceback)",
    )
    add_verdict_options(parser)
    add_gate_options(parser)
    parser.set_defaults(handler=show)


def add_export(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("export", help="a stored run as JSON or CSV")
    parser.add_argument("run", help="a run id or 'latest'")
    parser.add_argument("--format", choices=("json", "csv"), default="json")
    parser.add_argument("--out", metavar="PATH", help="write here instead of standard output")
    add_db(parser)
    parser.set_defaults(handler=export)


def add_import(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "import", help="add a run exported as JSON (e.g. a CI baseline) to the store"
    )
    parser.add_argument("file", metavar="RUN.json", help="from export --format json or --json")
    add_db(parser)
    parser.set_defaults(handler=import_run)


def runs(args: argparse.Namespace, argv: list[str]) -> int:
    table = Table("run", "started", "status", "label", "machine", "cells", "command")
    for header, counts in api.open_store(args.db, must_exist=True).summaries():
        identity = header.get("identity", {})
        if args.label is not None and identity.get("label") != args.label:
            continue
        if args.machine is not None and identity.get("fingerprint") != args.machine:
            continue
        cells = ", ".join(f"{n} {status}" for status, n in counts.items()) or "none"
        command = " ".join(header.get("argv", []))
        machine = f"{identity.get('hostname', '?')} {identity.get('fingerprint', '')}".strip()
        status = displayed_status(header)
        label = identity.get("label", "")
        table.add_row(header["id"], header["started"], status, label, machine, cells, command)
    report_console().print(table)
    return 0


def _details(console: Console, cells: list[Cell]) -> None:
    """What --details adds: the signals, and each failed cell's whole reason (as text: a
    traceback's brackets are not markup)."""
    console.print(signals_table(cells))
    for details in failure_details(cells):
        console.print(details, markup=False, highlight=False)


def _sections(
    console: Console,
    record: Run,
    sections: Sequence[InstrumentSection],
    details: bool,
    plain: bool = False,
) -> None:
    """What each instrument shows of the run (report/sections.py), in the order found;
    ``plain``: as text, neither highlighted nor wrapped."""
    for shown in sections:
        for part in shown.console(record, details):
            console.print(part, highlight=False if plain else None, soft_wrap=plain)


def show(args: argparse.Namespace, argv: list[str]) -> int:
    record = api.open_store(args.db, must_exist=True).load_run(args.run)
    console = report_console()
    status = displayed_status(record.header())
    console.print(f"run {record.id} ({status}), started {record.started}")
    sections = [shown for shown in discover() if record.kind in shown.kinds]
    if record.kind != "timing":  # an instrument's own kind of run: no cells, its sections
        _sections(console, record, sections, args.details, plain=True)
        return 0
    cells = merge_repeats(record.cells)
    peak, stale = api.usable_peak(record.machine, record.options.get("device", "cpu"))
    if stale:
        warn(stale)
    tables = build_tables(cells, peak)
    console.print(render_rich(tables))
    derived, derived_markdown = derived_tables(record.cells)
    for table in derived:
        console.print(table)
    if args.details:
        _details(console, cells)
        console.print(speed_mode_table(record.cells))
    for variants in find_variants(cells):
        console.print(variants_table(variants))
    for sweep in find_sweeps(cells):
        console.print(sweep_table(sweep))
        for crossover in crossovers(sweep):
            console.print(f"crossover: {crossover.describe()}")
    _sections(console, record, sections, args.details)  # what instruments keep with it
    if args.markdown:
        markdown = render_markdown(tables) + derived_markdown
        markdown += "".join(shown.markdown(record) for shown in sections)
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    if not args.baseline:
        return 0
    verdict = api.compare_with_stack(
        record, args.baseline, threshold_pct(args), args.within_process, **gate_options(args)
    )
    for part in comparison_report(verdict, f"every stack against {args.baseline}"):
        console.print(part)
    return verdict.exit_status


def export(args: argparse.Namespace, argv: list[str]) -> int:
    results = api.open_store(args.db, must_exist=True)
    record = results.load_run(args.run)
    if args.format == "json":
        text = dump(record.to_dict()) + "\n"  # the IR captures among its instruments' data
    else:
        text = outcomes_csv(record.outcomes) if record.kind == "behave" else to_csv(record)
    if args.out:
        write_atomically(Path(args.out), text)
    else:
        sys.stdout.write(text)
    return 0


def import_run(args: argparse.Namespace, argv: list[str]) -> int:
    record = api.import_run(Path(args.file), args.db)
    store_path = api.open_store(args.db).path
    report_console().print(
        f"imported run {record.id} ({len(record.cells)} cells) into {store_path}"
    )
    return 0


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((80, add_runs), (90, add_show), (100, add_export), (110, add_import))
