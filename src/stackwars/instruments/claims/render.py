"""Checked claims (``stackwars claims``, ``show``, ``report``): data first (rows of display
strings, from the ``ClaimResult`` dicts a run stores), then the terminal table and Markdown.

Every string comes from a claim file or a stored run, i.e. from a user: rich renders it as
``Text`` (no markup), Markdown escapes it, the HTML renderer escapes the rows it is given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from rich.table import Table as RichTable
from rich.text import Text

from stackwars.instruments.claims.verdict import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    INSTRUMENT,
    VERDICTS,
    ClaimResult,
)
from stackwars.report.glyphs import TIMES
from stackwars.report.html.blocks import Block, Paragraph, TableBlock
from stackwars.report.markdown_text import escape, table_row
from stackwars.report.sections import InstrumentSection
from stackwars.results.run import Run

COLUMNS = ("Claim", "Statement", "Measured (95% interval)", "Verdict", "Why", "Quote", "Note")
_STYLES = {HOLDS: "green", FAILS: "red", INCONCLUSIVE: "yellow"}  # not checkable: dim


def claim_results(runs: Iterable[Run]) -> list[tuple[str, ClaimResult]]:
    """(run id, checked claim) of every claim stored with the runs, in order."""
    return [
        (run.id, ClaimResult.from_dict(data)) for run in runs for data in run.entries(INSTRUMENT)
    ]


def format_measured(result: ClaimResult) -> str:
    """``6.41× [5.93×–6.95×]``, ``2 runs [1–2]``, ``1603 lines``, ``n ≈ 155 [128–256]``."""
    if result.value is None:
        if result.low is None or result.high is None:
            return ""
        return f"{result.unit} in [{result.low:g}–{result.high:g}]"
    if result.unit == "x":
        value = f"{result.value:.3g}{TIMES}"
        spread = f" [{result.low:.3g}{TIMES}–{result.high:.3g}{TIMES}]"
    elif result.unit in ("runs", "lines"):
        value = f"{result.value:g} {result.unit}"
        spread = f" [{result.low:g}–{result.high:g}]"
    else:  # a crossover: the swept parameter's value
        value = f"{result.unit} ≈ {result.value:.4g}"
        spread = f" [{result.low:g}–{result.high:g}]"
    same = result.low == result.high == result.value
    return value if same or result.low is None or result.high is None else value + spread


def quote_text(result: ClaimResult) -> str:
    source = f" ({result.source})" if result.source else ""
    return f"“{result.quote}”{source}" if result.quote else result.source


def claim_rows(results: Sequence[ClaimResult]) -> list[tuple[str, ...]]:
    """One row of display strings per claim, in ``COLUMNS`` order."""
    return [
        (
            result.id,
            result.statement,
            format_measured(result),
            result.verdict,
            result.reason,
            quote_text(result),
            result.note,
        )
        for result in results
    ]


def verdict_counts(results: Iterable[ClaimResult]) -> str:
    counts = Counter(result.verdict for result in results)
    return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v]) or "no claims"


def claims_table(results: Sequence[ClaimResult], title: str = "Claims") -> RichTable:
    """The terminal table: verdict, claim and measured value, then why and the sentence."""
    table = RichTable(title=title, title_justify="left", title_style="bold", show_lines=True)
    table.add_column("Verdict", no_wrap=True)
    table.add_column("Claim")
    table.add_column("Measured (95% interval)")
    table.add_column("Why, and the sentence")
    for result, row in zip(results, claim_rows(results), strict=True):
        claim = Text(row[0], style="bold")
        claim.append(f"\n{row[1]}", style="")
        detail = Text(row[4])
        if row[5]:
            detail.append(f"\n{row[5]}", style="italic")
        if row[6]:
            detail.append(f"\nnote: {row[6]}", style="dim")
        verdict = Text(row[3], style=_STYLES.get(result.verdict, "dim"))
        table.add_row(verdict, claim, Text(row[2]), detail)
    return table


def claims_markdown(results: Sequence[ClaimResult], title: str = "Claims") -> str:
    """The same rows as a Markdown table, each string escaped as the Markdown report does."""
    lines = [f"### {escape(title)}", "", table_row(COLUMNS)]
    lines.append("|" + " --- |" * len(COLUMNS))
    lines.extend(table_row(row) for row in claim_rows(results))
    return "\n".join([*lines, "", f"Verdicts: {verdict_counts(results)}.", ""])


def _shown(run: Run, details: bool) -> list[RichTable]:
    del details
    results = [result for _, result in claim_results([run])]
    return [claims_table(results, f"Claims checked in run {run.id}")] if results else []


def _markdown(run: Run) -> str:
    results = [result for _, result in claim_results([run])]
    return claims_markdown(results) if results else ""


def _reported(inputs: Any) -> list[Block]:
    """The report's section: every claim of the runs (``inputs.runs``), with its run when
    there are several."""
    claims = claim_results(inputs.runs)
    results = [result for _, result in claims]
    if not results:
        return []
    columns, rows = COLUMNS, claim_rows(results)
    if len(inputs.runs) > 1:
        columns = ("Run", *columns)
        rows = [(run_id, *row) for (run_id, _), row in zip(claims, rows, strict=True)]
    failed = frozenset(i for i, result in enumerate(results) if result.verdict == FAILS)
    offset = len(columns) - len(COLUMNS)  # the statement, why, quote and note are long
    wide = frozenset(offset + index for index in (1, 4, 5, 6))
    return [
        Paragraph(f"Verdicts: {verdict_counts(results)}."),
        TableBlock(columns, tuple(rows), failed, wide),
    ]


# What show and the report show of a run's claims (report/sections.py finds it).
SECTIONS = (
    InstrumentSection(
        id="claims",
        heading="Claims checked",
        after="runs",
        console=_shown,
        report=_reported,
        markdown=_markdown,
        empty="no claim was checked in these runs ('stackwars claims --builtin' checks the "
        "seeds' claims and stores them with its run)",
    ),
)
