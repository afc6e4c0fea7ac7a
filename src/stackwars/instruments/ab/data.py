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

With a gate on memory too (``--fail-memory-above``), each memory measure the table holds for a
cell is one more test that must pass: the cell is gated only when its rounds can show its time
and those measures within their limits, all the gated tests together with 80 % probability.

A cell whose workers land at two speeds (``timing/speeds.py``: their times part at a gap) is
judged within its speeds and by its share of the slow one (``results/speeds.py``); the A/A
session finds the split and the table keeps it, with the spreads of those two tests, which
then plan the cell in place of its whole time's spread: a cell of two speeds 1.9x apart spreads
by tens of percent a round, within its speeds by a few.

File format (``NOISE_FORMAT``), JSON: ``{"format", "machine": {"fingerprint", "cpu_model"},
"measured" (UTC, ISO 8601), "command", "rounds", "cells": {label: {"rounds", "spread",
"memory": {measure: spread}, "speeds": null or {"ratio", "slow_share", "deviation", "within",
"share"}}}}``, ``spread`` the standard deviation of a round's paired log ratio (candidate over
baseline) of the cell's time, ``memory`` the same of each memory measure its workers recorded
(``results/comparison.py``'s ``MEASURES``: "peak RSS", "device peak"); ``speeds``, for a cell
split at two speeds: the slow one's time over the fast one's, its share of the workers, a
worker's robust deviation of log time within its speed, and the spreads of a round's paired
log ratio within the speeds and of its share ratio.

Format history:

* 1 (2026-11-29): first format (time alone); still read, as a table without memory spreads.
* 2 (2026-11-29): ``memory``; still read, as a table that found no two speeds.
* 3 (2026-11-30): ``speeds``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from stackwars.errors import UsageError
from stackwars.results import metadata
from stackwars.results.comparison import TIME, ComparisonRow
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.run import now
from stackwars.results.speeds import SPEED_SHARE, WITHIN_SPEED
from stackwars.timing.sequential import PLANNING_POWER, Paired, rounds_to_pass
from stackwars.timing.speeds import Known

NOISE_FORMAT = 3
READ_FORMATS = (1, 2, 3)
FEWEST_AA_ROUNDS = 3  # below this a cell's spread is not kept: two rounds barely show one


@dataclass(frozen=True)
class SpeedNoise:
    """A cell the A/A rounds split at two speeds (module docstring)."""

    ratio: float  # the slow speed's time over the fast one's
    slow_share: float  # of the workers
    deviation: float  # a worker's robust deviation of log time within its speed
    within: float  # standard deviation of a round's paired log ratio within its speeds
    share: float  # the same of its share ratio (0 or +-log ratio)


@dataclass(frozen=True)
class CellNoise:
    rounds: int  # the A/A rounds its spread comes from
    spread: float  # standard deviation of a round's paired log ratio of its time
    memory: dict[str, float] = field(default_factory=dict)  # the same, per memory measure
    speeds: SpeedNoise | None = None  # when its workers landed at two speeds


@dataclass(frozen=True)
class NoiseTable:
    fingerprint: str
    cpu_model: str
    measured: str
    command: list[str]
    rounds: int
    cells: dict[str, CellNoise]

    def known_speeds(self) -> dict[str, Known]:
        """The cells it found at two speeds, with what it measured of them."""
        return {
            label: Known(noise.speeds.deviation, noise.speeds.ratio, noise.speeds.slow_share)
            for label, noise in self.cells.items()
            if noise.speeds is not None
        }

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
            memory = {
                change.what: _sd(change.result.evidence.log_ratios)
                for change in row.memory
                if isinstance(change.result.evidence, Paired)
                and change.result.evidence.rounds >= FEWEST_AA_ROUNDS
            }
            cells[row.label] = CellNoise(
                evidence.rounds, _sd(evidence.log_ratios), memory, _speed_noise(row)
            )
    machine = metadata.machine_info()
    return NoiseTable(_here(), str(machine.get("cpu_model")), now(), list(command), rounds,
                      cells)  # fmt: skip


def _speed_noise(row: ComparisonRow) -> SpeedNoise | None:
    split = row.speeds
    if split is None:
        return None
    within, share = split.within.evidence, split.share.evidence
    if not isinstance(within, Paired) or not isinstance(share, Paired):
        return None
    speeds = split.speeds
    return SpeedNoise(speeds.ratio, speeds.slow_share, speeds.deviation,
                      _sd(within.log_ratios), _sd(share.log_ratios))  # fmt: skip


def read_noise(path: Path) -> NoiseTable:
    """The table in ``path``, refused with the fix when it is another format's or another
    machine's."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read the noise table {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") not in READ_FORMATS:
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
    try:
        cells = {label: _cell_noise(noise) for label, noise in data["cells"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"{path} is not a whole noise table ({type(exc).__name__}: {exc}): write it again "
            "with an A/A session, 'stackwars ab --write-noise FILE -- RUN_OPTIONS'"
        ) from exc
    return NoiseTable(machine["fingerprint"], machine["cpu_model"], data["measured"],
                      data["command"], data["rounds"], cells)  # fmt: skip


def _cell_noise(data: dict[str, Any]) -> CellNoise:
    speeds = data.get("speeds")
    return CellNoise(**{**data, "speeds": SpeedNoise(**speeds) if speeds else None})


class Demand(NamedTuple):
    """What a cell asks of a session's rounds: its hardest measure's spread over its margin
    (the rounds needed grow with it), and that measure."""

    ratio: float
    what: str  # "time", or a memory measure
    spread: float
    limit_pct: float


def triage(
    table: NoiseTable,
    labels: Iterable[str],
    pass_limit_pct: float,
    alpha: float,
    rounds: int,
    *,
    memory_limit_pct: float | None = None,
) -> dict[str, str]:
    """The cells among ``labels`` that ``rounds`` rounds cannot show within ``pass_limit_pct``
    (and, with ``memory_limit_pct``, their memory within it) together with the others gated
    (module docstring), each with why; a cell the table does not hold is gated, and counts
    among the cells that must pass together (with one test)."""
    chosen = list(labels)
    known = sorted(
        (_demand(table.cells[label], pass_limit_pct, memory_limit_pct), label)
        for label in chosen
        if label in table.cells
    )
    unknown = [label for label in chosen if label not in table.cells]

    def tests(cells: Iterable[str]) -> int:
        """The tests that must pass together when ``cells`` are gated beside the unknown."""
        return len(unknown) + sum(
            len(_measures(table.cells[label], pass_limit_pct, memory_limit_pct)) for label in cells
        )

    gated = len(known)
    while gated and _needed(known[gated - 1][0], alpha, tests(_labels(known[:gated]))) > rounds:
        gated -= 1
    beside = _labels(known[:gated])
    why = {}
    for demand, label in known[gated:]:
        needed = _needed(demand, alpha, tests([*beside, label]))
        why[label] = (
            f"needs at least {needed} rounds to be shown within {demand.limit_pct:g}% beside "
            f"the {len(beside) + len(unknown)} gated cell(s) at its noise ({_spread_of(demand)} "
            f"over {table.cells[label].rounds} A/A rounds, {table.measured[:10]}); this "
            f"session has {rounds}"
        )
    return {label: why[label] for label in chosen if label in why}


def _labels(known: Sequence[tuple[Demand, str]]) -> list[str]:
    return [label for _, label in known]


def _spread_of(demand: Demand) -> str:
    measure = "" if demand.what == TIME else f"its {demand.what}: "
    return f"{measure}a round's paired spread {demand.spread * 100:.1f}%"


def _demand(noise: CellNoise, pass_limit_pct: float, memory_limit_pct: float | None) -> Demand:
    """The measure of ``noise`` hardest to show within its limit (time, or a memory measure
    when memory is gated)."""
    measures = _measures(noise, pass_limit_pct, memory_limit_pct)
    return max(Demand(spread / math.log1p(limit / 100), what, spread, limit)
               for what, spread, limit in measures)  # fmt: skip


def _measures(
    noise: CellNoise, pass_limit_pct: float, memory_limit_pct: float | None
) -> list[tuple[str, float, float]]:
    """The tests a gated cell must pass: each one's name, spread and limit (its time's, or
    for a cell of two speeds its time within them and its slow share's; each memory measure's
    when memory is gated)."""
    speeds = noise.speeds
    if speeds is None:
        measures = [(TIME, noise.spread, pass_limit_pct)]
    else:
        measures = [(WITHIN_SPEED, speeds.within, pass_limit_pct),
                    (SPEED_SHARE, speeds.share, pass_limit_pct)]  # fmt: skip
    if memory_limit_pct is not None:
        measures += [(what, spread, memory_limit_pct) for what, spread in noise.memory.items()]
    return measures


def _needed(demand: Demand, alpha: float, tests: int) -> int:
    """The rounds ``demand``'s test needs so that all ``tests`` tests pass together with the
    planning power (the rounds depend on the spread over the margin alone)."""
    return rounds_to_pass(demand.ratio, 1.0, alpha, PLANNING_POWER ** (1 / max(tests, 1)))


def _here() -> str:
    return str(metadata.run_identity("")["fingerprint"])


def _sd(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((x - mean) ** 2 for x in values) / (len(values) - 1))
