"""Benchmark: the gate of docs/ci.md's recipe (``ab --one-look --noise``) on simulated sessions,
decided by the project's own functions: how often it fails unchanged code (false fail) and
passes a cell changed by its pass limit or more (false pass), for 12 and 30 cells under the
noise models of issue 54's "Done when".

    python benchmarks/power/simulated_one_look.py OUT.json [--sessions N] [--seed S]
    python benchmarks/power/simulated_one_look.py --render OUT.json

A session is ``rounds`` rounds of ``cells`` cells; each round gives each cell its two workers'
log times (baseline, candidate), drawn from a noise model:

* ``iid``: each worker's log time normal, its spread cycling 2, 5 and 10 % over the cells;
* ``bursts``: ``iid``, plus a round effect shared by both sides (10 %), a burst in one round
  in five that slows every cell of the side it hits by 15 %, and an order effect that slows
  the round's second worker by 2 % (which side goes second drawn each round, as ab draws it);
* ``two-speed``: ``bursts``, every third cell's workers at two speeds (slow with probability
  0.3, by 1.9x or 4x in turn, 2 % within a speed).

Each model's noise table comes as the nightly step writes one (``noise_of``): the cells' paired
spreads over 60 A/A rounds of the same model (``NOISE_ROUNDS``), the cells whose times part at
two speeds split (``results/speeds.py``). Each session is decided as ab decides at its one
look (``results/comparison.py``'s ``decide`` with docs/ci.md's gate, ``--fail-above 5``, pass
limit 10 %; the noise table's triage; its spreads for the slow-round rule; its split cells
judged within their speeds and by their slow share). Per
model, cells and rounds: A/A sessions and their outcomes (a failed one is a false fail);
sessions with one cell at +10 %, the pass limit, that cell drawn in turn (it passing is a
false pass; the session passing with that cell gated is one at the level users see); and one
cell 4x slow in the smallest share of the candidate's processes that the session's rounds can
see, 1 - 0.05^(1/rounds) (docs/gate.md, "A share of slow processes": a pass of it is a false
pass too; a smaller share is one the rule does not promise to see).

Format history (``FORMAT``): 1 (2026-11-30) first. The same format holds the runs from
2026-11-30 on whose two-speed cells were split at their speeds (the noise table's, issue 54).
The rendering adds how often the changed cell failed (each class's tallies held it).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from stackwars.instruments.ab.data import NoiseTable, noise_of, triage
from stackwars.results.comparison import FAIL, PASSED, GateVerdict

FORMAT = 1
NOISE_ROUNDS = 60  # the recipe's nightly step: --max-rounds 60
SPREADS = (0.02, 0.05, 0.10)  # a worker's log-time spread, cycling over the cells
ROUND_EFFECT, BURST_SHARE, BURST, ORDER = 0.10, 0.2, math.log(1.15), math.log(1.02)
SLOW_SHARE, SLOW_FACTORS = 0.3, (1.9, 4.0)
LIMIT = 0.10  # the recipe's pass limit: a change this large must not pass
SLOW_PROCESS = 4.0  # the factor of a share of the candidate's processes
DESIGNS = [(model, cells, rounds) for model in ("iid", "bursts", "two-speed")
           for cells in (12, 30) for rounds in (12, 52)]  # fmt: skip

Pair = tuple[float, float]  # a cell's baseline and candidate log time in one round
Round = Callable[[random.Random], list[Pair]]  # one round's cells
Change = Callable[[random.Random, int], float]  # what a change adds to a cell's candidate


def two_speed(cell: int, model: str) -> float | None:
    """The slow speed's factor of ``cell`` under ``model``; None for a cell of one speed."""
    if model != "two-speed" or cell % 3 != 2:
        return None
    return SLOW_FACTORS[(cell // 3) % 2]


def worker(rng: random.Random, cell: int, model: str) -> float:
    """One worker's log time, apart from what the round shares."""
    factor = two_speed(cell, model)
    if factor is None:
        return rng.gauss(0, SPREADS[cell % len(SPREADS)])
    slow = math.log(factor) if rng.random() < SLOW_SHARE else 0.0
    return rng.gauss(0, 0.02) + slow


def round_of(model: str, cells: int) -> Round:
    """The rounds of ``model``: each cell's baseline and candidate log time."""

    def draw(rng: random.Random) -> list[Pair]:
        shared = [0.0, 0.0]  # baseline, candidate
        if model != "iid":
            effect = rng.gauss(0, ROUND_EFFECT)
            shared = [effect, effect]
            if rng.random() < BURST_SHARE:
                shared[rng.randrange(2)] += BURST
            shared[rng.randrange(2)] += ORDER  # the side that went second
        return [
            (shared[0] + worker(rng, cell, model), shared[1] + worker(rng, cell, model))
            for cell in range(cells)
        ]

    return draw


def labels_of(cells: int) -> list[str]:
    return [f"cell{index:02d}" for index in range(cells)]


def noise_table(draw: Round, cells: int, rng: random.Random) -> NoiseTable:
    """The table the nightly A/A step would write (``noise_of``, every cell split at its two
    speeds where its times part): each cell's paired spreads over ``NOISE_ROUNDS`` rounds."""
    from predict_changes import one_look_row  # beside this script, run as one

    rounds = [draw(rng) for _ in range(NOISE_ROUNDS)]
    labels = labels_of(cells)
    every = dict.fromkeys(labels)
    rows = [one_look_row(label, [r[i] for r in rounds], every) for i, label in enumerate(labels)]
    measured = noise_of(rows, NOISE_ROUNDS, [])
    return replace(measured, fingerprint="simulated", cpu_model="simulated", measured="simulated")


def judge(table: NoiseTable, rounds: int) -> Callable[[list[list[Pair]]], GateVerdict]:
    """The decision of a session of ``rounds`` rounds with noise table ``table``, as ab
    decides at its one look."""
    from predict_changes import one_look_decision  # beside this script, run as one

    return one_look_decision(table, labels_of(len(table.cells)), rounds)


def session(draw: Round, rounds: int, rng: random.Random, change: Change) -> list[list[Pair]]:
    """One session's rounds, ``change(rng, cell)`` added to each cell's candidate log time
    each round."""
    return [
        [(base, cand + change(rng, cell)) for cell, (base, cand) in enumerate(draw(rng))]
        for _ in range(rounds)
    ]


def noise_class(cell: int, model: str) -> str:
    factor = two_speed(cell, model)
    return f"two-speed {factor:g}x" if factor else f"{SPREADS[cell % len(SPREADS)]:.0%} spread"


def design(model: str, cells: int, rounds: int, sessions: int, seed: int) -> dict[str, Any]:
    """One design's sessions: A/A outcomes, the +10 % cell and the 4x share, per noise class."""
    rng = random.Random(f"{seed}/{model}/{cells}/{rounds}")
    draw = round_of(model, cells)
    table = noise_table(draw, cells, rng)
    decided = judge(table, rounds)
    labels = labels_of(cells)
    ungated = set(triage(table, labels, LIMIT * 100, 0.05, rounds))
    seen = visible_share(rounds)
    aa = Counter(decided(session(draw, rounds, rng, unchanged)).outcome for _ in range(sessions))
    limit: dict[str, Counter[str]] = {}
    share: dict[str, Counter[str]] = {}
    for index in range(sessions):
        changed, name = index % cells, noise_class(index % cells, model)
        for tallies, change in (
            (limit, shifted(changed, math.log1p(LIMIT), 1.0)),
            (share, shifted(changed, math.log(SLOW_PROCESS), seen)),
        ):
            verdict = decided(session(draw, rounds, rng, change))
            tallies.setdefault(name, Counter()).update(
                judged(verdict, changed, labels[changed] in ungated)
            )
    return {
        "model": model, "cells": cells, "rounds": rounds, "sessions": sessions,
        "not_gated": sorted(noise_class(labels.index(label), model) for label in ungated),
        "aa": dict(aa), "at_limit": _plain(limit), "share": _plain(share), "slow_share": seen,
    }  # fmt: skip


def visible_share(rounds: int) -> float:
    """The smallest share of slow processes that ``rounds`` rounds show at 95 %."""
    return 1 - 0.05 ** (1 / rounds)


def unchanged(rng: random.Random, cell: int) -> float:
    """No change (and no draw: an A/A session's rounds are the model's alone)."""
    return 0.0


def shifted(cell: int, log_change: float, share: float) -> Change:
    """A change of ``log_change`` to ``cell``'s candidate, in each round with probability
    ``share``."""

    def change(rng: random.Random, at: int) -> float:
        return log_change if at == cell and rng.random() < share else 0.0

    return change


def judged(verdict: GateVerdict, cell: int, not_gated: bool) -> list[str]:
    """What a session did with its changed ``cell``: counted keys."""
    state = verdict.states[cell]
    keys = [
        "sessions",
        "cell failed" if state == FAIL else "cell passed" if state == PASSED else "",
    ]
    if verdict.outcome == "pass":
        keys.append("session passed, cell not gated" if not_gated else "session passed")
    return [key for key in keys if key]


def _plain(tallies: dict[str, Counter[str]]) -> dict[str, dict[str, int]]:
    return {name: dict(sorted(tally.items())) for name, tally in sorted(tallies.items())}


def simulate(out: Path, sessions: int, seed: int) -> None:
    designs = []
    for model, cells, rounds in DESIGNS:
        designs.append(design(model, cells, rounds, sessions, seed))
        print(f"{model}, {cells} cells, {rounds} rounds: {designs[-1]['aa']}", flush=True)
    data = {"format": FORMAT, "seed": seed, "limit": LIMIT, "designs": designs}
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def render(data: dict[str, Any]) -> str:
    """Markdown: per design, the A/A outcomes with the false-fail bound, and what sessions did
    with a cell at the pass limit and with a cell 4x slow in a share of processes."""
    from render_recipe import wilson_upper  # beside this script, run as one

    lines = [
        f"Simulated sessions of docs/ci.md's recipe, decided by the project's own `decide` at "
        f"one look (fail above 5 %, pass below {data['limit']:.0%}, the noise table's triage; "
        f"seed {data['seed']}): per design, A/A sessions and their outcomes, then sessions with "
        f"one cell at +{data['limit']:.0%} (the pass limit) and sessions with one cell "
        f"{SLOW_PROCESS:g}x slow in the smallest share of the candidate's processes its rounds "
        "can see (1 - 0.05^(1/rounds)), the changed cell drawn in turn; a passed changed cell "
        "is a false pass; how often the cell at the pass limit was failed, and when it was a "
        "cell of two speeds.",
        "",
        "| noise | cells | rounds | not gated | A/A: pass, fail, underpowered | false fail "
        f"(95 % upper) | +{data['limit']:.0%} cell passed | +{data['limit']:.0%}: session "
        f"passed with it gated | +{data['limit']:.0%} cell failed | +{data['limit']:.0%} "
        f"two-speed cell failed | share {SLOW_PROCESS:g}x | {SLOW_PROCESS:g}x cell passed |",
        "| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for found in data["designs"]:
        aa, n = found["aa"], found["sessions"]
        fails = aa.get("fail", 0)
        at_limit, shares = _totals(found["at_limit"]), _totals(found["share"])
        two_speed = _totals(found["at_limit"], "two-speed")
        ungated = Counter(found["not_gated"])
        lines.append(
            f"| {found['model']} | {found['cells']} | {found['rounds']} | "
            f"{', '.join(f'{k} ({v})' for k, v in sorted(ungated.items())) or 'none'} | "
            f"{aa.get('pass', 0)}, {fails}, {aa.get('underpowered', 0)} | "
            f"{fails / n:.1%} ({wilson_upper(fails, n):.1%}) | "
            f"{_share(at_limit, 'cell passed')} | {_share(at_limit, 'session passed')} | "
            f"{_share(at_limit, 'cell failed')} | "
            f"{_share(two_speed, 'cell failed') if two_speed else '–'} | "
            f"{found['slow_share']:.1%} | {_share(shares, 'cell passed')} |"
        )
    return "\n".join(lines) + "\n"


def _totals(by_class: dict[str, dict[str, int]], prefix: str = "") -> Counter[str]:
    """The tallies of the noise classes whose name starts with ``prefix``, added up."""
    total: Counter[str] = Counter()
    for name, tally in by_class.items():
        if name.startswith(prefix):
            total.update(tally)
    return total


def _share(tally: Counter[str], key: str) -> str:
    return f"{tally[key]} of {tally['sessions']} ({tally[key] / tally['sessions']:.1%})"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="the recipe's gate on simulated sessions")
    parser.add_argument("out", type=Path, help="the JSON file written, or rendered")
    parser.add_argument("--sessions", type=int, default=400, help="per design and kind")
    parser.add_argument("--seed", type=int, default=54)
    parser.add_argument("--render", action="store_true", help="Markdown from OUT")
    args = parser.parse_args(argv)
    if args.sessions < 1:
        parser.error(f"--sessions {args.sessions}: give at least 1 (400 by default)")
    if args.render:
        if not args.out.is_file():
            parser.error(f"{args.out}: no such file (write it first without --render)")
        data = json.loads(args.out.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            parser.error(f"{args.out}: format {data.get('format')!r}, this script reads {FORMAT}")
        sys.stdout.write(render(data))
        return
    simulate(args.out, args.sessions, args.seed)


if __name__ == "__main__":
    main(sys.argv[1:])
