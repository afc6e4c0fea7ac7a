"""The report of benchmarks/compare_independent.py: its records (one per job) as Markdown.

Two tables: per cell and stack, stackwars' median beside the independent scripts' with a
verdict; then, where a Keras stack and its backend's native stack ran the same cell, the
Keras/native ratio as each side measured it. A ratio both sides agree on is a Keras cost that
stackwars' own set-up did not make. Like the driver, this imports nothing from stackwars.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

LONG_CELL_S, AGREE, TARGET = 1e-3, 0.10, 0.05
SIDES = ("stackwars", "independent")


def pct(value: float | None, signed: bool = False) -> str:
    return "–" if value is None else f"{100 * value:{'+' if signed else ''}.1f} %"


def format_time(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-6:.4g} µs"


def _spread(medians: list[float]) -> float | None:
    return max(medians) / min(medians) - 1 if len(medians) >= 2 else None


def verdict(ours: float | None, theirs: float | None, spread: float | None) -> str:
    if ours is None or theirs is None:
        return "no data (see independent-raw.json)"
    if theirs < LONG_CELL_S:
        return "n/a (< 1 ms)"
    if spread is None:
        return "n/a (fewer than 2 independent processes)"
    if spread > AGREE:
        return f"n/a (independent spread {pct(spread)})"
    deviation = ours / theirs - 1
    if abs(deviation) <= TARGET:
        return "met"
    if deviation > 0:
        return f"MISSED: stackwars is slower, by {pct(deviation)} of the independent time"
    return f"MISSED: the independent script is slower; stackwars is {pct(-deviation)} faster"


def medians(records: list[dict[str, Any]], side: str, cell: str, stack: str) -> list[float]:
    """The medians of one side's processes that ended ok."""
    return [
        r["median_s"]
        for r in records
        if (r["side"], r["cell"], r["stack"], r["status"]) == (side, cell, stack, "ok")
    ]


def median_of(records: list[dict[str, Any]], side: str, cell: str, stack: str) -> float | None:
    found = medians(records, side, cell, stack)
    return statistics.median(found) if found else None


def row(records: list[dict[str, Any]], cell: str, label: str, stack: str) -> str:
    ours, theirs = (medians(records, side, cell, stack) for side in SIDES)
    our_median = statistics.median(ours) if ours else None
    their_median = statistics.median(theirs) if theirs else None
    deviation = our_median / their_median - 1 if our_median and their_median else None
    mine = [r for r in records if r["cell"] == cell and r["stack"] == stack]
    measure = next((r["measure"] for r in mine if r.get("measure")), "–")
    spread = _spread(theirs)
    return (
        f"| {label} | {stack} | {format_time(our_median)} ({measure}) "
        f"| {format_time(their_median)} | {pct(spread)} | {pct(_spread(ours))} "
        f"| {pct(deviation, True)} | {verdict(our_median, their_median, spread)} |"
    )


def _ratio(
    records: list[dict[str, Any]], side: str, cell: str, pair: Sequence[str]
) -> float | None:
    keras, native = (median_of(records, side, cell, stack) for stack in pair)
    return keras / native if keras and native else None


def _times(ratio: float | None) -> str:
    return "–" if ratio is None else f"{ratio:.3f}×"


def keras_table(
    records: list[dict[str, Any]],
    planned: list[tuple[str, str]],
    labels: dict[str, str],
    keras_pairs: Sequence[tuple[str, str, str]],
) -> list[str]:
    """Per cell and backend whose Keras and native stacks were both planned: stackwars' ratio
    of medians (Keras / native), the independent scripts' ratio, and how far apart they are
    (stackwars' ratio / the independent ratio - 1). Empty when no such pair was planned."""
    lines = []
    for cell in dict.fromkeys(cell for cell, _ in planned):
        for backend, keras, native in keras_pairs:
            if (cell, keras) not in planned or (cell, native) not in planned:
                continue
            ours, theirs = (_ratio(records, side, cell, (keras, native)) for side in SIDES)
            apart = ours / theirs - 1 if ours and theirs else None
            lines.append(
                f"| {labels[cell]} | {backend} | {keras} / {native} | {_times(ours)} "
                f"| {_times(theirs)} | {pct(apart, True)} |"
            )
    if not lines:
        return []
    header = [
        "Keras/native: the Keras stack's median over its backend's native stack's, per side.",
        "",
        "| cell | backend | stacks | stackwars | independent | difference |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    footer = ["", "difference = stackwars' ratio / the independent ratio - 1."]
    return ["", *header, *lines, *footer]


def _last_line(record: dict[str, Any]) -> str:
    lines = [line.strip() for line in record.get("detail", "").splitlines() if line.strip()]
    return f"{record['status']}: {(lines[-1] if lines else '')[:200]}"


def render(
    records: list[dict[str, Any]],
    planned: list[tuple[str, str]],
    labels: dict[str, str],
    keras_pairs: Sequence[tuple[str, str, str]],
) -> str:
    """The report of the planned (cell, stack) pairs; ``labels`` names each cell."""
    loads = [r["load_1min"] for r in records]
    lines = [
        "| cell | stack | stackwars | independent | indep. spread | stackwars spread "
        "| stackwars dev. | verdict |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    lines += [row(records, cell, labels[cell], stack) for cell, stack in planned]
    lines += keras_table(records, planned, labels, keras_pairs)
    failed = [r for r in records if r["status"] != "ok"]
    notes = [f"- {r['side']} {r['cell']} {r['stack']}: {_last_line(r)}" for r in failed]
    ours = [r for r in records if r["side"] == "stackwars" and r["status"] == "ok"]
    shared = sum(any(w.startswith("background load") for w in r["warnings"]) for r in ours)
    summary = (
        f"Medians over fresh processes; spread = max/min - 1. Load average (1 min) at job "
        f"ends: median {statistics.median(loads):.2f}, max {max(loads):.2f}; stackwars "
        f"warned of background load in {shared} of its {len(ours)} workers."
    )
    return "\n".join([*lines, "", summary, *notes]) + "\n"
