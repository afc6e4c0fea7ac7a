"""Progress of a run: a live bar on a terminal, one line per finished cell everywhere.

The bar goes to stderr by default so that a table printed on stdout can be redirected to a
file without progress noise in it. When stderr is not a terminal (CI logs, pipes) there is no
bar and no escape codes, only the per-cell lines, which is what a log reader wants.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from statistics import fmean
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.text import Text

from stackwars.report.table import TERMINAL_REASON_CHARS, format_parity, format_steady, shorten
from stackwars.results.schema import Cell, reason_headline

_STATUS_STYLES = {"ok": "green", "unsupported": "dim", "timeout": "yellow"}  # others: red
# Without a live bar (logs, pipes), a running cell's phase is printed once it has run this long,
# and then at most this often: a long cell is never silent, a short one adds no lines.
LOG_PHASE_AFTER_S = 10.0


class TimeLeft:
    """The time a run has left, estimated per stack: each cell still to run at the mean wall
    time of the finished cells of its stack.

    One mean over every finished cell said "~14 s left" at the start of a 98 s run: the first
    cells were NumPy's, the compiling stacks came later. So there is no estimate while a stack
    still to run has no finished cell.
    """

    def __init__(self, stacks: Sequence[str]) -> None:
        self._left = Counter(stacks)
        self._walls: dict[str, list[float]] = {}

    def planned(self, stacks: Sequence[str]) -> None:
        """More cells to run (a round --repeat auto added)."""
        self._left.update(stacks)

    def finished(self, cell: Cell) -> None:
        # A cell without a wall time started no worker (planned unsupported or oom): it is not
        # among the stacks still to run.
        if cell.wall_s is None:
            return
        if self._left[cell.stack] > 0:
            self._left[cell.stack] -= 1
        self._walls.setdefault(cell.stack, []).append(cell.wall_s)

    def seconds(self) -> float | None:
        """None when nothing is left, or while a stack still to run has no finished cell."""
        left = {stack: count for stack, count in self._left.items() if count > 0}
        if not left or any(stack not in self._walls for stack in left):
            return None
        return sum(count * fmean(self._walls[stack]) for stack, count in left.items())


class Progress:
    """Context manager around a run loop: ``start_cell`` before a cell, ``end_cell`` after.

    ``stacks``: the stack of every cell that will start a worker, for the time left (none
    is shown without them).
    """

    def __init__(
        self,
        total: int,
        *,
        console: Console | None = None,
        quiet: bool = False,
        stacks: Sequence[str] = (),
    ) -> None:
        self.total = total
        self.done = 0
        self._console = console if console is not None else Console(stderr=True)
        self._quiet = quiet
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        self._label = ""
        self._cell_started = 0.0
        self._phase_printed = 0.0
        self._time_left = TimeLeft(stacks)
        self._clock = time.monotonic

    def __enter__(self) -> Progress:
        if not self._quiet and self._console.is_terminal:
            self._bar = RichProgress(
                BarColumn(),
                TextColumn("cell {task.fields[index]}/{task.total:.0f}"),
                TextColumn("{task.fields[left]}"),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=self._console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=self.total, index=0, left="")
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

    def more(self, stacks: Sequence[str]) -> None:
        """Cells added to the run while it runs (a --repeat auto round): one per stack given."""
        self.total += len(stacks)
        self._time_left.planned(stacks)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=self.total)

    def start_cell(self, label: str) -> None:
        self._label, self._cell_started = label, self._clock()
        self._phase_printed = self._cell_started
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=label, index=self.done + 1)

    def phase(self, text: str) -> None:
        """What the running cell's worker reports it is doing."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=f"{self._label} · {text}")
            return
        now = self._clock()
        if self._quiet or now - self._phase_printed < LOG_PHASE_AFTER_S:
            return
        self._phase_printed = now
        running = now - self._cell_started
        line = f"      … {self._label}: {text} ({running:.0f} s)"
        self._console.print(line, highlight=False, soft_wrap=True, style="dim")

    def after_run(self, step: str, text: str) -> None:
        """What a step after the cells (IR capture, profiling) reports it is doing."""
        if step != self._label:
            self._label, self._cell_started = step, self._clock()
        self.phase(text)

    def end_cell(self, cell: Cell) -> None:
        self.done += 1
        self._time_left.finished(cell)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, left=self.time_left_text())
        if not self._quiet:
            # soft_wrap: a log line must stay one line whatever width rich guesses for a pipe.
            self._console.print(self.cell_line(cell), highlight=False, soft_wrap=True)

    def time_left_text(self) -> str:
        """``~3 min left (estimate)``, or nothing while there is no estimate."""
        left = self._time_left.seconds() if self.done < self.total else None
        return f"~{format_duration(left)} left (estimate)" if left is not None else ""

    def cell_line(self, cell: Cell) -> Text:
        """``[3/12] ok  gemm(n=3000) on jax:jit @ cpu  1.23 ms ± 0.4%  (wall 4.10 s)``."""
        line = Text(f"[{self.done}/{self.total}] ")
        line.append(f"{cell.status:<11}", style=_STATUS_STYLES.get(cell.status, "red"))
        line.append(f" {cell.label()}  {_outcome(cell)}")
        if cell.wall_s is not None:
            line.append(f"  (wall {cell.wall_s:.2f} s)", style="dim")
        left = self.time_left_text()
        if left:
            line.append(f"  {left}", style="dim")
        return line


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min``, ``1 h 05 min``: an estimate, so no false precision."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def _outcome(cell: Cell) -> str:
    if cell.status == "ok":
        return format_steady(cell)
    reason = shorten(reason_headline(cell.reason), TERMINAL_REASON_CHARS)
    if cell.status == "mismatch":
        return f"{format_steady(cell)} {format_parity(cell.parity)} {reason}".strip()
    return reason
