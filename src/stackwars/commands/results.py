"""``stackwars runs``, ``show`` and ``export``: reading the results store."""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from rich.table import Table

from stackwars.commands.compare import report, threshold_of
from stackwars.commands.listing import usable_peak
from stackwars.errors import UsageError
from stackwars.report.comparison import compare_stacks
from stackwars.report.console import report_console
from stackwars.report.crossover import crossovers, find_sweeps, sweep_table
from stackwars.report.table import build_tables, render_markdown, render_rich
from stackwars.results import flat, store
from stackwars.results.aggregate import merge_repeats
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.run import Run


def _store(args: argparse.Namespace) -> store.Store:
    return store.Store.existing(store.default_path(args.db))


def runs(args: argparse.Namespace, argv: list[str]) -> int:
    table = Table("run", "started", "status", "cells", "command")
    for header, counts in _store(args).summaries():
        cells = ", ".join(f"{n} {status}" for status, n in counts.items()) or "none"
        command = " ".join(header.get("argv", []))
        table.add_row(header["id"], header["started"], header["status"], cells, command)
    report_console().print(table)
    return 0


def show(args: argparse.Namespace, argv: list[str]) -> int:
    record = _store(args).load_run(args.run)
    console = report_console()
    console.print(f"run {record.id} ({record.status}), started {record.started}")
    cells = merge_repeats(record.cells)
    tables = build_tables(cells, usable_peak(console, record.machine))
    console.print(render_rich(tables))
    for sweep in find_sweeps(cells):
        console.print(sweep_table(sweep))
        for crossover in crossovers(sweep):
            console.print(f"crossover: {crossover.describe()}")
    if args.markdown:
        Path(args.markdown).write_text(render_markdown(tables), encoding="utf-8")
    if args.baseline:
        rows = compare_stacks(record.cells, args.baseline, threshold_of(args))
        if not rows:
            raise UsageError(f"stack {args.baseline!r} has no cells in run {record.id}")
        return report(rows, f"every stack against {args.baseline}", args.fail_above)
    return 0


def export(args: argparse.Namespace, argv: list[str]) -> int:
    results = _store(args)
    record = results.load_run(args.run)
    if args.format == "json":
        data = record.to_dict()
        captures = results.captures(record.id)
        if captures:
            data["ir"] = captures
        text = dump(data) + "\n"
    else:
        text = to_csv(record)
    if args.out:
        write_atomically(Path(args.out), text)
    else:
        sys.stdout.write(text)
    return 0


def to_csv(record: Run) -> str:
    rows = flat.rows([record])
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=flat.columns(rows), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
