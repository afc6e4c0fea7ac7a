"""The gate's verdict over one comparison, as data: what ``compare``, ``show --baseline``, ``ab``
and ``bisect`` print and exit with, and what ``stackwars.compare`` returns.

One function builds it (:func:`verdict_of`): the compared rows and the gate's settings
(:func:`gate_settings`, the one place they are checked) in, a :class:`Verdict` out: the
outcome (``pass``, ``fail``, ``underpowered``; ``None`` when no gate was asked for), the exit
status it maps to, the family of tests it was controlled over and the rows it judged, with
each row's state. The rule itself is ``results/comparison.py``'s ``decide``; rendering is
``report/comparison.py``'s, which writes :data:`COMPARISON_FORMAT`.

Bad input (an unknown run, a percentage out of range) is not an outcome: it raises
``UsageError``, exit status 2 at the command line, as argparse's errors are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackwars.errors import UsageError
from stackwars.results.comparison import (
    FAIL,
    NOT_JUDGED,
    PASS,
    UNDERPOWERED,
    ComparisonRow,
    Gate,
    GateVerdict,
    decide,
)
from stackwars.timing.family import DEFAULT_FAMILY_ALPHA, Family

# History of COMPARISON_FORMAT (what `compare --json` and `ab --json` write; its JSON Schema is
# results/comparison.schema.json):
# * 1 (2026-11-25): first versioned form: {"format", "rows", "gate"}; each row its medians,
#   note, broken (ok in the baseline, not in the candidate), comparison (with variance
#   components and workers_needed) and memory changes. Before: a bare list of rows.
# * 2 (2026-11-26, issue 34): "outcome" (pass, fail or underpowered; null without a gate),
#   "exit_status", "family" (procedure, alpha, hypotheses, looks), "undecided" lines; each
#   row its "gate_state"; a comparison's "unit" may be "round" (ab: paired by round) and its
#   "evidence" holds the test's parts; "gate" gains alpha and fail_on_undecided.
# * 3 (2026-11-28, issue 54): "gate" gains pass_below and fail_on_count_change; each row its
#   "counts" (the deterministic counts that changed, results/counts.py); a paired
#   comparison's evidence its round "indices"; the family's procedure may be
#   "westfall-young max-T" (a session that looks once).
# * 4 (2026-11-29, issue 54): "not_gated" lines (ab --noise: cells left undecided that the
#   noise measured before the session said it could not decide); a row's "gate_state" may be
#   "not gated".
# * 5 (2026-11-30, issue 54): each row its "speeds" (null, or a cell split at its two speeds:
#   the speeds, its comparisons within them and of the slow speed's share, and what the
#   noise table it was planned on knew of them, with its A/A slow share, or null); a paired
#   comparison's evidence its "trim". The schema now allows the max-T procedure that format 3
#   already wrote (its enum had only "holm").
COMPARISON_FORMAT = 5

# The gate's exit statuses (2 is bad input, argparse's and UsageError's): distinct, so that a
# CI step can tell "regressed" from "could not tell" (docs/ci.md shows both uses).
EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_UNDERPOWERED = 3
EXIT_STATUS = {PASS: EXIT_PASS, FAIL: EXIT_FAIL, UNDERPOWERED: EXIT_UNDERPOWERED}

DEFAULT_ALPHA_PCT = DEFAULT_FAMILY_ALPHA * 100
ONE_LOOK = "one look"


def gate_settings(
    fail_above: float | None = None,
    fail_memory_above: float | None = None,
    *,
    alpha_pct: float = DEFAULT_ALPHA_PCT,
    allow_failures: bool = False,
    fail_on_undecided: bool = False,
    pass_below: float | None = None,
    fail_on_count_change: bool = False,
) -> Gate:
    """The gate asked for, checked: limits and ``alpha_pct`` in percent, as the options
    ``--fail-above``, ``--pass-below``, ``--fail-memory-above`` and ``--alpha`` give them."""
    if not 0 < alpha_pct < 50:
        raise UsageError(f"--alpha {alpha_pct:g} must be a percentage in (0, 50) (5 by default)")
    if pass_below is not None and fail_above is None:
        raise UsageError("--pass-below is the pass limit of a gate on time: give --fail-above too")
    if pass_below is not None and pass_below <= 0:
        raise UsageError(f"--pass-below {pass_below:g} must be a percentage above 0")
    if fail_on_count_change and fail_above is None and fail_memory_above is None:
        raise UsageError(
            "--fail-on-count-change stands beside the timed gate: give --fail-above too"
        )
    return Gate(fail_above, fail_memory_above, allow_failures, alpha_pct / 100,
                fail_on_undecided, pass_below, fail_on_count_change)  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    """A comparison judged by a gate: the rows it judged, the gate's settings, its decision
    (``None`` when the gate has no limit: nothing can fail) and, when the sides' runs come
    from different machines, why no row was judged.

    ``outcome`` is ``pass``, ``fail``, ``underpowered`` or ``None`` (no gate);
    ``exit_status`` the command line's (0, 1, 3; 0 without a gate)."""

    rows: tuple[ComparisonRow, ...]
    gate: Gate
    decision: GateVerdict | None = None
    mismatch: str = ""  # why the sides are not comparable ('' when they are)

    @property
    def format(self) -> int:
        """The version of the JSON form report/comparison.py writes of it."""
        return COMPARISON_FORMAT

    @property
    def outcome(self) -> str | None:
        return None if self.decision is None else self.decision.outcome

    @property
    def exit_status(self) -> int:
        return EXIT_PASS if self.outcome is None else EXIT_STATUS[self.outcome]

    @property
    def family(self) -> Family | None:
        """What the false-alarm budget was controlled over (None without a gate)."""
        return None if self.decision is None else self.decision.family

    @property
    def states(self) -> tuple[str, ...]:
        """Each row's state in the gate (results/comparison.py; all not judged without one)."""
        return self.decision.states if self.decision else (NOT_JUDGED,) * len(self.rows)

    @property
    def failures(self) -> tuple[str, ...]:
        return self.decision.failures if self.decision else ()

    @property
    def failure_lines(self) -> tuple[str, ...]:
        """Per row, the regression line that fails it ('' for none)."""
        return self.decision.regressions if self.decision else ("",) * len(self.rows)

    @property
    def undecided(self) -> tuple[str, ...]:
        return self.decision.undecided if self.decision else ()

    @property
    def not_gated(self) -> tuple[str, ...]:
        return self.decision.not_gated if self.decision else ()

    def headline(self) -> str:
        """The gate's first line (``Gate: PASS (...; family: ...)``); '' without a gate."""
        return "" if self.decision is None else self.decision.headline()


def verdict_of(
    rows: Sequence[ComparisonRow],
    gate: Gate,
    looks: str = ONE_LOOK,
    mismatch: str = "",
    *,
    failed_before: Mapping[str, str] | None = None,
    not_gated: Mapping[str, str] | None = None,
    aa_spreads: Mapping[str, float] | None = None,
) -> Verdict:
    """The one way a verdict is made: ``rows`` judged by ``gate`` (its family's looks
    described by ``looks``); no decision when the gate has no limit. ``failed_before``: the
    cells a sequential session (``ab``) failed at an earlier look, which stay failed;
    ``not_gated``: the cells its noise triage leaves out of the outcome, with why;
    ``aa_spreads``: the cells' spreads in the machine's A/A rounds (``decide``)."""
    rows = tuple(rows)
    decision = None
    if gate.active:
        decision = decide(list(rows), gate, looks, failed_before=failed_before,
                          not_gated=not_gated, aa_spreads=aa_spreads)  # fmt: skip
    return Verdict(rows, gate, decision, mismatch)
