"""``stackwars runs``, ``show`` and ``export``: reading the results store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.table import Table

from stackwars import api
from stackwars.report.behave import behave_report
from stackwars.report.claims import claim_results, claims_markdown, claims_table
from stackwars.report.comparison import comparison_report
from stackwars.report.console import report_console, warn
from stackwars.report.crossover import sweep_table
from stackwars.report.derived import derived_tables
from stackwars.report.export import outcomes_csv, to_csv
from stackwars.report.signals import signals_table
from stackwars.report.table import build_tables, render_markdown, render_rich
from stackwars.report.variants import find_variants, variants_table
from stackwars.results.aggregate import merge_repeats
from stackwars.results.behave import outcome_from_dict
from stackwars.results.comparison import Gate, gate_failures
from stackwars.results.crossover import crossovers, find_sweeps
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.run import displayed_status

EXIT_REGRESSION = 1


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


def show(args: argparse.Namespace, argv: list[str]) -> int:
    record = api.open_store(args.db, must_exist=True).load_run(args.run)
    console = report_console()
    status = displayed_status(record.header())
    console.print(f"run {record.id} ({status}), started {record.started}")
    if record.kind == "behave":
        outcomes = [outcome_from_dict(data) for data in record.outcomes]
        for part in behave_report(outcomes, details=args.details):
            console.print(part, highlight=False, soft_wrap=True)
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
        console.print(signals_table(cells))
    for variants in find_variants(cells):
        console.print(variants_table(variants))
    for sweep in find_sweeps(cells):
        console.print(sweep_table(sweep))
        for crossover in crossovers(sweep):
            console.print(f"crossover: {crossover.describe()}")
    claims = [result for _, result in claim_results([record])]
    if claims:
        console.print(claims_table(claims, f"Claims checked in run {record.id}"))
    if args.markdown:
        markdown = render_markdown(tables) + derived_markdown
        markdown += claims_markdown(claims) if claims else ""
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    if not args.baseline:
        return 0
    rows = api.compare_with_stack(record, args.baseline, args.threshold, args.within_process)
    gate = Gate(fail_above=args.fail_above)
    for part in comparison_report(rows, f"every stack against {args.baseline}", gate):
        console.print(part)
    failed = bool(gate_failures(rows, gate))
    return EXIT_REGRESSION if failed else 0


def export(args: argparse.Namespace, argv: list[str]) -> int:
    results = api.open_store(args.db, must_exist=True)
    record = results.load_run(args.run)
    if args.format == "json":
        data = record.to_dict()
        captures = results.captures(record.id)
        if captures:
            data["ir"] = captures
        text = dump(data) + "\n"
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
