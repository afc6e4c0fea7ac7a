"""stackwars bisect (instruments/ab/bisect/): the plan from a recorded package-index answer, bad
input in one line, the decisions on measurements made from a table of ratios per release
(judged by the gate through bisect/verdict.py), the skip of a release that cannot be
installed, the time budget, and, in a borrowed environment, the install cache and a real step
of ab's rounds."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.errors import UsageError
from stackwars.frameworks import environments
from stackwars.instruments.ab.bisect import data, service
from stackwars.instruments.ab.bisect import plan as planning
from stackwars.instruments.ab.bisect import render as report
from stackwars.instruments.ab.bisect.search import FASTER, SAME, SLOWER, UNDECIDED, Search
from stackwars.instruments.ab.bisect.verdict import judge
from stackwars.results.schema import Cell, Steady
from stackwars.runner import environments as running
from stackwars.service import environments as creating
from stackwars.service.environments import Creation, EnvironmentState

DATA = Path(__file__).parent / "data" / "bisect"
# `pip index versions jax` as this machine's index answered it on 2026-11-26.
INDEX_ANSWER = (DATA / "pip-index-versions-jax.txt").read_text(encoding="utf-8")
# ... and with --ignore-requires-python: also the releases for other Pythons only (0.11+).
ANY_PYTHON = (DATA / "pip-index-versions-jax-ignore-requires-python.txt").read_text("utf-8")
# PyPI's JSON answer for jax, recorded 2026-11-26 and trimmed to the 0.8.3-0.10.x releases.
PYPI_ANSWER = (DATA / "pypi-json-jax.json").read_text(encoding="utf-8")
RELEASES = ("0.9.2", "0.10.0", "0.10.1", "0.10.2")
DRY = ["bisect", "--stacks", "jax:eager", "--dry-run", "--versions", ",".join(RELEASES)]
CELLS = ["--", "--workload", "selu", "--param", "n=64"]
# ab's per-look alpha at its default rounds (3 to 10: eight looks).
ALPHA = 0.05 / 8


@pytest.fixture(autouse=True)
def own_environments(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test's environments in a folder of its own, checked afresh."""
    monkeypatch.setenv(environments.ROOT_VARIABLE, str(tmp_path / "environments"))
    running.forget_problems()


def test_the_plan_comes_from_the_recorded_index_answer() -> None:
    available = planning.index_versions(INDEX_ANSWER, "jax")
    assert available[-4:] == list(RELEASES)
    assert available.index("0.9.0.1") == available.index("0.9.0") + 1
    plan = planning.plan("jax:eager,jax:jit", "0.8.3", "0.10.2", available, ["optax==0.2.4"])
    assert plan.versions == ("0.8.3", "0.9.0", "0.9.0.1", "0.9.1", *RELEASES)
    assert plan.environment("0.9.0.1") == "jax-0.9.0.1"
    assert plan.pins("0.10.1") == ("jax==0.10.1", "jaxlib==0.10.1", "optax==0.2.4")
    assert plan.stacks_in("0.9.2") == "jax:eager@jax-0.9.2,jax:jit@jax-0.9.2"


def test_a_release_for_other_pythons_only_is_named_as_such() -> None:
    available = planning.index_versions(INDEX_ANSWER, "jax")
    elsewhere = planning.index_versions(ANY_PYTHON, "jax")
    with pytest.raises(UsageError, match=r"--bad 0\.11\.2: .* other Pythons only"):
        planning.plan("jax:eager", "0.10.2", "0.11.2", available, [], elsewhere=elsewhere)
    # As if 0.10.1 had no wheel for this Python: listed, and skipped with the reason.
    fewer = [v for v in available if v != "0.10.1"]
    plan = planning.plan("jax:eager", "0.9.2", "0.10.2", fewer, [], elsewhere=elsewhere)
    assert plan.versions == RELEASES and plan.other_python == ("0.10.1",)
    assert "Requires-Python" in service.planned_states(plan)["jax-0.10.1"]


def test_an_answer_without_versions_names_the_fix() -> None:
    with pytest.raises(UsageError, match="--versions"):
        planning.index_versions("ERROR: No matching distribution found for jaxx", "jaxx")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--stacks", "jaxx:eager", "--good", "0.9.2", "--bad", "0.10.2"], "unknown framework"),
        (["--stacks", "jax:eager", "--good", "0.10.2", "--bad", "0.9.2"], "is not older than"),
        (["--stacks", "jax:eager", "--good", "0.9.x", "--bad", "0.10.2"], "version '0.9.x'"),
        (["--stacks", "jax:eager", "--good", "0.9.3", "--bad", "0.10.2"], "no such release"),
        (["--stacks", "numpy", "--good", "2.3.0", "--bad", "2.4.0"], "cannot be bisected"),
        (["--stacks", "jax:eager,torch:eager", "--good", "0.9.2", "--bad", "0.10.2"], "one fr"),
        (["--stacks", "jax", "--good", "0.9.2", "--bad", "0.10.2", "--pin", "jaxlib==1"], "pin"),
        (["--stacks", "jax", "--good", "0.9.2", "--bad", "0.10.2", "--min-rounds", "1"], "min"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = ["--versions", ",".join(RELEASES), "--dry-run"]
    assert main(["bisect", *argv, *versions, *CELLS]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and said in err, err


def test_stacks_belong_to_bisect_not_to_the_run_options(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*DRY, "--good", "0.9.2", "--bad", "0.10.2", "--", "--stacks", "jax:jit"]
    assert main(argv) == 2
    assert "give the stacks as bisect's --stacks" in capsys.readouterr().err


def _describe(name: str, packages: list[str]) -> Path:
    """Environment ``name`` described as ``stackwars env create NAME --pin ...`` (and so
    bisect) makes it."""
    folder = environments.folder(name)
    folder.mkdir(parents=True, exist_ok=True)
    spec = creating.spec_for(name, packages).to_dict()
    description = {"format": environments.ENVIRONMENT_FORMAT, "spec": spec}
    (folder / environments.DESCRIPTION_FILE).write_text(json.dumps(description), "utf-8")
    return folder


def test_the_dry_run_prints_the_plan_and_what_each_environment_needs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _describe("jax-0.10.1", ["jax==0.10.1"])  # a user's, without jaxlib's pin: left alone
    _describe("jax-0.10.0", ["jax==0.10.0", "jaxlib==0.10.0", "optax==0.2.4"])  # serves
    out = tmp_path / "bisect"
    assert main([*DRY, "--good", "0.9.2", "--bad", "0.10.2", "--out", str(out), *CELLS]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "2 release(s) between, at most 2 step(s)" in lines[0]
    assert (
        lines[1]
        == "cells: stackwars run --workload selu --param n=64 --stacks <stack>@<environment>"
    )
    assert "  0.9.2: jax-0.9.2 (jax==0.9.2, jaxlib==0.9.2): to create" in lines
    assert any(line.startswith("  0.10.1: jax-0.10.1 (") and "skipped, environment jax-0.10.1 "
               "exists with other pins (jax==0.10.1; this release needs jaxlib==0.10.1)" in line
               for line in lines)  # fmt: skip
    # Its Python is missing: the fix is named (a worker checks a complete one when it is used).
    assert any(line.startswith("  0.10.0: ") and "has no Python at" in line for line in lines)
    assert not out.exists()  # a plan makes nothing


def test_dates_are_the_releases_a_user_had_on_them() -> None:
    uploads = planning.upload_dates(PYPI_ANSWER, "jax")
    assert str(uploads["0.9.2"]) == "2026-03-18" and str(uploads["0.10.2"]) == "2026-06-17"
    assert planning.release_on("2026-03-18", uploads, "--good") == "0.9.2"  # that day's own
    assert planning.release_on("2026-04-15", uploads, "--good") == "0.9.2"  # the day before
    assert planning.release_on("2026-11-26", uploads, "--bad") == "0.10.2"
    with pytest.raises(UsageError, match="no release was uploaded by then"):
        planning.release_on("2001-01-01", uploads, "--good")
    with pytest.raises(UsageError, match="--bad 2026-13-01: not a date"):
        planning.release_on("2026-13-01", uploads, "--bad")


def test_the_dry_run_takes_dates_for_the_releases(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def recorded(package: str) -> dict[str, datetime.date]:
        asked.append(package)
        return planning.upload_dates(PYPI_ANSWER, package)

    monkeypatch.setattr(service, "upload_dates", recorded)
    assert main([*DRY, "--good", "2026-04-01", "--bad", "2026-06-30", *CELLS]) == 0
    assert asked == ["jax"]
    assert "bisect jax from 0.9.2 (good) to 0.10.2 (bad)" in capsys.readouterr().out


# A slowdown of SELU that appears in 0.10.1: each release's time relative to 0.9.2.
STEP_AT_0_10_1 = {"0.9.2": 1.0, "0.10.0": 1.0, "0.10.1": 1.3, "0.10.2": 1.3}
# Workers spread ±2 % around each release's time, the same pattern each release.
SPREAD = (0.98, 1.01, 0.99, 1.02, 1.0, 0.985)


def _cells(version: str, ratios: dict[str, float], spread: tuple[float, ...]) -> list[Cell]:
    time_s = 1e-3 * ratios[version]
    return [
        Cell(
            "selu",
            {"n": 2000},
            f"jax:eager@jax-{version}",
            status="ok",
            repeat=worker,
            steady=Steady(median_s=time_s * factor, samples_s=[time_s * factor] * 5),
        )
        for worker, factor in enumerate(spread)
    ]


def _recorded(
    ratios: dict[str, float], noisy: frozenset[str] = frozenset()
) -> Callable[[int], service.Compare]:
    """Steps measured from the table (a release in ``noisy`` spreads ±40 %), judged by the
    gate through the seam, each taking 60 s."""

    def compare_of(index: int) -> service.Compare:
        def compare(older: str, newer: str, watch: data.Watch, budget_s: float) -> data.Step:
            spread = tuple(1 + 20 * (f - 1) for f in SPREAD) if newer in noisy else SPREAD
            judged = judge(
                _cells(older, ratios, SPREAD), _cells(newer, ratios, spread), 0.05, ALPHA
            )
            CLOCK.now += 60.0
            return data.Step(
                older, newer, tuple(judged), 6, 60.0, Path(f"step-{index}"), "decided", watch
            )

        return compare

    return compare_of


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


CLOCK = _Clock()


def _ready(calls: list[str], failing: dict[str, str] | None = None) -> service.Create:
    """create() as if every environment were made, except those in ``failing`` (pip's
    last words each)."""

    def create(name: str, pins: list[str], *, force: bool, say: service.Listener) -> Creation:
        calls.append(name)
        if failing and name in failing:
            raise UsageError(failing[name])
        state = EnvironmentState(name, Path("/envs") / name, "")
        return Creation(state, made=True, seconds=50.0)

    return create


def test_a_users_environment_with_more_pins_serves_as_it_is() -> None:
    """README's jax-0.9.2 (jax, jaxlib and optax) is the 0.9.2 release's: created from its
    own recorded pins (found ready, never remade with fewer)."""
    _describe("jax-0.9.2", ["jax==0.9.2", "jaxlib==0.9.2", "optax==0.2.4"])
    asked: list[list[str]] = []

    def create(name: str, pins: list[str], *, force: bool, say: service.Listener) -> Creation:
        asked.append(pins)
        return Creation(EnvironmentState(name, environments.folder(name), ""), made=False)

    plan = planning.plan("jax:eager", "0.9.2", "0.10.2", list(RELEASES), [])
    prepared = service.prepare(plan, "0.9.2", create, print)
    assert (prepared.skipped, prepared.made, asked) == ("", False, [[]])
    prepared = service.prepare(plan, "0.10.0", create, print)
    assert asked[-1] == ["jax==0.10.0", "jaxlib==0.10.0"]


def _bisect(
    ratios: dict[str, float],
    *,
    create: service.Create | None = None,
    noisy: frozenset[str] = frozenset(),
    budget_s: float = 1800.0,
    other_python: tuple[str, ...] = (),
) -> data.Bisection:
    installable = [v for v in ratios if v not in other_python]
    plan = planning.plan("jax:eager", "0.9.2", "0.10.2", installable, [], elsewhere=list(ratios))
    request = service.Request(plan, ("--workload", "selu"), Path("out"), time_budget_s=budget_s)
    events: list[data.Event] = []
    made = create or _ready([])
    return service.run(request, events.append, CLOCK, made, _recorded(ratios, noisy))


def test_the_bisection_names_the_release_where_the_slowdown_appears() -> None:
    bisection = _bisect(STEP_AT_0_10_1)
    assert [(s.older, s.newer, s.word) for s in bisection.steps] == [
        ("0.9.2", "0.10.2", SLOWER),
        ("0.9.2", "0.10.0", SAME),
        ("0.10.0", "0.10.1", SLOWER),
    ]
    assert bisection.search.named == "0.10.1"
    first = bisection.steps[0].judgements[0]
    assert first.ratio == pytest.approx(1.3) and first.low < 1.3 < first.high
    assert report.change(first).startswith("+30.0 % [")
    summary = report.summary_lines(bisection)
    assert (
        summary[0]
        == "the change (slower) appears in jax 0.10.1 (0.10.0 is the last release without it)"
    )
    assert [p.name for p in bisection.environments] == [
        f"jax-{v}" for v in ("0.9.2", "0.10.2", "0.10.0", "0.10.1")
    ]


def test_a_speed_up_is_bisected_as_well() -> None:
    """docs/results.md's jax:eager SELU looked faster on 0.10.2: its release is named too."""
    faster_from_0_10_0 = {"0.9.2": 1.0, "0.10.0": 0.78, "0.10.1": 0.78, "0.10.2": 0.78}
    bisection = _bisect(faster_from_0_10_0)
    assert [s.word for s in bisection.steps] == [FASTER, FASTER]
    assert bisection.search.named == "0.10.0"
    assert report.answer(bisection).startswith("the change (faster) appears in jax 0.10.0 (")
    # A speed-up within the threshold is no change, as a slowdown within it is not.
    small = {"0.9.2": 1.0, "0.10.0": 0.97, "0.10.1": 1.03}
    tight = tuple(1 + (f - 1) / 4 for f in SPREAD)  # ±0.5 %: both shown within 5 %
    for newer in ("0.10.0", "0.10.1"):
        (judged,) = judge(_cells("0.9.2", small, tight), _cells(newer, small, tight), 0.05, ALPHA)
        assert judged.word == SAME, judged


def test_a_change_that_good_against_bad_does_not_show_stops_there() -> None:
    bisection = _bisect(dict.fromkeys(RELEASES, 1.0))
    assert len(bisection.steps) == 1 and bisection.steps[0].word == SAME
    assert not bisection.reproducible
    assert report.answer(bisection).startswith(
        "no answer: not reproducible: 0.10.2 against 0.9.2 is same"
    )


def test_a_change_that_builds_up_over_releases_is_said_to_and_where_to_look_next() -> None:
    # Measured 2026-11-26 (docs/results.md): jax:eager SELU 64² slowed about 5 % in 0.8.0 and
    # 25 % by 0.10.2; bisect named 0.8.0, which brings a fifth of the change.
    gradual = {"0.9.2": 1.0, "0.10.0": 1.08, "0.10.1": 1.15, "0.10.2": 1.3}
    bisection = _bisect(gradual)
    assert bisection.search.named == "0.10.0"
    (line,) = report.accrued(bisection)
    assert "0.10.0 brings +8" in line and "builds up over several releases" in line
    assert line.endswith("--good 0.10.0")
    assert report.accrued(_bisect(STEP_AT_0_10_1)) == [], "0.10.1 brings all of it"


def test_good_against_bad_undecided_is_no_answer_and_not_called_unreproducible() -> None:
    # Measured 2026-11-26: jax:eager SELU 2000² lands at ~4-5 or ~12-18 ms in both releases,
    # and 16 rounds left 0.10.2 against 0.9.2 at -3.9 % [-57, +50]: nothing was shown either way.
    bisection = _bisect(STEP_AT_0_10_1, noisy=frozenset({"0.10.2"}))
    assert len(bisection.steps) == 1 and bisection.steps[0].word == UNDECIDED
    assert bisection.reproducible is None
    assert report.answer(bisection).startswith(
        "no answer: undecided: 0.10.2 against 0.9.2 could not be told apart"
    )


def test_a_release_that_cannot_be_installed_is_skipped_with_the_reason() -> None:
    calls: list[str] = []
    why = "pip install ended with exit status 1; what it printed is in /envs/jax-0.10.0/create.log"
    step_at_0_10_0 = {**STEP_AT_0_10_1, "0.10.0": 1.3}
    bisection = _bisect(step_at_0_10_0, create=_ready(calls, {"jax-0.10.0": why}))
    assert "jax-0.10.0" in calls
    assert bisection.search.passed_over == {"0.10.0": f"cannot be installed: {why}"}
    assert bisection.search.named is None and bisection.search.suspects() == ["0.10.0", "0.10.1"]
    assert bisection.stopped == "nothing left to test"
    summary = report.summary_lines(bisection)
    assert summary[0].startswith(
        "the change (slower) appears in one of jax 0.10.0, 0.10.1 (after 0.9.2)"
    )
    assert any(line.startswith("  jax-0.10.0: skipped, pip install ended") for line in summary)


def test_a_release_for_other_pythons_is_passed_over_without_trying_it() -> None:
    calls: list[str] = []
    bisection = _bisect(STEP_AT_0_10_1, create=_ready(calls), other_python=("0.10.0",))
    assert "jax-0.10.0" not in calls
    assert bisection.search.passed_over == {"0.10.0": service.OTHER_PYTHON}
    assert bisection.search.suspects() == ["0.10.0", "0.10.1"]


def test_an_undecided_release_is_passed_over_and_the_answer_is_a_range() -> None:
    bisection = _bisect(STEP_AT_0_10_1, noisy=frozenset({"0.10.0"}))
    assert bisection.steps[1].word == UNDECIDED
    assert "0.10.0" in bisection.search.passed_over
    assert bisection.search.suspects() == ["0.10.0", "0.10.1"]


def test_a_cell_that_fails_in_a_release_ends_its_step_with_the_reason() -> None:
    """No round can decide a cell that errors: the step stops and says why, once."""
    why = "AttributeError: module 'jax.nn' has no attribute 'selu'"
    failing = [
        dataclasses.replace(cell, status="error", reason=why)
        for cell in _cells("0.10.0", STEP_AT_0_10_1, SPREAD)
    ]
    (judged,) = judge(_cells("0.9.2", STEP_AT_0_10_1, SPREAD), failing, 0.05, ALPHA)
    assert (judged.word, judged.hopeless) == (UNDECIDED, True)
    assert data.Watch().hopeless([judged])
    step = data.Step("0.9.2", "0.10.0", (judged,), 3, 30.0, Path("step"), "cells failed")
    shown = report.step_lines(step).splitlines()[1]
    assert shown.endswith(f"undecided, ok in the baseline, error in the candidate: {why}")


def test_the_time_budget_stops_with_what_is_known() -> None:
    bisection = _bisect(STEP_AT_0_10_1, budget_s=150.0)  # room for two steps of 60 s
    assert [s.newer for s in bisection.steps] == ["0.10.2", "0.10.0"]
    assert bisection.stopped == "time budget reached"
    assert bisection.search.suspects() == ["0.10.1", "0.10.2"]


def test_the_search_picks_the_middle_and_never_a_passed_release() -> None:
    search = Search(("1", "2", "3", "4", "5", "6", "7"))
    assert search.next_version() == "4"
    search.pass_over("4", "no wheel")
    assert search.next_version() == "3"
    search.record("3", SLOWER)
    assert search.open_versions() == ["2"] and search.next_version() == "2"
    search.record("2", SAME)
    assert search.named == "3"
    with pytest.raises(ValueError, match="verdict"):
        search.record("2", "slow")


def _borrowing(name: str, packages: list[str]) -> None:
    """An environment made in a second: a venv whose site-packages point at this one's (jax
    0.10.2, jaxlib 0.10.2), described as bisect makes it."""
    venv = _describe(name, packages) / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    home = Path(sys.executable).resolve().parent
    (venv / "pyvenv.cfg").write_text(
        f"home = {home}\ninclude-system-site-packages = false\n", "utf-8"
    )
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    site.mkdir(parents=True)
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", "utf-8")


@pytest.mark.slow
def test_a_second_bisection_finds_the_environment_ready() -> None:
    """The install cache: an environment of the release's name and pins is checked from
    inside and reused, nothing installed; one with other pins is left alone and skipped."""
    _borrowing("jax-0.10.2", ["jax==0.10.2", "jaxlib==0.10.2"])
    plan = planning.plan("jax:eager", "0.9.2", "0.10.2", list(RELEASES), [])
    lines: list[data.Event] = []
    prepared = service.prepare(plan, "0.10.2", creating.create, lines.append)
    assert (prepared.made, prepared.skipped) == (False, "")
    assert not (environments.folder("jax-0.10.2") / "create.log").exists() and lines == []
    widened = planning.plan("jax:eager", "0.9.2", "0.10.2", list(RELEASES), ["optax==0.2.8"])
    other = service.prepare(widened, "0.10.2", creating.create, lines.append)
    assert other.skipped.startswith("environment jax-0.10.2 exists with other pins")


@pytest.mark.slow
def test_a_step_is_ab_rounds_of_the_stacks_in_each_environment(tmp_path: Path) -> None:
    """A real step (A/A: the borrowed 0.10.2 against itself): ab's rounds, each side a
    stackwars run of jax:eager@jax-0.10.2, judged by the gate through the seam."""
    _borrowing("jax-0.10.2", ["jax==0.10.2", "jaxlib==0.10.2"])
    plan = planning.plan("jax:eager", "0.9.2", "0.10.2", list(RELEASES), [])
    options = (
        "--workload",
        "selu",
        "--param",
        "n=64",
        "--budget",
        "0.05",
    )  # ab's rounds take no second look
    request = service.Request(plan, options, tmp_path, min_rounds=2, max_rounds=2)
    events: list[data.Event] = []
    compare = service.measure_step(request, 1, events.append, CLOCK)
    step = compare("0.10.2", "0.10.2", data.Watch(), 600.0)
    assert step.rounds == 2 and step.folder == tmp_path / "step-01-0.10.2-vs-0.10.2"
    (judged,) = step.judgements
    # Paired by stack without the environment; two workers a side are too few to judge.
    assert judged.label == "selu(n=64, dtype=float32) jax:eager @ cpu"
    assert judged.word == UNDECIDED and math.isfinite(judged.ratio)
    assert "at least 3 fresh workers" in judged.detail
    run_file = json.loads((step.folder / "candidate-02.json").read_text(encoding="utf-8"))
    assert [cell["stack"] for cell in run_file["cells"]] == ["jax:eager@jax-0.10.2"]
