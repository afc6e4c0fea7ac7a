"""The report as a sequence of sections made of plain blocks (headings, paragraphs, figures,
tables of display strings, lists), built from ``data.Report``. Both renderers read
these blocks: ``page.py`` writes them as HTML, ``markdown.py`` as Markdown, so the two
formats say the same thing. Strings here are raw: each renderer escapes them its own way."""

from __future__ import annotations

from stackwars.report.comparison import comparison_notes, measured_texts
from stackwars.report.glyphs import TIMES
from stackwars.report.history import history_note, point_texts
from stackwars.report.html.blocks import (
    Block,
    Bullets,
    FigureRef,
    Folded,
    Heading,
    Paragraph,
    Section,
    TableBlock,
)
from stackwars.report.html.data import (
    SECTIONS,
    ComparisonView,
    HistoryView,
    InstrumentBlocks,
    Report,
)
from stackwars.report.html.explain import EXPLAIN_MIN_SPREAD, Explained
from stackwars.report.html.explain import NOTE as EXPLAIN_NOTE
from stackwars.report.html.groups import Group, SweepView
from stackwars.report.html.ir import DIFF_STAGE, IrCell
from stackwars.report.html.provenance import MANIFEST_COLUMNS, RunManifest
from stackwars.report.table import format_seconds
from stackwars.results.comparison import ComparisonRow

MANIFEST_NOTE = (
    "What each stack ran with, from its cells' recorded settings; where the cells of a stack "
    "differ, every value, separated by |."
)


def layout(report: Report) -> list[Section]:
    builders = {
        "runs": _runs,
        "workloads": _workloads,
        "compile": _compile,
        "sweeps": _sweeps,
        "warmup": _warmup,
        "explain": _explain,
        "comparisons": _comparisons,
        "history": _history,
        "ir": _ir,
        "fairness": _fairness,
        "warnings": _warnings,
        "status": _status,
    }
    sections: list[Section] = []
    placed: set[str] = set()
    for id, heading in SECTIONS:
        sections.append(Section(id, heading, tuple(builders[id](report))))
        for shown in report.instruments:
            if shown.after == id:
                sections.append(_instrument(shown))
                placed.add(shown.id)
    sections += [_instrument(shown) for shown in report.instruments if shown.id not in placed]
    return sections


def _instrument(shown: InstrumentBlocks) -> Section:
    """An instrument's section (``report/sections.py``), or why it has nothing to show."""
    return Section(shown.id, shown.heading, shown.blocks or tuple(_empty(shown.empty)))


def _empty(text: str) -> list[Block]:
    return [Paragraph(text, "empty")]


def _runs(report: Report) -> list[Block]:
    columns = ("Run", "Started", "Status", "Label", "Machine", "Cells", "Command")
    rows = tuple(
        (r.id, r.started, r.status, r.label, r.machine, r.counts, r.command) for r in report.runs
    )
    return [TableBlock(columns, rows, wide=frozenset({6}))]


def _workloads(report: Report) -> list[Block]:
    if not report.groups:
        return _empty("no cells: the run measured nothing")
    blocks: list[Block] = []
    for group in report.groups:
        blocks.extend(_group(group))
    return blocks


def _group(group: Group) -> list[Block]:
    table = group.table
    rows = tuple(row.texts() for row in table.rows)
    failed = frozenset(i for i, row in enumerate(table.rows) if not row.ok)
    alt = f"steady median, first-run phases and memory per stack for {group.title}"
    return [
        Heading(group.title, group.anchor),
        FigureRef(group.anchor, alt),
        TableBlock(table.columns, rows, failed, wide=frozenset({1})),
        Bullets(table.notes),
    ]


def _compile(report: Report) -> list[Block]:
    if not report.compile:
        return _empty("no compiled cell ended ok, and no warm-cache first run was measured")
    blocks: list[Block] = []
    for view in report.compile:
        if view.title:
            blocks.append(Heading(view.title))
        blocks.extend([TableBlock(view.columns, view.rows), Bullets(view.notes)])
    return blocks


def _sweeps(report: Report) -> list[Block]:
    if not report.sweeps:
        return _empty(
            "no sweep: no workload was measured at two or more values of one parameter "
            "(e.g. --param n=256,1024,4096)"
        )
    blocks: list[Block] = []
    for view in report.sweeps:
        blocks.extend(_sweep(view))
    return blocks


def _sweep(view: SweepView) -> list[Block]:
    values = sorted({p[0] for line in view.lines for p in line.points})
    columns = ("Stack", *(f"{view.param}={value:g}" for value in values))
    rows = []
    for line in view.lines:
        medians = {p[0]: p[1] for p in line.points}
        rows.append((line.stack, *(format_seconds(medians.get(value)) for value in values)))
    crossings = tuple(mark.text for mark in view.crossovers) or (
        "no crossover: the order of the stacks is the same at every measured value",
    )
    return [
        Heading(view.title, view.anchor),
        FigureRef(view.anchor, f"steady median and speed-up against {view.param}"),
        TableBlock(columns, tuple(rows)),
        Bullets(crossings),
    ]


def _warmup(report: Report) -> list[Block]:
    blocks: list[Block] = [
        Paragraph(
            "Each run before steady state, per stack, as a multiple of the steady median (log "
            "scale, shared): the dashed line is the run from which the cell was found steady, "
            "the dotted line the steady median itself."
        )
    ]
    missing = []
    for group in report.groups:
        if not any(t > 0 for stack in group.stacks for t in stack.warmup_s):
            missing.append(group.title)
            continue
        alt = f"warm-up series of every stack for {group.title}"
        blocks.extend([Heading(group.title), FigureRef(f"{group.anchor}-warmup", alt)])
    if missing:
        blocks.append(Paragraph("no warm-up series recorded: " + "; ".join(missing), "empty"))
    return blocks


def _explain(report: Report) -> list[Block]:
    if not report.explained:
        return _empty(
            "no group of two or more timed stacks differs by "
            f"{EXPLAIN_MIN_SPREAD}{TIMES} or more in these signals"
        )
    blocks: list[Block] = [Paragraph(EXPLAIN_NOTE)]
    for explained in report.explained:
        blocks.extend(_explained(explained))
    return blocks


def _explained(explained: Explained) -> list[Block]:
    columns = (
        "Stack",
        "Steady median",
        "User CPU per call",
        "System CPU per call",
        "Cores busy",
        "Page faults per call",
        "Dispatch",
        "Call+sync",
        "Steady compiles",
    )
    rows = tuple(
        (
            row.stack,
            format_seconds(row.median_s),
            format_seconds(row.user_s),
            format_seconds(row.sys_s),
            "" if row.cores is None else f"{row.cores:.2f}",
            "" if row.page_faults is None else f"{row.page_faults:.3g}",
            format_seconds(row.dispatch_s),
            format_seconds(row.latency_s),
            "" if row.compiles_steady is None else str(row.compiles_steady),
        )
        for row in explained.rows
    )
    return [
        Heading(explained.title, explained.anchor),
        Paragraph(explained.why),
        FigureRef(explained.anchor, f"time, CPU, page faults and dispatch for {explained.title}"),
        TableBlock(columns, rows),
    ]


def _comparisons(report: Report) -> list[Block]:
    if not report.comparisons:
        return _empty(
            "one run: nothing to compare (give several, e.g. 'stackwars report RUN_A RUN_B': "
            "each later run is compared with the first)"
        )
    blocks: list[Block] = []
    for view in report.comparisons:
        blocks.extend(_comparison(view))
    return blocks


def _comparison(view: ComparisonView) -> list[Block]:
    columns = ("Cell", "Baseline", "Candidate", "Change", "95% CI of ratio", "p", "Workers")
    blocks: list[Block] = [Heading(view.title, view.anchor)]
    if view.mismatch:
        blocks.append(Paragraph(f"{view.mismatch}; no cell is judged", "warning"))
    if any(row.result is not None for row in view.rows):
        blocks.append(FigureRef(view.anchor, f"ratio with its interval per cell: {view.title}"))
    rows = tuple(_comparison_texts(row) for row in view.rows)
    blocks.append(TableBlock((*columns, "Verdict"), rows, wide=frozenset({7})))
    blocks.append(Bullets(tuple(comparison_notes(list(view.rows), None))))
    return blocks


def _comparison_texts(row: ComparisonRow) -> tuple[str, ...]:
    result = row.result
    if result is None:
        return (row.label, "", "", "", "", "", "", row.note)
    verdict = f"{result.verdict}: {result.reason}" if result.reason else result.verdict
    return (row.label, *measured_texts(row), verdict)


def _history(report: Report) -> list[Block]:
    if not report.history:
        return _empty(
            "history needs three runs or more that share cells (two runs are a comparison, "
            "above); 'stackwars history' reads every stored run"
        )
    blocks: list[Block] = []
    for view in report.history:
        blocks.extend(_history_view(view))
    return blocks


def _history_view(view: HistoryView) -> list[Block]:
    columns = ("Run", "Started", "Status", "Workers", "Steady median", "First run", "Step")
    rows = tuple(point_texts(point) for point in view.points)
    note = history_note(list(view.points))
    table = TableBlock(columns, rows, wide=frozenset({6}))
    return [Heading(view.title), table, *([Bullets((note,))] if note else [])]


def _ir(report: Report) -> list[Block]:
    if not report.ir:
        return _empty(
            "the run captured no IR ('stackwars run --capture-ir' stores each compiled "
            "cell's IR with the run; 'stackwars ir' captures and diffs one workload)"
        )
    blocks: list[Block] = []
    for cell in report.ir:
        blocks.extend(_ir_cell(cell))
    return blocks


def _ir_cell(cell: IrCell) -> list[Block]:
    columns = ("Stack", "Stage", "Lines", "Most frequent ops", "Categories")
    rows = tuple(
        (
            stage.stack,
            stage.stage,
            str(stage.lines),
            ", ".join(f"{op} {n}" for op, n in stage.top_ops),
            ", ".join(f"{name} {n}" for name, n in stage.categories),
        )
        for stage in cell.stages
    )
    findings = cell.findings or (f"no two stacks captured {DIFF_STAGE} to compare",)
    return [Heading(cell.title), TableBlock(columns, rows), Bullets(findings)]


def _fairness(report: Report) -> list[Block]:
    blocks: list[Block] = []
    for manifest in report.manifests:
        blocks.extend(_manifest(manifest, report.several_runs))
    return blocks


def _manifest(manifest: RunManifest, several: bool) -> list[Block]:
    pair = ("Setting", "Value")
    suffix = f" of run {manifest.run_id}" if several else ""
    wide = frozenset(range(1, len(MANIFEST_COLUMNS)))
    blocks: list[Block] = [
        Heading(f"Stacks{suffix}"),
        Paragraph(MANIFEST_NOTE),
        TableBlock(MANIFEST_COLUMNS, manifest.stacks, wide=wide),
        Heading(f"Machine{suffix}"),
        TableBlock(pair, manifest.machine, wide=frozenset({1})),
    ]
    blocks.append(Folded("Library versions", (TableBlock(pair, manifest.versions),)))
    options = TableBlock(pair, manifest.options, wide=frozenset({1}))
    blocks.append(Folded("Run options", (options,)))
    return blocks


def _warnings(report: Report) -> list[Block]:
    if not report.warnings:
        return _empty("no warnings")
    rows = tuple((where, text) for where, text in report.warnings)
    return [
        Paragraph(f"{len(rows)} warning(s), the run's first, then each cell's."),
        TableBlock(("Where", "Warning"), rows, wide=frozenset({1})),
    ]


def _status(report: Report) -> list[Block]:
    if not report.failures:
        return _empty("every planned cell ran and ended ok")
    rows = tuple((f.run_id, f.cell, f.status, f.reason) for f in report.failures)
    return [
        TableBlock(
            ("Run", "Cell", "Status", "Reason"),
            rows,
            failed=frozenset(range(len(rows))),
            wide=frozenset({3}),
        )
    ]
