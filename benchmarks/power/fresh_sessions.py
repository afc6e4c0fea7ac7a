"""Benchmark: the gate's false alarms and power on fresh `stackwars ab` sessions (issue 34).

    python benchmarks/power/fresh_sessions.py setup --venvs DIR [--extras jax,torch]
    python benchmarks/power/fresh_sessions.py sessions --venvs DIR --kind aa --count 20 --out DIR
    python benchmarks/power/fresh_sessions.py sessions --venvs DIR --kind ab --count 20 --out DIR
    python benchmarks/power/fresh_sessions.py sessions --venvs DIR --kind quick --count 20 --out DIR
    python benchmarks/power/fresh_sessions.py sessions --venvs DIR --kind quick-duet --count 20 \
        --out DIR
    python benchmarks/power/fresh_sessions.py sessions --venvs DIR --kind separate --count 20 \
        --out DIR
    python benchmarks/power/fresh_sessions.py campaign --venvs DIR --out DIR \
        --into docs/data/recipe-2026-11-29 --until 2026-11-30T21:00Z -- --noise NOISE.json
    python benchmarks/power/fresh_sessions.py analyse --out DIR
    python benchmarks/power/fresh_sessions.py redecide --out DIR
    python benchmarks/power/fresh_sessions.py redecide-recipe --out DIR -- NOISE.json
    python benchmarks/power/fresh_sessions.py spread-alone --out DIR
    python benchmarks/power/fresh_sessions.py whole --out DIR --kind two-speed -- NOISE.json
    python benchmarks/power/fresh_sessions.py summarise --out DIR --kind recipe [--into FILE]
    python benchmarks/power/fresh_sessions.py summarise --out DIR --kind separate [--into FILE]
    python benchmarks/power/fresh_sessions.py sessions ... -- AB_OPTIONS [-- RUN_OPTIONS]

``setup`` makes two virtual environments of identical content (this checkout installed in
each), so that the two sides of every session really are two environments. ``sessions`` runs
``--count`` sessions one after the other, each its own ``stackwars ab`` with the gate of
docs/ci.md (``--fail-above 5 --fail-memory-above 10``), keeping every session's folder and
``compare.json`` under ``--out`` (git-ignored: the data outlive a sitting; a rerun skips the
sessions already there):

* ``aa``: twelve cells across numpy, torch and jax (``CELLS``), baseline against candidate with
  nothing changed;
* ``ab``: the same cells, the candidate's GEMM slowed through ``regressed_gemm.py``'s ``extra``
  (the change reported is the one measured, from the session's own rounds);
* ``quick``: the README's recipe exactly (``-- --suite quick``, default budget);
* ``quick-one-thread`` and ``quick-duet``: the same with ``--threads 1``, then with both
  sides' rounds at once on a core each (``ab --duet``): what a round costs and how its cells
  spread, the measure of issue 54's cheap rounds;
* ``recipe``: docs/ci.md's recipe exactly (``RECIPE_AB``, ``RECIPE_RUN``), A/A, its noise
  table given as ``-- --noise FILE``;
* ``recipe-ab``: the same, the candidate carrying ``INJECTED``'s four changes at once, each in
  a cell of its own (``injected/sitecustomize.py``, on the candidate's ``PYTHONPATH``);
* ``separate``: docs/ci.md's "Two separate runs": the twelve cells run ``--repeat 3`` in the
  baseline environment, then in the candidate's, then ``stackwars compare`` with the same gate
  (the run-to-run term its default); the session's time is written into its compare.json;
* ``two-speed`` and ``two-speed-ab``: cells of two speeds (numpy's GEMM 256² and 512² with
  two threads, ``regressed_gemm.py``'s, whose processes land at one of two speeds here), one
  look after 40 rounds, the gate on time alone, with a noise table given as ``-- --noise
  FILE``; the A/B's candidate computes a share of its rows twice (``SLOWED``, as ``ab``'s).
  ``whole`` decides each such session again from its rounds without the split (each cell by
  its whole time), beside what the session decided. (The spin of ``injected/`` added 2-6 %
  for a factor of 1.1-1.5 to these two-thread cells, not its factor: not used here.)

``campaign`` runs the recipe's A/A and A/B sessions in turn until ``--until``, adding each
to its kind's summary in the ``--into`` folder as it ends (the campaign spans sittings, each on
a machine that starts empty: what a sitting measured lives in those summaries).

``analyse`` tallies the outcomes (pass, fail, underpowered) with the Wilson 95 % interval of
the suite-level false-alarm rate, and per cell its measured change and noise class (the
spread of its paired log ratios: below 5 %, 5-15 %, or two-speed when its workers' medians
split into two groups).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REGRESSED = HERE / "regressed_gemm.py"
GATE = ["--fail-above", "5", "--fail-memory-above", "10"]
STACKS = "numpy:eager,torch:eager,jax:jit"
# A --param reaches every workload that has it: GEMM and SELU at 256 and 512, twelve cells.
CELLS = [
    "--workload-file", str(REGRESSED), "--workload", "regressed-gemm,selu",
    "--param", "n=256,512", "--stacks", STACKS,
]  # fmt: skip
# The candidate's GEMM computes this share of its rows twice. REGRESS_EXTRA=0.1 measured +13 to
# +25 % (two fresh A/B sessions, 2026-11-27: the extra slice costs more than its share at these
# sizes); 0.065 aims at the measured +10 % for the 512² cells. Reported as measured.
SLOWED = ["--candidate-env", "REGRESS_EXTRA=0.065"]
ONE_THREAD = ["--suite", "quick", "--threads", "1"]
# docs/ci.md's recipe (issue 54): its run options, and its ab options besides the gate's and
# --noise (the machine's noise table, given after the kind's "--": it is the machine's, not
# the recipe's). tests/test_ci_recipe.py checks docs/ci.md shows exactly these.
RECIPE_RUN = ["--suite", "quick", "--stacks", "numpy,jax,torch:eager", "--threads", "1",
              "--workers", "per-stack"]  # fmt: skip
RECIPE_AB = ["--duet", "--one-look", "--max-rounds", "60"]
# The recipe gates time alone: a worker's peak RSS varies between processes by far more than a
# 10 % limit here (docs/ci.md renders each cell's paired spread of peak RSS in the recipe's
# noise session), so a memory limit would leave every session underpowered.
RECIPE_GATE = ["--fail-above", "5"]
# The changes an A/B session of the recipe carries (issue 54's Done-when), each a cell of its
# own, picked by the recipe's noise table (docs/data/recipe-2026-11-29/noise.json, a round's
# paired spread): +10 % in the quietest cell (11.2 %), +10 % in a moderate one (15.3 %, gated
# at the recipe's rounds), 2x in a quiet one, and 4x in a tenth of the candidate's processes
# (a share 52 rounds see with 99.6 % probability: 1 - 0.9^52) in another quiet one.
INJECTED = {
    "gemm numpy:eager": {"factor": 1.1},
    "gemm jax:jit": {"factor": 1.1},
    "selu torch:eager": {"factor": 2.0},
    "poly numpy:eager": {"factor": 4.0, "share": 0.1},
}
INJECTING = [
    "--candidate-env", f"PYTHONPATH={HERE / 'injected'}",
    "--candidate-env", f"STACKWARS_INJECT={json.dumps(INJECTED)}",
]  # fmt: skip
RECIPES = ("recipe", "recipe-ab")
TWO_SPEED_RUN = ["--workload-file", str(REGRESSED), "--workload", "regressed-gemm",
                 "--param", "n=256,512", "--stacks", "numpy", "--threads", "2"]  # fmt: skip
TWO_SPEED_AB = ["--one-look", "--max-rounds", "40"]
TIME_GATED = (*RECIPES, "two-speed", "two-speed-ab")  # the gate on time alone
# The fresh sessions issue 54 asks of the recipe, A/A and A/B; a session's wall time at most
# (the recipe's 900 s budget, its workers' start and its last round).
CAMPAIGN = {"recipe": 20, "recipe-ab": 12}
SESSION_S = 1000
SUMMARY_FORMAT = 3  # of ``summarise``'s output (its docstring has the history)
KINDS = {
    "aa": CELLS, "ab": CELLS, "quick": ["--suite", "quick"], "separate": CELLS,
    "quick-one-thread": ONE_THREAD, "quick-duet": ONE_THREAD, "recipe": RECIPE_RUN,
    "recipe-ab": RECIPE_RUN, "two-speed": TWO_SPEED_RUN, "two-speed-ab": TWO_SPEED_RUN,
}  # fmt: skip
# The ab options a kind adds to the gate's (issue 54's cheap rounds: the same recipe with one
# thread a worker, then both sides at once on a core each; the recipe).
AB_OPTIONS = {
    "quick-duet": ["--duet"], "recipe": RECIPE_AB, "recipe-ab": RECIPE_AB + INJECTING,
    "two-speed": TWO_SPEED_AB, "two-speed-ab": TWO_SPEED_AB + SLOWED,
}  # fmt: skip
# docs/ci.md's "Two separate runs": each side one run of three workers a cell, in its own
# environment, one after the other, compared with its default run-to-run term.
SEPARATE_REPEAT = ["--repeat", "3"]
SIDES = ("baseline", "candidate")


def python_of(venvs: Path, side: str) -> Path:
    return venvs / side / "bin" / "python"


def setup(venvs: Path, extras: str) -> None:
    """Two environments of identical content: this checkout and its pinned frameworks (the
    ``extras`` the sessions' stacks need: ``jax,torch`` for the recipe's)."""
    for side in ("baseline", "candidate"):
        subprocess.run([sys.executable, "-m", "venv", str(venvs / side)], check=True)
        pip = [str(python_of(venvs, side)), "-m", "pip", "install", "-q"]
        subprocess.run(
            [*pip, "-c", str(ROOT / "constraints.txt"), "-e", f"{ROOT}[{extras}]"], check=True
        )


def session(venvs: Path, kind: str, folder: Path, extra: list[str]) -> dict[str, Any]:
    """One `stackwars ab` session (``extra``: more ab options, then ``--`` and run options
    in place of the kind's cells); its compare.json, with the exit status it ended with."""
    argv = [str(python_of(venvs, "candidate")), "-m", "stackwars", "ab"]
    argv += ["--baseline-python", str(python_of(venvs, "baseline"))]
    argv += RECIPE_GATE if kind in TIME_GATED else GATE
    argv += SLOWED if kind == "ab" else []
    argv += AB_OPTIONS.get(kind, [])
    argv += ["--out", str(folder / "rounds"), "--json", str(folder / "compare.json")]
    argv += ["--markdown", str(folder / "compare.md")]
    argv += extra if "--" in extra else [*extra, "--", *KINDS[kind]]
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    (folder / "output.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    if not (folder / "compare.json").is_file():
        said = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["nothing"]
        raise SystemExit(
            f"session {folder} wrote no compare.json (exit {done.returncode}): {said[0]}"
        )
    data = json.loads((folder / "compare.json").read_text(encoding="utf-8"))
    data["exit"] = done.returncode
    return data


def separate_session(venvs: Path, folder: Path, extra: list[str]) -> dict[str, Any]:
    """Two separate runs, baseline then candidate, each ``run --repeat 3`` in its own
    environment and store, then ``compare`` with the gate (``extra``: more compare options);
    compare.json with the exit status, and the seconds the session took."""
    started = time.monotonic()
    said = []
    for side in ("baseline", "candidate"):
        argv = [str(python_of(venvs, side)), "-m", "stackwars", "run", *CELLS, *SEPARATE_REPEAT]
        argv += ["--quiet", "--json", str(folder / f"{side}.json")]
        argv += ["--db", str(folder / f"{side}.sqlite")]
        done = subprocess.run(argv, check=False, capture_output=True, text=True)
        said.append(done.stdout + done.stderr)
        if done.returncode != 0:
            raise SystemExit(f"{side} run in {folder} ended {done.returncode}: {said[-1][-500:]}")
    argv = [str(python_of(venvs, "candidate")), "-m", "stackwars", "compare"]
    argv += [str(folder / "baseline.json"), str(folder / "candidate.json"), *GATE, *extra]
    argv += ["--db", str(folder / "candidate.sqlite")]
    argv += ["--json", str(folder / "compare.json"), "--markdown", str(folder / "compare.md")]
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    (folder / "output.txt").write_text("".join(said) + done.stdout + done.stderr, "utf-8")
    if not (folder / "compare.json").is_file():
        raise SystemExit(f"compare in {folder} wrote no compare.json (exit {done.returncode})")
    data = json.loads((folder / "compare.json").read_text(encoding="utf-8"))
    data["exit"] = done.returncode
    # compare.json of separate runs has no session: its time is the two runs and the compare.
    data.setdefault("session", {})["elapsed_s"] = time.monotonic() - started
    (folder / "compare.json").write_text(json.dumps(data), encoding="utf-8")
    return data


def sessions(venvs: Path, kind: str, count: int, out: Path, extra: list[str]) -> None:
    for index in range(count):
        folder = out / kind / f"{index:03d}"
        if not (folder / "compare.json").is_file():
            one_session(venvs, kind, folder, extra)


def one_session(venvs: Path, kind: str, folder: Path, extra: list[str]) -> dict[str, Any]:
    """A session of ``kind`` in ``folder``, with the machine it ran on and when it began."""
    from stackwars.results import metadata

    folder.mkdir(parents=True, exist_ok=True)
    machine = {
        "cpu_model": metadata.machine_info()["cpu_model"],
        "fingerprint": metadata.run_identity("")["fingerprint"],
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / "machine.json").write_text(json.dumps(machine), encoding="utf-8")
    if kind == "separate":
        data = separate_session(venvs, folder, extra)
    else:
        data = session(venvs, kind, folder, extra)
    print(f"{kind} {folder.name}: {data['outcome']} (exit {data['exit']})", flush=True)
    return data


def utc_minute(text: str) -> float:
    """``--until``'s epoch second from a UTC minute; a one-line usage error otherwise."""
    try:
        moment = datetime.strptime(text, "%Y-%m-%dT%H:%MZ")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a UTC minute: write it as 2026-11-30T21:00Z"
        ) from None
    return moment.replace(tzinfo=UTC).timestamp()


def campaign(venvs: Path, out: Path, into: Path, until: float, extra: list[str]) -> None:
    """Fresh sessions of docs/ci.md's recipe, A/A and A/B (``RECIPES``), until the epoch
    second ``until``: each time the kind furthest behind its share of ``CAMPAIGN`` (counting
    the sessions the summaries in folder ``into`` already hold), while a session (``SESSION_S``)
    still ends before ``until``; each session, once done, added to its kind's summary there
    (``summarise --into``), so that a sitting stopped at any point loses at most the session
    it was in. ``extra``: the ab options after ``--`` (``--noise FILE``, the machine's)."""
    while time.time() + SESSION_S < until:
        done = {kind: _held(into / f"{kind}.json") for kind in RECIPES}
        kind = min(RECIPES, key=lambda k: done[k] / CAMPAIGN[k])
        if all(done[k] >= CAMPAIGN[k] for k in RECIPES):
            print(f"the campaign is complete: {done}")
            return
        folder = out / kind / f"{len(list((out / kind).glob('*/compare.json'))):03d}"
        one_session(venvs, kind, folder, extra)
        summarise(out, kind, into / f"{kind}.json")
    print(f"stopped: a session ({SESSION_S} s) would end after --until")


def _held(summary: Path) -> int:
    """How many sessions the summary file holds (0 when there is none yet)."""
    if not summary.is_file():
        return 0
    return len(json.loads(summary.read_text(encoding="utf-8"))["sessions"])


def wilson(hits: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    if trials == 0:
        return math.nan, math.nan
    p = hits / trials
    centre, spread = (
        p + z * z / (2 * trials),
        z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials**2)),
    )
    scale = 1 + z * z / trials
    # Clamped: rounding can put a bound a hair outside [0, 1] ("-0%").
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def noise_class(comparison: dict[str, Any]) -> str:
    """Below 5 %, 5-15 % or two-speed, from the session's paired log ratios."""
    ratios = (comparison.get("evidence") or {}).get("log_ratios") or []
    if len(ratios) < 2:
        return "unknown"
    mean = sum(ratios) / len(ratios)
    sd = math.sqrt(sum((x - mean) ** 2 for x in ratios) / (len(ratios) - 1))
    spread = sorted(abs(x - mean) for x in ratios)
    if spread[-1] > 4 * spread[len(spread) // 2] and sd > 0.15:
        return "two-speed"
    return "below 5 %" if sd < 0.05 else "5-15 %" if sd < 0.15 else "two-speed"


def analyse(out: Path) -> None:
    for kind in KINDS:
        files = sorted((out / kind).glob("*/compare.json"))
        if not files:
            print(f"{kind}: no sessions yet (pending)")
            continue
        data = [json.loads(path.read_text(encoding="utf-8")) for path in files]
        outcomes = [item["outcome"] for item in data]
        fails = outcomes.count("fail")
        low, high = wilson(fails, len(data))
        counts = {name: outcomes.count(name) for name in ("pass", "fail", "underpowered")}
        rate = f"fail {fails / len(data):.0%} [{low:.0%}, {high:.0%}]"
        elapsed = sorted(item["session"]["elapsed_s"] for item in data)
        took = f"{elapsed[0]:.0f}-{elapsed[-1]:.0f} s each"
        print(f"{kind}: {len(data)} sessions {counts}; {rate}; {took}")
        by_cell(data)
        if kind == "ab":
            caught_by_class(data)


def by_cell(data: list[dict[str, Any]]) -> None:
    """Per cell: the change the sessions measured (median ratio), and in how many sessions
    it ended each way (fail, equivalent, undecided)."""
    cells = dict.fromkeys(row["cell"] for item in data for row in item["rows"])
    for cell in cells:
        rows = [row for item in data for row in item["rows"] if row["cell"] == cell]
        ratios = sorted(row["comparison"]["ratio"] for row in rows if row["comparison"])
        states = [row["gate_state"] for row in rows]
        tally = ", ".join(f"{state} {states.count(state)}" for state in sorted(set(states)))
        change = f"{ratios[len(ratios) // 2] - 1:+.1%}" if ratios else "none"
        print(f"  {cell}: measured change {change}; {tally}")


def caught_by_class(data: list[dict[str, Any]]) -> None:
    """The regressed cells (``regressed-gemm``), each session's verdict on each, grouped by
    the noise class that session's paired log ratios show: the power per class."""
    found: dict[str, list[bool]] = {}
    for item in data:
        for row in item["rows"]:
            if row["cell"].startswith("regressed-gemm") and row["comparison"]:
                noise = noise_class(row["comparison"])
                found.setdefault(noise, []).append(row["gate_state"] == "fail")
    for noise, caught in sorted(found.items()):
        low, high = wilson(sum(caught), len(caught))
        share = f"{sum(caught)} of {len(caught)} ({sum(caught) / len(caught):.0%})"
        print(f"  regressed cells, noise {noise}: caught {share} [{low:.0%}, {high:.0%}]")


def redecide(out: Path) -> None:
    """Every kept session under ``out`` decided again by this checkout's gate: a
    ``separate`` one from its two runs (``redecide_separate``), an ``ab`` one
    (``KIND/NNN/rounds``) from the rounds it kept, look by look from round 3, stopping as
    ``ab`` stops (every cell settled), on the sessions' design (``--fail-above 5
    --fail-memory-above 10``, rounds 3 to 10). The measurements are the sessions' own and did
    not depend on the gate (each ran its 10 rounds, or stopped when every cell was settled,
    which a re-decision can only shorten). Writes each session's ``redecided.json`` and
    prints the tally."""
    from stackwars.instruments.ab import service as ab
    from stackwars.results.comparison import Gate, decide

    gate = Gate(5.0, fail_memory_above=10.0)
    session = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), out, gate=gate)
    tally: dict[str, dict[str, int]] = {}
    for folder in sorted(out.glob("separate/*/candidate.json")):
        outcome = redecide_separate(folder.parent, gate)
        counts = tally.setdefault("separate", {})
        counts[outcome] = counts.get(outcome, 0) + 1
    for folder in sorted(out.glob("*/*/rounds")):
        files = {side: sorted(folder.glob(f"{side}-*.json")) for side in ("baseline", "candidate")}
        kept = min(len(paths) for paths in files.values())
        rows, rounds = [], 0
        for rounds in range(session.min_rounds, kept + 1):
            rows = ab.compare_files(
                {side: paths[:rounds] for side, paths in files.items()}, session
            )
            if not ab.open_rows(rows, session):
                break
        verdict = decide(rows, gate, session.describe_looks())
        states = dict(zip((row.label for row in rows), verdict.states, strict=True))
        answer = {"outcome": verdict.outcome, "rounds": rounds, "states": states}
        (folder.parent / "redecided.json").write_text(json.dumps(answer), encoding="utf-8")
        group = folder.parent.parent.name
        counts = tally.setdefault(group, {})
        counts[verdict.outcome] = counts.get(verdict.outcome, 0) + 1
    for group, counts in tally.items():
        fails, total = counts.get("fail", 0), sum(counts.values())
        low, high = wilson(fails, total)
        print(f"{group}, re-decided: {total} sessions {counts}; fail [{low:.0%}, {high:.0%}]")


def redecide_separate(folder: Path, gate: Any) -> str:
    """A ``separate`` session decided again by this checkout's ``compare`` (its two runs, the
    default run-to-run term, the sessions' gate); writes ``redecided.json``, returns the
    outcome."""
    from stackwars.service import comparisons

    verdict = comparisons.compare(
        str(folder / "baseline.json"), str(folder / "candidate.json"), 5.0,
        fail_above=gate.fail_above, fail_memory_above=gate.fail_memory_above,
        alpha_pct=gate.alpha * 100,
    ).verdict  # fmt: skip
    rows, states = verdict.rows, list(verdict.states)
    answer = {
        "outcome": verdict.outcome, "exit": verdict.exit_status, "failures": verdict.failures,
        "cells": {state: states.count(state) for state in sorted(set(states))},
        "states": dict(zip((row.label for row in rows), states, strict=True)),
    }  # fmt: skip
    (folder / "redecided.json").write_text(json.dumps(answer), encoding="utf-8")
    return verdict.outcome or "no gate"


def spread_alone(out: Path) -> None:
    """Each ``separate`` pair under ``out`` decided as ``compare`` decided before 2026-11-30
    (6d1d819): each cell's spread of time between workers from its own workers alone, without
    its stack's levels of time (``stack_levels`` without them for the call; memory's levels,
    older, and the rest of the gate today's). What the floor changed on fresh pairs; writes
    each pair's ``spread-alone.json``."""
    from unittest import mock

    from stackwars.results import comparison
    from stackwars.service import comparisons

    def memory_levels(groups: Any) -> dict[tuple[str, str, str], float]:
        return {
            key: spread
            for key, spread in levels(groups).items()
            if key[2] != comparison.STEADY_TIME
        }

    levels = comparison.stack_levels
    pairs = sorted(out.glob("separate/*/compare.json"))
    if not pairs:
        raise SystemExit(
            f"no pairs of separate runs under {out / 'separate'}: give the --out of "
            "'sessions --kind separate'"
        )
    for folder in pairs:
        with mock.patch.object(comparison, "stack_levels", memory_levels):
            verdict = comparisons.compare(
                str(folder.parent / "baseline.json"), str(folder.parent / "candidate.json"),
                5.0, fail_above=5.0, fail_memory_above=10.0,
            ).verdict  # fmt: skip
        answer = {"outcome": verdict.outcome, "failures": verdict.failures}
        (folder.parent / "spread-alone.json").write_text(json.dumps(answer), encoding="utf-8")
        print(f"{folder.parent.name}: {answer['outcome']} {answer['failures']}")


def redecide_recipe(out: Path, noise: Path) -> None:
    """Each ``recipe`` session under ``out`` decided again from the rounds it kept, with its
    one look where the budget ended them (``ab``'s ``_look_now``, added on 2026-11-29 after the
    first sessions had planned their look at the first round's cost and, their later rounds
    taking longer, judged nothing): the rounds are the ones the session would run with the fix
    too (the budget stops them alike); and each ``two-speed`` and ``two-speed-ab`` session,
    whose first ones split cells at their sides (``timing/speeds.py``'s ``Known``, added on
    2026-11-30 after them). Writes each session's ``redecided.json``."""
    from dataclasses import asdict

    from stackwars.instruments.ab import service as ab
    from stackwars.instruments.ab.data import read_noise
    from stackwars.results.verdict import gate_settings, verdict_of

    gate = gate_settings(fail_above=5.0)
    kinds = ("recipe", "two-speed", "two-speed-ab")
    for folder in sorted(path for kind in kinds for path in (out / kind).glob("*/rounds")):
        files = {side: sorted(folder.glob(f"{side}-[0-9][0-9].json")) for side in SIDES}
        kept = min(len(paths) for paths in files.values())
        session = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), folder, gate=gate,
                             min_rounds=kept, max_rounds=kept, noise=read_noise(noise),
                             one_look=True)  # fmt: skip
        files = {side: paths[:kept] for side, paths in files.items()}
        rows = ab.compare_files(files, session)
        verdict = verdict_of(rows, gate, session.describe_looks(),
                             not_gated=ab.not_gated(rows, session),
                             aa_spreads=ab.aa_spreads(session))  # fmt: skip
        states = list(verdict.states)
        answer = {
            "outcome": verdict.outcome, "exit": verdict.exit_status, "rounds": kept,
            "cells": {state: states.count(state) for state in sorted(set(states))},
            "states": {row.label: state for row, state in zip(rows, states, strict=True)},
        }  # fmt: skip
        split = {row.label: _speeds_of({"speeds": asdict(row.speeds)}) for row in rows
                 if row.speeds}  # fmt: skip
        if split:
            answer["speeds"] = split
        (folder.parent / "redecided.json").write_text(json.dumps(answer), encoding="utf-8")
        print(f"{folder.parent.name}: {answer['outcome']} {answer['cells']}")


def summarise(out: Path, kind: str, into: Path | None = None) -> None:
    """Prints, as JSON, what docs/ci.md renders of a kind's sessions (render_recipe.py): each
    session's start, machine, outcome, exit status, rounds, seconds, how many cells it passed,
    failed, left undecided and left out (not gated in this job) and each cell's state; and the
    changes its candidate carried (``INJECTED``, for ``recipe-ab``). With ``into``, the
    sessions found are added to that summary file's (a campaign's earlier sittings, whose
    rounds are gone with their machine) and the whole is written there instead: a session
    already in it (the same machine fingerprint and start) is replaced. Format history
    (``SUMMARY_FORMAT``): 1 (2026-11-29) first; 2 (2026-11-29) each cell's state and measured
    ratio, the changes injected; 3 (2026-11-30) a ``separate`` pair's rounds None, its
    workers' steady medians per cell and side (``medians``) and its outcome without the
    stacks' levels (``spread_alone``, where ``spread-alone`` wrote it)."""
    found = [_summary_of(folder) for folder in sorted((out / kind).glob("*/compare.json"))]
    changes = INJECTED if kind == "recipe-ab" else {}
    summary = {"format": SUMMARY_FORMAT, "kind": kind, "injected": changes, "sessions": found}
    if into is None:
        print(json.dumps(summary, indent=1))
        return
    if into.is_file():
        summary = merged(json.loads(into.read_text(encoding="utf-8")), summary)
    into.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"{into}: {len(summary['sessions'])} sessions ({len(found)} from {out / kind})")


def merged(earlier: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new``'s sessions added to ``earlier``'s, in order of their start; refused when the
    two summaries are of another kind, format or set of injected changes (their sessions
    would not be one campaign)."""
    for key in ("format", "kind", "injected"):
        if earlier.get(key) != new[key]:
            raise SystemExit(
                f"the summary to add to has {key} {earlier.get(key)!r}, these sessions "
                f"{new[key]!r}: one campaign is one kind, format and set of changes; summarise "
                "into another file"
            )
    sessions = {(s["fingerprint"], s["started"]): s for s in earlier["sessions"]}
    sessions |= {(s["fingerprint"], s["started"]): s for s in new["sessions"]}
    return {**new, "sessions": [sessions[key] for key in sorted(sessions, key=lambda k: k[1])]}


def _summary_of(folder: Path) -> dict[str, Any]:
    """One session's summary (``summarise``) from its compare.json."""
    data = json.loads(folder.read_text(encoding="utf-8"))
    machine = json.loads((folder.parent / "machine.json").read_text(encoding="utf-8"))
    states = [row["gate_state"] for row in data["rows"]]
    session = {
        **machine,
        "outcome": data["outcome"], "exit": data["exit_status"],
        # A pair of separate runs has no rounds: its workers are three a cell and side.
        "rounds": data["session"].get("rounds"), "elapsed_s": data["session"]["elapsed_s"],
        "cells": {state: states.count(state) for state in sorted(set(states))},
        "states": {row["cell"]: row["gate_state"] for row in data["rows"]},
        "ratios": {row["cell"]: (row["comparison"] or {}).get("ratio") for row in data["rows"]},
    }  # fmt: skip
    if (folder.parent / "candidate.json").is_file():  # a pair of separate runs
        session["medians"] = _worker_medians(folder.parent)
    alone = folder.parent / "spread-alone.json"
    if alone.is_file():  # decided without the stacks' levels (spread_alone)
        session["spread_alone"] = json.loads(alone.read_text(encoding="utf-8"))
    whole = folder.parent / "whole.json"
    if whole.is_file():  # decided without the split at two speeds (whole)
        session["whole"] = json.loads(whole.read_text(encoding="utf-8"))
    if data["rows"] and any(row.get("speeds") for row in data["rows"]):
        session["speeds"] = {row["cell"]: _speeds_of(row) for row in data["rows"] if row["speeds"]}
    again = folder.parent / "redecided.json"
    if again.is_file():  # decided again (redecide_recipe, redecide_separate)
        session["as_run"] = {key: session[key] for key in ("outcome", "exit", "cells")}
        session.pop("speeds", None)  # the split decided again, or none
        session |= json.loads(again.read_text(encoding="utf-8"))
    return session


def _speeds_of(row: dict[str, Any]) -> dict[str, Any]:
    """A split cell's speeds and its two tests' ratios and intervals (compare.json's)."""
    speeds = row["speeds"]
    parts = {
        what: {key: speeds[what][key] for key in ("ratio", "ci_low", "ci_high", "verdict")}
        for what in ("within", "share")
    }
    ratio = math.exp(speeds["speeds"]["slow"] - speeds["speeds"]["fast"])
    return {"ratio": ratio, "slow_share": speeds["speeds"]["slow_share"], **parts}


def whole(out: Path, kind: str, noise: Path) -> None:
    """Each ``two-speed`` or ``two-speed-ab`` session under ``out`` decided again from its
    rounds with each cell judged by its whole time: its noise table without the split (the
    rule before 2026-11-30). Writes each session's ``whole.json``."""
    from dataclasses import replace

    from stackwars.instruments.ab import service as ab
    from stackwars.instruments.ab.data import read_noise
    from stackwars.results.verdict import gate_settings, verdict_of

    gate = gate_settings(fail_above=5.0)
    table = read_noise(noise)
    unsplit = replace(table, cells={k: replace(c, speeds=None) for k, c in table.cells.items()})
    for folder in sorted((out / kind).glob("*/rounds")):
        files = {side: sorted(folder.glob(f"{side}-[0-9][0-9].json")) for side in SIDES}
        kept = min(len(paths) for paths in files.values())
        session = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), folder, gate=gate,
                             min_rounds=kept, max_rounds=kept, noise=unsplit,
                             one_look=True)  # fmt: skip
        rows = ab.compare_files({side: paths[:kept] for side, paths in files.items()}, session)
        verdict = verdict_of(rows, gate, session.describe_looks(),
                             not_gated=ab.not_gated(rows, session),
                             aa_spreads=ab.aa_spreads(session))  # fmt: skip
        answer = {
            "outcome": verdict.outcome,
            "states": {row.label: state for row, state in zip(rows, verdict.states, strict=True)},
        }
        (folder.parent / "whole.json").write_text(json.dumps(answer), encoding="utf-8")
        print(f"{folder.parent.name}: {answer['outcome']} {answer['states']}")


def _worker_medians(folder: Path) -> dict[str, dict[str, list[float]]]:
    """A pair of separate runs' workers: each ok cell's steady medians (seconds) by side."""
    from stackwars.results.comparison import label
    from stackwars.results.schema import Cell

    medians: dict[str, dict[str, list[float]]] = {}
    for side in SIDES:
        for raw in json.loads((folder / f"{side}.json").read_text(encoding="utf-8"))["cells"]:
            cell = Cell.from_dict(raw)
            if cell.status == "ok" and cell.steady.median_s:
                by_side = medians.setdefault(label(cell), {key: [] for key in SIDES})
                by_side[side].append(cell.steady.median_s)
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "action",
        choices=(
            "setup",
            "sessions",
            "campaign",
            "analyse",
            "redecide",
            "redecide-recipe",
            "spread-alone",
            "whole",
            "summarise",
        ),
    )
    parser.add_argument("--venvs", type=Path, default=Path("power-venvs"))
    parser.add_argument("--extras", default="all", help="what setup installs (all)")
    parser.add_argument("--kind", choices=tuple(KINDS), default="aa")
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("power-sessions"))
    parser.add_argument(
        "--into",
        type=Path,
        help="summarise: the summary file to add to; "
        "campaign: the folder of the recipe's summaries",
    )
    parser.add_argument(
        "--until",
        type=utc_minute,
        help="campaign: when to stop, in UTC to the minute, e.g. 2026-11-30T21:00Z",
    )
    # After a first --: more ab options; after a second, run options in place of the kind's
    # cells (a tiny trial: -- --max-rounds 3 -- --workload gemm --param n=32).
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, extra = parser.parse_args(argv[:split]), argv[split + 1 :]
    # Absolute: ab starts each side's Python from folders of its own.
    args.venvs, args.out = args.venvs.resolve(), args.out.resolve()
    if args.action in ("whole", "redecide-recipe") and not extra:
        parser.error(f"{args.action} needs the noise table after --: -- NOISE.json")
    if args.action == "setup":
        setup(args.venvs, args.extras)
    elif args.action == "sessions":
        sessions(args.venvs, args.kind, args.count, args.out, extra)
    elif args.action == "campaign":
        if args.until is None or args.into is None:
            parser.error("campaign needs --until YYYY-MM-DDTHH:MMZ and --into FOLDER")
        campaign(args.venvs, args.out, args.into.resolve(), args.until, extra)
    elif args.action == "redecide":
        redecide(args.out)
    elif args.action == "redecide-recipe":
        redecide_recipe(args.out, Path(extra[0]))
    elif args.action == "spread-alone":
        spread_alone(args.out)
    elif args.action == "whole":
        whole(args.out, args.kind, Path(extra[0]))
    elif args.action == "summarise":
        summarise(args.out, args.kind, args.into)
    else:
        analyse(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
