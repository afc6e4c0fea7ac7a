"""The slow-round rule calibrated on rounds of unchanged code (issue 54): how often does it hold
a cell of an A/A `stackwars ab` session from passing, and how often does it see a round of a
candidate 4x slow in that round's process?

    python benchmarks/power/slow_rounds.py --extract FILE ROUNDS_DIR...   # once
    python benchmarks/power/slow_rounds.py FILE [NOISE]

``--extract`` pairs each A/A session's cells by round as ab does (``compare_rounds``, from the
session's ``--out`` folder of round files, too large to keep) and writes ``FILE``: per session
each cell's log ratios, candidate over baseline, one a round. The rendering applies the gate's
rule (``results/comparison.py``'s ``slow_round``, with each cell's A/A spread from the noise
table ``NOISE`` as a session given ``--noise`` does) to every cell of every session, and, for the
share a pass must rule out, to each of its rounds in turn made 4x slower (the candidate's
process 4x slow in that round): the share of those seen. Beside it, the rule it replaced, a
round beyond the pass limit and six robust deviations above the median (``six_deviations``).
docs/gate.md holds its output between ``rendered`` markers; tests/test_rendered_docs.py renders
it again.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from stackwars.report.markdown_text import escape
from stackwars.results.comparison import SLOW_ROUND_FACTOR, compare_rounds, slow_round
from stackwars.results.run import Run
from stackwars.service.api import read_run_file
from stackwars.timing.compare import compare_paired
from stackwars.timing.sequential import Looks, Paired

PASS_LIMIT = 10.0  # percent: the gate's default --pass-below
SLOW = math.log(4)  # the share of slow processes: 4x
FORMAT = 1  # of the extracted file; history: 1 (2026-11-29) first


def extract(out: Path, folders: list[Path]) -> None:
    sessions, machine = [], {}
    for folder in folders:
        sides = {
            side: sorted(folder.glob(f"{side}-[0-9][0-9].json"))
            for side in ("baseline", "candidate")
        }
        rounds = min(len(paths) for paths in sides.values())
        runs = {side: [read_run_file(p) for p in paths[:rounds]] for side, paths in sides.items()}
        machine = _machine(folder, runs["baseline"][0])
        rows = compare_rounds(
            [run.cells for run in runs["baseline"]],
            [run.cells for run in runs["candidate"]],
            0.05,
            Looks(rounds, rounds),
            0.05,
        )
        cells = {
            row.label: list(row.result.evidence.log_ratios)
            for row in rows
            if row.result is not None and isinstance(row.result.evidence, Paired)
        }
        sessions.append({"started": runs["baseline"][0].started, "cells": cells})
    data = {"format": FORMAT, "machine": machine, "sessions": sessions}
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _machine(folder: Path, run: Run) -> dict[str, str]:
    """The machine's fingerprint as a whole: fresh_sessions.py's ``machine.json`` beside the
    rounds when there is one (a duet's round files carry the fingerprint of one core)."""
    kept = folder.parent / "machine.json"
    if kept.exists():
        data = json.loads(kept.read_text(encoding="utf-8"))
        return {"cpu_model": data["cpu_model"], "fingerprint": data["fingerprint"]}
    return {"cpu_model": str(run.machine.get("cpu_model")),
            "fingerprint": str(run.identity.get("fingerprint"))}  # fmt: skip


def held(log_ratios: list[float], aa_spread: float) -> bool:
    """The gate's rule: does a slow round keep this cell from passing?"""
    n = len(log_ratios)
    candidate = [math.exp(x) for x in log_ratios]
    result = compare_paired([1.0] * n, candidate, Looks(n, n), threshold=0.05)
    return bool(slow_round(result, PASS_LIMIT, aa_spread))


def six_deviations(log_ratios: list[float]) -> bool:
    """The rule before 2026-11-29: a round beyond the pass limit and six robust deviations
    above the median round."""
    ordered = sorted(log_ratios)
    centre = ordered[len(ordered) // 2]
    spread = 1.4826 * sorted(abs(x - centre) for x in log_ratios)[len(log_ratios) // 2]
    largest = ordered[-1]
    return largest > math.log1p(PASS_LIMIT / 100) and largest - centre > 6 * spread


def seen(log_ratios: list[float], aa_spread: float) -> tuple[int, int]:
    """Of the cell's rounds each made 4x slower in turn, how many the rule sees; of how many."""
    hits = 0
    for index in range(len(log_ratios)):
        slowed = list(log_ratios)
        slowed[index] += SLOW
        hits += held(slowed, aa_spread)
    return hits, len(log_ratios)


def two_speed(log_ratios: list[float]) -> bool:
    """A cell one of whose rounds of unchanged code is as fast as a slow round is slow."""
    return min(log_ratios) <= -math.log(SLOW_ROUND_FACTOR)


def render(path: Path, noise: Path | None) -> str:
    data = json.loads(path.read_text(encoding="utf-8"))
    spreads = {}
    if noise is not None:
        cells = json.loads(noise.read_text(encoding="utf-8"))["cells"]
        spreads = {label: cell["spread"] for label, cell in cells.items()}
    machine, sessions = data["machine"], data["sessions"]
    lines = [
        f"Machine {machine['cpu_model']} (fingerprint `{machine['fingerprint']}`), "
        f"{len(sessions)} A/A sessions of unchanged code.",
        "",
        "| session started (UTC) | rounds | cells | largest round, one-speed cells | cells held, "
        "six deviations | cells held, slow round |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for session in sessions:
        cells = session["cells"]
        one_speed = [ratios for ratios in cells.values() if not two_speed(ratios)]
        lines.append(
            f"| {session['started'][:16].replace('T', ' ')} | "
            f"{max(len(ratios) for ratios in cells.values())} | {len(cells)} | "
            f"{math.exp(max(max(ratios) for ratios in one_speed)):.2f}x | "
            f"{sum(six_deviations(ratios) for ratios in cells.values())} | "
            f"{sum(held(ratios, spreads.get(label, 0.0)) for label, ratios in cells.items())} |"
        )
    lines += ["", "| cell | 4x rounds seen | two-speed |", "| --- | ---: | --- |"]
    for label in sorted({label for session in sessions for label in session["cells"]}):
        kept = [session["cells"][label] for session in sessions if label in session["cells"]]
        hits = [seen(ratios, spreads.get(label, 0.0)) for ratios in kept]
        got, of = sum(h for h, _ in hits), sum(n for _, n in hits)
        speeds = "yes" if any(two_speed(ratios) for ratios in kept) else ""
        lines.append(f"| {escape(label)} | {got} of {of} ({100 * got / of:.0f} %) | {speeds} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--extract":
        extract(Path(sys.argv[2]), [Path(folder) for folder in sys.argv[3:]])
    else:
        noise = Path(sys.argv[2]) if len(sys.argv) > 2 else None
        sys.stdout.write(render(Path(sys.argv[1]), noise) + "\n")
