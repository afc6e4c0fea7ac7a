"""An edition's findings in Markdown (docs/findings.md is this, rendered from the committed
edition): its provenance, then per seed each claim once (the seed's sentence, stackwars'
value with its interval, the verdict and why), grouped so that two readings of one sentence
stand side by side, then the cells each part measured, the probes' outcomes, the IR sizes,
and what was not run or not checkable here, with why.

Every string comes from the edition file, that is from the runs: each is escaped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from stackwars.instruments.claims.render import format_measured, verdict_counts
from stackwars.instruments.claims.verdict import ClaimResult
from stackwars.instruments.reproduce.data import DONE, Edition, PartResult
from stackwars.instruments.reproduce.plan import NOT_COVERED
from stackwars.instruments.reproduce.render.evidence import Evidence
from stackwars.report.markdown_text import escape, table_row
from stackwars.report.table import format_bytes, format_seconds

TITLE = "# What stackwars found"
SEEDS = {
    "seed000": "Seed 000: JAX basics and framework benchmarks",
    "seed001": "Seed 001: Stack Wars, JAX vs. PyTorch",
    "seed002": "Seed 002: JAX vs NumPy",
    "keras": "Keras 3's own statements",
}
# The findings the README shows, one per seed question, chosen before any edition ran: seed
# 000's CPU parity and what jit buys, seed 001's steady state and memory on the seed's own
# PyTorch/XLA, seed 002's 6x as the seed measured it.
HEADLINES = (
    "seed000-cpu-gemm-torch-vs-jax",
    "seed000-selu-jit-8x-cpu",
    "seed001-jax-performance-better-torch-xla",
    "seed001-memory-gpt2-torch-xla",
    "seed002-jit-poly-6x-as-measured",
)
CELL_COLUMNS = ("Cell", "Status", "Steady (95% interval)", "First run", "Runs to steady",
                "Peak RSS", "Parity")  # fmt: skip


def findings_markdown(
    edition: Edition, earlier: Sequence[Edition] = (), size_bytes: int | None = None
) -> str:
    """The whole findings page; ``earlier``: the editions before it, listed so that a reader
    sees what changed; ``size_bytes``: the edition file's size, said with its provenance."""
    blocks = [TITLE, "", *provenance(edition), *elsewhere(edition)]
    if size_bytes is not None:
        size = format_bytes(size_bytes)
        blocks += ["", f"The edition's file (format {edition.file_format}): {size}."]
    blocks += ["", *editions_table(edition, earlier), ""]
    blocks += parts_table(edition.parts)
    claims = [ClaimResult.from_dict(data) for part in edition.parts for data in part.claims]
    if earlier:
        blocks += ["", *verdicts_changed(claims, max(earlier, key=lambda e: e.started))]
    whys = evidence_sentences(edition.parts)
    for prefix, title in SEEDS.items():
        mine = [claim for claim in claims if claim.id.startswith(prefix)]
        if mine:
            blocks += ["", f"## {title}", "", *claim_findings(mine, whys)]
    blocks += ["", "## What the seeds describe and no part measures", ""]
    blocks += [f"- {escape(item.seed)}: {escape(item.what)}: {escape(item.why)}."
               for item in NOT_COVERED]  # fmt: skip
    for part in edition.parts:
        blocks += part_evidence(part)
    return "\n".join(blocks).rstrip() + "\n"


def headlines_markdown(edition: Edition, ids: Sequence[str] = HEADLINES) -> str:
    """The README's findings: for each claim id, the seed's sentence, stackwars' value and the
    verdict, then where the edition came from."""
    found = {data["id"]: ClaimResult.from_dict(data) for p in edition.parts for data in p.claims}
    lines = []
    for name in ids:
        claim = found.get(name)
        if claim is None:
            lines.append(f"- `{escape(name)}`: not in this edition")
            continue
        measured = format_measured(claim) or "nothing measured"
        lines.append(
            f"- “{escape(claim.quote)}” ({escape(claim.source.split(' (')[0])}): "
            f"**{escape(claim.verdict)}**, {escape(measured)} (`{escape(claim.id)}`)"
        )
    machine = edition.machine
    cpu = escape(str(machine.get("cpu_model")))
    begun = f"begun {escape(edition.started)} on {cpu} ({machine.get('logical_cores')} cores)"
    lines += ["", f"Edition `{escape(edition.id)}`, {begun}."]
    return "\n".join(lines) + "\n"


def provenance(edition: Edition) -> list[str]:
    machine = edition.machine
    memory = format_bytes(machine.get("memory_total_bytes"))
    commit, dirty = _commit(edition.source)
    took = format_seconds(edition.duration_s) if edition.duration_s is not None else "unfinished"
    command = " ".join(edition.command)
    return [
        f"Edition `{escape(edition.id)}` at scale {escape(edition.scale)}: begun "
        f"{escape(edition.started)}, ended {escape(edition.ended or 'not yet')}, {took} of a "
        f"{format_seconds(edition.budget_s)} budget.",
        "",
        f"Machine: {escape(str(machine.get('cpu_model')))}, {machine.get('logical_cores')} "
        f"logical cores, {memory}, fingerprint `{escape(str(machine.get('fingerprint')))}`; "
        f"BLAS settings {escape(_blas(machine))}. stackwars {escape(edition.stackwars)} at "
        f"commit `{escape(commit)}`{dirty}; command `{escape(command)}`.",
        "",
        f"Versions: {escape(_versions(edition.versions))}.",
        *_resumed(edition),
    ]


def _commit(source: dict[str, Any] | None) -> tuple[str, str]:
    commit = str((source or {}).get("commit") or "unknown")[:12]
    return commit, " (with uncommitted changes)" if (source or {}).get("dirty") else ""


def _resumed(edition: Edition) -> list[str]:
    """The parts measured by another command than the one that began the edition (a
    ``--resume``), each session of a part continued by one in order, with its command, when
    it began and its commit where it differs: one edition, but perhaps not one version of
    stackwars."""
    began = _commit(edition.source)
    later = []
    for part in edition.parts:
        sessions = [*part.earlier, _session(part)]
        if all(_as_begun(session, edition, began) for session in sessions):
            continue
        told = [_told(session, began) for session in sessions]
        later.append(f"{part.name} by {', continued by '.join(told)}")
    if not later:
        return []
    return ["", f"**Resumed:** {'; '.join(later)}."]


def _session(part: PartResult) -> dict[str, Any]:
    return {"started": part.started, "source": part.source, "command": part.command}


def _as_begun(session: dict[str, Any], edition: Edition, began: tuple[str, str]) -> bool:
    """Whether a session of a part ran as the edition began: its command and its code."""
    source, command = session.get("source"), session.get("command")
    return (source is None or _commit(source) == began) and command in (None, edition.command)


def _told(session: dict[str, Any], began: tuple[str, str]) -> str:
    command, source = session.get("command"), session.get("source")
    how = f"`{escape(' '.join(command))}`" if command else "a resume"
    code = ""
    if source is not None and _commit(source) != began:
        code = f" at `{escape(''.join(_commit(source)))}`"
    return f"{how}{code} (begun {escape(session.get('started') or '')})"


def elsewhere(edition: Edition) -> list[str]:
    """A warning when a cell ran on a machine of another fingerprint (a Ray node unlike the
    head): an edition is one kind of machine's, and such cells are named."""
    home = str(edition.machine.get("fingerprint"))
    odd = [
        f"{cell['cell']} ({', '.join(cell['nodes'])})"
        for part in edition.parts
        for cell in part.cells
        if set(cell.get("nodes") or ()) - {home}
    ]
    if not odd:
        return []
    return ["", f"**Not one machine:** {len(odd)} cell(s) ran on machines of another "
            f"fingerprint than `{escape(home)}`: {escape('; '.join(odd))}."]  # fmt: skip


def editions_table(current: Edition, earlier: Sequence[Edition]) -> list[str]:
    """This edition and those before it, newest first: date, machine, commit, scale."""
    rows = [table_row(("Edition", "Begun", "Machine", "Commit", "Scale", "")), "|" + " --- |" * 6]
    ordered = [current, *sorted(earlier, key=lambda e: e.started, reverse=True)]
    for edition in ordered:
        commit = str((edition.source or {}).get("commit") or "unknown")[:12]
        machine = f"{edition.machine.get('cpu_model')} ({edition.machine.get('fingerprint')})"
        which = "this one" if edition is current else "earlier"
        rows.append(table_row((edition.id, edition.started, machine, commit, edition.scale,
                               which)))  # fmt: skip
    return rows


def verdicts_changed(claims: Sequence[ClaimResult], before: Edition) -> list[str]:
    """The claims whose verdict differs from the edition ``before``'s (a claim it did not
    judge: "not judged"), each with both values: what a reader of the last findings must
    read again. Values that moved inside one verdict are in the tables below. The id is plain
    text here: each claim's finding, with its id as code, stands once, in its seed's section."""
    judged = {
        data["id"]: ClaimResult.from_dict(data) for part in before.parts for data in part.claims
    }
    rows = []
    for claim in claims:
        old = judged.get(claim.id)
        if old is not None and old.verdict == claim.verdict:
            continue
        then = _verdict_and_value(old) if old is not None else "not judged"
        rows.append(table_row((claim.id, then, _verdict_and_value(claim))))
    head = f"## Verdicts changed since edition `{escape(before.id)}`"
    if not rows:
        return [head, "", f"None of the {len(claims)} claims' verdicts changed."]
    columns = table_row(("Claim", f"Then ({before.started[:10]})", "Now"))
    return [head, "", f"{len(rows)} of {len(claims)} claims:", "", columns, "| --- | --- | --- |",
            *rows]  # fmt: skip


def _verdict_and_value(claim: ClaimResult) -> str:
    return f"{claim.verdict}, {format_measured(claim) or 'nothing measured'}"


def _blas(machine: dict[str, Any]) -> str:
    found = {k: v for k, v in (machine.get("blas_env") or {}).items() if v is not None}
    return ", ".join(f"{k}={v}" for k, v in sorted(found.items())) or "none set"


def _versions(versions: dict[str, Any]) -> str:
    return ", ".join(f"{name} {v}" for name, v in sorted(versions.items()) if v) or "none"


def parts_table(parts: Sequence[PartResult]) -> list[str]:
    """Each part: what it asks, whether it ran, its run and time, its cells by status."""
    rows = [table_row(("Part", "Seed", "Question", "Status", "Run", "Time", "Cells or outcomes"))]
    rows.append("|" + " --- |" * 7)
    for part in parts:
        status = part.status if not part.reason else f"{part.status}: {part.reason}"
        took = format_seconds(part.duration_s) if part.duration_s is not None else ""
        rows.append(table_row((part.name, part.seed, part.question, status, part.run_id or "",
                               took, status_counts(part))))  # fmt: skip
    return rows


def status_counts(part: PartResult) -> str:
    counts: dict[str, int] = defaultdict(int)
    for entry in part.cells or part.outcomes:
        counts[str(entry.get("status") or entry.get("outcome"))] += 1
    shown = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    reused = [entry["measured_in"] for entry in part.cells if "measured_in" in entry]
    if reused:
        shown += f" ({len(reused)} of them measured by {', '.join(dict.fromkeys(reused))})"
    return shown


def evidence_sentences(parts: Sequence[PartResult]) -> dict[str, str]:
    """Each claim's evidence sentence (why.py), by claim id, from its own part's cells."""
    whys: dict[str, str] = {}
    for part in parts:
        evidence = Evidence.of(part, parts)
        whys |= {data["id"]: evidence.why(ClaimResult.from_dict(data)) for data in part.claims}
    return whys


def claim_findings(claims: Sequence[ClaimResult], whys: dict[str, str]) -> list[str]:
    """One finding per sentence of the seed: its quote once, then each reading of it (a claim)
    with stackwars' value, the verdict and why, and under it the evidence that explains it."""
    lines = [f"Verdicts: {verdict_counts(claims)}.", ""]
    by_quote: dict[str, list[ClaimResult]] = defaultdict(list)
    for claim in claims:
        by_quote[claim.quote or claim.id].append(claim)
    for quote, readings in by_quote.items():
        lines.append(f"> {escape(quote)}")
        lines.append(f">  — {escape(readings[0].source)}" if readings[0].source else ">")
        lines.append("")
        lines += [_reading(claim, whys.get(claim.id, "")) for claim in readings]
        lines.append("")
    return lines


def _reading(claim: ClaimResult, why: str) -> str:
    measured = format_measured(claim) or "nothing measured"
    counts = [str(n) for n in claim.workers if n]
    workers = f"; {' and '.join(counts)} workers" if counts else ""
    reason = f" {escape(claim.reason)}" if claim.reason else ""
    note = f" *Reading:* {escape(claim.note)}." if claim.note else ""
    evidence = f"\n  - *Evidence:* {escape(why)}." if why else ""
    return (
        f"- **{escape(claim.verdict)}** `{escape(claim.id)}`: {escape(claim.statement)}: "
        f"{escape(measured)}{escape(workers)}.{reason}{note}{evidence}"
    )


def part_evidence(part: PartResult) -> list[str]:
    """A part's cells, IR and probes, the evidence the findings rest on."""
    if part.status != DONE and not (part.cells or part.outcomes):
        return []
    lines = ["", f"## Evidence: {escape(part.name)} ({escape(part.seed)})", ""]
    lines.append(f"{escape(part.question)}. Run `{escape(part.run_id or '')}`.")
    if part.cells:
        lines += ["", *cells_table(part.cells)]
    if part.ir:
        lines += ["", *ir_table(part.ir)]
    if part.outcomes:
        lines += ["", *outcomes_table(part.outcomes)]
    return lines


def cells_table(cells: Iterable[dict[str, Any]]) -> list[str]:
    rows = [table_row(CELL_COLUMNS), "|" + " --- |" * len(CELL_COLUMNS)]
    for cell in cells:
        workers = f"{cell['workers']} worker{'s' if cell['workers'] != 1 else ''}"
        if "measured_in" in cell:
            workers += f", measured by part {cell['measured_in']}"
        rows.append(table_row((f"{cell['cell']} ({workers})", *_cell_facts(cell))))
    return rows


def _cell_facts(cell: dict[str, Any]) -> tuple[str, ...]:
    if cell["status"] != "ok":
        return (f"{cell['status']}: {cell['reason']}", "", "", "", "", "")
    low, high = cell.get("ci95_s") or (None, None)
    spread = f" [{format_seconds(low)}–{format_seconds(high)}]" if low and high else ""
    runs = cell.get("runs_to_steady") or []
    checked = cell.get("parity_ok")
    parity = "not checked" if checked is None else "ok" if checked else "mismatch"
    return (
        "ok",
        f"{format_seconds(cell.get('steady_s'))}{spread}",
        format_seconds(cell.get("first_run_s")),
        ", ".join(str(n) for n in runs if n is not None),
        format_bytes(cell.get("peak_rss_bytes")),
        f"{parity} ({cell.get('computed_dtype') or '?'})",
    )


def ir_table(entries: Iterable[dict[str, Any]]) -> list[str]:
    rows = [table_row(("Cell", "Stage", "Lines", "Parameters", "Most frequent operations"))]
    rows.append("|" + " --- |" * 5)
    for entry in entries:
        if "unavailable" in entry:
            rows.append(table_row((entry["cell"], entry["stage"], "", "", entry["unavailable"])))
            continue
        ops = ", ".join(f"{name} {n}" for name, n in entry["ops"].items())
        rows.append(table_row((entry["cell"], entry["stage"], str(entry["lines"]),
                               str(entry["parameters"]), ops)))  # fmt: skip
    return rows


def outcomes_table(outcomes: Sequence[dict[str, Any]]) -> list[str]:
    stacks = list(dict.fromkeys(str(o["stack"]) for o in outcomes))
    found = {(str(o["probe"]), str(o["stack"])): str(o["outcome"]) for o in outcomes}
    rows = [table_row(("Probe", *stacks)), "|" + " --- |" * (len(stacks) + 1)]
    for probe in dict.fromkeys(str(o["probe"]) for o in outcomes):
        rows.append(table_row((probe, *(found.get((probe, s), "") for s in stacks))))
    return rows
