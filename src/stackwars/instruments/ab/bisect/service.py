"""Running a bisection: the releases from the package index, an environment per release
(``service/environments.create``: made once, found ready the next time, pip's cache keeping
the wheels), and interleaved comparisons release against release (ab's rounds, ``service.py``
one folder up: the first side of each round drawn at random, a fresh worker per cell and
side, each side a ``stackwars run`` whose stacks run in the release's environment), judged
through ``verdict.py``, steered by ``search.py``.

Everything it makes is kept: each environment under ``stackwars env``'s root, each step's
rounds (run files and their stores) in a folder of its own under the bisection's folder.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stackwars.config import default_memory_budget
from stackwars.errors import UsageError
from stackwars.frameworks import environments as places
from stackwars.instruments.ab import service as ab
from stackwars.instruments.ab.bisect import plan as planning
from stackwars.instruments.ab.bisect.data import Bisection, Event, Prepared, Step, Watch
from stackwars.instruments.ab.bisect.search import UNDECIDED, Search, reproducible
from stackwars.instruments.ab.bisect.verdict import Judgement, judged
from stackwars.results.schema import Cell
from stackwars.results.verdict import DEFAULT_ALPHA_PCT, Verdict, gate_settings
from stackwars.runner.child import run_command
from stackwars.service import api, environments

INDEX_TIMEOUT_S = 120.0
PYPI_JSON = "https://pypi.org/pypi"  # PyPI's JSON API: each release's upload times
OTHER_PYTHON = (
    f"cannot be installed: the index has it for other Pythons only (Requires-Python excludes "
    f"{sys.version_info.major}.{sys.version_info.minor})"
)


@dataclass(frozen=True)
class Request:
    plan: planning.Plan
    run_options: tuple[str, ...]  # the stackwars run options of the cells (no --stacks)
    out_dir: Path
    threshold: float = 0.05
    min_rounds: int = 3
    max_rounds: int = 10
    time_budget_s: float = 1800.0
    memory_budget: int = field(default_factory=default_memory_budget)
    alpha_pct: float = DEFAULT_ALPHA_PCT  # --alpha: each step's false-alarm budget


Listener = Callable[[Event], None]
Create = Callable[..., environments.Creation]
Compare = Callable[[str, str, Watch, float], Step]


def index_versions(package: str, *options: str) -> list[str]:
    """The releases of ``package`` that pip's configured index offers this Python (with
    ``--ignore-requires-python``: also those made for other Pythons only)."""
    lines: list[str] = []
    argv = [sys.executable, "-m", "pip", "index", "versions", package, *options]
    with tempfile.TemporaryDirectory(prefix="stackwars-index-") as scratch:
        code = run_command(
            [*argv, "--disable-pip-version-check"], timeout_s=INDEX_TIMEOUT_S,
            log=Path(scratch) / "pip.log", on_line=lines.append,
        )  # fmt: skip
    if code != 0:
        said = next((line for line in reversed(lines) if line.strip()), "nothing")
        raise UsageError(
            f"pip index versions {package} ended with exit status {code} ({said}); fix: "
            "check pip's index settings (pip config list), or give the releases with --versions"
        )
    return planning.index_versions("\n".join(lines), package)


def upload_dates(package: str) -> dict[str, datetime.date]:
    """When each release of ``package`` was uploaded, from PyPI's JSON API (pip's index
    listing has no dates)."""
    url = f"{PYPI_JSON}/{package}/json"
    try:
        with urllib.request.urlopen(url, timeout=INDEX_TIMEOUT_S) as answer:
            text = answer.read().decode("utf-8")
    except OSError as exc:
        raise UsageError(
            f"{url} did not answer ({exc}); fix: give the releases as versions, not dates "
            "(pip index versions " + package + " lists them)"
        ) from None
    return planning.upload_dates(text, package)


def check(request: Request) -> None:
    """Refuse, in one line, what no step could do: ab's own checks of rounds, budget and
    run options, on a session shaped like the steps'."""
    for pin in request.plan.extra_pins:
        name = pin.partition("==")[0].strip()
        if "==" not in pin or name in planning.packages(request.plan.framework):
            raise UsageError(
                f"--pin {pin!r}: pin another package exactly (PACKAGE==VERSION); the bisected "
                "framework's own packages are pinned at each release"
            )
    ab.check(_session(request, request.out_dir, ("", "")))


def planned_states(plan: planning.Plan) -> dict[str, str]:
    """What preparing each release's environment would do, read from its files ('' when it
    looks reusable; whether it really is, a worker there checks when it is used)."""
    states = {}
    for version in plan.versions:
        name = plan.environment(version)
        if version in plan.other_python:
            states[name] = f"skipped, {OTHER_PYTHON}"
        elif places.spec_of(name) is None:
            states[name] = "to create"
        else:
            clash = _clash(plan, version)
            states[name] = f"skipped, {clash}" if clash else places.absent_reason(name)
    return states


def _clash(plan: planning.Plan, version: str) -> str:
    """Why the existing environment of ``version``'s name cannot serve ('' when it holds
    every pin the release needs: a user's ``stackwars env create jax-0.9.2 --pin ...`` with
    optax besides serves as it is, and is never remade with fewer pins)."""
    name = plan.environment(version)
    recorded = places.spec_of(name)
    missing = set(plan.pins(version)) - set(recorded.packages if recorded else ())
    if recorded is None or not missing:
        return ""
    return (
        f"environment {name} exists with other pins ({', '.join(recorded.packages)}; this "
        f"release needs {', '.join(sorted(missing))}); fix: stackwars env remove {name}"
    )


def prepare(plan: planning.Plan, version: str, create: Create, say: Listener) -> Prepared:
    """The environment of ``version``: reused when one of its name holds the release's pins
    (a second bisection makes nothing), made otherwise; one that cannot be installed is
    skipped with pip's reason."""
    name = plan.environment(version)
    clash = _clash(plan, version)
    if clash:
        return Prepared(version, name, places.folder(name), skipped=clash)
    # An existing one is created from its own recorded pins: found ready, or remade as it was.
    pins = [] if places.spec_of(name) else list(plan.pins(version))
    try:
        creation = create(name, pins, force=False, say=say)
    except UsageError as exc:
        return Prepared(version, name, places.folder(name), skipped=str(exc))
    return Prepared(version, name, creation.state.folder, creation.made, creation.seconds)


def measure_step(
    request: Request, index: int, listen: Listener, clock: Callable[[], float]
) -> Compare:
    """Step ``index``'s comparison: ab's rounds, from ``min_rounds`` judged after each, until
    the watched cells are decided, ``max_rounds`` or the time left."""

    def compare(older: str, newer: str, watch: Watch, budget_s: float) -> Step:
        folder = request.out_dir / f"step-{index:02d}-{older}-vs-{newer}"
        session = dataclasses.replace(
            _session(request, folder, (older, newer)), time_budget_s=budget_s
        )
        return _rounds(session, (older, newer), watch, listen, clock)

    return compare


def _session(request: Request, folder: Path, versions: tuple[str, str]) -> ab.Session:
    """A step as an ab session: the older release the baseline, the newer the candidate,
    the same cells in each one's environment."""
    stacks = [request.plan.stacks_in(version) if version else "" for version in versions]
    return ab.Session(
        run_options=request.run_options,
        baseline=ab.Side("baseline", options=("--stacks", stacks[0])),
        candidate=ab.Side("candidate", options=("--stacks", stacks[1])),
        out_dir=folder, threshold=request.threshold,
        gate=gate_settings(
            request.threshold * 100, alpha_pct=request.alpha_pct, pass_below=request.threshold * 100
        ),
        min_rounds=request.min_rounds, max_rounds=request.max_rounds,
        time_budget_s=request.time_budget_s, memory_budget=request.memory_budget,
    )  # fmt: skip


def _rounds(
    session: ab.Session,
    versions: tuple[str, str],
    watch: Watch,
    listen: Listener,
    clock: Callable[[], float],
) -> Step:
    files: dict[str, list[Path]] = {"baseline": [], "candidate": []}
    judgements: list[Judgement] = []
    verdict: Verdict | None = None
    start, stopped, rounds = clock(), "", 0
    while not stopped:
        order = (session.baseline, session.candidate)
        for side in order if rounds % 2 == 0 else order[::-1]:
            # ab's own round (its run options, files and failures), so that a step is
            # measured exactly as `stackwars ab` measures.
            files[side.name].append(ab._round(session, side, rounds))
        rounds += 1
        elapsed = clock() - start
        if rounds >= session.min_rounds:
            # Every look is a test: the step's alpha is shared over the looks it may take.
            looks = session.max_rounds - session.min_rounds + 1
            verdict, judgements = judged(
                _cells(files["baseline"]), _cells(files["candidate"]), session.threshold,
                session.gate.alpha / looks, _looks(session, looks),
            )  # fmt: skip
        listen(f"  round {rounds}: {elapsed:.0f} s")
        stopped = _stop(session, watch, judgements, rounds, elapsed)
    seconds = clock() - start
    return Step(
        *versions, tuple(judgements), rounds, seconds, session.out_dir, stopped, watch, verdict
    )


def _looks(session: ab.Session, looks: int) -> str:
    """A step's looks, as its gate family describes them: each at its share of --alpha."""
    return (
        f"one of {looks} looks, rounds {session.min_rounds} to {session.max_rounds}, "
        f"each at 1/{looks} of --alpha"
    )


def _stop(
    session: ab.Session,
    watch: Watch,
    judgements: Sequence[Judgement],
    rounds: int,
    elapsed: float,
) -> str:
    """Why the step ends after this round ('' to go on)."""
    if judgements and watch.word(judgements) != UNDECIDED:
        return "decided"
    if watch.hopeless(judgements):
        return "the cells failed or ran on one side only: more rounds cannot decide them"
    if rounds >= session.max_rounds:
        return f"--max-rounds {session.max_rounds} reached"
    if elapsed / rounds * (rounds + 1) > session.time_budget_s:
        return "time budget reached"
    return ""


def _cells(paths: Sequence[Path]) -> list[Cell]:
    return [cell for path in paths for cell in api.read_run_file(path).cells]


def run(
    request: Request,
    listen: Listener,
    clock: Callable[[], float],
    create: Create = environments.create,
    compare_of: Callable[[int], Compare] | None = None,
) -> Bisection:
    """Good against bad first; then step after step until one release is named, nothing is
    left to test, or the time budget ends (module docstring). ``compare_of(index)`` measures
    step ``index`` (ab's rounds unless given)."""
    steps = compare_of or (lambda index: measure_step(request, index, listen, clock))
    return _Bisector(request, listen, clock, create, steps).run()


@dataclass
class _Bisector:
    request: Request
    listen: Listener
    clock: Callable[[], float]
    create: Create
    steps: Callable[[int], Compare]

    def __post_init__(self) -> None:
        self.bisection = Bisection(self.request.plan, Search(self.request.plan.versions))
        self.start = self.clock()

    def run(self) -> Bisection:
        plan, bisection = self.request.plan, self.bisection
        for version in plan.other_python:
            bisection.search.pass_over(version, OTHER_PYTHON)
        for version in (plan.good, plan.bad):
            if self.prepared(version).skipped:
                bisection.stopped = f"{version} cannot be installed, nothing to compare it with"
                return bisection
        if not self.affordable():
            bisection.stopped = "time budget spent on the environments of good and bad"
            return bisection
        self.first(self.steps(0)(plan.good, plan.bad, Watch(), self.left()))
        while bisection.reproducible and not bisection.stopped:
            self.step()
        self.left()
        return bisection

    def left(self) -> float:
        self.bisection.elapsed_s = self.clock() - self.start
        return self.request.time_budget_s - self.bisection.elapsed_s

    def affordable(self) -> bool:
        """Whether the time left holds a step's first judged look, at the rounds' pace."""
        steps = self.bisection.steps
        rounds = sum(step.rounds for step in steps)
        pace = sum(step.seconds for step in steps) / rounds if rounds else 0.0
        return self.left() > pace * self.request.min_rounds

    def prepared(self, version: str) -> Prepared:
        self.listen(f"environment for {self.request.plan.framework} {version}")
        prepared = prepare(self.request.plan, version, self.create, self.listen)
        self.bisection.environments.append(prepared)
        self.listen(prepared)
        return prepared

    def first(self, step: Step) -> None:
        bisection = self.bisection
        bisection.steps.append(step)
        self.listen(step)
        pair = f"{step.newer} against {step.older}"
        if step.word == UNDECIDED:
            # Not "not reproducible": nothing was shown either way (a two-speed cell, say).
            bisection.stopped = (
                f"undecided: {pair} could not be told apart ({step.stopped}); more rounds "
                "(--max-rounds, --time-budget) or a cell that lands at one speed would decide it"
            )
            return
        bisection.reproducible = reproducible(step.word)
        if not bisection.reproducible:
            bisection.stopped = f"not reproducible: {pair} is {step.word} ({step.stopped})"
            return
        changed = frozenset(j.label for j in step.judgements if j.word == step.word)
        bisection.watch = Watch(changed, step.word)
        bisection.search.change = step.word

    def step(self) -> None:
        bisection, search = self.bisection, self.bisection.search
        version = search.next_version()
        if version is None:
            bisection.stopped = "nothing left to test"
            return
        if not self.affordable():
            bisection.stopped = "time budget reached"
            return
        prepared = self.prepared(version)
        if prepared.skipped:
            search.pass_over(version, f"cannot be installed: {prepared.skipped}")
            return
        compare = self.steps(len(bisection.steps))
        step = compare(search.last_good, version, bisection.watch, self.left())
        bisection.steps.append(step)
        self.listen(step)
        search.record(version, step.word, f"undecided after {step.rounds} rounds ({step.stopped})")
