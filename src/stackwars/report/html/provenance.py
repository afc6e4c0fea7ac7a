"""The report's data about how the numbers were made and what is missing: the compile table,
the fairness manifest (per stack: precision, threads, BLAS and its kernel, preallocation,
compile cache, environment, versions; the machine), every warning, and a row for every cell
that did not end ok or was never measured. Pure, like ``data.py``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackwars.frameworks import split_stack
from stackwars.report.compile import COLUMNS as COMPILE_COLUMNS
from stackwars.report.compile import compile_notes, compile_rows, shown_columns
from stackwars.report.table import format_bytes
from stackwars.results.compile import compile_summaries, persistent_cache
from stackwars.results.run import Run, displayed_status
from stackwars.results.schema import Cell

MANIFEST_COLUMNS = (
    "Stack",
    "Precision",
    "Threads",
    "BLAS: library, kernel, threads",
    "Preallocate",
    "Compile cache",
    "Inputs",
    "Environment set",
    "Inherited environment",
    "Version",
)
_NOT_RECORDED = "not recorded (no cell of this stack started its framework)"


@dataclass(frozen=True)
class CompileView:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class RunManifest:
    run_id: str
    machine: tuple[tuple[str, str], ...]
    versions: tuple[tuple[str, str], ...]
    options: tuple[tuple[str, str], ...]
    stacks: tuple[tuple[str, ...], ...]  # one row per stack, in MANIFEST_COLUMNS order


@dataclass(frozen=True)
class Failure:
    run_id: str
    cell: str
    status: str
    reason: str


def compile_view(run: Run, several: bool) -> CompileView | None:
    """The compile table as ``show`` prints it; the warm-cache column only when measured."""
    summaries = compile_summaries(run.cells)
    if not summaries:
        return None
    shown = shown_columns(summaries)
    return CompileView(
        title=f"run {run.id}" if several else "",
        columns=tuple(COMPILE_COLUMNS[i] for i in shown),
        rows=tuple(tuple(row[i] for i in shown) for row in compile_rows(summaries)),
        notes=tuple(compile_notes(summaries)),
    )


def manifest(run: Run) -> RunManifest:
    stacks: dict[str, list[Cell]] = {}
    for cell in run.cells:
        stacks.setdefault(cell.stack, []).append(cell)
    return RunManifest(
        run_id=run.id,
        machine=machine_rows(run.machine),
        versions=tuple((name, str(v)) for name, v in run.versions.items() if v is not None),
        options=option_rows(run.options),
        stacks=tuple(stack_row(stack, cells, run.versions) for stack, cells in stacks.items()),
    )


def machine_rows(machine: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    cores = "{logical_cores} logical, {physical_cores} physical, {usable_cores} usable"
    rows = [
        ("CPU", f"{machine.get('cpu_model', '?')} ({machine.get('arch', '?')})"),
        ("cores", cores.format_map(_Missing(machine))),
        ("memory", format_bytes(machine.get("memory_total_bytes")) or "?"),
        ("CPU flags", ", ".join(machine.get("cpu_flags", [])) or "none recorded"),
        ("frequency governor", str(machine.get("governor") or "unknown")),
        ("load average before the run", _text(machine.get("load_average"))),
        ("OS", str(machine.get("os", "?"))),
        ("Python", str(machine.get("python", "?"))),
        ("accelerators", _text(machine.get("accelerators")) or "none"),
        ("environment that influences libraries", _pairs(machine.get("influential_environment"))),
    ]
    return tuple((name, value or "none") for name, value in rows)


class _Missing(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def option_rows(options: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((name, _option(name, value)) for name, value in options.items())


def _option(name: str, value: Any) -> str:
    if name == "memory_budget" and isinstance(value, int):
        return format_bytes(value)
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(_text(item) for item in value)
    if isinstance(value, dict):
        return _pairs(value)
    return str(value)


def _pairs(values: Any) -> str:
    if not isinstance(values, dict) or not values:
        return ""
    return ", ".join(f"{key}={_text(value)}" for key, value in values.items())


def stack_row(stack: str, cells: Sequence[Cell], versions: Mapping[str, Any]) -> tuple[str, ...]:
    """One stack's settings; where its cells differ, every distinct value joined by ' | '."""
    started = [cell for cell in cells if cell.settings.get("run")]
    framework = split_stack(stack)[0]
    version = f"{framework} {versions.get(framework) or '?'}"
    if not started:
        return (stack, *([_NOT_RECORDED] * (len(MANIFEST_COLUMNS) - 3)), version)
    columns = (precision, threads, blas, preallocate, cache, inputs, environment, inherited)
    values = [_distinct(column(cell) for cell in started) for column in columns]
    values[4] += f"; a later process reloads: {persistent_cache(stack)}"
    return (stack, *values, version)


def _distinct(values: Iterable[str]) -> str:
    return " | ".join(dict.fromkeys(value or "none" for value in values))


def _settings(cell: Cell, part: str) -> dict[str, Any]:
    value = cell.settings.get(part)
    return value if isinstance(value, dict) else {}


def precision(cell: Cell) -> str:
    run, framework = _settings(cell, "run"), _settings(cell, "framework")
    parts = [str(cell.params.get("dtype") or cell.parity.requested_dtype or "")]
    computed = cell.parity.computed_dtype
    if computed and computed != parts[0]:
        parts.append(f"computed in {computed}")
    asked, effective = run.get("matmul_precision"), framework.get("matmul_precision")
    if asked:
        reported = f" (the framework reports {effective})" if effective else ""
        parts.append(f"matmul precision {asked}{reported}")
    parts.append("x64 on" if run.get("x64") else "x64 off")
    return "; ".join(part for part in parts if part)


def threads(cell: Cell) -> str:
    run, framework = _settings(cell, "run"), _settings(cell, "framework")
    asked = run.get("threads")
    text = f"{asked} asked" if asked else "the framework's default"
    if framework.get("threads") is not None:
        text += f"; the framework runs {framework['threads']}"
    note = framework.get("threads_note")
    return f"{text} ({note})" if note else text


def blas(cell: Cell) -> str:
    libraries = cell.settings.get("blas")
    if not isinstance(libraries, list):
        return str(libraries or "")
    parts = []
    for library in libraries:
        name = f"{library.get('internal_api', '?')} {library.get('version') or ''}".strip()
        kernel = library.get("architecture")
        detail = [f"{kernel} kernel"] if kernel else []
        detail.append(f"{library.get('num_threads', '?')} threads")
        if library.get("threading_layer"):
            detail.append(str(library["threading_layer"]))
        parts.append(f"{name} ({', '.join(detail)})")
    return "; ".join(parts)


def preallocate(cell: Cell) -> str:
    asked = _settings(cell, "run").get("preallocate")
    effective = _settings(cell, "framework").get("preallocate")
    text = "on" if asked else "off"
    return text if effective is None else f"{text} (the framework reports {effective})"


def cache(cell: Cell) -> str:
    return str(_settings(cell, "run").get("cache") or "")


def inputs(cell: Cell) -> str:
    """Where the timed calls found their inputs (--inputs; runs before it: resident)."""
    if _settings(cell, "run").get("inputs") == "per-call":
        return "per-call: placed from host NumPy arrays inside every timed call"
    return "resident: placed on the device once, before timing"


def environment(cell: Cell) -> str:
    """The variables the worker set, each cell's own folder written as ``<cell folder>`` so
    that cells of one stack read alike."""
    folder = str(_settings(cell, "run").get("cache_dir") or "")
    values = _settings(cell, "environment")
    return ", ".join(f"{key}={_in_folder(str(value), folder)}" for key, value in values.items())


def _in_folder(value: str, folder: str) -> str:
    if folder and value.startswith(folder):
        return "<cell folder>" + value[len(folder) :]
    return value


def inherited(cell: Cell) -> str:
    return _pairs(_settings(cell, "inherited_environment"))


def warnings_of(
    runs: Sequence[Run],
    merged: Mapping[str, Sequence[Cell]],
    run_warnings: Mapping[str, Sequence[str]],
) -> list[tuple[str, str]]:
    """Every warning: the run's (the machine), then each cell's, with where it comes from."""
    several = len(runs) > 1
    found = []
    for run in runs:
        found.extend((f"run {run.id}", text) for text in run_warnings.get(run.id, ()))
        suffix = f" (run {run.id})" if several else ""
        for cell in merged[run.id]:
            found.extend((cell.label() + suffix, text) for text in cell.warnings)
    return found


def failures(runs: Sequence[Run], merged: Mapping[str, Sequence[Cell]]) -> list[Failure]:
    """Every cell that did not end ok, and every planned cell the run never measured."""
    found = []
    for run in runs:
        found.extend(
            Failure(run.id, cell.label(), cell.status, cell.reason)
            for cell in merged[run.id]
            if cell.status != "ok"
        )
        found.extend(_never_measured(run))
    return found


def _never_measured(run: Run) -> list[Failure]:
    """The planned cells (each --repeat worker apart) that have no result in the run."""
    measured = {(cell.key(), cell.repeat) for cell in run.cells}
    why = f"planned, never measured: the run is {displayed_status(run.header())}"
    found = []
    for planned in run.planned:
        cell = Cell(
            planned["workload"],
            dict(planned["params"]),
            planned["stack"],
            planned.get("device", "cpu"),
            bool(planned.get("to_host", False)),
            repeat=int(planned.get("repeat", 0)),
        )
        if (cell.key(), cell.repeat) in measured:
            continue
        measured.add((cell.key(), cell.repeat))
        repeat = f" (worker {cell.repeat + 1})" if cell.repeat else ""
        found.append(Failure(run.id, cell.label() + repeat, "not run", why))
    return found
