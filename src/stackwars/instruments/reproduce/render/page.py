"""An edition in ``stackwars show`` and ``stackwars report``: every part's run keeps the
edition (``data.INSTRUMENT``), so that the show or the report of any of them has a section
"What stackwars found": the edition's provenance, its parts, and per seed each claim with its
verdict, why and the evidence, as the findings page says them (findings.py), in blocks that
the HTML and Markdown reports render alike.

Blocks hold raw strings (each renderer escapes them); the Markdown of ``show --markdown`` is
the findings page itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from stackwars.instruments.claims.render import format_measured, verdict_counts
from stackwars.instruments.claims.verdict import FAILS, ClaimResult
from stackwars.instruments.reproduce.data import INSTRUMENT, Edition, edition_from_dict
from stackwars.instruments.reproduce.plan import NOT_COVERED
from stackwars.instruments.reproduce.render.findings import (
    SEEDS,
    evidence_sentences,
    findings_markdown,
    status_counts,
)
from stackwars.report.html.blocks import Block, Bullets, Heading, Paragraph, TableBlock
from stackwars.report.sections import InstrumentSection
from stackwars.report.table import format_seconds
from stackwars.results.run import Run

PART_COLUMNS = ("Part", "Seed", "Question", "Status", "Run", "Time", "Cells or outcomes")
CLAIM_COLUMNS = ("Verdict", "Claim", "Statement", "Measured (95% interval)", "Why", "Evidence")


def editions_of(runs: Sequence[Run]) -> list[Edition]:
    """The editions the runs are parts of, each once (the newest state a run kept of it)."""
    found: dict[str, Edition] = {}
    for run in runs:
        kept = run.entries(INSTRUMENT)
        if kept:
            edition = edition_from_dict(kept[-1], f"the edition kept with run {run.id}")
            found[edition.id] = edition
    return list(found.values())


def edition_blocks(edition: Edition) -> list[Block]:
    """One edition: where it came from, its parts, then each seed's claims."""
    blocks: list[Block] = [Paragraph(_provenance(edition))]
    blocks.append(TableBlock(PART_COLUMNS, _parts(edition)))
    claims = [ClaimResult.from_dict(data) for part in edition.parts for data in part.claims]
    whys = evidence_sentences(edition.parts)
    for prefix, title in SEEDS.items():
        mine = [claim for claim in claims if claim.id.startswith(prefix)]
        if mine:
            blocks += [Heading(title), Paragraph(f"Verdicts: {verdict_counts(mine)}.")]
            rows = tuple(_claim_row(claim, whys.get(claim.id, "")) for claim in mine)
            failed = frozenset(i for i, claim in enumerate(mine) if claim.verdict == FAILS)
            blocks.append(TableBlock(CLAIM_COLUMNS, rows, failed, frozenset({2, 4, 5})))
    blocks.append(Heading("What the seeds describe and no part measures"))
    blocks.append(Bullets(tuple(f"{i.seed}: {i.what}: {i.why}." for i in NOT_COVERED)))
    return blocks


def _provenance(edition: Edition) -> str:
    machine, source = edition.machine, edition.source or {}
    took = format_seconds(edition.duration_s) if edition.duration_s is not None else "unfinished"
    return (
        f"Edition {edition.id} at scale {edition.scale}, begun {edition.started}, {took} of a "
        f"{format_seconds(edition.budget_s)} budget, on {machine.get('cpu_model')} "
        f"({machine.get('logical_cores')} logical cores, fingerprint "
        f"{machine.get('fingerprint')}); stackwars {edition.stackwars} at commit "
        f"{str(source.get('commit') or 'unknown')[:12]}; command {' '.join(edition.command)}."
    )


def _parts(edition: Edition) -> tuple[tuple[str, ...], ...]:
    return tuple(
        (part.name, part.seed, part.question,
         part.status if not part.reason else f"{part.status}: {part.reason}", part.run_id or "",
         format_seconds(part.duration_s) if part.duration_s is not None else "",
         status_counts(part))
        for part in edition.parts
    )  # fmt: skip


def _claim_row(claim: ClaimResult, why: str) -> tuple[str, ...]:
    measured = format_measured(claim) or "nothing measured"
    return (claim.verdict, claim.id, claim.statement, measured, claim.reason, why)


def _reported(inputs: Any) -> list[Block]:
    blocks: list[Block] = []
    for edition in editions_of(inputs.runs):
        blocks += edition_blocks(edition)
    return blocks


def _shown(run: Run, details: bool) -> list[Text]:
    del details
    return [
        Text(f"Run {run.id} is a part of edition {e.id} ({e.scale}, begun {e.started}): "
             f"{verdict_counts(ClaimResult.from_dict(d) for p in e.parts for d in p.claims)}; "
             "'stackwars show --markdown' or 'stackwars report' shows its findings")
        for e in editions_of([run])
    ]  # fmt: skip


def _markdown(run: Run) -> str:
    return "".join(findings_markdown(edition) for edition in editions_of([run]))


# What show and the report show of an edition's runs (report/sections.py finds it).
SECTIONS = (
    InstrumentSection(
        id="findings",
        heading="What stackwars found (the edition these runs are parts of)",
        after="runs",
        console=_shown,
        report=_reported,
        markdown=_markdown,
        kinds=("timing", "behave"),
        empty="none of these runs is a part of an edition ('stackwars reproduce' keeps its "
        "edition with each part's run)",
    ),
)
