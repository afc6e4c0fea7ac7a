"""Progress of a run: a live bar on a terminal, one line per finished cell everywhere.

The bar goes to stderr by default so that a table printed on stdout can be redirected to a
file without progress noise in it. When stderr is not a terminal (CI logs, pipes) there is no
bar and no escape codes, only the per-cell lines, which is what a log reader wants.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.text import Text

from stackwars.report.table import TERMINAL_REASON_CHARS, format_parity, format_steady, shorten
from stackwars.results.schema import Cell

_STATUS_STYLES = {"ok": "green", "unsupported": "dim", "timeout": "yellow"}  # others: red


class Progress:
    """Context manager around a run loop: ``start_cell`` before a cell, ``end_cell`` after."""

    def __init__(self, total: int, *, console: Console | None = None, quiet: bool = False) -> None:
        self.total = total
        self.done = 0
        self._console = console if console is not None else Console(stderr=True)
        self._quiet = quiet
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Progress:
        if not self._quiet and self._console.is_terminal:
            self._bar = RichProgress(
                BarColumn(),
                TextColumn("cell {task.fields[index]}/{task.total:.0f}"),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=self._console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=self.total, index=0)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def start_cell(self, label: str) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=label, index=self.done + 1)

    def end_cell(self, cell: Cell) -> None:
        self.done += 1
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done)
        if not self._quiet:
            # soft_wrap: a log line must stay one line whatever width rich guesses for a pipe.
            self._console.print(self.cell_line(cell), highlight=False, soft_wrap=True)

    def cell_line(self, cell: Cell) -> Text:
        """``[3/12] ok  gemm(n=3000) on jax:jit @ cpu  1.23 ms ± 0.4%  (wall 4.10 s)``."""
        line = Text(f"[{self.done}/{self.total}] ")
        line.append(f"{cell.status:<11}", style=_STATUS_STYLES.get(cell.status, "red"))
        line.append(f" {cell.label()}  {_outcome(cell)}")
        if cell.wall_s is not None:
            line.append(f"  (wall {cell.wall_s:.2f} s)", style="dim")
        return line


def _outcome(cell: Cell) -> str:
    if cell.status == "ok":
        return format_steady(cell)
    reason = shorten(" ".join(cell.reason.split()), TERMINAL_REASON_CHARS)
    if cell.status == "mismatch":
        return f"{format_parity(cell.parity)} {reason}".strip()
    return reason
