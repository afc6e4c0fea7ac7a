"""The report's explain signals: what each call costs besides its time (CPU user and system
time, page faults, dispatch against call+sync), for the groups whose stacks differ most on
them. A stack that allocates a fresh output per call (JAX) shows page faults the others do
not; a multi-threaded kernel shows more CPU time than wall time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stackwars.report.glyphs import TIMES
from stackwars.report.html.groups import Group, StackCell

EXPLAIN_GROUPS = 8
EXPLAIN_MIN_SPREAD = 1.25
NOTE = (
    f"The {EXPLAIN_GROUPS} groups (at most) whose stacks differ most, by {EXPLAIN_MIN_SPREAD}"
    f"{TIMES} or more, in CPU cores busy per call, page faults per call or the system share "
    "of CPU time (largest ÷ smallest, with a small floor so that noise near zero is not a "
    "spread). CPU and page faults are per call "
    "of the steady state; dispatch is a call not waited for, call+sync one that is "
    "(asynchronous stacks only)."
)
# Additive floors keep noise from looking like a spread: 0.001 against 0.01 page faults per
# call is no difference, 0 against 50 is; likewise a few percent of a core.
_FLOORS = {"CPU cores busy": 0.05, "page faults per call": 1.0, "system share of CPU": 0.05}


@dataclass(frozen=True)
class SignalRow:
    stack: str
    median_s: float
    user_s: float | None
    sys_s: float | None
    page_faults: float | None
    dispatch_s: float | None  # per call, without waiting; asynchronous stacks only
    latency_s: float | None  # one call waited for; asynchronous stacks only
    compiles_steady: int | None

    @property
    def cores(self) -> float | None:
        """CPU time per call over wall time per call: how many cores a call kept busy."""
        if self.user_s is None or self.median_s <= 0:
            return None
        return (self.user_s + (self.sys_s or 0.0)) / self.median_s

    @property
    def sys_share(self) -> float | None:
        total = (self.user_s or 0.0) + (self.sys_s or 0.0)
        return None if self.sys_s is None or total <= 0 else self.sys_s / total


@dataclass(frozen=True)
class Explained:
    anchor: str
    title: str
    spread: float
    why: str
    rows: tuple[SignalRow, ...]


_SIGNALS: dict[str, Callable[[SignalRow], float | None]] = {
    "CPU cores busy": lambda row: row.cores,
    "page faults per call": lambda row: row.page_faults,
    "system share of CPU": lambda row: row.sys_share,
}


def signal_row(stack: StackCell) -> SignalRow | None:
    cell = stack.cell
    if stack.steady is None or stack.steady.value is None:
        return None
    return SignalRow(
        stack=stack.stack,
        median_s=stack.steady.value,
        user_s=cell.cpu.user_s_per_call,
        sys_s=cell.cpu.sys_s_per_call,
        page_faults=cell.cpu.page_faults_per_call,
        dispatch_s=cell.times.dispatch_s,
        latency_s=cell.times.latency_s,
        compiles_steady=cell.compiles.steady,
    )


def _spread(rows: Sequence[SignalRow], name: str) -> float:
    values = [v for row in rows if (v := _SIGNALS[name](row)) is not None]
    if len(values) < 2:
        return 1.0
    floor = _FLOORS[name]
    return (max(values) + floor) / (min(values) + floor)


def explained_groups(groups: Sequence[Group]) -> tuple[Explained, ...]:
    """The groups of two or more timed stacks whose signals differ, most first."""
    found = []
    for group in groups:
        rows = tuple(row for stack in group.stacks if (row := signal_row(stack)) is not None)
        if len(rows) < 2:
            continue
        spreads = {name: _spread(rows, name) for name in _SIGNALS}
        name = max(spreads, key=lambda key: spreads[key])
        if spreads[name] < EXPLAIN_MIN_SPREAD:
            continue
        why = f"{name}: {spreads[name]:.3g}{TIMES} between stacks (largest ÷ smallest)"
        found.append(Explained(f"explain-{group.anchor}", group.title, spreads[name], why, rows))
    found.sort(key=lambda explained: -explained.spread)
    return tuple(found[:EXPLAIN_GROUPS])
