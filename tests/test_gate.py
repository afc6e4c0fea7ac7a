"""The regression gate: what settles a cell in an A/B session, and real failing cells that
must fail ``compare`` and ``ab`` (a broken candidate never passes)."""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stackwars.errors import UsageError
from stackwars.instruments.ab import service as ab
from stackwars.report.comparison import comparison_json, comparison_markdown
from stackwars.results.comparison import (
    FAIL,
    PASS,
    PASSED,
    UNDECIDED_ROW,
    UNDERPOWERED,
    ComparisonRow,
    Gate,
    compare_run_sets,
    compare_runs,
    decide,
    slow_round,
)
from stackwars.results.run import Run
from stackwars.results.schema import Cell, Memory, Steady
from stackwars.results.verdict import (
    COMPARISON_FORMAT,
    EXIT_UNDERPOWERED,
    gate_settings,
    verdict_of,
)
from stackwars.service import comparisons
from stackwars.timing.compare import (
    DEFAULT_RUN_DRIFT,
    DEFAULT_RUN_DRIFT_DF,
    UNDECIDED,
    Comparison,
    LogDifference,
    compare,
    compare_paired,
    compare_run_means,
)
from stackwars.timing.sequential import Looks

REGRESSED = Path(__file__).resolve().parents[1] / "benchmarks" / "power" / "regressed_gemm.py"
CELL = ["--workload-file", str(REGRESSED), "--workload", "regressed-gemm", "--param", "n=48"]
# --threads 1: OpenBLAS threads even a 48² GEMM, and a worker whose second thread waits for a
# core busy elsewhere lands at a second speed (an A/A session on CI read a 0.72-1.39 interval
# after 10 rounds and ended underpowered); one thread measures the code, not the neighbours.
QUICK = ["--stacks", "numpy:eager", "--budget", "0.05", "--threads", "1"]
TWO_SIZES = ["--workload-file", str(REGRESSED), "--workload", "regressed-gemm"]
TWO_SIZES += ["--param", "n=32,48"]


def row(ratio: float, se: float, name: str = "cell") -> ComparisonRow:
    """A compared row whose evidence is a trimmed t of 10 + 10 workers."""
    parts = LogDifference(math.log(ratio), se, 18.0, se)
    result = Comparison(ratio, ratio, ratio, 0.5, UNDECIDED, 0.05, workers=(10, 10), evidence=parts)
    return ComparisonRow(name, 1.0, ratio, result)


GATE = Gate(fail_above=5)


def test_a_clear_regression_fails_and_a_tight_equal_cell_passes() -> None:
    verdict = decide([row(1.2, 0.01), row(1.0, 0.005, "same")], GATE)
    assert verdict.outcome == FAIL and verdict.states == (FAIL, PASSED)
    assert verdict.failures[0].startswith("REGRESSION above 5%: cell")
    assert decide([row(1.0, 0.005)], GATE).outcome == PASS


def test_a_cell_neither_shown_slower_nor_within_leaves_the_gate_underpowered() -> None:
    verdict = decide([row(1.0, 0.005), row(1.03, 0.05, "wide")], GATE)
    assert verdict.outcome == UNDERPOWERED and verdict.states == (PASSED, UNDECIDED_ROW)
    assert verdict.undecided == ("undecided: wide: undecided; more workers would decide it",)
    assert verdict.headline().startswith("Gate: UNDERPOWERED (1 of 2 judged cells undecided")
    strict = decide([row(1.03, 0.05)], Gate(fail_above=5, fail_on_undecided=True))
    assert strict.outcome == FAIL and "--fail-on-undecided" in strict.headline()


def test_a_pass_shows_no_regression_above_the_pass_limit_and_between_the_limits_is_open() -> None:
    """+3 % shown below 10 % but not below 5 %: by default (pass below the larger of 10 % and
    --fail-above) the cell passes; with --pass-below 5 it stays undecided; never a failure,
    its estimate being under --fail-above."""
    three = row(1.03, 0.015)
    assert decide([three], GATE).states == (PASSED,)
    assert decide([three], Gate(fail_above=5, pass_below=5)).states == (UNDECIDED_ROW,)
    assert decide([three], Gate(fail_above=20)).states == (PASSED,)  # pass limit 20 %
    with pytest.raises(UsageError, match="give --fail-above too"):
        gate_settings(pass_below=10)
    with pytest.raises(UsageError, match="--pass-below 0 must be"):
        gate_settings(5, pass_below=0)


def test_an_empty_comparison_is_never_a_pass() -> None:
    verdict = verdict_of([], GATE)
    assert verdict.outcome == UNDERPOWERED and verdict.exit_status == EXIT_UNDERPOWERED
    assert "nothing was compared" in verdict.headline()
    lost = ComparisonRow("new", None, None, None, "only in the candidate run")
    assert decide([lost], GATE).outcome == UNDERPOWERED


def test_the_family_is_every_cell_and_holm_controls_it() -> None:
    """Twenty cells each at p just below alpha / 2: one cell alone would fail, the family
    does not (Holm's first level is alpha / 20)."""
    rows = [row(1.1, 0.045, f"c{i}") for i in range(20)]
    alone = decide(rows[:1], GATE)
    together = decide(rows, GATE)
    assert alone.outcome == FAIL and together.outcome != FAIL
    assert together.family.hypotheses == 20 and together.family.procedure == "holm"
    assert "20 regression tests" in together.headline()


def test_exit_statuses_are_distinct() -> None:
    outcomes = [verdict_of([row(1.2, 0.01)], GATE), verdict_of([row(1.0, 0.005)], GATE)]
    outcomes.append(verdict_of([], GATE))
    assert [v.exit_status for v in outcomes] == [1, 0, EXIT_UNDERPOWERED]
    no_gate = verdict_of([row(1.2, 0.01)], Gate())
    assert no_gate.outcome is None and no_gate.exit_status == 0 and no_gate.headline() == ""
    assert EXIT_UNDERPOWERED not in (0, 1, 2)


def test_a_session_refuses_options_it_sets_itself(tmp_path: Path) -> None:
    session = ab.Session(("--repeat", "3"), ab.Side("baseline"), ab.Side("candidate"), tmp_path)
    with pytest.raises(UsageError, match="--repeat is set by 'stackwars ab'"):
        ab.check(session)
    rounds = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), tmp_path, max_rounds=1)
    with pytest.raises(UsageError, match="need 2 <= min <= max"):
        ab.check(rounds)
    budget = ab.Session((), ab.Side("b"), ab.Side("c"), tmp_path, time_budget_s=0)
    with pytest.raises(UsageError, match="--time-budget 0 must be a positive"):
        ab.check(budget)


def test_a_session_looks_from_its_first_round_to_its_last() -> None:
    session = ab.Session((), ab.Side("b"), ab.Side("c"), Path(), min_rounds=3, max_rounds=10)
    assert session.looks == Looks(3, 10) and session.looks.count == 8


def fake_session(
    monkeypatch: pytest.MonkeyPatch, looks: list[list[ComparisonRow]], **options: Any
) -> tuple[ab.Outcome, list[str]]:
    """A session whose rounds only record which side ran, and whose looks see ``looks`` in
    turn (the last again for the final verdict)."""
    ran: list[str] = []
    seen = iter([*looks, looks[-1]])

    def fake_round(session: ab.Session, side: ab.Side, index: int) -> Path:
        ran.append(side.name)
        return Path(f"{side.name}-{index}.json")

    monkeypatch.setattr(ab, "_round", fake_round)
    monkeypatch.setattr(ab, "side_version", lambda *args: "test")
    monkeypatch.setattr(ab, "plan_line", lambda *args: "")
    monkeypatch.setattr(ab, "compare_files", lambda files, session: next(seen))
    sides = (ab.Side("baseline"), ab.Side("candidate"))
    session = ab.Session((), *sides, Path(), **options)
    return ab.run_session(session, lambda line: None, iter(range(10**6)).__next__), ran


def test_each_round_draws_which_side_goes_first_and_records_the_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RMIT: the two workers of a round are exchangeable by design, not by a fixed order."""
    outcome, ran = fake_session(monkeypatch, [[]], min_rounds=12, max_rounds=12, order_seed=7)
    assert outcome.first == ran[::2] and len(outcome.first) == 12
    assert {"baseline", "candidate"} == set(outcome.first)
    assert all(a != b for a, b in zip(ran[::2], ran[1::2], strict=True))
    again, _ = fake_session(monkeypatch, [[]], min_rounds=12, max_rounds=12, order_seed=7)
    assert again.first == outcome.first and again.order_seed == 7
    drawn, _ = fake_session(monkeypatch, [[]], min_rounds=2, max_rounds=2)
    assert isinstance(drawn.order_seed, int)


def test_a_cell_failed_at_one_look_stays_failed_at_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Round 3 fails "slow" while "open" stays undecided; round 4 no longer rejects "slow"
    (its p-value is counted for every look already): the session's verdict still fails it."""
    looks = [[row(1.3, 0.01, "slow"), row(1.03, 0.05, "open")],
             [row(1.02, 0.05, "slow"), row(1.0, 0.005, "open")]]  # fmt: skip
    outcome, _ = fake_session(monkeypatch, looks, min_rounds=3, max_rounds=4, gate=GATE)
    assert outcome.rounds == 4 and outcome.verdict is not None
    assert outcome.verdict.states == (FAIL, PASSED)
    (line,) = outcome.verdict.failures
    assert line.startswith("REGRESSION above 5%: slow") and "(round 3)" in line
    assert line.endswith("a failed cell stays failed")


def stackwars(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **(env or {})}
    command = [sys.executable, "-m", "stackwars", *argv]
    return subprocess.run(
        command, check=False, cwd=cwd, env=environment, capture_output=True, text=True
    )


def measured(
    tmp_path: Path,
    name: str,
    *extra: str,
    cells: list[str] = CELL,
    env: dict[str, str] | None = None,
) -> Path:
    path = tmp_path / f"{name}.json"
    argv = ["run", *cells, *QUICK, *extra, "--json", str(path), "--db", str(tmp_path / "db.sqlite")]
    done = stackwars(*argv, "--quiet", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.slow
@pytest.mark.serial
def test_a_broken_or_missing_candidate_cell_fails_the_gate(tmp_path: Path) -> None:
    base = measured(tmp_path, "base", cells=TWO_SIZES)
    broken = measured(tmp_path, "broken", cells=TWO_SIZES, env={"REGRESS_FAIL": "1"})
    done = stackwars("compare", str(base), str(broken), "--fail-above", "5", cwd=tmp_path)
    assert done.returncode == 1
    out = " ".join(done.stdout.split())
    assert (
        "BROKEN: regressed-gemm(n=48, extra=0.0) numpy:eager @ cpu: ok in the baseline, error"
        in out
    )
    assert "REGRESS_FAIL is set" in out
    allowed = ["--fail-above", "5", "--allow-failures"]
    # The broken cell is let through; the other has one worker a side: nothing is decided.
    done = stackwars("compare", str(base), str(broken), *allowed, cwd=tmp_path)
    assert done.returncode == EXIT_UNDERPOWERED, done.stdout
    assert done.stdout.startswith("Gate: UNDERPOWERED")
    fewer = measured(tmp_path, "fewer")
    done = stackwars("compare", str(base), str(fewer), "--fail-above", "5", cwd=tmp_path)
    assert done.returncode == 1
    assert "regressed-gemm(n=32, extra=0.0) numpy:eager @ cpu" in done.stdout
    assert "absent from the candidate" in " ".join(done.stdout.split())


# Not serial: memory alone is judged (no time limit), and a worker's peak RSS does not change
# with the load beside it.
@pytest.mark.slow
def test_a_memory_regression_fails_its_own_limit(tmp_path: Path) -> None:
    base = measured(tmp_path, "base", "--repeat", "3")
    heavy = measured(tmp_path, "heavy", "--repeat", "3", env={"REGRESS_HOLD_MB": "400"})
    argv = ["compare", str(base), str(heavy), "--fail-memory-above", "20"]
    done = stackwars(*argv, "--json", str(tmp_path / "c.json"), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert (
        "MEMORY above 20%: regressed-gemm(n=48, extra=0.0) numpy:eager @ cpu: peak RSS"
        in " ".join(done.stdout.split())
    )
    (written,) = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["rows"]
    (change,) = [m for m in written["memory"] if m["what"] == "peak RSS"]
    assert change["candidate_bytes"] - change["baseline_bytes"] > 300 * 2**20
    assert stackwars("compare", str(base), str(heavy), cwd=tmp_path).returncode == 0


@pytest.mark.slow
@pytest.mark.serial
def test_an_ab_session_stops_when_a_large_regression_is_decided(tmp_path: Path) -> None:
    argv = ["ab", "--candidate-env", "REGRESS_EXTRA=3", "--fail-above", "5"]
    argv += ["--out", str(tmp_path / "s"), "--json", str(tmp_path / "ab.json")]
    done = stackwars(*argv, "--", *CELL, *QUICK, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "REGRESSION above 5%: regressed-gemm(n=48, extra=0.0) numpy:eager" in out
    session = json.loads((tmp_path / "ab.json").read_text(encoding="utf-8"))["session"]
    assert session["rounds"] < 10 and session["stopped"] == "every cell decided"
    assert sorted(p.name for p in (tmp_path / "s").glob("*.json"))[:2] == [
        "baseline-01.json",
        "baseline-02.json",
    ]
    again = out.split("again, from the files: ")[1].split()
    assert stackwars(*again[1:], "--fail-above", "5", cwd=tmp_path).returncode == 1


@pytest.mark.slow
@pytest.mark.serial
def test_an_a_a_session_passes_on_real_workers(tmp_path: Path) -> None:
    """Nothing changed, one cell, a limit wide enough for a shared 2-core machine: the
    session shows the cell within it and says pass first."""
    # --fail-above 50 at n=128, not 20 at 48: fresh workers on 2026-11-28's AMD EPYC spread a
    # 5 µs call 1.66x (4.8-8.9 µs over 8 workers) and a 60 µs call 1.3x, so after 10 paired
    # rounds the ratio's interval was 0.77-1.41 and the gate, rightly, underpowered at 20 %
    # in 3 sessions of 5. Deciding a tighter limit in fewer rounds is the gate issue's work.
    argv = ["ab", "--fail-above", "50", "--out", str(tmp_path / "s")]
    argv += ["--markdown", str(tmp_path / "ab.md"), "--json", str(tmp_path / "ab.json")]
    cell = [*CELL[:-1], "n=128"]
    done = stackwars(*argv, "--", *cell, *QUICK, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    markdown = (tmp_path / "ab.md").read_text(encoding="utf-8")
    assert markdown.startswith("**Gate: PASS (all 1 judged cells shown within the limits")
    data = json.loads((tmp_path / "ab.json").read_text(encoding="utf-8"))
    assert data["outcome"] == "pass" and data["rows"][0]["comparison"]["unit"] == "round"


# Not serial: a broken candidate fails whatever its neighbours' timings.
@pytest.mark.slow
def test_an_ab_session_fails_a_broken_candidate_and_says_why(tmp_path: Path) -> None:
    argv = ["ab", "--candidate-env", "REGRESS_FAIL=1", "--fail-above", "5"]
    done = stackwars(*argv, "--out", str(tmp_path / "s"), "--", *CELL, *QUICK, cwd=tmp_path)
    assert done.returncode == 1
    assert "BROKEN" in done.stdout and "3 rounds" in " ".join(done.stdout.split())


@pytest.mark.slow
def test_a_python_without_stackwars_is_refused_with_the_fix(tmp_path: Path) -> None:
    bare = Path(sys.base_prefix) / "bin" / "python3"
    argv = ["ab", "--baseline-python", str(bare), "--", *CELL, *QUICK]
    done = stackwars(*argv, "--out", str(tmp_path / "s"), cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot run a stackwars worker" in done.stderr and "pip install -e" in done.stderr


def run_at(started: str) -> Run:
    return Run(id=started, started=started, machine={}, versions={}, argv=[], status="complete")


def test_two_single_runs_add_the_drift_estimate_with_its_uncertainty() -> None:
    assert comparisons.run_drift(None) == (DEFAULT_RUN_DRIFT, DEFAULT_RUN_DRIFT_DF)
    assert comparisons.run_drift(1.5) == (pytest.approx(0.015), math.inf)  # the user's, as given
    with pytest.raises(UsageError, match="--run-drift 120"):
        comparisons.run_drift(120)
    base = [[1e-3 * (1 + 0.001 * i)] for i in range(10)]
    cand = [[1.001e-3 * (1 + 0.001 * i)] for i in range(10)]
    known = compare(base, cand, run_drift=0.04)
    estimated = compare(base, cand, run_drift=0.04, run_drift_df=DEFAULT_RUN_DRIFT_DF)
    assert estimated.ci_high > known.ci_high  # five degrees of freedom, not infinitely many
    assert known.ci_high == pytest.approx(compare(base, cand, run_drift=0.04).ci_high)


def test_several_runs_a_side_are_pooled(tmp_path: Path) -> None:
    rng = random.Random(3)

    def exported(name: str, center: float) -> Path:
        samples = [center * (1 + rng.gauss(0, 0.01)) for _ in range(20)]
        cells = [
            Cell(
                workload="gemm", params={"n": 8}, stack="numpy:eager", repeat=0, status="ok",
                steady=Steady(median_s=center, samples_s=samples),
            )
        ]  # fmt: skip
        record = run_at(f"2026-11-25T10:00:{len(list(tmp_path.iterdir())):02d}+00:00")
        record.cells = cells
        path = tmp_path / f"{name}.json"
        record.write_json(path)
        return path

    files = [exported(f"r{i}", 1e-3 * (1 + 0.01 * i)) for i in range(6)]
    base = ",".join(str(path) for path in files[0::2])
    cand = ",".join(str(path) for path in files[1::2])
    (row,) = comparisons.compare(base, cand).verdict.rows
    # The runs are the units (three a side), not their workers: interleaved or not, each run
    # has its own machine state.
    assert row.result is not None and row.result.workers == (3, 3) and row.result.unit == "run"
    components = row.result.components
    assert components is not None and components.run_drift == 0.0
    (few,) = comparisons.compare(files[0].as_posix(), cand).verdict.rows  # one run against 3
    assert few.result is not None and few.result.unit == "run" and few.result.workers == (1, 3)
    assert few.result.evidence is not None
    with pytest.raises(UsageError, match="names no run"):
        comparisons.load_side(" , ")


def test_runs_as_units_count_the_run_to_run_spread() -> None:
    """Runs whose workers agree closely but whose runs move 8 % apart: pooled as workers,
    an identical candidate looks significantly different; run by run, it does not."""
    rng = random.Random(7)
    sides = []
    for _ in range(2):
        side = []
        for _ in range(3):
            run_level = 1e-3 * math.exp(rng.gauss(0, 0.08))
            side.append([run_level * (1 + rng.gauss(0, 0.005)) for _ in range(4)])
        sides.append(side)
    by_runs = compare_run_means(*sides)
    pooled = compare([[x] for run in sides[0] for x in run], [[x] for run in sides[1] for x in run])
    assert pooled.ci_low > 1  # the workers alone call it slower
    assert by_runs.ci_low < 1 < by_runs.ci_high
    assert by_runs.verdict == UNDECIDED and by_runs.reason == "more runs a side would decide it"


def paired_row(log_ratios: list[float], name: str = "cell") -> ComparisonRow:
    """A cell of a one-look session of ``len(log_ratios)`` rounds: each round's baseline at
    1 ms, its candidate ``exp(log ratio)`` of it."""
    base = [1e-3] * len(log_ratios)
    cand = [1e-3 * math.exp(x) for x in log_ratios]
    looks = Looks(len(log_ratios), len(log_ratios))
    result = compare_paired(base, cand, looks, threshold=0.05)
    return ComparisonRow(name, 1e-3, 1e-3, result)


def test_a_round_far_above_the_others_keeps_a_cell_from_passing() -> None:
    """A candidate 4x slow in one process of ten: the rank test and the trimmed mean both
    discount that round, and the cell would pass; the slow round holds it undecided, and the
    noise triage, made before the session, cannot excuse it."""
    rng = random.Random(3)
    quiet = [rng.gauss(0, 0.005) for _ in range(10)]
    assert decide([paired_row(quiet)], GATE).outcome == PASS
    shared = [*quiet[:9], math.log(4)]
    verdict = decide([paired_row(shared)], GATE, not_gated={"cell": "needs 60 rounds"})
    assert verdict.outcome == UNDERPOWERED and verdict.states == (UNDECIDED_ROW,)
    assert "a round at 4.00x, at least 2.2x and far above the others" in verdict.undecided[0]
    assert not verdict.not_gated
    small = [*quiet[:9], math.log(1.08)]  # within the pass limit: not a slow round
    assert decide([paired_row(small)], GATE).outcome == PASS


def test_a_round_of_unchanged_code_at_its_heaviest_tail_does_not_hold_a_pass() -> None:
    """This machine's A/A rounds reach 1.5-1.8x in either direction (docs/gate.md): far above
    a quiet cell's other rounds, yet below twice the pass limit's ratio, so not a slow round. A cell
    whose unchanged code runs at two speeds (rounds at a fifth and five times, a median
    deviation near zero) is held by its own modes, unless the machine's noise table gives its
    A/A spread."""
    rng = random.Random(4)
    quiet = [rng.gauss(0, 0.03) for _ in range(50)]
    outlier = [*quiet[:49], math.log(1.8)]
    assert decide([paired_row(outlier)], GATE).outcome == PASS
    assert held_by_a_slow_round([*quiet[:49], math.log(2.5)])
    modes = [rng.choice((-1.6, 0.0, 0.0, 1.6)) + rng.gauss(0, 0.03) for _ in range(50)]
    assert held_by_a_slow_round(modes)
    aa_spread = statistics.stdev(rng.choice((-1.6, 0.0, 0.0, 1.6)) for _ in range(60))
    assert not held_by_a_slow_round(modes, aa_spread)
    verdict = decide([paired_row(modes, "two speeds")], GATE, aa_spreads={"two speeds": aa_spread})
    assert "a round at" not in " ".join(verdict.undecided)


def held_by_a_slow_round(log_ratios: list[float], aa_spread: float = 0.0) -> bool:
    result = paired_row(log_ratios).result
    assert result is not None
    return bool(slow_round(result, 10.0, aa_spread))


SCHEMA_PATH = Path(comparisons.__file__).parents[1] / "results" / "comparison.schema.json"
COMPARISON_SCHEMA = json.loads(SCHEMA_PATH.read_text("utf-8"))


@pytest.mark.parametrize(
    ("rows", "outcome"),
    [([row(1.2, 0.01)], "fail"), ([row(1.0, 0.005)], "pass"), ([], "underpowered")],
)
def test_the_json_and_markdown_state_the_outcome_and_the_family(
    rows: list[ComparisonRow], outcome: str
) -> None:
    import jsonschema

    verdict = verdict_of(rows, GATE)
    data = json.loads(json.dumps(comparison_json(verdict)))
    jsonschema.validate(data, COMPARISON_SCHEMA)
    assert data["format"] == COMPARISON_FORMAT == 5 and data["outcome"] == outcome
    assert COMPARISON_SCHEMA["title"].endswith(f"format {COMPARISON_FORMAT}")
    assert data["family"]["procedure"] == "holm" and data["family"]["alpha"] == 0.05
    assert data["exit_status"] == verdict.exit_status and verdict.format == COMPARISON_FORMAT
    markdown = comparison_markdown(verdict, "title")
    assert markdown.splitlines()[0].startswith(f"**Gate: {outcome.upper()} (")
    assert "Holm" in markdown.splitlines()[0]


def fake_rounds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cells: int) -> None:
    """ab's rounds without processes: each side's run file holds ``cells`` identical cells."""
    rng = random.Random(11)

    def fake_round(session: ab.Session, side: ab.Side, index: int) -> Path:
        record = run_at(f"2026-11-26T10:00:{index:02d}+00:00")
        record.cells = [
            Cell(
                workload=f"w{i}", params={}, stack="numpy:eager", status="ok",
                steady=Steady(median_s=1e-3, samples_s=[1e-3 * (1 + rng.gauss(0, 0.01))] * 3),
            )
            for i in range(cells)
        ]  # fmt: skip
        path = tmp_path / f"{side.name}-{index}.json"
        record.write_json(path)
        return path

    monkeypatch.setattr(ab, "_round", fake_round)
    monkeypatch.setattr(ab, "side_version", lambda interpreter, budget: "test")


def test_a_budget_that_cannot_reach_the_first_look_stops_after_one_round_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/ci.md's recipe on this machine: 322 s a round, 900 s: the session stops after one
    round, every cell in its table, underpowered, with the budget that would decide."""
    fake_rounds(monkeypatch, tmp_path, cells=27)
    ticks = iter([0.0, 322.0])
    session = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), tmp_path, gate=GATE)
    heard: list[str] = []
    outcome = ab.run_session(session, heard.append, lambda: next(ticks))
    assert outcome.rounds == 1 and "cannot reach the first look" in outcome.stopped
    assert len(outcome.rows) == 27 and outcome.verdict is not None
    assert outcome.verdict.outcome == UNDERPOWERED and outcome.verdict.exit_status == 3
    assert "the budget (900 s) allows 2 round(s)" in outcome.plan
    assert "failing one of 27 cell(s) needs at least 10 rounds" in outcome.plan
    assert "--time-budget 3220" in outcome.plan and heard[0] == outcome.plan


def test_a_session_with_time_enough_decides_an_a_a_suite_of_quiet_cells(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_rounds(monkeypatch, tmp_path, cells=3)
    ticks = iter(float(t) for t in range(20))
    session = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), tmp_path, gate=GATE)
    outcome = ab.run_session(session, lambda text: None, lambda: next(ticks))
    assert outcome.verdict is not None and outcome.verdict.outcome == PASS
    assert outcome.stopped == "every cell decided" and outcome.rounds < session.max_rounds


def test_one_look_is_where_the_budget_ends_the_rounds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Rounds of 100 s under 650 s: one look, after round 6 where the budget ends the rounds,
    no look before it, and the cells are judged by max-T at that look."""
    fake_rounds(monkeypatch, tmp_path, cells=3)
    ticks = iter(float(t) for t in range(0, 5000, 100))
    session = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), tmp_path, gate=GATE,
                         time_budget_s=650, one_look=True)  # fmt: skip
    heard: list[str] = []
    outcome = ab.run_session(session, heard.append, lambda: next(ticks))
    assert "the first look is where the budget ends the rounds (at this cost after round 6)" in (
        outcome.plan
    )
    assert outcome.rounds == 6 and outcome.verdict is not None
    assert outcome.verdict.family is not None
    assert outcome.verdict.family.looks == "one look after round 6, paired by round"
    assert outcome.verdict.family.procedure == "westfall-young max-T"
    assert [line for line in heard if "cells decided" in line] == []
    assert outcome.verdict.outcome == PASS


@pytest.mark.parametrize(("later_s", "rounds"), [(120.0, 5), (60.0, 10)])
def test_one_look_follows_rounds_slower_or_faster_than_the_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, later_s: float, rounds: int
) -> None:
    """The first round takes 100 s under 650 s (6 rounds at that cost); later rounds take
    ``later_s``: the one look is where the budget ends them, after round 5 when they are
    slower (a session that planned its look at the first round's cost judged nothing,
    2026-11-29) and after round 10 when they are faster (one left 200 s of 900 unspent)."""
    fake_rounds(monkeypatch, tmp_path, cells=3)
    ticks = iter([0.0, 100.0, *(100.0 + later_s * n for n in range(1, 40))])
    session = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), tmp_path, gate=GATE,
                         time_budget_s=650, max_rounds=60, one_look=True)  # fmt: skip
    outcome = ab.run_session(session, lambda text: None, lambda: next(ticks))
    assert outcome.rounds == rounds
    assert outcome.stopped.endswith(f"its one look is after round {rounds}, where the budget ended")
    assert outcome.verdict is not None and outcome.verdict.family is not None
    assert outcome.verdict.family.looks == f"one look after round {rounds}, paired by round"
    assert outcome.verdict.outcome == PASS


def run_of(rng: random.Random, cells: int, run_sd: float, workers: int = 3) -> list[Cell]:
    """One separate run: every cell moved by the run's own effect, then its workers' spread."""
    shift = rng.gauss(0, run_sd)
    return [
        Cell(
            workload=f"w{i}", params={}, stack="numpy:eager", repeat=r, status="ok",
            steady=Steady(median_s=1e-3, samples_s=[1e-3 * math.exp(shift + rng.gauss(0, 0.05))]),
        )
        for i in range(cells)
        for r in range(workers)
    ]  # fmt: skip


def suite_alarms(runs_a_side: int, run_sd: float, pairs: int, *, as_runs: bool = True) -> int:
    """A/A pairs of 9-cell suites, compared as `compare --fail-above 5` compares them."""
    rng = random.Random(runs_a_side)
    alarms = 0
    for _ in range(pairs):
        base = [run_of(rng, 9, run_sd) for _ in range(runs_a_side)]
        cand = [run_of(rng, 9, run_sd) for _ in range(runs_a_side)]
        if runs_a_side > 1 and as_runs:
            rows = compare_run_sets(base, cand, 0.05, 0.05)
        else:
            drift = (DEFAULT_RUN_DRIFT, DEFAULT_RUN_DRIFT_DF) if runs_a_side == 1 else (0.0, 1.0)
            flat_b, flat_c = [c for r in base for c in r], [c for r in cand for c in r]
            rows = compare_runs(flat_b, flat_c, 0.05, run_drift=drift[0], run_drift_df=drift[1])
        alarms += decide(rows, GATE).outcome == FAIL
    return alarms


def test_separate_runs_keep_the_suite_false_alarm_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two single runs whose run effect is the default's 4 %, and three runs a side whose run
    effect is 10 % (numpy's estimate): at most 5 % of suites fail. Pooling the three runs'
    workers as if they were one run's, as compare used to (before the stacks' levels floored
    the spread between workers), fails far more."""
    pairs = 60
    assert suite_alarms(1, DEFAULT_RUN_DRIFT, pairs) <= 0.05 * pairs
    assert suite_alarms(3, 0.10, pairs) <= 0.05 * pairs
    monkeypatch.setattr("stackwars.results.comparison.stack_levels", lambda groups: {})
    assert suite_alarms(3, 0.10, pairs, as_runs=False) > 0.05 * pairs


def worker(
    workload: str, stack: str, repeat: int, *, rss_mib: float = 100.0, ms: float = 1.0
) -> Cell:
    """A worker of ``workload`` with its peak RSS and its steady time (one block)."""
    return Cell(
        workload=workload, params={}, stack=stack, repeat=repeat, status="ok",
        steady=Steady(median_s=ms / 1e3, samples_s=[ms / 1e3]),
        memory=Memory(peak_rss_bytes=int(rss_mib * 2**20)),
    )  # fmt: skip


def cells_of(values: dict[tuple[str, str], list[float]], measure: str = "rss_mib") -> list[Cell]:
    """Workers of each (workload, stack), one a value of ``measure`` (``worker``'s)."""
    return [
        worker(workload, stack, repeat, **{measure: value})
        for (workload, stack), found in values.items()
        for repeat, value in enumerate(found)
    ]


MEMORY_GATE = Gate(fail_memory_above=10)


def test_three_workers_on_one_memory_level_are_no_evidence_where_the_stack_has_levels() -> None:
    """An A/A pair of separate runs (power-sessions/separate/013, 2026-11-27): jax:jit's peak
    RSS lands on levels about 60 MiB apart; one cell's three baseline workers all landed low
    and its three candidate workers all high. Judged as if the workers' spread were all there
    is, that was a +28.7 % regression at p = 4e-10 and the gate failed. The stack's other
    cells show the levels; a numpy cell 20 % larger in every worker still fails."""
    baseline = {
        ("selu256", "jax:jit"): [212, 212, 212],
        ("gemm512", "jax:jit"): [204, 206, 205],
        ("gemm256", "jax:jit"): [195, 194, 194],
        ("selu512", "jax:jit"): [229, 225, 284],
        ("selu512", "numpy:eager"): [150.0, 150.2, 150.1],
    }
    candidate = {
        ("selu256", "jax:jit"): [271, 271, 271],
        ("gemm512", "jax:jit"): [206, 202, 206],
        ("gemm256", "jax:jit"): [194, 195, 195],
        ("selu512", "jax:jit"): [225, 225, 226],
        ("selu512", "numpy:eager"): [180.0, 180.3, 180.1],
    }
    rows = compare_runs(cells_of(baseline), cells_of(candidate), 0.05)
    verdict = decide(rows, MEMORY_GATE)
    assert verdict.outcome == FAIL
    (failure,) = verdict.failures
    assert failure.startswith("MEMORY above 10%: selu512() numpy:eager @ cpu: peak RSS")
    (jax,) = [row for row in rows if row.label.startswith("selu256")]
    (change,) = jax.memory
    assert change.result.ratio == pytest.approx(271 / 212)
    assert change.result.verdict == UNDECIDED and "levels up to 26% apart" in change.result.reason


def test_a_a_separate_runs_with_memory_levels_fail_the_memory_gate_at_most_alpha() -> None:
    """Simulated A/A pairs of separate runs, 3 workers a cell a side: eight cells of a stack
    whose workers land 28 % higher three times in ten (as jax:jit's did), four whose amounts
    hardly move. Judged without the stack's levels, about one pair in seven failed."""
    rng = random.Random(5)

    def run() -> list[Cell]:
        peaks = {
            (f"levels{i}", "jax:jit"): [
                (200 + 10 * i) * (1.28 if rng.random() < 0.3 else 1.0) * (1 + rng.gauss(0, 0.003))
                for _ in range(3)
            ]
            for i in range(8)
        }
        peaks |= {
            (f"steady{i}", "numpy:eager"): [150 * (1 + rng.gauss(0, 0.003)) for _ in range(3)]
            for i in range(4)
        }
        return cells_of(peaks)

    sessions = 100
    fails = sum(
        decide(compare_runs(run(), run(), 0.05, plan=False), MEMORY_GATE).outcome == FAIL
        for _ in range(sessions)
    )
    assert fails <= 0.05 * sessions


TIME_GATE = Gate(5.0)


def test_three_workers_at_one_speed_are_no_evidence_where_the_stack_has_two() -> None:
    """An A/A pair of separate runs (2026-11-30, 07:22-07:25 UTC, AMD EPYC): numpy's 2-thread
    GEMM lands at 1.35 ms or about 2.0 ms; 512²'s three baseline workers all landed fast, its
    three candidate workers all slow, and with the workers' spread alone it was "+50.2 %,
    p = 0.00078": the gate failed an unchanged cell. numpy's 256² GEMM shows the two speeds
    on one side; a torch cell 20 % slower in every worker still fails."""
    baseline = {
        ("gemm512", "numpy:eager"): [1.350, 1.346, 1.352],
        ("gemm256", "numpy:eager"): [0.184, 0.188, 0.185],
        ("selu512", "numpy:eager"): [1.146, 1.146, 1.158],
        ("selu512", "torch:eager"): [0.687, 0.689, 0.706],
    }
    candidate = {
        ("gemm512", "numpy:eager"): [2.031, 1.984, 2.028],
        ("gemm256", "numpy:eager"): [0.278, 0.274, 0.184],
        ("selu512", "numpy:eager"): [1.143, 1.149, 1.147],
        ("selu512", "torch:eager"): [0.830, 0.835, 0.845],
    }
    rows = compare_runs(cells_of(baseline, "ms"), cells_of(candidate, "ms"), 0.05)
    verdict = decide(rows, TIME_GATE)
    assert verdict.outcome == FAIL
    (failure,) = verdict.failures
    assert failure.startswith("REGRESSION above 5%: selu512() torch:eager @ cpu")
    (gemm,) = [row for row in rows if row.label.startswith("gemm512")]
    assert gemm.result is not None and gemm.result.verdict == UNDECIDED
    assert "levels up to 51% apart" in gemm.result.reason


def two_speed_run(rng: random.Random) -> list[Cell]:
    """One separate run of twelve cells, three workers each, moved by the run's own effect
    (4 %, the default's): six numpy cells whose workers land 1.5x slower in three processes
    of ten (as its 2-thread GEMM did, 2026-11-30), three jax cells spread 8 % and three torch
    cells 2 % between workers."""
    shift = rng.gauss(0, DEFAULT_RUN_DRIFT)
    medians: dict[tuple[str, str], list[float]] = {}
    for i in range(6):
        medians[(f"modes{i}", "numpy:eager")] = [
            (1 + i) * (1.5 if rng.random() < 0.3 else 1.0) * math.exp(shift + rng.gauss(0, 0.01))
            for _ in range(3)
        ]
    for i in range(3):
        for stack, sd in (("jax:jit", 0.08), ("torch:eager", 0.02)):
            medians[(f"cell{i}", stack)] = [
                (1 + i) * math.exp(shift + rng.gauss(0, sd)) for _ in range(3)
            ]
    return cells_of(medians, "ms")


def two_speed_false_fails(sessions: int) -> int:
    rng = random.Random(11)

    def failed() -> bool:
        rows = compare_runs(
            two_speed_run(rng), two_speed_run(rng), 0.05, run_drift=DEFAULT_RUN_DRIFT,
            run_drift_df=DEFAULT_RUN_DRIFT_DF, plan=False,
        )  # fmt: skip
        return decide(rows, TIME_GATE).outcome == FAIL

    return sum(failed() for _ in range(sessions))


def test_a_a_separate_runs_with_two_speed_cells_fail_the_time_gate_at_most_alpha(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Simulated A/A pairs of two single runs (``two_speed_run``), compared as `compare
    --fail-above 5` compares them: at most 5 % fail. Judged without the stacks' levels (the
    workers' spread alone, as compare did until 2026-11-30), more than 5 % fail: the hole
    issue 54 names ("compare of two single runs fails 7-11 % of A/A suites when cells land
    at two speeds")."""
    sessions = 400  # 1000 a side measured 0 and 72 (7.2 %) failed
    assert two_speed_false_fails(sessions) <= 0.05 * sessions
    monkeypatch.setattr("stackwars.results.comparison.stack_levels", lambda groups: {})
    assert two_speed_false_fails(sessions) > 0.05 * sessions
