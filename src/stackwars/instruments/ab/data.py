"""ab's data: the noise table, each cell's paired spread on one machine, measured by an A/A
session (``stackwars ab --write-noise FILE``, both sides the same), and the triage an A/B
session makes with it (``ab --noise FILE``).

A session passes only when every gated cell is shown within the pass limit, so the triage plans
for the session, not the cell: it gates the most cells, quietest first, that the session's
rounds can all show within the limit together with 80 % probability (each of k cells at power
0.8^(1/k), ``timing/sequential.py``'s ``rounds_to_pass``), since a suite of cells each passed at
80 % would itself pass far less often. Every other cell is *not gated in this job*: when the
session leaves it undecided it is listed with the rounds it needs instead of making the whole
session ``underpowered``. The triage is decided from rounds the candidate did not touch, so a
regression cannot make its own cell ungated by making it noisy (a slowdown in a share of the
candidate's processes does); a not-gated cell stays in the failure family, so a regression large
enough still fails it. A table is one machine's: read on another fingerprint it is refused.

File format (``NOISE_FORMAT``), JSON: ``{"format", "machine": {"fingerprint", "cpu_model"},
"measured" (UTC, ISO 8601), "command", "rounds", "cells": {label: {"rounds", "spread"}}}``,
``spread`` the standard deviation of a round's paired log ratio (candidate over baseline).

Format history:

* 1 (2026-11-29): first format.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from stackwars.errors import UsageError
from stackwars.results import metadata
from stackwars.results.comparison import ComparisonRow
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.run import now
from stackwars.timing.sequential import PLANNING_POWER, Paired, rounds_to_pass

NOISE_FORMAT = 1
FEWEST_AA_ROUNDS = 3  # below this a cell's spread is not kept: two rounds barely show one


@dataclass(frozen=True)
class CellNoise:
    rounds: int  # the A/A rounds its spread comes from
    spread: float  # standard deviation of a round's paired log ratio


@dataclass(frozen=True)
class NoiseTable:
    fingerprint: str
    cpu_model: str
    measured: str
    command: list[str]
    rounds: int
    cells: dict[str, CellNoise]

    def write(self, path: Path) -> None:
        data = {
            "format": NOISE_FORMAT,
            "machine": {"fingerprint": self.fingerprint, "cpu_model": self.cpu_model},
            "measured": self.measured,
            "command": self.command,
            "rounds": self.rounds,
            "cells": {label: asdict(noise) for label, noise in self.cells.items()},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, dump(data) + "\n")


def noise_of(rows: Iterable[ComparisonRow], rounds: int, command: Sequence[str]) -> NoiseTable:
    """The table an A/A session's rows give: each cell paired over at least
    ``FEWEST_AA_ROUNDS`` rounds, on this machine."""
    cells = {}
    for row in rows:
        evidence = row.result.evidence if row.result is not None else None
        if isinstance(evidence, Paired) and evidence.rounds >= FEWEST_AA_ROUNDS:
            cells[row.label] = CellNoise(evidence.rounds, _sd(evidence.log_ratios))
    machine = metadata.machine_info()
    return NoiseTable(_here(), str(machine.get("cpu_model")), now(), list(command), rounds,
                      cells)  # fmt: skip


def read_noise(path: Path) -> NoiseTable:
    """The table in ``path``, refused with the fix when it is another format's or another
    machine's."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read the noise table {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != NOISE_FORMAT:
        raise UsageError(
            f"{path} is not a noise table of format {NOISE_FORMAT}: write one with an A/A "
            "session, 'stackwars ab --write-noise FILE -- RUN_OPTIONS'"
        )
    machine, here = data["machine"], _here()
    if machine["fingerprint"] != here:
        raise UsageError(
            f"{path} measured another machine ({machine['cpu_model']}, fingerprint "
            f"{machine['fingerprint']}; this one is {here}): noise is one machine's; write "
            "this one's with 'stackwars ab --write-noise FILE -- RUN_OPTIONS'"
        )
    cells = {label: CellNoise(**noise) for label, noise in data["cells"].items()}
    return NoiseTable(machine["fingerprint"], machine["cpu_model"], data["measured"],
                      data["command"], data["rounds"], cells)  # fmt: skip


def triage(
    table: NoiseTable, labels: Iterable[str], pass_limit_pct: float, alpha: float, rounds: int
) -> dict[str, str]:
    """The cells among ``labels`` that ``rounds`` rounds cannot show within ``pass_limit_pct``
    together with the others gated (module docstring), each with why; a cell the table does
    not hold is gated, and counts among the cells that must pass together."""
    margin = math.log1p(pass_limit_pct / 100)
    chosen = list(labels)
    known = sorted((table.cells[label].spread, label) for label in chosen if label in table.cells)
    unknown = len(chosen) - len(known)
    gated = len(known)
    while gated and _needed(known[gated - 1][0], margin, alpha, gated + unknown) > rounds:
        gated -= 1
    why = {}
    for spread, label in known[gated:]:
        needed = _needed(spread, margin, alpha, gated + unknown + 1)
        why[label] = (
            f"needs at least {needed} rounds to be shown within {pass_limit_pct:g}% beside the "
            f"{gated + unknown} gated cell(s) at its noise (a round's paired spread "
            f"{spread * 100:.1f}% over {table.cells[label].rounds} A/A rounds, "
            f"{table.measured[:10]}); this session has {rounds}"
        )
    return {label: why[label] for label in chosen if label in why}


def _needed(spread: float, margin: float, alpha: float, cells: int) -> int:
    """The rounds one of ``cells`` cells needs so that all of them pass together with the
    planning power."""
    return rounds_to_pass(spread, margin, alpha, PLANNING_POWER ** (1 / max(cells, 1)))


def _here() -> str:
    return str(metadata.run_identity("")["fingerprint"])


def _sd(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((x - mean) ** 2 for x in values) / (len(values) - 1))
