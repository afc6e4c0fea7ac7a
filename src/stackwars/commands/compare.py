"""``stackwars compare RUN_A RUN_B``: the same cells in two runs, with verdicts."""

from __future__ import annotations

import argparse

from stackwars.errors import UsageError
from stackwars.report.comparison import (
    ComparisonRow,
    compare_runs,
    comparison_table,
    geometric_mean_ratio,
)
from stackwars.report.console import report_console
from stackwars.results import store

EXIT_REGRESSION = 1


def threshold_of(args: argparse.Namespace) -> float:
    if not 0 <= args.threshold < 100:
        raise UsageError(f"--threshold {args.threshold} must be a percentage in [0, 100)")
    return args.threshold / 100


def compare(args: argparse.Namespace, argv: list[str]) -> int:
    results = store.Store.existing(store.default_path(args.db))
    baseline, candidate = results.load_run(args.run_a), results.load_run(args.run_b)
    rows = compare_runs(baseline.cells, candidate.cells, threshold_of(args))
    title = f"{candidate.id} against {baseline.id} (threshold {args.threshold:g}%)"
    return report(rows, title, args.fail_above)


def report(rows: list[ComparisonRow], title: str, fail_above: float | None) -> int:
    """Print the comparison; the exit status says whether a regression passed the limit."""
    console = report_console()
    console.print(comparison_table(rows, title))
    geomean = geometric_mean_ratio(rows)
    if geomean is not None:
        console.print(f"geometric mean of ratios: {geomean:.3f} ({(geomean - 1) * 100:+.1f}%)")
    if fail_above is None:
        return 0
    regressions = [row for row in rows if row.regression_above(fail_above)]
    for row in regressions:
        assert row.result is not None
        console.print(f"REGRESSION above {fail_above:g}%: {row.label}: {row.result.describe()}")
    return EXIT_REGRESSION if regressions else 0
