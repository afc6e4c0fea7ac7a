"""Tables and targets from the job records (see ``benchmarks/compare_peers.py`` for the targets).

Per harness and cell, over the repeats (each a fresh process): the median of the medians,
the run-to-run spread (max/min - 1), the median wall time, and the harness's own stated
precision, whose definitions differ (so the spread is the one comparable across harnesses).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from peers.cells import HARNESSES, PeerCell
from stackwars.runner.isolate import BACKGROUND_LIMIT_CORES

ACCURACY_TARGET = 0.05
PEERS_AGREE = 0.10
LONG_CELL_S = 1e-3


@dataclass(frozen=True)
class HarnessStats:
    harness: str
    median_s: float | None
    spread: float | None  # None below two successful repeats
    wall_s: float
    precision: float | None
    precision_kind: str
    failures: list[str]


def harness_stats(harness: str, records: list[dict[str, Any]]) -> HarnessStats:
    ok = [record for record in records if record["status"] == "ok"]
    medians = [record["median_s"] for record in ok]
    return HarnessStats(
        harness=harness,
        median_s=statistics.median(medians) if medians else None,
        spread=max(medians) / min(medians) - 1 if len(medians) >= 2 else None,
        wall_s=statistics.median(record["wall_s"] for record in records),
        precision=statistics.median(record["precision"] for record in ok) if ok else None,
        precision_kind=ok[0]["precision_kind"] if ok else "",
        failures=[] if ok else [_failure(record) for record in records],
    )


@dataclass(frozen=True)
class Verdict:
    """stackwars against the peers on one cell and stack."""

    consensus_s: float | None
    deviation: float | None
    peer_disagreement: float | None
    accuracy: str
    spread: str
    wall: str


def verdict(cell: PeerCell, stats: list[HarnessStats]) -> Verdict:
    ours = next(item for item in stats if item.harness == "stackwars")
    peers = [item for item in stats if item.harness != "stackwars"]
    medians = [item.median_s for item in peers if item.median_s is not None]
    if ours.median_s is None or not medians:
        return Verdict(None, None, None, "no data", "no data", "no data")
    consensus = statistics.median(medians)
    deviation = ours.median_s / consensus - 1
    disagreement = max(medians) / min(medians) - 1
    applies = cell.tiny_op or (consensus >= LONG_CELL_S and disagreement <= PEERS_AGREE)
    accuracy = _met(abs(deviation) <= ACCURACY_TARGET) if applies else "n/a"
    return Verdict(
        consensus, deviation, disagreement, accuracy, _spread(ours, peers), _wall(ours, peers)
    )


def _failure(record: dict[str, Any]) -> str:
    """The status and a traceback's last line (the exception), safe in a markdown cell."""
    lines = [line.strip() for line in record.get("detail", "").splitlines() if line.strip()]
    last = (lines[-1] if lines else "")[:100].replace("|", "/")
    return f"{record['status']}: {last}"


def _met(condition: bool) -> str:
    return "met" if condition else "MISSED"


def _spread(ours: HarnessStats, peers: list[HarnessStats]) -> str:
    spreads = [item.spread for item in peers if item.spread is not None]
    if ours.spread is None or not spreads:
        return "n/a (fewer than 2 repeats)"
    return f"{_met(ours.spread <= min(spreads))} ({_pct(ours.spread)} vs {_pct(min(spreads))})"


def _wall(ours: HarnessStats, peers: list[HarnessStats]) -> str:
    """Against the fastest peer whose run-to-run spread is no worse than ours: a faster but
    less repeatable peer has not reached equal precision."""
    fastest = min(peers, key=lambda item: item.wall_s)
    rivals = [
        item
        for item in peers
        if item.spread is not None and ours.spread is not None and item.spread <= ours.spread
    ]
    plain = f"fastest peer {fastest.harness} {fastest.wall_s:.1f} s"
    if ours.spread is None:
        return f"{_met(ours.wall_s <= fastest.wall_s)} ({plain}; no spread to compare)"
    if not rivals:
        return f"met (no peer as repeatable; {plain})"
    rival = min(rivals, key=lambda item: item.wall_s)
    return (
        f"{_met(ours.wall_s <= rival.wall_s)} ({ours.wall_s:.1f} s vs {rival.harness} "
        f"{rival.wall_s:.1f} s; {plain})"
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def _signed_pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:+.1f} %"


def format_time(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-6:.4g} µs"


def cell_table(title: str, stats: list[HarnessStats]) -> list[str]:
    lines = [
        f"#### {title}",
        "",
        "| harness | median | spread over repeats | wall (median) | own precision |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for item in stats:
        own = f"{_pct(item.precision)} ({item.precision_kind})" if item.precision else "–"
        median = format_time(item.median_s) if item.median_s else f"failed: {item.failures[0]}"
        lines.append(
            f"| {item.harness} | {median} | {_pct(item.spread)} | {item.wall_s:.1f} s | {own} |"
        )
    return [*lines, ""]


def summary_table(rows: list[tuple[str, Verdict]]) -> list[str]:
    lines = [
        "| cell | consensus | stackwars dev. | peers disagree | accuracy ≤5 % | "
        "spread ≤ best peer | wall ≤ fastest peer at equal spread |",
        "| --- | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for title, item in rows:
        lines.append(
            f"| {title} | {format_time(item.consensus_s)} | {_signed_pct(item.deviation)} | "
            f"{_pct(item.peer_disagreement)} | {item.accuracy} | {item.spread} | {item.wall} |"
        )
    return lines


def background_note(records: list[dict[str, Any]]) -> list[str]:
    """How busy the rest of the machine was: these comparisons need an idle one."""
    loads = [record["background_cores"] for record in records]
    busy = sum(load > BACKGROUND_LIMIT_CORES for load in loads)
    return [
        f"Background load (cores used by other processes during a job): median "
        f"{statistics.median(loads):.2f}, max {max(loads):.2f}; {busy} of {len(loads)} jobs "
        f"above {BACKGROUND_LIMIT_CORES} shared the machine.",
        "",
    ]


def render(
    records: list[dict[str, Any]], cells: tuple[PeerCell, ...], stacks: tuple[str, ...]
) -> tuple[str, list[dict[str, Any]]]:
    """The markdown report, and the summary rows for the JSON file."""
    lines: list[str] = [*background_note(records), "### Per cell", ""]
    rows: list[tuple[str, Verdict]] = []
    for cell in cells:
        for stack in stacks:
            mine = [r for r in records if r["cell"] == cell.name and r["stack"] == stack]
            stats = [
                harness_stats(harness, [r for r in mine if r["harness"] == harness])
                for harness in HARNESSES
                if any(r["harness"] == harness for r in mine)
            ]
            if not any(item.harness == "stackwars" for item in stats):
                continue
            title = f"{cell.label()} on {stack}"
            lines += cell_table(title, stats)
            rows.append((title, verdict(cell, stats)))
    lines += ["### Summary", "", *summary_table(rows)]
    summary = [{"cell": title, **vars(item)} for title, item in rows]
    return "\n".join(lines) + "\n", summary
