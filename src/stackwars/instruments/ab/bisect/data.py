"""What a bisection tells and answers, as data: a release's environment (``Prepared``), what a
step decides on (``Watch``), one step (``Step``), the whole bisection (``Bisection``) and the
events ``service.py`` sends as it goes (``Event``, which ``render.py`` draws)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stackwars.instruments.ab.bisect import plan as planning
from stackwars.instruments.ab.bisect.search import CHANGES, Search, step_word
from stackwars.instruments.ab.bisect.verdict import Judgement
from stackwars.results.verdict import Verdict


@dataclass(frozen=True)
class Prepared:
    """A release's environment: made now (in ``seconds``), found ready, or not installable."""

    version: str
    name: str
    folder: Path
    made: bool = False
    seconds: float = 0.0
    skipped: str = ""  # why it could not be installed ("" when ready)


@dataclass(frozen=True)
class Watch:
    """What a step decides on: the cells that changed from good to bad (every cell while
    that is compared) and that change (slower or faster; "" for either)."""

    cells: frozenset[str] = frozenset()
    change: str = ""

    def watched(self, judgements: Sequence[Judgement]) -> list[Judgement]:
        return [j for j in judgements if not self.cells or j.label in self.cells]

    def word(self, judgements: Sequence[Judgement]) -> str:
        words = [j.word for j in self.watched(judgements)]
        return step_word(words, (self.change,) if self.change else CHANGES)

    def hopeless(self, judgements: Sequence[Judgement]) -> bool:
        """Whether every watched cell failed or ran on one side: no round can decide it."""
        watched = self.watched(judgements)
        return bool(watched) and all(j.hopeless for j in watched)


@dataclass(frozen=True)
class Step:
    """One comparison: ``newer`` against ``older``, its cells' judgements, its rounds."""

    older: str
    newer: str
    judgements: tuple[Judgement, ...]
    rounds: int
    seconds: float
    folder: Path
    stopped: str
    watch: Watch = Watch()
    verdict: Verdict | None = None  # the gate's verdict at the step's last look

    @property
    def word(self) -> str:
        return self.watch.word(self.judgements)


@dataclass
class Bisection:
    plan: planning.Plan
    search: Search
    environments: list[Prepared] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    watch: Watch = Watch()  # what good against bad showed
    # None: good against bad was not compared, or could not be told apart (undecided).
    reproducible: bool | None = None
    stopped: str = ""
    elapsed_s: float = 0.0


# What a bisection tells as it goes (report.py renders each): an environment prepared, a step
# measured, or a line of progress (pip's included).
Event = Prepared | Step | str
