"""``show --details``: the signals a cell's JSON holds that the result tables leave out, one
row per cell (data as display strings first, drawn after, as in ``table.py``)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table as RichTable

from stackwars.report.compile import format_phases
from stackwars.report.table import (
    format_bytes,
    format_device_memory,
    format_seconds,
    stack_label,
)
from stackwars.results.schema import Cell

COLUMNS = (
    "Cell",
    "Stack",
    "Import",
    "Init",
    "Transfer",
    "Set-up",
    "Phases of the first run",
    "Dispatch",
    "User CPU/call",
    "System CPU/call",
    "Page faults/call",
    "Compiles 1st/2nd/steady",
    "Memory after import",
    "Predicted peak",
    "Device peak (reserved / limit)",
    "Threads, pre-allocation, BLAS",
)


def signal_rows(cells: Iterable[Cell]) -> list[tuple[str, ...]]:
    """One tuple of display strings per cell that ran (failed cells have no signals)."""
    return [_row(cell) for cell in cells if cell.status == "ok"]


def _row(cell: Cell) -> tuple[str, ...]:
    times, cpu, memory, c = cell.times, cell.cpu, cell.memory, cell.compiles
    params = ", ".join(f"{key}={value}" for key, value in cell.params.items())
    return (
        f"{cell.workload}({params})",
        stack_label(cell),
        format_seconds(times.import_s),
        format_seconds(times.init_s),
        format_seconds(times.transfer_s),
        format_seconds(times.setup_s),
        format_phases(cell.first_run_breakdown),
        format_seconds(times.dispatch_s),
        format_seconds(cpu.user_s_per_call),
        format_seconds(cpu.sys_s_per_call),
        "" if cpu.page_faults_per_call is None else f"{cpu.page_faults_per_call:.3g}",
        "/".join(map(_count, (c.first_run, c.second_run, c.steady))),
        format_bytes(memory.rss_after_import_bytes),
        format_bytes(memory.predicted_bytes),
        format_device_memory(cell),
        _threads(cell),
    )


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _threads(cell: Cell) -> str:
    """The run's thread and pre-allocation settings and each BLAS library the worker loaded,
    with its kernel (pre-allocation: the framework's answer where it has one, e.g. None on a
    CPU, else what was asked)."""
    run = cell.settings.get("run", {})
    threads = run.get("threads")
    framework = cell.settings.get("framework", {})
    preallocate = framework.get("preallocate", run.get("preallocate"))
    allocation = {True: "on", False: "off", None: "n/a"}.get(preallocate, str(preallocate))
    parts = [f"threads {threads if threads is not None else 'default'}", f"prealloc {allocation}"]
    for library in cell.settings.get("blas", []):
        kernel = library.get("architecture") or library.get("threading_layer") or ""
        name = library.get("internal_api") or library.get("user_api") or "?"
        parts.append(f"{name} ×{library.get('num_threads')} {kernel}".strip())
    return "; ".join(parts)


def signals_table(cells: Iterable[Cell]) -> RichTable:
    table = RichTable(
        title="Signals per cell (show --details)",
        title_justify="left",
        title_style="bold",
        caption="Per call: over the steady phase. Compiles: during the first run / the second "
        "run / steady state. Memory after import: before any data.",
        caption_justify="left",
    )
    for name in COLUMNS:
        table.add_column(name, justify="left" if name in ("Cell", "Stack") else "right")
    for row in signal_rows(cells):
        table.add_row(*row)
    return table


SPEED_COLUMNS = (
    "Cell",
    "Stack",
    "Worker",
    "Median",
    "THP (enabled/defrag)",
    "Huge pages",
    "CPUs last (allowed)",
    "Page faults/call",
    "Load 1 min",
    "Other processes",
)


def speed_mode_rows(cells: Iterable[Cell]) -> list[tuple[str, ...]]:
    """One tuple per ok worker, slowest last within a cell: what could have set its speed
    (runner/speed_mode.py), so that workers at different speeds can be read side by side."""
    ok = [cell for cell in cells if cell.status == "ok"]
    ok.sort(key=lambda cell: (cell.label(), cell.steady.median_s or 0.0))
    return [_speed_row(cell) for cell in ok]


def _shown(value: object) -> str:
    return "unknown" if value is None else str(value)


def _cpus(values: list[int] | None) -> str:
    return "unknown" if values is None else ",".join(str(cpu) for cpu in values)


def _speed_row(cell: Cell) -> tuple[str, ...]:
    mode = cell.settings.get("speed_mode", {})
    huge = mode.get("anon_huge_pages_kb")
    background = cell.settings.get("background_cores")
    faults = cell.cpu.page_faults_per_call
    params = ", ".join(f"{key}={value}" for key, value in cell.params.items())
    return (
        f"{cell.workload}({params})",
        stack_label(cell),
        str(cell.repeat),
        format_seconds(cell.steady.median_s),
        f"{_shown(mode.get('thp_enabled'))}/{_shown(mode.get('thp_defrag'))}",
        "unknown" if huge is None else format_bytes(huge * 1024),
        f"{_cpus(mode.get('threads_last_cpus'))} ({_cpus(mode.get('allowed_cpus'))})",
        "" if faults is None else f"{faults:.3g}",
        "unknown" if mode.get("load_1min") is None else f"{mode['load_1min']:.2f}",
        "" if background is None else f"{background:.2f} cores",
    )


def speed_mode_table(cells: Iterable[Cell]) -> RichTable:
    table = RichTable(
        title="What could set each worker's speed (show --details)",
        title_justify="left",
        title_style="bold",
        caption="Per worker, fastest first within a cell. Huge pages: the worker's anonymous "
        "memory in transparent huge pages after its timed blocks. Other processes: the CPU "
        "they kept busy while the worker ran. Not yet measured: which of these explains "
        "workers that land at different speeds (docs/evidence.md).",
        caption_justify="left",
    )
    for name in SPEED_COLUMNS:
        table.add_column(name, justify="left" if name in ("Cell", "Stack") else "right")
    for row in speed_mode_rows(cells):
        table.add_row(*row)
    return table
