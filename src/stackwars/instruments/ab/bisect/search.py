"""The bisection's decisions, on verdicts alone (pure: no process, no clock).

The releases run oldest (good) to newest (bad). Good against bad is compared first, and its
verdict is the change looked for: ``slower`` (a slowdown; it wins when some cells got slower
and others faster) or ``faster`` (a speed-up, whose release a user wants named as much);
``same`` or ``undecided`` means the change is not reproducible. Then each step compares a
release between the last good and the first bad one with the last good one: the change moves
the first bad release down to it, ``same`` or the opposite change moves the last good one up.
A release that cannot be installed, or whose comparison stays ``undecided``, is passed over
(as ``git bisect skip``), so the answer may be a range of releases rather than one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

SLOWER, FASTER, SAME, UNDECIDED = "slower", "faster", "same", "undecided"
WORDS = (SLOWER, FASTER, SAME, UNDECIDED)


@dataclass
class Search:
    """Where the change lies: after ``versions[good]``, at or before ``versions[bad]``."""

    versions: tuple[str, ...]
    good: int = 0
    bad: int = -1
    passed_over: dict[str, str] = field(default_factory=dict)  # version -> why
    change: str = SLOWER  # what good against bad showed: SLOWER or FASTER

    def __post_init__(self) -> None:
        if self.bad < 0:
            self.bad = len(self.versions) - 1

    def open_versions(self) -> list[str]:
        """The releases strictly between the last good and the first bad, not passed over."""
        between = self.versions[self.good + 1 : self.bad]
        return [v for v in between if v not in self.passed_over]

    def next_version(self) -> str | None:
        """The open release nearest the middle of the range (None: nothing left to test)."""
        candidates = self.open_versions()
        if not candidates:
            return None
        middle = (self.good + self.bad) / 2
        return min(candidates, key=lambda v: (abs(self.versions.index(v) - middle), v))

    def record(self, version: str, word: str, why: str = "") -> None:
        """The verdict of ``version`` against the last good release."""
        if word not in WORDS:
            raise ValueError(f"verdict {word!r} is not one of {WORDS}")
        index = self.versions.index(version)
        if word == self.change:
            self.bad = index
        elif word != UNDECIDED:
            self.good = index
        else:
            self.passed_over[version] = why or "undecided"

    def pass_over(self, version: str, why: str) -> None:
        self.passed_over[version] = why

    @property
    def last_good(self) -> str:
        return self.versions[self.good]

    @property
    def first_bad(self) -> str:
        return self.versions[self.bad]

    @property
    def named(self) -> str | None:
        """The first release with the change, when the search has narrowed it to one."""
        return self.first_bad if self.bad == self.good + 1 else None

    def suspects(self) -> list[str]:
        """The releases that may have brought the change: after the last good, to the first
        bad one."""
        return list(self.versions[self.good + 1 : self.bad + 1])


def reproducible(word: str) -> bool:
    """Whether good against bad shows a change to look for."""
    return word in CHANGES


CHANGES = (SLOWER, FASTER)


def step_word(words: Sequence[str], looked_for: Sequence[str] = CHANGES) -> str:
    """One verdict from the watched cells' (``looked_for``: the change, or either before it is
    known): the first change some cell shows, else undecided while one is, else same."""
    for change in looked_for:
        if change in words:
            return change
    if not words or UNDECIDED in words:
        return UNDECIDED
    return SAME
