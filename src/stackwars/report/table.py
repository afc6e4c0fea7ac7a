"""Result tables: cells grouped per workload, one row per stack, drawn for a terminal or markdown.

Building a table is kept apart from drawing it, as in ``torch.utils.benchmark``'s Compare:
:func:`build_tables` is a pure function from cells to :class:`Table` values holding display
strings, and the renderers only lay those strings out. The columns mirror the seed's tables
(First Run | Second Run | Avg Steady State) and add what an honest comparison needs: how many
runs it took to reach steady state, the confidence interval, memory, parity and speed-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from stackwars.frameworks import proven_on
from stackwars.report.glyphs import TIMES
from stackwars.report.markdown_text import escape, table_row
from stackwars.report.roofline import format_roofline
from stackwars.results.machines import machine_of, machines
from stackwars.results.peak import peak_matches_machine
from stackwars.results.schema import Cell, CellKey, Parity, reason_headline

if TYPE_CHECKING:
    from stackwars.results.peak import Peak

COLUMNS = (
    "Stack",
    "First run",
    "Second run",
    "Runs to steady",
    "Steady median",
    "Call+sync",
    "GFLOP/s",
    "Roofline",
    "Peak memory",
    "Parity",
    "Speed-up",
)
# Shown after "Peak memory" in a table of accelerator cells with device memory numbers; on
# the cpu the host's peak is the device's.
DEVICE_COLUMN = "Device peak"
DEVICE_NOTE = (
    "Device peak: the most the work's arrays held on the device (the framework's allocator: "
    "reserved from the device / its limit, where the framework tells); Peak memory is the "
    "worker's host memory"
)
UNSTABLE_MARK = "~"
UNSTABLE_NOTE = f"{UNSTABLE_MARK} not stable: CI target not reached within the time budget"
DISAGREE_MARK = "≋"
DISAGREE_NOTE = (
    f"{DISAGREE_MARK} fresh workers disagree far beyond their own intervals (bimodal across "
    "processes?): see the cell's warnings"
)
UNPROVEN_MARK = "†"
UNPROVEN_NOTE = (
    f"{UNPROVEN_MARK} a stack this project has not yet run on this kind of device: its "
    "placement, sync and memory readings there rest on the framework's documentation "
    "(docs/accelerators.md)"
)
SHARED_WORKER_MARK = "°"
SHARED_WORKER_NOTE = (
    f"{SHARED_WORKER_MARK} first run in a worker its stack's earlier cells had used "
    "(--workers per-stack): the framework was already imported and started, and may have "
    "compiled what this cell needs; not what a fresh process pays"
)
TERMINAL_REASON_CHARS = 60
PER_CALL_MARK = "host→ "
PER_CALL_NOTE = (
    f"{PER_CALL_MARK.strip()} inputs per call: every timed call placed the host inputs on the "
    "device itself (--inputs per-call), so its time includes the transfer"
)
TIMED_NOT_OK_NOTE = (
    "a row whose stack is followed by a status was timed, but is not ok (below: why); its "
    "time is shown, no speed-up, and a comparison or gate never counts it as ok"
)
NO_PEAK_NOTE = "Roofline: measure this machine's limits once with 'stackwars env --peak'"
OTHER_MACHINE_NOTE = "Roofline: the stored peak was measured on another machine than these cells'"
OTHER_DEVICE_NOTE = (
    "Roofline: the stored peak is the {peak}'s, these cells ran on {device}; measure it once "
    "with 'stackwars env --peak --device {device}'"
)
WITHIN_PROCESS_NOTE = (
    "±: half-width of the 95 % CI of the median within one worker process; the variation "
    "between processes is not in it (--repeat 3 measures it)"
)
ACROSS_WORKERS_NOTE = (
    "±: half-width of the 95 % CI of the median across fresh workers (hierarchical bootstrap)"
)
LATENCY_NOTE = (
    "Call+sync (asynchronous stacks): median single call waited for; the steady median "
    "lets the next call dispatch while one computes"
)

_TIME_UNITS = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_FAILURE_STYLES = {"unsupported": "dim", "timeout": "yellow"}  # others: red


@dataclass(frozen=True)
class Row:
    """One stack's line: its label, outcome, and one display string per column after Stack.
    ``timed``: the cell has a steady time, which the row shows whatever its status."""

    stack: str
    status: str
    reason: str
    values: tuple[str, ...]
    timed: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def texts(self, reason_chars: int | None = None) -> tuple[str, ...]:
        """Every column's text. A row that is not ok shows its status beside the stack when
        it was timed (its reason is a note of the table), or its status and why (one line)
        where numbers go when it was not."""
        if self.ok:
            return (self.stack, *self.values)
        if self.timed:
            return (f"{self.stack} {self.status.upper()}", *self.values)
        return (self.stack, self.failure(reason_chars), *self.values[1:])

    def failure(self, reason_chars: int | None = None) -> str:
        """``STATUS: why``, the why shortened to ``reason_chars`` when given."""
        reason = reason_headline(self.reason)
        if reason_chars is not None:
            reason = shorten(reason, reason_chars)
        return f"{self.status.upper()}: {reason}" if reason else self.status.upper()


@dataclass(frozen=True)
class Table:
    """The rows of one workload with one set of parameters on one device, and their notes."""

    workload: str
    params: dict[str, Any]
    device: str
    rows: tuple[Row, ...]
    notes: tuple[str, ...]
    machine: str = ""  # host (fingerprint) when the run's cells ran on several machines
    columns: tuple[str, ...] = COLUMNS  # the rows' texts, in order (Stack first)

    @property
    def title(self) -> str:
        params = ", ".join(f"{key}={value}" for key, value in self.params.items())
        where = f" on {self.machine}" if self.machine else ""
        return f"{self.workload}({params}) @ {self.device}{where}"


def build_tables(cells: Iterable[Cell], peak: Peak | None = None) -> list[Table]:
    """One table per (workload, params, device) in first-seen order, rows in cell order.

    A cell measured twice (a re-run of the same key) replaces the earlier one in place. With
    the machine's measured ``peak``, each row also says where it stands on the roofline. When
    the cells ran on several machines (a Ray cluster), each table holds one machine's cells
    and names it, the tables of one machine together: no row is compared with another
    machine's. Cells that ran nowhere (skipped) join the first table of their key's group.
    """
    cells = list(cells)
    found = machines(cells)
    several = found if len(found) > 1 else {}
    ran = [cell for cell in cells if not several or machine_of(cell) is not None]
    nowhere = [cell for cell in cells if several and machine_of(cell) is None]
    groups: dict[tuple[str, str, str, str | None], dict[CellKey, Cell]]
    groups = {}
    for cell in [*ran, *nowhere]:
        workload, params, _stack, device, _to_host = key = cell.key()
        machine = machine_of(cell) if several else None
        if several and machine is None:
            machine = next((g[3] for g in groups if g[:3] == (workload, params, device)), None)
        groups.setdefault((workload, params, device, machine), {})[key] = cell
    order = [*several, None]
    ordered = sorted(groups.items(), key=lambda item: order.index(item[0][3]))
    return [
        _build_table(list(group.values()), peak, several.get(machine or "", ""))
        for (*_, machine), group in ordered
    ]


def _build_table(cells: list[Cell], peak: Peak | None, machine: str = "") -> Table:
    no_roofline = _unusable_peak(cells, peak)
    peak = None if no_roofline else peak
    baseline = next((cell for cell in cells if _median(cell) is not None), None)
    columns = table_columns(cells)
    rows = tuple(_row(cell, baseline, peak, columns) for cell in cells)
    first = cells[0]
    notes = _notes(cells, baseline)
    if DEVICE_COLUMN in columns:
        notes = (*notes, DEVICE_NOTE)
    if peak is None:
        on_device = f"{NO_PEAK_NOTE[:-1]} --device {first.device}'"
        notes = (*notes, no_roofline or (NO_PEAK_NOTE if first.device == "cpu" else on_device))
    return Table(first.workload, dict(first.params), first.device, rows, notes, machine, columns)


def _unusable_peak(cells: list[Cell], peak: Peak | None) -> str:
    """Why ``peak`` must not place these cells ('' when it may, or there is none): measured
    on another machine, or on another device (a GPU cell is never placed under the cpu's
    roofline, nor gpu:1's under gpu:0's)."""
    if peak is None:
        return ""
    node = next((cell.node for cell in cells if machine_of(cell)), {})
    if node and not peak_matches_machine(peak, node):
        return OTHER_MACHINE_NOTE
    device = cells[0].device
    return (
        "" if peak.device == device else OTHER_DEVICE_NOTE.format(peak=peak.device, device=device)
    )


def table_columns(cells: list[Cell]) -> tuple[str, ...]:
    """COLUMNS, with the device's memory after the host's when the cells ran on an
    accelerator and any of them has a device memory number."""
    on_device = [cell for cell in cells if not cell.device.startswith("cpu")]
    if not any(format_device_memory(cell) for cell in on_device):
        return COLUMNS
    at = COLUMNS.index("Peak memory") + 1
    return (*COLUMNS[:at], DEVICE_COLUMN, *COLUMNS[at:])


def format_device_memory(cell: Cell) -> str:
    """``"1.20 GiB (2.00 GiB / 79.2 GiB)"``: peak (reserved / limit), what is known of them."""
    memory = cell.memory
    peak = format_bytes(memory.device_peak_bytes)
    pool = " / ".join(
        text
        for text in (
            format_bytes(memory.device_reserved_bytes),
            format_bytes(memory.device_limit_bytes),
        )
        if text
    )
    if not pool:
        return peak
    return f"{peak or '?'} ({pool})"


def _median(cell: Cell) -> float | None:
    """The steady median when the cell may be compared on speed, else None."""
    median = cell.steady.median_s
    if cell.status != "ok" or median is None or median <= 0:
        return None
    return median


def inputs_per_call(cell: Cell) -> bool:
    """Whether the cell's timed calls placed their inputs themselves (--inputs per-call)."""
    run = cell.settings.get("run")
    return isinstance(run, dict) and run.get("inputs") == "per-call"


def stack_label(cell: Cell) -> str:
    label = f"{cell.stack} →host" if cell.to_host else cell.stack
    if not proven_on(cell.stack, cell.device):
        label = f"{label} {UNPROVEN_MARK}"
    return f"{PER_CALL_MARK}{label}" if inputs_per_call(cell) else label


def _row(
    cell: Cell, baseline: Cell | None, peak: Peak | None, columns: tuple[str, ...] = COLUMNS
) -> Row:
    parity = format_parity(cell.parity)
    if cell.status != "ok" and not timed(cell):
        values = tuple(parity if name == "Parity" else "" for name in columns[1:])
        return Row(stack_label(cell), cell.status, cell.reason, values)
    texts = {
        "First run": _first_run(cell),
        "Second run": format_seconds(cell.times.second_run_s),
        "Runs to steady": "" if cell.runs_to_steady is None else str(cell.runs_to_steady),
        "Steady median": format_steady(cell),
        "Call+sync": format_seconds(cell.times.latency_s),
        "GFLOP/s": "" if cell.gflops is None else _three_digits(cell.gflops),
        "Roofline": "" if peak is None else format_roofline(cell, peak),
        "Peak memory": format_bytes(cell.memory.peak_rss_bytes),
        DEVICE_COLUMN: format_device_memory(cell),
        "Parity": parity,
        "Speed-up": _speed_up(cell, baseline),
    }
    values = tuple(texts[n] for n in columns[1:])
    return Row(stack_label(cell), cell.status, cell.reason, values, timed=timed(cell))


def _first_run(cell: Cell) -> str:
    shown = format_seconds(cell.times.first_run_s)
    return f"{shown} {SHARED_WORKER_MARK}" if shown and cell.worker.position else shown


def timed(cell: Cell) -> bool:
    """Whether the cell has a steady time to show (a mismatch was timed before its check)."""
    return cell.steady.median_s is not None and cell.steady.median_s > 0


def _speed_up(cell: Cell, baseline: Cell | None) -> str:
    median = _median(cell)
    base = None if baseline is None else _median(baseline)
    if median is None or base is None:
        return ""
    return f"{_three_digits(base / median)}{TIMES}"


def _notes(cells: list[Cell], baseline: Cell | None) -> tuple[str, ...]:
    notes: list[str] = []
    if baseline is not None and sum(_median(cell) is not None for cell in cells) > 1:
        notes.append(
            f"speed-up: steady median of {stack_label(baseline)} ÷ the row's"
            f" (above 1{TIMES} is faster)"
        )
    shown = [cell for cell in cells if timed(cell)]
    if any(not cell.steady.stable for cell in shown):
        notes.append(UNSTABLE_NOTE)
    if any(cell.settings.get("workers_disagree") for cell in cells):
        notes.append(DISAGREE_NOTE)
    if any("merged_workers" not in cell.settings for cell in shown):
        notes.append(WITHIN_PROCESS_NOTE)
    if any("merged_workers" in cell.settings for cell in shown):
        notes.append(ACROSS_WORKERS_NOTE)
    if any(cell.times.latency_s for cell in shown):
        notes.append(LATENCY_NOTE)
    if any(inputs_per_call(cell) for cell in cells):
        notes.append(PER_CALL_NOTE)
    if any(cell.worker.position and cell.times.first_run_s for cell in shown):
        notes.append(SHARED_WORKER_NOTE)
    if any(not proven_on(cell.stack, cell.device) for cell in cells):
        notes.append(UNPROVEN_NOTE)
    if any(cell.status != "ok" for cell in shown):
        notes.append(TIMED_NOT_OK_NOTE)
    notes.extend(
        f"{stack_label(cell)} {cell.status.upper()}: {reason_headline(cell.reason)}"
        for cell in shown
        if cell.status != "ok"
    )
    notes.extend(f"{stack_label(cell)}: {warning}" for cell in cells for warning in cell.warnings)
    return tuple(notes)


def _three_digits(value: float) -> str:
    """Three significant digits without scientific notation (four for values of 1000 up)."""
    rounded = float(f"{value:.3g}")
    if rounded >= 100:
        return f"{value:.0f}"
    if rounded >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_seconds(seconds: float | None) -> str:
    """``0.000123`` -> ``"123 µs"``; ``None`` -> ``""``."""
    if seconds is None:
        return ""
    # Pick the unit from the rounded value so that 999.96 µs is written 1.00 ms, not 1000 µs.
    rounded = float(f"{seconds:.3g}")
    scale, unit = next(
        ((scale, unit) for scale, unit in reversed(_TIME_UNITS) if rounded >= scale),
        _TIME_UNITS[0],
    )
    return f"{_three_digits(seconds / scale)} {unit}"


def format_bytes(count: float | None) -> str:
    """``1536 * 2**20`` -> ``"1.50 GiB"``; ``None`` -> ``""``."""
    if count is None:
        return ""
    value, index = float(count), 0
    while float(f"{value:.3g}") >= 1000 and index < len(_BYTE_UNITS) - 1:
        value /= 1024
        index += 1
    return f"{count:.0f} B" if index == 0 else f"{_three_digits(value)} {_BYTE_UNITS[index]}"


def format_steady(cell: Cell) -> str:
    """The steady median with the half-width of its 95 % CI, marked when not stable."""
    steady = cell.steady
    if steady.median_s is None:
        return ""
    text = format_seconds(steady.median_s)
    if steady.ci95_low_s is not None and steady.ci95_high_s is not None and steady.median_s > 0:
        half = (steady.ci95_high_s - steady.ci95_low_s) / 2 / steady.median_s * 100
        text += f" ± {_percent(half)}"
    if cell.settings.get("workers_disagree"):
        text = f"{DISAGREE_MARK}{text}"
    return text if steady.stable else f"{UNSTABLE_MARK}{text}"


def _percent(value: float) -> str:
    if value >= 10:
        return f"{value:.0f}%"
    return f"{value:.1f}%" if value >= 0.1 else "<0.1%"


def format_parity(parity: Parity) -> str:
    """``ok``, ``MISMATCH max rel 3e-2``, plus ``(f32≠f64)`` when the computed dtype differs."""
    if parity.ok is None:
        return ""
    text = "ok" if parity.ok else "MISMATCH"
    if not parity.ok and parity.max_rel_err is not None:
        mantissa, _, exponent = f"{parity.max_rel_err:.0e}".partition("e")
        text += f" max rel {mantissa}e{int(exponent)}"
    computed, requested = parity.computed_dtype, parity.requested_dtype
    if computed and requested and computed != requested:
        text += f" ({_short_dtype(computed)}≠{_short_dtype(requested)})"
    return text


def _short_dtype(name: str) -> str:
    return name.replace("bfloat", "bf").replace("float", "f").replace("complex", "c")


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render_rich(tables: Iterable[Table]) -> RenderableType:
    """The tables for a terminal, notes as captions; failure reasons are shortened."""
    return Group(*(_rich_table(table) for table in tables))


def _rich_table(table: Table) -> RichTable:
    rich_table = RichTable(
        title=table.title,
        title_justify="left",
        title_style="bold",
        caption="\n".join(_terminal_notes(table)) or None,
        caption_justify="left",
    )
    for name in table.columns:
        justify = "left" if name in ("Stack", "Parity") else "right"
        # Numbers and stack names are never wrapped or cut; only a failure reason may wrap.
        wraps = name == "First run"  # where a failed row's reason goes
        rich_table.add_column(
            name, justify=justify, no_wrap=not wraps, min_width=9 if wraps else None
        )
    for row in table.rows:
        texts = row.texts(TERMINAL_REASON_CHARS)
        if row.ok:
            rich_table.add_row(*texts)
            continue
        style = _FAILURE_STYLES.get(row.status, "red")
        second = Text(texts[1], style=style if not row.timed else "", justify="left")
        rich_table.add_row(Text(texts[0], style=style), second, *texts[2:])
    return rich_table


def _terminal_notes(table: Table) -> list[str]:
    """The table's notes, plus the whole one-line reason of each untimed row whose reason the
    terminal row shortened (the fix is often at its end)."""
    cut = [
        f"{row.stack} {row.failure()}"
        for row in table.rows
        if not row.ok and not row.timed and row.failure() != row.failure(TERMINAL_REASON_CHARS)
    ]
    return [*table.notes, *cut]


def render_markdown(tables: Iterable[Table]) -> str:
    """GitHub markdown: a ``###`` heading per table, the table, its notes as a list."""
    return "\n\n".join(_markdown_table(table) for table in tables) + "\n"


def _markdown_table(table: Table) -> str:
    align = ["---" if name in ("Stack", "Parity") else "---:" for name in table.columns]
    lines = [f"### {escape(table.title)}", "", table_row(table.columns)]
    lines.append(table_row(align))
    lines.extend(table_row(row.texts()) for row in table.rows)
    if table.notes:
        lines.append("")
        lines.extend(f"- {escape(note)}" for note in table.notes)
    return "\n".join(lines)


def failure_details(cells: Iterable[Cell]) -> list[str]:
    """Each cell that is not ok with its whole reason, the details tables leave out (an
    error's traceback): 'show --details'."""
    return [
        f"{cell.workload} {stack_label(cell)} @ {cell.device} {cell.status.upper()}:\n"
        f"{cell.reason.strip()}"
        for cell in cells
        if cell.status != "ok" and cell.reason.strip()
    ]


def status_counts(cells: Iterable[Cell]) -> str:
    """``"25 ok, 2 unsupported"``: how many cells ended in each status."""
    counts: dict[str, int] = {}
    for cell in cells:
        counts[cell.status] = counts.get(cell.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "no cells"
