"""The data of ``stackwars report``: everything the report shows, as plain values built from
runs. Pure (no drawing, no files): ``figures.py`` draws it, ``page.py`` and
``markdown.py`` lay it out, so the HTML and the Markdown report show the same data.

Every section is always present: one with nothing to show says why, so that nothing is
silently missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from stackwars.profiling.result import Profile
from stackwars.report.html.blocks import Block
from stackwars.report.html.explain import Explained, explained_groups
from stackwars.report.html.groups import Group, SweepView, build_groups, sweep_view
from stackwars.report.html.ir import IrCell, ir_cells
from stackwars.report.html.provenance import (
    CompileView,
    Failure,
    RunManifest,
    compile_view,
    failures,
    manifest,
    warnings_of,
)
from stackwars.report.sections import discover
from stackwars.report.table import status_counts
from stackwars.results.aggregate import merge_repeats
from stackwars.results.comparison import ComparisonRow
from stackwars.results.crossover import find_sweeps
from stackwars.results.history import Point, series_by_params, with_steps
from stackwars.results.peak import Peak
from stackwars.results.run import Run, displayed_status

# (id, heading): the core's sections in order; both renderers and the tests use these ids.
# An instrument's sections (report/sections.py) follow the core's section they name.
SECTIONS = (
    ("runs", "Runs"),
    ("workloads", "Steady time, first run and memory per workload"),
    ("compile", "What compiling buys"),
    ("sweeps", "Sweeps and crossovers"),
    ("warmup", "Warm-up: every run until steady state"),
    ("explain", "Explain signals: CPU, page faults, dispatch"),
    ("comparisons", "Comparisons between runs"),
    ("history", "History"),
    ("ir", "Compiler IR"),
    ("fairness", "Fairness manifest"),
    ("warnings", "Warnings"),
    ("status", "Cells that did not end ok"),
)
HISTORY_MIN_RUNS = 3


@dataclass(frozen=True)
class ComparisonView:
    anchor: str
    title: str
    mismatch: str  # why no cell is judged ('' when the runs share a machine)
    rows: tuple[ComparisonRow, ...]


@dataclass(frozen=True)
class HistoryView:
    title: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class RunSummary:
    id: str
    started: str
    status: str
    label: str
    machine: str
    command: str
    counts: str


@dataclass(frozen=True)
class ReportInputs:
    """What the command gathered: the runs, and what only the service layer can give."""

    runs: Sequence[Run]
    baseline: str | None = None
    peak: Peak | None = None
    # (baseline run, candidate run, rows, why the machines differ): api.compare's answer.
    comparisons: Sequence[tuple[Run, Run, Sequence[ComparisonRow], str]] = ()
    captures: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    run_warnings: Mapping[str, Sequence[str]] = field(default_factory=dict)
    threshold: float = 0.05
    profile_files: Sequence[tuple[str, Sequence[Profile]]] = ()  # report --profiles


@dataclass(frozen=True)
class InstrumentBlocks:
    """An instrument's section as the report shows it: its blocks, or why none (``empty``)."""

    id: str
    heading: str
    after: str  # the core's section it follows
    blocks: tuple[Block, ...]
    empty: str


@dataclass(frozen=True)
class Report:
    title: str
    runs: tuple[RunSummary, ...]
    groups: tuple[Group, ...]
    compile: tuple[CompileView, ...]
    sweeps: tuple[SweepView, ...]
    explained: tuple[Explained, ...]
    comparisons: tuple[ComparisonView, ...]
    history: tuple[HistoryView, ...]
    ir: tuple[IrCell, ...]
    manifests: tuple[RunManifest, ...]
    warnings: tuple[tuple[str, str], ...]  # where, what
    failures: tuple[Failure, ...]
    several_runs: bool
    instruments: tuple[InstrumentBlocks, ...] = ()  # what each instrument shows of the runs


def build_report(inputs: ReportInputs) -> Report:
    runs = list(inputs.runs)
    several = len(runs) > 1
    merged = {run.id: merge_repeats(run.cells) for run in runs}
    groups: list[Group] = []
    sweeps: list[SweepView] = []
    for run in runs:
        suffix = f" (run {run.id})" if several else ""
        groups.extend(
            build_groups(merged[run.id], inputs.baseline, inputs.peak, suffix, len(groups))
        )
        for sweep in find_sweeps(merged[run.id]):
            sweeps.append(sweep_view(sweep, inputs.baseline, f"sweep-{len(sweeps)}", suffix))
    ids = ", ".join(run.id for run in runs)
    return Report(
        title=f"stackwars report: {ids}",
        runs=tuple(run_summary(run) for run in runs),
        groups=tuple(groups),
        compile=tuple(view for run in runs if (view := compile_view(run, several)) is not None),
        sweeps=tuple(sweeps),
        explained=explained_groups(groups),
        comparisons=tuple(comparison_views(inputs)),
        history=tuple(history_views(runs, inputs.threshold)),
        ir=tuple(ir_cells(runs, inputs.captures)),
        manifests=tuple(manifest(run) for run in runs),
        warnings=tuple(warnings_of(runs, merged, inputs.run_warnings)),
        failures=tuple(failures(runs, merged)),
        several_runs=several,
        instruments=tuple(
            InstrumentBlocks(
                shown.id, shown.heading, shown.after, tuple(shown.report(inputs)), shown.empty
            )
            for shown in discover()
            if "timing" in shown.kinds
        ),
    )


def run_summary(run: Run) -> RunSummary:
    identity = run.identity
    machine = f"{identity.get('hostname', '?')} {identity.get('fingerprint', '')}".strip()
    return RunSummary(
        id=run.id,
        started=run.started,
        status=displayed_status(run.header()),
        label=str(identity.get("label", "")),
        machine=machine,
        command=" ".join(run.argv),
        counts=status_counts(run.cells),
    )


def comparison_views(inputs: ReportInputs) -> list[ComparisonView]:
    return [
        ComparisonView(
            anchor=f"comparison-{index}",
            title=f"{candidate.id} against {baseline.id}",
            mismatch=mismatch,
            rows=tuple(rows),
        )
        for index, (baseline, candidate, rows, mismatch) in enumerate(inputs.comparisons)
    ]


def history_views(runs: Sequence[Run], threshold: float) -> list[HistoryView]:
    """Each cell over the runs, in the order given, with its step changes (three runs or
    more: two runs are a comparison)."""
    if len(runs) < HISTORY_MIN_RUNS:
        return []
    # Every worker of every run: a step is judged across a run's workers (results/history.py).
    rows = [(run.id, run.started, cell) for run in runs for cell in run.cells]
    machines = {run.id: str(run.identity.get("fingerprint", "")) for run in runs}
    return [
        HistoryView(title, tuple(with_steps(series, threshold)))
        for title, series in series_by_params(rows, machines).items()
        if len(series) > 1
    ]
