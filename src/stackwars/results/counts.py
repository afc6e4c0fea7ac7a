"""The deterministic gate: counts a framework keeps that a change moves by exactly zero or by a
whole step, compared cell by cell beside the timed gate (issue 54).

A time needs rounds to be told from noise; a count does not. When every worker of the
baseline read one value and every worker of the candidate another, the change made it (a
recompile each call, a graph the compiler now splits), decided in one round with no timing
involved. A count whose workers disagree within a side is not deterministic on this machine
and is not compared. What the cells record and is compared here:

* the compilations of the first run, the second run and steady state, as each framework counts
  them (XLA executables, Dynamo graphs, torch_xla's uncached graph compiles): a recompile
  injected into every call moves the steady count from 0 (the first run's only from workers
  that measured nothing before the cell: ``--workers per-stack`` shares one);
* the bytes one call held at its peak, as the framework's allocation accounting sees them, in
  an untimed call after the timed runs (``Framework.call_peak_bytes``: NumPy's arrays through
  tracemalloc, PyTorch's CPU allocator through its profiler's memory records): an extra copy
  injected into the call adds its size;
* the operations of the program the compiler is given and its estimate of a call's FLOPs,
  read after the timed runs (``Framework.compiled_program``: jax:jit's StableHLO with XLA's
  cost analysis, tensorflow:xla's HLO, tensorflow:graph's operations): an operation a change
  adds moves the first, more work the second (where the compiler estimates it).

Not compared, with why: the peak bytes of a call on stacks whose framework keeps no accounting
of its allocations on the device (XLA's CPU client, TensorFlow, torch_xla; a compiler may also
remove a copy, which then costs nothing), the programs of the other compiling modes (not
read yet: torch.compile's, torchax's and torch_xla's), user-space instruction counts
(``perf stat -e instructions:u true`` printed ``<not supported>`` on the project's AMD EPYC
virtual machine, 2026-11-28: the hypervisor exposes no hardware counters), page faults per
call (an allocator that reuses its pages hides an extra copy, so their change is not a whole
step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stackwars.results.schema import Cell

COUNTS: tuple[tuple[str, Callable[[Cell], int | None]], ...] = (
    ("compilations in the first run", lambda cell: _fresh(cell, cell.compiles.first_run)),
    ("compilations in the second run", lambda cell: cell.compiles.second_run),
    ("compilations in steady state", lambda cell: cell.compiles.steady),
    ("bytes a call held at its peak", lambda cell: cell.memory.call_peak_bytes),
    ("operations in the compiled program", lambda cell: cell.program.operations),
    ("FLOPs the compiler estimates", lambda cell: _whole(cell.program.flops)),
)


@dataclass(frozen=True)
class CountChange:
    """One count every worker of each side agreed on, different between the sides."""

    what: str
    baseline: int
    candidate: int

    def describe(self) -> str:
        return f"{self.what} {self.baseline} → {self.candidate}"


def count_changes(baseline: Sequence[Cell], candidate: Sequence[Cell]) -> tuple[CountChange, ...]:
    """The counts that changed between one cell's baseline and candidate workers (every
    worker ok): only where each side's workers all read one value."""
    changes = []
    for what, read in COUNTS:
        before, after = _one_value(baseline, read), _one_value(candidate, read)
        if before is not None and after is not None and before != after:
            changes.append(CountChange(what, before, after))
    return tuple(changes)


def _fresh(cell: Cell, count: int | None) -> int | None:
    """A first-run count, from a worker that measured nothing before the cell: after earlier
    cells (--workers per-stack) what they compiled may serve it, so the count depends on the
    order drawn, not on the change."""
    return count if cell.worker.position == 0 else None


def _whole(value: float | None) -> int | None:
    return None if value is None else round(value)


def _one_value(cells: Sequence[Cell], read: Callable[[Cell], int | None]) -> int | None:
    """The value every worker read; None when a worker did not count it or they disagree."""
    values = {read(cell) for cell in cells}
    if len(values) != 1 or None in values:
        return None
    return values.pop()
