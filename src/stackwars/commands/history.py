"""``stackwars history --workload W --stack S``: stored results over time, with steps."""

from __future__ import annotations

import argparse

from stackwars.commands.compare import threshold_of
from stackwars.errors import ParameterError, UsageError
from stackwars.frameworks import parse_stack
from stackwars.report.console import report_console
from stackwars.report.history import history_table, series_by_params, with_steps
from stackwars.results import store


def history(args: argparse.Namespace, argv: list[str]) -> int:
    stack = str(parse_stack(args.stack))
    wanted = dict(_param_filter(text) for text in args.param)
    rows = store.Store.existing(store.default_path(args.db)).cells_of(args.workload, stack)
    rows = [row for row in rows if _matches(row[2].params, wanted)]
    if not rows:
        raise UsageError(
            f"no stored results of {args.workload} on {stack}"
            + (f" with {', '.join(args.param)}" if args.param else "")
            + "; see 'stackwars runs'"
        )
    console = report_console()
    threshold = threshold_of(args)
    for title, series in series_by_params(rows).items():
        console.print(history_table(title, with_steps(series, threshold)))
    return 0


def _param_filter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise ParameterError(f"--param {text!r} is not KEY=VALUE; example: --param n=1024")
    return name.strip(), value.strip()


def _matches(params: dict[str, object], wanted: dict[str, str]) -> bool:
    return all(str(params.get(name)) == value for name, value in wanted.items())
