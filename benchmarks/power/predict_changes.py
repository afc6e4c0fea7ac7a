"""What the recipe's gate should make of the A/B campaign's changes (issue 54), predicted by
simulation with the project's own functions from rounds of unchanged code.

    python benchmarks/power/predict_changes.py OUT AA.json NOISE.json [ROUNDS]
    python benchmarks/power/render_recipe.py --predicted OUT

It draws sessions of ``ROUNDS`` rounds (by default the median of the A/A sessions'
rounds) from the A/A sessions' rounds in ``AA.json`` (slow_rounds.py's extract: each cell's log
ratio a round), whole rounds at a time so that the cells of a round stay together, each turned
round or not at random (``_signs``); adds to each
drawn round the changes fresh_sessions.py's ``recipe-ab`` injects (``INJECTED``: a cell's log
ratio raised by log(factor), for a share of processes in that share of the rounds, drawn); and
decides each session as ab does at its one look (``results/comparison.py``'s ``decide``, with
the noise table's triage and A/A spreads from ``NOISE.json``). ``OUT`` keeps, per change, how
many sessions failed and passed its cell, and how many sessions failed a cell left unchanged;
and the outcomes of the same drawn sessions without the changes (A/A).
render_recipe.py renders it for docs/ci.md, beside the sessions' own counts.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from stackwars.instruments.ab.data import NoiseTable, read_noise, triage
from stackwars.results.comparison import FAIL, PASSED, ComparisonRow, GateVerdict, decide
from stackwars.results.speeds import speed_split
from stackwars.results.verdict import gate_settings
from stackwars.timing.compare import compare_paired
from stackwars.timing.sequential import Looks
from stackwars.timing.speeds import Known

SESSIONS = 400  # drawn sessions: a rate near 50 % is known within 5 points (95 %)
SEED = 54
FORMAT = 1  # of OUT; history: 1 (2026-11-29) first


def simulate(out: Path, aa: Path, noise_path: Path, rounds: int | None) -> None:
    from fresh_sessions import INJECTED  # beside this script, run as one

    data = json.loads(aa.read_text(encoding="utf-8"))
    labels = sorted(data["sessions"][0]["cells"])
    lengths = [min(len(ratios) for ratios in s["cells"].values()) for s in data["sessions"]]
    pool = [
        [session["cells"][label][index] for label in labels]
        for session, length in zip(data["sessions"], lengths, strict=True)
        for index in range(length)
    ]
    rounds = rounds or int(statistics.median(lengths))
    noise = read_noise(noise_path)
    decided = one_look_decision(noise, labels, rounds)
    column = {key: labels.index(_label_of(key, labels)) for key in INJECTED}
    unchanged = [i for i in range(len(labels)) if i not in column.values()]
    rng = random.Random(SEED)
    tally: dict[str, dict[str, int]] = {key: {"fail": 0, "pass": 0} for key in INJECTED}
    aa_outcomes: dict[str, int] = {}
    others_failed = 0
    for _ in range(SESSIONS):
        drawn = [[sign * x for x in rng.choice(pool)] for sign in _signs(rng, rounds)]
        outcome = decided(_as_pairs(drawn)).outcome
        aa_outcomes[outcome] = aa_outcomes.get(outcome, 0) + 1
        states = decided(_as_pairs(_changed(drawn, INJECTED, column, rng))).states
        for key, index in column.items():
            tally[key]["fail"] += states[index] == FAIL
            tally[key]["pass"] += states[index] == PASSED
        others_failed += any(states[index] == FAIL for index in unchanged)
    result = {
        "format": FORMAT, "sessions": SESSIONS, "rounds": rounds, "seed": SEED,
        "source": aa.name, "aa_sessions": len(data["sessions"]), "noise": noise.measured,
        "unchanged": aa_outcomes,
        "changes": {key: {**INJECTED[key], **tally[key]} for key in INJECTED},
        "unchanged_failed": others_failed,
    }  # fmt: skip
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def _changed(
    drawn: list[list[float]],
    changes: dict[str, dict[str, float]],
    column: dict[str, int],
    rng: random.Random,
) -> list[list[float]]:
    """The drawn rounds with the changes added: a change's cell raised by log(factor) in
    every round, or, with a share, in each round with that probability."""
    rounds = [list(ratios) for ratios in drawn]
    for key, change in changes.items():
        for ratios in rounds:
            if rng.random() < change.get("share", 1.0):
                ratios[column[key]] += math.log(change["factor"])
    return rounds


def _as_pairs(drawn: list[list[float]]) -> list[list[Pair]]:
    """Rounds of paired log ratios as log times: each ratio's baseline at 0 (the A/A rounds
    keep ratios alone; the recipe's noise table split no cell)."""
    return [[(0.0, x) for x in ratios] for ratios in drawn]


def _signs(rng: random.Random, rounds: int) -> list[int]:
    """Each drawn round's sign: a round of unchanged code is as likely turned round (which
    side is which), as ab's draw of the first side makes it; flipping the cells of a round
    together keeps what they share, and frees the drawn sessions from the pool's own mean
    (a few A/A sessions' chance offset, which drawing alone would take for a change)."""
    return [rng.choice((-1, 1)) for _ in range(rounds)]


def _label_of(key: str, labels: list[str]) -> str:
    from render_recipe import changed_cells  # beside this script, run as one

    found = changed_cells(key, labels)
    if len(found) != 1:
        raise SystemExit(f"{key}: {len(found)} cells of the A/A sessions match it")
    return found[0]


Pair = tuple[float, float]  # a cell's baseline and candidate log time in one round


def one_look_decision(
    noise: NoiseTable, labels: list[str], rounds: int
) -> Callable[[list[list[Pair]]], GateVerdict]:
    """How ab decides a session of ``rounds`` rounds of cells ``labels`` at its one look with
    docs/ci.md's gate and noise table ``noise`` (its triage, A/A spreads and cells of two
    speeds, made once): from each round's log times, one pair per cell in ``labels``' order."""
    gate = gate_settings(fail_above=5.0)
    ungated = triage(noise, labels, gate.time_pass_limit or 0.0, gate.alpha, rounds)
    spreads = {label: cell.spread for label, cell in noise.cells.items()}
    split = noise.known_speeds()

    def decided(drawn: list[list[Pair]]) -> GateVerdict:
        rows = [one_look_row(label, [r[i] for r in drawn], split) for i, label in enumerate(labels)]
        return decide(rows, gate, not_gated=ungated, aa_spreads=spreads)

    return decided


def one_look_row(label: str, pairs: list[Pair], split: Mapping[str, Known | None]) -> ComparisonRow:
    """A cell of a one-look session whose rounds' log times are ``pairs``, split at its two
    speeds (with that within-speed deviation) when ``split`` names it, as compare_rounds
    splits it."""
    n = len(pairs)
    base, cand = [math.exp(b) for b, _ in pairs], [math.exp(c) for _, c in pairs]
    looks = Looks(n, n)
    result = compare_paired(base, cand, looks, threshold=0.05)
    speeds = None
    if label in split:
        speeds = speed_split(base, cand, looks, threshold=0.05, alpha=0.05,
                             known=split[label])  # fmt: skip
    return ComparisonRow(label, 1.0, 1.0, result, speeds=speeds)


if __name__ == "__main__":
    given = int(sys.argv[4]) if len(sys.argv) > 4 else None
    simulate(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), given)
