"""``stackwars ab``: baseline and candidate measured alternately in one session, until every
cell is decided or the time budget ends (the recommended regression gate).

The sides differ by their Python (another virtual environment: other versions of jax or
torch), by environment variables, or by ``stackwars run`` options; both run the same cells.
Each round runs one fresh worker per cell on each side, as one ``stackwars run --repeat 1``
under the side's Python (``instruments/ab/task.py``), the side that goes first drawn at random
each round (RMIT: randomised multiple interleaved trials, seeded and recorded), so that a
drift of the machine during the session reaches both sides alike and the two workers of a
round are exchangeable by design, which the sign-flip test assumes; a fixed ABBA order only
assumed it. No run-to-run term is added to the comparison, which pools the rounds' run files.

Each cell is judged paired by round (``results/comparison.py``'s ``compare_rounds``: one log
ratio of the round's two workers a round), so a drift between rounds cancels instead of
counting as noise. From round ``min_rounds`` on, after each round, every cell is compared and
the gate decided (``results/verdict.py``'s ``verdict_of``: one family of every cell x
measure, Holm at the gate's alpha); the session stops when every cell is settled (failed, or
shown within the limits), after ``max_rounds``, or when another round would pass the time
budget. Looking after every round is a sequential test whose p-values count every look the
design allows (``timing/sequential.py``), so the family's false-alarm budget holds however the
session ends, and a cell failed at one look stays failed: the calibration already paid for
rejecting at any look, so a later look that no longer rejects cannot clear it.

With ``duet``, a round runs both sides at once, each pinned to a core of its own (which side
on which core drawn each round, like the order, and recorded as ``first``: the side on the
first core), each worker with one thread: the round takes about half the time, and a drift of
the machine reaches both sides at the same moment. Which design decides a suite fastest at
equal validity is measured on the machine (its noise table, ``ab/data.py``), not assumed.

A round spends only on what the comparison uses: each side's run is ``--repeat 1`` with
``--second-look 0`` (the run's own check of a second worker is not part of the comparison).
After the first round the session knows what a round costs; when the budget cannot reach the
first look, it stops there and says what budget would (``plan_line``), rather than spend it.
"""

from __future__ import annotations

import os
import random
import secrets
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from stackwars.errors import UsageError
from stackwars.instruments.ab.data import NoiseTable, triage
from stackwars.instruments.ab.task import run_side, side_version
from stackwars.results.comparison import (
    UNDECIDED_ROW,
    ComparisonRow,
    Gate,
    compare_rounds,
    label,
)
from stackwars.results.schema import Cell
from stackwars.results.verdict import Verdict, verdict_of
from stackwars.runner.child import Interpreter, Limits
from stackwars.service import api
from stackwars.timing.compare import FASTER_UNSURE, SLOWER_UNSURE, UNDECIDED
from stackwars.timing.family import holm_level
from stackwars.timing.sequential import FEWEST_ROUNDS, Looks, rounds_to_reach
from stackwars.timing.speeds import Known

OWNED_OPTIONS = (
    "--repeat", "--db", "--json", "--resume", "--label", "--order-seed", "--second-look",
)  # fmt: skip
ROUND_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Side:
    name: str  # "baseline" or "candidate"
    interpreter: Interpreter = field(default_factory=Interpreter)
    options: tuple[str, ...] = ()  # stackwars run options of this side only


@dataclass(frozen=True)
class Session:
    """What to measure (``run_options``: the ``stackwars run`` options both sides share) and
    when to stop."""

    run_options: tuple[str, ...]
    baseline: Side
    candidate: Side
    out_dir: Path
    threshold: float = 0.05
    gate: Gate = field(default_factory=Gate)
    min_rounds: int = 3
    max_rounds: int = 10
    time_budget_s: float = 900.0
    memory_budget: int = 0
    order_seed: int | None = None  # which side goes first each round; None: drawn
    # This machine's noise (ab/data.py): the cells it says the session cannot decide are not
    # gated in this job; None: every cell is gated.
    noise: NoiseTable | None = None
    # Split every cell at its two speeds where its times part (an A/A session writing the
    # noise table: results/speeds.py); otherwise the cells the noise table found split are.
    find_speeds: bool = False
    # Look once, where the budget ends the rounds, at most after max_rounds (one_look_at).
    one_look: bool = False
    # Both sides' rounds at once, each pinned to a core of its own (which side on which drawn
    # each round, like the order), so that a round takes about half the time and both sides
    # see the same moment of the machine (duet benchmarking, Bulej et al. 2020).
    duet: bool = False

    @property
    def looks(self) -> Looks:
        return Looks(self.min_rounds, self.max_rounds)

    def describe_looks(self) -> str:
        if self.min_rounds == self.max_rounds:
            return f"one look after round {self.max_rounds}, paired by round"
        return f"looks after rounds {self.min_rounds} to {self.max_rounds}, paired by round"


@dataclass
class Outcome:
    rounds: int = 0
    files: dict[str, list[Path]] = field(default_factory=lambda: {"baseline": [], "candidate": []})
    rows: list[ComparisonRow] = field(default_factory=list)
    # The gate's verdict over the rows, made when the rounds end (its outcome None when no
    # gate was asked for).
    verdict: Verdict | None = None
    plan: str = ""  # what the first round's cost says the budget can decide
    stopped: str = ""
    looks: str = ""  # the design's looks as the session ran them (one look set at its end)
    elapsed_s: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)
    order_seed: int = 0  # the seed that drew each round's first side
    first: list[str] = field(default_factory=list)  # the side that went first, each round
    # Cells failed at some look (label -> the failure line and its round): they stay failed.
    failed: dict[str, str] = field(default_factory=dict)


def check(session: Session) -> None:
    """Refuse what the session cannot do, in one line each."""
    if not 2 <= session.min_rounds <= session.max_rounds:
        raise UsageError(
            f"--min-rounds {session.min_rounds} and --max-rounds {session.max_rounds}: need "
            "2 <= min <= max (3 and 10 by default)"
        )
    if session.noise is not None and session.gate.time_pass_limit is None:
        raise UsageError(
            "--noise leaves out of the outcome the cells a gate on time cannot decide: give "
            "--fail-above too"
        )
    if session.duet:
        _check_duet(session)
    if session.time_budget_s <= 0:
        raise UsageError(
            f"--time-budget {session.time_budget_s:g} must be a positive number of seconds"
        )
    for option in (*session.run_options, *session.baseline.options, *session.candidate.options):
        name = option.split("=", 1)[0]
        if name in OWNED_OPTIONS:
            raise UsageError(
                f"{name} is set by 'stackwars ab' for each round; leave it out of the run "
                f"options (the session stores its rounds in --out)"
            )


def _check_duet(session: Session) -> None:
    """A duet needs two cores and one thread a worker (a second thread would run on the
    other side's core)."""
    options = list(session.run_options)
    single = any(
        option == "--threads=1" or (option == "--threads" and options[i + 1 : i + 2] == ["1"])
        for i, option in enumerate(options)
    )
    if not single:
        raise UsageError(
            "--duet runs each side on one core, at once: add --threads 1 to the run options "
            "(after --), so that no worker's threads reach the other side's core"
        )
    cores = len(os.sched_getaffinity(0))
    if cores < 2:
        raise UsageError(f"--duet needs two cores this process may use; it may use {cores}")


Listener = Callable[[str], None]


def run_session(session: Session, listen: Listener, clock: Callable[[], float]) -> Outcome:
    """Measure round after round (module docstring); the rows compare the pooled rounds."""
    check(session)
    outcome = Outcome()
    for side in (session.baseline, session.candidate):
        outcome.versions[side.name] = side_version(side.interpreter, session.memory_budget)
    start = clock()
    outcome.order_seed = secrets.randbits(31) if session.order_seed is None else session.order_seed
    outcome.stopped, session = _measure(session, outcome, listen, lambda: clock() - start)
    outcome.looks = session.describe_looks()
    outcome.rows = compare_files(outcome.files, session)
    outcome.verdict = _verdict(outcome.rows, session, outcome.failed)
    return outcome


def _verdict(rows: list[ComparisonRow], session: Session, failed: dict[str, str]) -> Verdict:
    return verdict_of(rows, session.gate, session.describe_looks(), failed_before=failed,
                      not_gated=not_gated(rows, session),
                      aa_spreads=aa_spreads(session))  # fmt: skip


def not_gated(rows: Sequence[ComparisonRow], session: Session) -> dict[str, str]:
    """The cells the session's noise table says its rounds cannot show within the pass limit
    on time (and on memory, when the gate has a memory limit), with why (ab/data.py); none
    without a table or a gate on time."""
    gate, limit = session.gate, session.gate.time_pass_limit
    if session.noise is None or limit is None:
        return {}
    labels = [row.label for row in rows]
    return triage(session.noise, labels, limit, gate.alpha, session.max_rounds,
                  memory_limit_pct=gate.fail_memory_above)  # fmt: skip


def aa_spreads(session: Session) -> dict[str, float]:
    """Each cell's spread in the machine's A/A rounds, from the session's noise table (none
    without one): what a slow round must stand out from (results/comparison.py)."""
    if session.noise is None:
        return {}
    return {label: noise.spread for label, noise in session.noise.cells.items()}


def _measure(
    session: Session, outcome: Outcome, listen: Listener, elapsed: Callable[[], float]
) -> tuple[str, Session]:
    """Rounds until the session stops: why it stopped, and the session as designed (with
    ``one_look``, its one look placed after round 1)."""
    draw = random.Random(outcome.order_seed)
    while outcome.rounds < session.max_rounds:
        index = outcome.rounds
        order = (session.baseline, session.candidate)
        order = order if draw.random() < 0.5 else order[::-1]
        outcome.first.append(order[0].name)  # with --duet: the side on the first core
        rounds = (
            _duet(session, order, index)
            if session.duet
            else [_round(session, side, index) for side in order]
        )
        for side, path in zip(order, rounds, strict=True):
            outcome.files[side.name].append(path)
        outcome.rounds += 1
        outcome.elapsed_s = elapsed()
        affordable = int(session.time_budget_s // (outcome.elapsed_s / outcome.rounds))
        if outcome.rounds == 1:
            session = one_look_at(session) if session.one_look else session
            outcome.plan = plan_line(session, outcome, affordable)
            listen(outcome.plan)
            if affordable < (FEWEST_ROUNDS if session.one_look else session.min_rounds):
                why = f"the time budget cannot reach the first look (round {session.min_rounds})"
                return why, session
        if outcome.rounds >= session.min_rounds:
            outcome.rows = compare_files(outcome.files, session)
            _remember_failures(outcome, session)
            open_cells = open_rows(outcome.rows, session, outcome.failed)
            listen(_progress(outcome, session, len(open_cells)))
            if not open_cells:
                return "every cell decided", session
        else:
            listen(_progress(outcome, session, None))
        if outcome.rounds + 1 > affordable:
            why, moved = (
                f"time budget ({session.time_budget_s:g} s) reached",
                _look_now(session, outcome.rounds),
            )
            if moved is not session:
                why += f": its one look is after round {outcome.rounds}, where the budget ended"
            return why, moved
    return f"--max-rounds {session.max_rounds} reached", session


def one_look_at(session: Session) -> Session:
    """``session`` looking once, after ``max_rounds`` (at least two) unless the budget ends
    the rounds before (``_look_now``): where the look falls is decided by the rounds'
    durations alone, never by what they measured, so its max-T keeps its level. Planning it
    at the first round's cost instead wasted the budget whenever that round was the slowest
    (cold caches: a session of 2026-11-29 planned 39 rounds at 23 s, ran them at 18 s and
    left 200 s of its 900 unspent) and judged nothing when later rounds were slower."""
    rounds = max(FEWEST_ROUNDS, session.max_rounds)
    return replace(session, min_rounds=rounds, max_rounds=rounds)


def _look_now(session: Session, rounds: int) -> Session:
    """With ``one_look``, its look moved to round ``rounds``, where the budget ended the
    rounds (``one_look_at``), so that the rounds the session paid for are judged."""
    if not session.one_look or rounds >= session.max_rounds or rounds < FEWEST_ROUNDS:
        return session
    return replace(session, min_rounds=rounds, max_rounds=rounds)


def plan_line(session: Session, outcome: Outcome, affordable: int) -> str:
    """What the first round's cost lets the budget decide, and what budget would decide more:
    the first look needs ``min_rounds`` rounds, and failing a cell needs the rounds whose
    sign-flip p-value can beat the family's first Holm level (``timing/sequential.py``)."""
    per_round = outcome.elapsed_s / max(outcome.rounds, 1)
    cells = len(api.read_run_file(outcome.files["baseline"][0]).cells)
    measures = (session.gate.fail_above is not None) + (session.gate.fail_memory_above is not None)
    # One look fails by max-T over the whole family (its floor 2^-n against alpha); looks
    # after every round by Holm (2^-n against alpha / m): results/comparison.py's _fail_family.
    level = session.gate.alpha
    if session.looks.count > 1:
        level = holm_level(level, cells * max(measures, 1))
    to_fail = rounds_to_reach(level)
    within = min(affordable, session.max_rounds)
    look = f"after round {session.min_rounds}"
    if session.one_look:
        look = f"where the budget ends the rounds (at this cost after round {within})"
    text = (
        f"a round takes {per_round:.0f} s: the budget ({session.time_budget_s:g} s) allows "
        f"{within} round(s); the first look is {look}, and failing one of {cells} cell(s) "
        f"needs at least {to_fail} rounds"
    )
    needed = to_fail if session.one_look else max(session.min_rounds, to_fail)
    if within < needed:
        budget = needed * per_round
        text += (
            f": this session cannot fail a cell; --time-budget {budget:.0f}"
            + (f" --max-rounds {needed}" if session.max_rounds < needed else "")
            + " (or fewer cells) would let it"
        )
    return text


def _progress(outcome: Outcome, session: Session, open_cells: int | None) -> str:
    text = f"round {outcome.rounds}/{session.max_rounds}, {outcome.elapsed_s:.0f} s"
    if open_cells is None:
        return f"{text}: comparing from round {session.min_rounds}"
    return f"{text}: {len(outcome.rows) - open_cells} of {len(outcome.rows)} cells decided"


def _duet(session: Session, order: Sequence[Side], index: int) -> list[Path]:
    """Both sides' rounds at once, the first side on the first of this process's cores, the
    second on the next. The second runs in a thread of its own, a daemon: on Ctrl-C, which
    stops the first here as it stops any round, the process ends and the second's worker
    dies with it (each worker asks to be killed when its parent goes)."""
    cores = tuple(sorted(os.sched_getaffinity(0))[:2])
    found: list[Path | BaseException] = []

    def second() -> None:
        try:
            found.append(_round(session, order[1], index, (cores[1],)))
        except BaseException as exc:  # raised again below, in the session's thread
            found.append(exc)

    thread = threading.Thread(target=second, name=f"ab duet round {index + 1}", daemon=True)
    thread.start()
    first = _round(session, order[0], index, (cores[0],))
    thread.join()
    other = found[0]
    if isinstance(other, BaseException):
        raise other
    return [first, other]


def _round(session: Session, side: Side, index: int, cpus: tuple[int, ...] = ()) -> Path:
    """One side's round: its run file (absolute), or a UsageError saying what went wrong;
    on ``cpus`` only when given (a duet: the memory budget is then halved, the other side's
    round running beside it)."""
    out = session.out_dir.resolve()
    run_file = out / f"{side.name}-{index + 1:02d}.json"
    argv = ["run", *session.run_options, *side.options, "--repeat", "1", "--second-look", "0"]
    argv += ["--quiet"]
    argv += ["--order-seed", str(index), "--label", f"ab-{side.name}"]
    argv += ["--db", str(out / f"{side.name}.sqlite"), "--json", str(run_file)]
    limits = Limits(ROUND_TIMEOUT_S, session.memory_budget // (2 if cpus else 1))
    folder = out / "rounds" / run_file.stem
    end = run_side(side.interpreter, argv, limits, folder, cpus)
    if end.exit != 0 or not run_file.is_file():
        shown = shlex.join(["stackwars", *argv])
        why = end.detail or f"exit status {end.exit}; its output: {folder / 'output.txt'}"
        raise UsageError(f"the {side.name} round {index + 1} ({shown}) failed: {why}")
    return run_file


def compare_files(files: dict[str, list[Path]], session: Session) -> list[ComparisonRow]:
    """The sides' rounds, each cell paired by round, on the session's design."""
    rounds = min(len(files["baseline"]), len(files["candidate"]))
    base = [api.read_run_file(path).cells for path in files["baseline"][:rounds]]
    cand = [api.read_run_file(path).cells for path in files["candidate"][:rounds]]
    gate = session.gate
    return compare_rounds(base, cand, session.threshold, session.looks, gate.alpha,
                          split=speeds_to_split(session, base))  # fmt: skip


def speeds_to_split(session: Session, rounds: list[list[Cell]]) -> dict[str, Known | None]:
    """The cells to split at their two speeds (results/speeds.py), each with what the noise
    table measured of its speeds (None: the session's own deviation within a speed)."""
    if session.find_speeds:
        return {label(cell): None for cells in rounds for cell in cells}
    return {} if session.noise is None else dict(session.noise.known_speeds())


def _remember_failures(outcome: Outcome, session: Session) -> None:
    """The cells this look fails on time or memory, kept with the round that failed them."""
    if not session.gate.active:
        return
    verdict = _verdict(outcome.rows, session, outcome.failed)
    for row, line in zip(verdict.rows, verdict.failure_lines, strict=True):
        if line and row.label not in outcome.failed:
            outcome.failed[row.label] = f"{line} (round {outcome.rounds})"


def open_rows(
    rows: list[ComparisonRow], session: Session, failed: dict[str, str] | None = None
) -> list[ComparisonRow]:
    """The rows more rounds could still decide: with a gate, those neither failed (now or at
    an earlier look) nor shown within its limits; without one, those whose verdict is
    undecided or unsure of its size."""
    if session.gate.active:
        states = _verdict(rows, session, failed or {}).states
        return [row for row, state in zip(rows, states, strict=True) if not settled(state)]
    return [row for row in rows if row.judged and _unsure(row)]


def settled(state: str) -> bool:
    """Whether more rounds are useless for a row in this gate state (failed, shown within the
    limits, or outside the gate)."""
    return state != UNDECIDED_ROW


def _unsure(row: ComparisonRow) -> bool:
    assert row.result is not None
    return row.result.verdict in (UNDECIDED, SLOWER_UNSURE, FASTER_UNSURE)


def compare_command(files: Mapping[str, Sequence[Path]]) -> str:
    """The ``stackwars compare`` that shows the pooled rounds again."""
    sides = [",".join(str(path) for path in files[name]) for name in ("baseline", "candidate")]
    return shlex.join(["stackwars", "compare", *sides])


def default_clock() -> float:
    return time.monotonic()
