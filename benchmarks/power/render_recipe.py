"""docs/ci.md's recipe on fresh sessions, rendered from the sessions' summary.

    python benchmarks/power/fresh_sessions.py summarise --out DIR --kind recipe --into FILE.json
    python benchmarks/power/render_recipe.py FILE.json
    python benchmarks/power/fresh_sessions.py summarise --out DIR --kind separate --into FILE.json
    python benchmarks/power/render_recipe.py FILE.json
    python benchmarks/power/render_recipe.py --spreads ROUNDS SPREADS.json   # once
    python benchmarks/power/render_recipe.py --spreads SPREADS.json
    python benchmarks/power/render_recipe.py --predicted PREDICTED.json

Prints Markdown: per session its start (UTC), outcome, exit status, rounds, seconds and its
cells by gate state (and, for a session decided again from its rounds by ``fresh_sessions.py
redecide-recipe``, what it said as it ran); then the tally (how many sessions passed, failed,
were underpowered), the share that exited 0 and the false-fail rate with its Wilson 95 % upper
bound; for pairs of separate runs (``--kind separate``), per cell how far apart its workers
landed and in how many pairs the two sides' workers did not overlap. For A/B sessions
(``--kind recipe-ab``, whose summary names the changes injected): the state of each changed
cell per session and how often each change was failed and passed.
With ``--spreads``: from the round files of an A/A session (its ``--out``, too large to keep),
each cell's paired spread (the standard deviation of a round's log ratio, candidate over
baseline) of its steady time and of its peak RSS, kept in ``SPREADS.json``; rendered, what a
10 % limit on each would need. With ``--predicted``: what predict_changes.py's simulation
expects the A/B sessions to make of each change. docs/ci.md holds the outputs between
``rendered`` markers; tests/test_rendered_docs.py renders them again.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from stackwars.results.comparison import label
from stackwars.results.schema import Cell
from stackwars.timing.sequential import rounds_to_pass

Z95 = 1.96
LIMIT = 0.10  # the pass limit a spread is read against
ALPHA = 0.05
SPREADS_FORMAT = 1  # of SPREADS.json; history: 1 (2026-11-29) first
# What a summary's sessions are, by its kind (fresh_sessions.py's).
KINDS = {
    "recipe": "sessions of the recipe",
    "separate": "pairs of two separate runs (`run --repeat 3` a side, then `compare`)",
}


def spreads(rounds: Path) -> dict[str, Any]:
    """Each cell's paired spreads of time and peak RSS over an A/A session's rounds."""
    found: dict[str, dict[str, dict[str, Cell]]] = defaultdict(lambda: defaultdict(dict))
    for path in sorted(rounds.glob("*-[0-9][0-9].json")):
        side, index = path.stem.rsplit("-", 1)
        for raw in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            cell = Cell.from_dict(raw)
            if cell.status == "ok":
                found[label(cell)][index][side] = cell
    cells = {}
    for name, by_round in found.items():
        pairs = [pair for pair in by_round.values() if len(pair) == 2]
        time = _log_ratios(pairs, lambda cell: cell.steady.median_s)
        memory = _log_ratios(pairs, lambda cell: cell.memory.peak_rss_bytes)
        cells[name] = {
            "rounds": len(pairs),
            "time": statistics.stdev(time),
            "peak_rss": statistics.stdev(memory),
        }
    return {"format": SPREADS_FORMAT, "source": rounds.name, "cells": cells}


def _log_ratios(pairs: list[dict[str, Cell]], read: Callable[[Cell], float | None]) -> list[float]:
    """Each round's log ratio, candidate over baseline, where both sides read a value."""
    found = []
    for pair in pairs:
        base, cand = read(pair["baseline"]), read(pair["candidate"])
        if base and cand:
            found.append(math.log(cand / base))
    return found


def render_spreads(data: dict[str, Any]) -> str:
    margin = math.log1p(LIMIT)
    lines = [
        f"Each cell's paired spread over the rounds of `{data['source']}`, and the rounds it "
        f"needs to be shown within {LIMIT:.0%} at one look:",
        "",
        "| cell | rounds | time: spread, rounds needed | peak RSS: spread, rounds needed |",
        "| --- | ---: | ---: | ---: |",
    ]
    for cell, found in data["cells"].items():
        texts = [
            f"{found[what] * 100:.1f} %, {rounds_to_pass(found[what], margin, ALPHA)}"
            for what in ("time", "peak_rss")
        ]
        lines.append(f"| {cell} | {found['rounds']} | {texts[0]} | {texts[1]} |")
    return "\n".join(lines) + "\n"


def wilson_upper(hits: int, trials: int) -> float:
    """The Wilson score interval's upper bound at 95 %."""
    share = hits / trials
    centre = share + Z95 * Z95 / (2 * trials)
    spread = Z95 * math.sqrt(share * (1 - share) / trials + Z95 * Z95 / (4 * trials**2))
    return min(1.0, (centre + spread) / (1 + Z95 * Z95 / trials))


def render(data: dict[str, Any]) -> str:
    if data["kind"].startswith("two-speed"):
        return render_speeds(data)
    if data.get("injected"):
        return render_changes(data)
    sessions = data["sessions"]
    first = sessions[0]
    lines = [
        f"{_machine(first)}, {len(sessions)} fresh A/A {KINDS[data['kind']]}.",
        "",
        "| started (UTC) | outcome | exit | rounds | seconds | cells | as the session ran |",
        "| --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for session in sessions:
        ran = session.get("as_run")
        before = f"{ran['outcome']} (exit {ran['exit']}): {_cells(ran)}" if ran else "the same"
        rounds = "none" if session["rounds"] is None else session["rounds"]
        lines.append(
            f"| {_started(session)} | {session['outcome']} | "
            f"{session['exit']} | {rounds} | {session['elapsed_s']:.0f} | "
            f"{_cells(session)} | {before} |"
        )
    outcomes = [session["outcome"] for session in sessions]
    fails, passes = outcomes.count("fail"), outcomes.count("pass")
    lines += [
        "",
        f"{passes} of {len(sessions)} passed (exit 0), {fails} failed (false-fail rate at most "
        f"{wilson_upper(fails, len(sessions)):.0%} at 95 %), "
        f"{outcomes.count('underpowered')} underpowered.",
    ]
    alone = [session["spread_alone"] for session in sessions if "spread_alone" in session]
    if alone:
        failed = [answer for answer in alone if answer["outcome"] == "fail"]
        lines += [
            "",
            "Decided with each cell's spread of time from its own workers alone (`compare` "
            "before the stacks' levels of time; `fresh_sessions.py spread-alone`): "
            f"{len(failed)} of {len(alone)} failed"
            + "".join(f"; {'; '.join(answer['failures'])}" for answer in failed)
            + ".",
        ]
    if all("medians" in session for session in sessions):
        lines += ["", *render_levels(sessions)]
    return "\n".join(lines) + "\n"


def render_levels(sessions: list[dict[str, Any]]) -> list[str]:
    """Pairs of separate runs: per cell, how far apart its workers landed over all the pairs,
    and in how many pairs one side's workers all sat above the other side's (a coincidence
    that the workers' spread alone reads as a certain change)."""
    lines = [
        "Per cell, over every pair's workers: the slowest worker's steady median over the "
        "fastest's, and the pairs whose sides did not overlap (every worker of one side slower "
        "than every worker of the other), with the widest such gap:",
        "",
        "| cell | workers | slowest ÷ fastest | pairs not overlapping | widest gap |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    cells = sorted({name for session in sessions for name in session["medians"]})
    for name in cells:
        pairs = [session["medians"][name] for session in sessions if name in session["medians"]]
        values = [value for pair in pairs for side in pair.values() for value in side]
        gaps = [gap for pair in pairs if (gap := _gap(pair["baseline"], pair["candidate"]))]
        widest = f"{max(gaps):.2f}x" if gaps else "none"
        lines.append(
            f"| {name} | {len(values)} | {max(values) / min(values):.2f}x | "
            f"{len(gaps)} of {len(pairs)} | {widest} |"
        )
    return lines


def _gap(baseline: list[float], candidate: list[float]) -> float | None:
    """How far apart two sides' workers sat when they did not overlap (the nearer two's
    ratio, at least 1), None when they did."""
    if not baseline or not candidate:
        return None
    if min(candidate) > max(baseline):
        return min(candidate) / max(baseline)
    if min(baseline) > max(candidate):
        return min(baseline) / max(candidate)
    return None


def render_changes(data: dict[str, Any]) -> str:
    """A/B sessions: each injected change's cell state per session, then how often each was
    caught (failed) and how often it passed."""
    sessions, changes = data["sessions"], data["injected"]
    first = sessions[0]
    names = [_change_name(key, change) for key, change in changes.items()]
    lines = [
        f"{_machine(first)}, {len(sessions)} fresh A/B sessions of the recipe, the candidate "
        f"carrying {len(changes)} changes at once.",
        "",
        f"| started (UTC) | outcome | rounds | {' | '.join(names)} | other cells failed |",
        f"| --- | --- | ---: | {' | '.join('---' for _ in names)} | ---: |",
    ]
    for session in sessions:
        states = [_state_of(session, key) for key in changes]
        changed = {label for key in changes for label in changed_cells(key, session["states"])}
        others = sum(
            state == "fail" for label, state in session["states"].items() if label not in changed
        )
        lines.append(
            f"| {_started(session)} | {session['outcome']} | "
            f"{session['rounds']} | {' | '.join(states)} | {others} |"
        )
    lines += [
        "",
        "| change | failed | passed | undecided or not gated |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, key in zip(names, changes, strict=True):
        states = [
            session["states"][label]
            for session in sessions
            for label in changed_cells(key, session["states"])
        ]
        failed, passed = states.count("fail"), states.count("pass")
        rest = len(states) - failed - passed
        lines.append(f"| {name} | {failed} of {len(states)} | {passed} | {rest} |")
    return "\n".join(lines) + "\n"


def render_speeds(data: dict[str, Any]) -> str:
    """Sessions of cells of two speeds (``two-speed``, ``two-speed-ab``): per session its
    outcome and each cell's state split at its speeds (its time within them and the time its
    slow share adds; decided again from its rounds by ``fresh_sessions.py redecide-recipe``
    where the session ran an earlier rule, what it said then beside) and decided again by its
    whole time (``fresh_sessions.py whole``); then how often each decision passed and failed
    the cells."""
    from fresh_sessions import SLOWED  # beside this script, run as one

    sessions = data["sessions"]
    first, cells = sessions[0], sorted(sessions[0]["states"])
    what = "A/A"
    if data["kind"] == "two-speed-ab":
        what = f"A/B (the candidate's `{SLOWED[-1]}`: a share of each product's rows twice)"
    lines = [
        f"{_machine(first)}, {len(sessions)} fresh {what} sessions, {first['rounds']} rounds each.",
        "",
        f"| started (UTC) | outcome, split | outcome, whole time | {' | '.join(cells)} |",
        f"| --- | --- | --- | {' | '.join('---' for _ in cells)} |",
    ]
    for session in sessions:
        states = [_split_state(session, cell) for cell in cells]
        ran = session.get("as_run")
        split = f"{session['outcome']}" + (f" (as it ran: {ran['outcome']})" if ran else "")
        lines.append(
            f"| {_started(session)} | {split} | "
            f"{session['whole']['outcome']} | {' | '.join(states)} |"
        )
    lines += ["", "| cell | split: failed, passed | whole time: failed, passed |",
              "| --- | ---: | ---: |"]  # fmt: skip
    for cell in cells:
        split = [session["states"][cell] for session in sessions]
        whole = [session["whole"]["states"][cell] for session in sessions]
        lines.append(
            f"| {cell} | {split.count('fail')}, {split.count('pass')} of {len(split)} | "
            f"{whole.count('fail')}, {whole.count('pass')} of {len(whole)} |"
        )
    return "\n".join(lines) + "\n"


def _split_state(session: dict[str, Any], cell: str) -> str:
    """A cell's state split / by its whole time, with its two tests' changes when split."""
    state = f"{session['states'][cell]} / {session['whole']['states'][cell]}"
    found = session.get("speeds", {}).get(cell)
    if found is None:
        return f"{state}; not split"
    within, share = found["within"]["ratio"] - 1, found["share"]["ratio"] - 1
    return (
        f"{state}; {found['ratio']:.2f}x apart, within {within:+.1%}, slow share adds {share:+.1%}"
    )


def _change_name(key: str, change: dict[str, float]) -> str:
    """A change as docs/ci.md names it: its cell's workload and stack, its size and share."""
    share = change.get("share")
    size = f"{change['factor']:g}x" if change["factor"] >= 2 else f"+{change['factor'] - 1:.0%}"
    return f"{key} {size}" + (f" in {share:.0%} of processes" if share else "")


def render_predicted(data: dict[str, Any]) -> str:
    sessions = data["sessions"]
    lines = [
        f"{sessions} sessions of {data['rounds']} rounds drawn from the "
        f"{data['aa_sessions']} A/A sessions' rounds (`{data['source']}`), the changes added, "
        f"each decided as `ab` does at its one look with the noise table of "
        f"{data['noise'][:10]}:",
        "",
        "| change | cell failed | cell passed |",
        "| --- | ---: | ---: |",
    ]
    for key, change in data["changes"].items():
        lines.append(
            f"| {_change_name(key, change)} | {change['fail'] / sessions:.0%} | "
            f"{change['pass'] / sessions:.0%} |"
        )
    aa = data["unchanged"]
    lines += [
        "",
        f"Sessions failing a cell left unchanged: {data['unchanged_failed']} of {sessions}. "
        f"The same drawn sessions without the changes (A/A): {aa.get('pass', 0)} passed, "
        f"{aa.get('fail', 0)} failed, {aa.get('underpowered', 0)} underpowered.",
    ]
    return "\n".join(lines) + "\n"


def changed_cells(key: str, labels: Iterable[str]) -> list[str]:
    """The cells (their labels) a change of fresh_sessions.py's ``INJECTED``, keyed
    ``workload stack``, is in."""
    workload, stack = key.split(" ")
    return [
        label for label in labels
        if label.startswith(f"{workload}(") and f") {stack} @" in label
    ]  # fmt: skip


def _state_of(session: dict[str, Any], key: str) -> str:
    """The state of the cell a change is in, and the change the session measured there."""
    found = [
        f"{session['states'][label]} ({session['ratios'][label]:.2f}x)"
        if session["ratios"].get(label) else session["states"][label]
        for label in changed_cells(key, session["states"])
    ]  # fmt: skip
    return " / ".join(found) or "absent"


def _machine(session: dict[str, Any]) -> str:
    return f"Machine {session['cpu_model']} (fingerprint `{session['fingerprint']}`)"


def _started(session: dict[str, Any]) -> str:
    """When a session began, UTC to the minute."""
    return session["started"][:16].replace("T", " ")


def _cells(session: dict[str, Any]) -> str:
    return ", ".join(f"{state} {count}" for state, count in session["cells"].items())


if __name__ == "__main__":
    if sys.argv[1] == "--spreads" and len(sys.argv) == 4:
        text = json.dumps(spreads(Path(sys.argv[2])), indent=1, sort_keys=True) + "\n"
        Path(sys.argv[3]).write_text(text, encoding="utf-8")
    elif sys.argv[1] == "--spreads":
        sys.stdout.write(render_spreads(json.loads(Path(sys.argv[2]).read_text("utf-8"))))
    elif sys.argv[1] == "--predicted":
        sys.stdout.write(render_predicted(json.loads(Path(sys.argv[2]).read_text("utf-8"))))
    else:
        sys.stdout.write(render(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))))
