"""The cells compared, the stacks, the harnesses, and the interleaved job list."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from peers.harness import PEERS
from stackwars.frameworks import parse_stack

STACKS = ("numpy:eager", "jax:jit", "torch:eager", "tensorflow:graph")
# --quick checks the script, not the stacks: torch and TensorFlow take 1-4 s to import in each
# of ~10 processes a job, which would turn a 1-2 minute check into 5-10 minutes.
QUICK_STACKS = STACKS[:2]
HARNESSES = ("stackwars", *PEERS)
SHUFFLE_SEED = 0


@dataclass(frozen=True)
class PeerCell:
    name: str
    workload: str
    params: dict[str, Any] = field(hash=False)
    tiny_op: bool = False  # the ~10 µs cell: the accuracy target applies whatever the peers say

    def label(self) -> str:
        params = ", ".join(f"{key}={value}" for key, value in self.params.items())
        return f"{self.workload}({params})"


def _cell(workload: str, n: int, tiny_op: bool = False) -> PeerCell:
    return PeerCell(f"{workload}{n}", workload, {"n": n, "dtype": "float32"}, tiny_op)


# The ~10 µs op: SELU over 32×32 took 10.1 µs on numpy here (timeit, median of 5), six
# ufunc calls of dispatch overhead. Nearby candidates: poly n=32 10.3 µs (flat up to n=64, so
# a poor size probe), gemm n=32 4.3 µs, gemm n=64 13 µs.
TINY_OP = _cell("selu", 32, tiny_op=True)
FULL_CELLS = (_cell("gemm", 256), _cell("gemm", 1024), _cell("gemm", 3000), _cell("selu", 2000))
FULL_CELLS += (TINY_OP,)
QUICK_CELLS = (_cell("gemm", 64), TINY_OP)


@dataclass(frozen=True)
class Job:
    """One harness measuring one cell on one stack, in fresh processes."""

    harness: str
    cell: PeerCell
    stack: str
    repeat: int

    def label(self) -> str:
        return f"{self.harness} {self.cell.label()} on {self.stack} (repeat {self.repeat})"


def plan(cells: tuple[PeerCell, ...], stacks: tuple[str, ...], repeats: int) -> list[Job]:
    """Every (harness, cell, stack) × repeats, shuffled with a fixed seed: a drift of the
    machine over minutes then spreads over all harnesses instead of favouring one."""
    jobs = [
        Job(harness, cell, stack, repeat)
        for repeat in range(repeats)
        for cell in cells
        for stack in stacks
        for harness in HARNESSES
    ]
    random.Random(SHUFFLE_SEED).shuffle(jobs)
    return jobs


def select(cells: tuple[PeerCell, ...], names: str | None) -> tuple[PeerCell, ...]:
    """The cells named in a comma list (all when None); unknown names are refused."""
    if names is None:
        return cells
    known = {cell.name: cell for cell in (*FULL_CELLS, *QUICK_CELLS)}
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SystemExit(f"unknown cell(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return tuple(known[name] for name in wanted)


def select_stacks(stacks: tuple[str, ...], names: str | None) -> tuple[str, ...]:
    """The stacks in a comma list (``stacks`` when None), checked by stackwars' own parser."""
    if names is None:
        return stacks
    return tuple(str(parse_stack(name)) for name in names.split(",") if name.strip())
