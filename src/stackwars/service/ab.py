"""``stackwars ab``: baseline and candidate measured alternately in one session, until every
cell is decided or the time budget ends (the recommended regression gate).

The sides differ by their Python (another virtual environment: other versions of jax or
torch), by environment variables, or by ``stackwars run`` options; both run the same cells.
Each round runs one fresh worker per cell on each side, as one ``stackwars run --repeat 1``
under the side's Python (``runner/sides.py``), in the order baseline-candidate, then
candidate-baseline (ABBA), so that a drift of the machine during the session reaches both
sides alike: no run-to-run term is added to the comparison, which pools the rounds' run files.

From round ``min_rounds`` on, after each round, every cell is compared; the session stops
when every cell is settled (``settled``), after ``max_rounds``, or when another round would
pass the time budget. Looking after every round is a sequential test: each look uses
``alpha / looks`` (Bonferroni over the looks the session may take), so that the chance of a
false alarm over the whole session stays within ``alpha``.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stackwars.errors import UsageError
from stackwars.results.comparison import ComparisonRow, Gate, compare_runs
from stackwars.runner.child import Interpreter, Limits
from stackwars.runner.sides import run_side, side_version
from stackwars.service import api
from stackwars.timing.compare import DEFAULT_ALPHA, FASTER_UNSURE, SLOWER_UNSURE, UNDECIDED

OWNED_OPTIONS = ("--repeat", "--db", "--json", "--resume", "--label", "--order-seed")
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

    @property
    def looks(self) -> int:
        return self.max_rounds - self.min_rounds + 1

    @property
    def alpha(self) -> float:
        return DEFAULT_ALPHA / self.looks


@dataclass
class Outcome:
    rounds: int = 0
    files: dict[str, list[Path]] = field(default_factory=lambda: {"baseline": [], "candidate": []})
    rows: list[ComparisonRow] = field(default_factory=list)
    stopped: str = ""
    elapsed_s: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)


def check(session: Session) -> None:
    """Refuse what the session cannot do, in one line each."""
    if not 2 <= session.min_rounds <= session.max_rounds:
        raise UsageError(
            f"--min-rounds {session.min_rounds} and --max-rounds {session.max_rounds}: need "
            "2 <= min <= max (3 and 10 by default)"
        )
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


Listener = Callable[[str], None]


def run_session(session: Session, listen: Listener, clock: Callable[[], float]) -> Outcome:
    """Measure round after round (module docstring); the rows compare the pooled rounds."""
    check(session)
    outcome = Outcome()
    for side in (session.baseline, session.candidate):
        outcome.versions[side.name] = side_version(side.interpreter, session.memory_budget)
    start = clock()
    while outcome.rounds < session.max_rounds:
        index = outcome.rounds
        order = (session.baseline, session.candidate)
        for side in order if index % 2 == 0 else order[::-1]:
            outcome.files[side.name].append(_round(session, side, index))
        outcome.rounds += 1
        outcome.elapsed_s = clock() - start
        if outcome.rounds >= session.min_rounds:
            outcome.rows = compare_files(outcome.files, session)
            open_cells = [row for row in outcome.rows if not settled(row, session.gate)]
            listen(_progress(outcome, session, len(open_cells)))
            if not open_cells:
                outcome.stopped = "every cell decided"
                return outcome
        else:
            listen(_progress(outcome, session, None))
        if outcome.elapsed_s / outcome.rounds * (outcome.rounds + 1) > session.time_budget_s:
            outcome.stopped = f"time budget ({session.time_budget_s:g} s) reached"
            return outcome
    outcome.stopped = f"--max-rounds {session.max_rounds} reached"
    return outcome


def _progress(outcome: Outcome, session: Session, open_cells: int | None) -> str:
    text = f"round {outcome.rounds}/{session.max_rounds}, {outcome.elapsed_s:.0f} s"
    if open_cells is None:
        return f"{text}: comparing from round {session.min_rounds}"
    return f"{text}: {len(outcome.rows) - open_cells} of {len(outcome.rows)} cells decided"


def _round(session: Session, side: Side, index: int) -> Path:
    """One side's round: its run file (absolute), or a UsageError saying what went wrong."""
    out = session.out_dir.resolve()
    run_file = out / f"{side.name}-{index + 1:02d}.json"
    argv = ["run", *session.run_options, *side.options, "--repeat", "1", "--quiet"]
    argv += ["--order-seed", str(index), "--label", f"ab-{side.name}"]
    argv += ["--db", str(out / f"{side.name}.sqlite"), "--json", str(run_file)]
    limits = Limits(ROUND_TIMEOUT_S, session.memory_budget)
    folder = out / "rounds" / run_file.stem
    end = run_side(side.interpreter, argv, limits, folder)
    if end.exit != 0 or not run_file.is_file():
        shown = shlex.join(["stackwars", *argv])
        why = end.detail or f"exit status {end.exit}; its output: {folder / 'output.txt'}"
        raise UsageError(f"the {side.name} round {index + 1} ({shown}) failed: {why}")
    return run_file


def compare_files(files: dict[str, list[Path]], session: Session) -> list[ComparisonRow]:
    """The sides' rounds pooled, compared at the session's per-look alpha."""
    base = [cell for path in files["baseline"] for cell in api.read_run_file(path).cells]
    cand = [cell for path in files["candidate"] for cell in api.read_run_file(path).cells]
    return compare_runs(base, cand, session.threshold, alpha=session.alpha)


def settled(row: ComparisonRow, gate: Gate) -> bool:
    """Whether more rounds are useless for this cell: it failed or ran nowhere, it fails the
    gate, it is shown not to regress by the gate's limit, or (no gate) its verdict is neither
    undecided nor unsure of its size."""
    result = row.result
    if result is None or row.note:
        return True
    if gate.fail_above is not None:
        limit = 1 + gate.fail_above / 100
        return result.fails_gate(gate.fail_above) or result.ci_high <= limit
    return result.verdict not in (UNDECIDED, SLOWER_UNSURE, FASTER_UNSURE)


def compare_command(files: Mapping[str, Sequence[Path]]) -> str:
    """The ``stackwars compare`` that shows the pooled rounds again."""
    sides = [",".join(str(path) for path in files[name]) for name in ("baseline", "candidate")]
    return shlex.join(["stackwars", "compare", *sides])


def default_clock() -> float:
    return time.monotonic()
