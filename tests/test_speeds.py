"""Cells of two speeds (timing/speeds.py, results/speeds.py): split by their own times, gated
on their time within the speeds and on the time their share of the slow one adds, the split
kept in the noise table (issue 54, item 4)."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from stackwars.errors import UsageError
from stackwars.instruments.ab import service as ab
from stackwars.instruments.ab.data import (
    CellNoise,
    NoiseTable,
    SpeedNoise,
    noise_of,
    read_noise,
    triage,
)
from stackwars.report.comparison import comparison_json, comparison_markdown
from stackwars.results.comparison import (
    FAIL,
    NOT_GATED,
    PASS,
    PASSED,
    Gate,
    compare_rounds,
    decide,
    label,
)
from stackwars.results.schema import Cell, Steady
from stackwars.results.speeds import SPEED_SHARE, WITHIN_SPEED
from stackwars.results.verdict import verdict_of
from stackwars.runner.child import Interpreter
from stackwars.timing.sequential import Looks
from stackwars.timing.speeds import SPLIT_DEVIATIONS, Known, split, widest_gap
from test_gate import COMPARISON_SCHEMA

GATE = Gate(fail_above=5)
HERE = "here"
ROUNDS = 40


@pytest.fixture(autouse=True)
def this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("stackwars.instruments.ab.data._here", lambda: HERE)


def two_speed_times(
    rng: random.Random, n: int, ratio: float, *, slow_share: float = 0.3, factor: float = 1.0
) -> list[float]:
    """``n`` workers' times (seconds) at 1 ms or ``ratio`` ms, 2 % within a speed, slow with
    probability ``slow_share``, each ``factor`` times slower (a change to the code)."""
    return [
        1e-3 * factor * (ratio if rng.random() < slow_share else 1.0) * math.exp(rng.gauss(0, 0.02))
        for _ in range(n)
    ]


def test_times_at_two_speeds_part_and_one_speed_or_a_continuum_does_not() -> None:
    rng = random.Random(1)
    times = two_speed_times(rng, 120, 1.5)
    speeds = split([math.log(t) for t in times])
    assert speeds is not None
    assert speeds.ratio == pytest.approx(1.5, rel=0.02)
    assert 0.2 < speeds.slow_share < 0.4 and 0.01 < speeds.deviation < 0.04
    one = [math.log(1e-3) + rng.gauss(0, 0.05) for _ in range(120)]
    assert split(one) is None
    # poly 512² on torch:eager in the recipe's workers: from 300 µs to 2 ms with no gap.
    continuum = [math.log(300e-6) + rng.uniform(0, math.log(6)) for _ in range(120)]
    assert split(continuum) is None
    few_slow = [math.log(t) for t in two_speed_times(rng, 120, 1.5, slow_share=0.03)]
    assert split(few_slow) is None  # a speed needs a tenth of the workers


def test_the_widest_gap_says_how_far_a_cell_fell_short_of_a_split() -> None:
    rng = random.Random(9)
    one = [rng.gauss(0, 0.05) for _ in range(120)]
    gap = widest_gap(one)
    assert gap is not None and 0 < gap.size < SPLIT_DEVIATIONS * gap.deviation
    assert 10 <= gap.at <= 110  # each side at least a tenth of the workers
    assert widest_gap(one[:5]) is None  # too few for two speeds of three workers


def test_a_deviation_measured_before_keeps_the_split_of_a_shifted_candidate() -> None:
    """A candidate 25 % slower in both speeds widens each pooled speed by its shift, which can
    close the gap measured in deviations of the pooled speeds; the A/A session's deviation,
    which no change can widen, keeps the speeds apart."""
    rng = random.Random(2)
    base = two_speed_times(rng, 60, 1.9)
    cand = two_speed_times(rng, 60, 1.9, factor=1.25)
    pooled = [math.log(t) for t in (*base, *cand)]
    assert split(pooled) is None
    speeds = split(pooled, Known(0.02, 1.9))
    assert speeds is not None and speeds.ratio > 1.4


def row_of(
    base: list[float], cand: list[float], split_it: bool = True, known: Known | None = None
) -> list:
    """The session's rows (compare_rounds, as ab compares its rounds) of one cell whose
    workers took ``base`` and ``cand``, one a round."""

    def cell(seconds: float) -> Cell:
        steady = Steady(median_s=seconds, samples_s=[seconds])
        return Cell(workload="gemm", params={}, stack="numpy:eager", repeat=0, status="ok",
                    steady=steady)  # fmt: skip

    looks = Looks(len(base), len(base))
    wanted = {label(cell(1.0)): known} if split_it else {}
    return compare_rounds(
        [[cell(t)] for t in base], [[cell(t)] for t in cand], 0.05, looks, 0.05, split=wanted
    )


def test_a_session_whose_times_part_at_its_sides_is_not_split_where_the_speeds_are_known() -> None:
    """Every process at the fast speed, the candidate 14 % slower: the pooled times part at
    the sides (fresh sessions of 2026-11-30 did, 1.14x apart where the speeds were 1.49x): a
    change, not a second speed, refused when the A/A session's speeds are known."""
    rng = random.Random(10)
    base = two_speed_times(rng, ROUNDS, 1.49, slow_share=0.0)
    cand = two_speed_times(rng, ROUNDS, 1.49, slow_share=0.0, factor=1.14)
    pooled = [math.log(t) for t in (*base, *cand)]
    sides = split(pooled, Known(0.01, 1.0))
    assert sides is not None and sides.ratio == pytest.approx(1.14, rel=0.02)
    assert split(pooled, Known(0.01, 1.49)) is None
    verdict = decide(row_of(base, cand, known=Known(0.01, 1.49)), GATE)
    assert verdict.outcome == FAIL and "time within its speeds" not in verdict.failures[0]


def test_rows_of_a_two_speed_cell_are_judged_within_their_speeds() -> None:
    """Unchanged, 1.5x apart: judged within its speeds and by its share, it passes. Speeds 3x
    apart, 10 % slower in both: the whole time's rounds spread by the speeds and leave it open;
    within its speeds it fails, both speeds' shares alike (simulated, 60 sessions of 40
    rounds: the whole time failed 16, the split 60)."""
    rng = random.Random(3)
    base, cand = (two_speed_times(rng, ROUNDS, 1.5) for _ in range(2))
    rows = row_of(base, cand)
    assert rows[0].label == "gemm() numpy:eager @ cpu" and rows[0].speeds is not None
    verdict = decide(rows, GATE)
    assert verdict.outcome == PASS and verdict.states == (PASSED,)
    assert verdict.family.hypotheses == 2
    base, cand = two_speed_times(rng, ROUNDS, 3.0), two_speed_times(rng, ROUNDS, 3.0, factor=1.1)
    assert decide(row_of(base, cand, split_it=False), GATE).outcome != FAIL
    slower = decide(row_of(base, cand), GATE)
    assert slower.outcome == FAIL
    assert (
        f"REGRESSION above 5%: gemm() numpy:eager @ cpu: {WITHIN_SPEED}: slower"
        in (slower.failures[0])
    )


def test_more_slow_processes_fail_by_the_share_of_the_slow_speed() -> None:
    rng = random.Random(4)
    base = two_speed_times(rng, ROUNDS, 1.5, slow_share=0.2)
    cand = two_speed_times(rng, ROUNDS, 1.5, slow_share=0.9)
    verdict = decide(row_of(base, cand), GATE)
    assert verdict.outcome == FAIL
    assert any(SPEED_SHARE in line for line in verdict.failures)
    assert not any(WITHIN_SPEED in line for line in verdict.failures)


def test_speeds_far_apart_hide_a_slow_process_and_are_not_passed() -> None:
    """1.9x apart, a process 4x slow at the fast speed lands 2.1x the slow one: below the
    2.2x a slow round needs, so the cell cannot show a slow share absent."""
    rng = random.Random(5)
    base, cand = (two_speed_times(rng, ROUNDS, 1.9) for _ in range(2))
    verdict = decide(row_of(base, cand), GATE)
    assert verdict.states == (NOT_GATED,) and verdict.outcome != FAIL
    assert "its slow speed is 1.9" in verdict.not_gated[0]
    assert "lands 2.09x the slow one" in verdict.not_gated[0]


def test_unchanged_two_speed_cells_keep_the_family_s_false_alarm_rate() -> None:
    """Two hundred simulated A/A sessions of four two-speed cells (speeds 1.3x and 1.5x apart,
    a burst shared by a round's cells on one side, the side drawn): the split tests' max-T
    family fails at most its 5 % (binomial: 20 of 200 is far above it)."""
    rng = random.Random(6)
    failed = 0
    for _ in range(200):
        rows = []
        bursts = [rng.choice((0.0, 0.0, 0.0, 0.1)) for _ in range(ROUNDS)]
        sides = [rng.random() < 0.5 for _ in range(ROUNDS)]
        for ratio in (1.3, 1.5, 1.3, 1.5):
            base, cand = (two_speed_times(rng, ROUNDS, ratio) for _ in range(2))
            for i in range(ROUNDS):  # the burst slows the side it hits in every cell
                if sides[i]:
                    base[i] *= math.exp(bursts[i])
                else:
                    cand[i] *= math.exp(bursts[i])
            rows.extend(row_of(base, cand))
        failed += decide(rows, GATE).outcome == FAIL
    assert failed < 20


def test_the_report_and_json_show_the_speeds() -> None:
    rng = random.Random(7)
    base, cand = (two_speed_times(rng, ROUNDS, 1.5) for _ in range(2))
    verdict = verdict_of(row_of(base, cand, known=Known(0.02, 1.5, 0.3)), GATE, "one look")
    markdown = comparison_markdown(verdict, "a session")
    assert "- speeds: gemm() numpy:eager @ cpu: two speeds 1.5" in markdown
    assert "slow (30% in the noise table's A/A rounds); within its speeds" in markdown
    assert "within its speeds +" in markdown or "within its speeds -" in markdown
    data = comparison_json(verdict)
    jsonschema.validate(data, COMPARISON_SCHEMA)
    speeds = data["rows"][0]["speeds"]
    assert speeds["speeds"]["slow"] - speeds["speeds"]["fast"] == pytest.approx(math.log(1.5), 0.05)
    assert speeds["share"]["evidence"]["trim"] == 0.0
    assert speeds["known"] == {"deviation": 0.02, "ratio": 1.5, "slow_share": 0.3}
    assert data["rows"][0]["comparison"]["evidence"]["trim"] == 0.2


def test_the_noise_table_keeps_the_split_and_plans_the_cell_by_it(tmp_path: Path) -> None:
    """An A/A session writing the table splits every cell it can; the table keeps a split
    cell's speeds and the spreads of its two tests, which plan the cell: its share's spread is
    near its whole time's (the speeds are what spreads either), so a split cell is gated in a
    session's rounds only when its speeds are near enough or its rounds many."""
    rng = random.Random(8)
    base, cand = (two_speed_times(rng, ROUNDS, 1.5) for _ in range(2))
    written = noise_of(row_of(base, cand), ROUNDS, ["stackwars", "ab"])
    noise = written.cells["gemm() numpy:eager @ cpu"]
    assert noise.speeds is not None and noise.speeds.ratio == pytest.approx(1.5, rel=0.03)
    assert noise.speeds.within < 0.05 < noise.speeds.share
    path = tmp_path / "noise.json"
    written.write(path)
    assert read_noise(path) == written
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == 3
    quiet = CellNoise(ROUNDS, 0.01)
    table = NoiseTable(HERE, "a CPU", "now", [], ROUNDS, {"two": noise, "quiet": quiet})
    found = triage(table, ["two", "quiet"], 10, 0.05, ROUNDS)
    assert list(found) == ["two"]
    assert "(its share of its slow speed: a round's paired spread 2" in found["two"]
    assert triage(table, ["two", "quiet"], 10, 0.05, 200) == {}
    near = CellNoise(ROUNDS, 0.05, speeds=SpeedNoise(1.1, 0.3, 0.01, 0.02, 0.05))
    table = NoiseTable(HERE, "a CPU", "now", [], ROUNDS, {"near": near, "quiet": quiet})
    assert triage(table, ["near", "quiet"], 10, 0.05, ROUNDS) == {}


def test_ab_splits_every_cell_when_writing_noise_and_the_table_s_cells_after(
    tmp_path: Path,
) -> None:
    sides = ab.Side("baseline", Interpreter()), ab.Side("candidate", Interpreter())
    session = ab.Session(("--suite", "quick"), *sides, tmp_path)
    cell = Cell(workload="gemm", params={}, stack="numpy:eager", repeat=0, status="ok")
    found = ab.speeds_to_split(replace(session, find_speeds=True), [[cell]])
    assert found == {"gemm() numpy:eager @ cpu": None}
    assert ab.speeds_to_split(session, [[cell]]) == {}
    speeds = SpeedNoise(1.5, 0.3, 0.021, 0.03, 0.2)
    cells = {"two": CellNoise(ROUNDS, 0.2, speeds=speeds), "one": CellNoise(ROUNDS, 0.01)}
    table = NoiseTable(HERE, "a CPU", "now", [], ROUNDS, cells)
    found = ab.speeds_to_split(replace(session, noise=table), [[cell]])
    assert found == {"two": Known(0.021, 1.5, 0.3)}


def test_a_noise_table_with_a_broken_split_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "noise.json"
    cells = {"two": CellNoise(ROUNDS, 0.2, speeds=SpeedNoise(1.5, 0.3, 0.02, 0.03, 0.2))}
    NoiseTable(HERE, "a CPU", "now", [], ROUNDS, cells).write(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["cells"]["two"]["speeds"]["ratio"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UsageError, match=r"not a whole noise table .* --write-noise FILE"):
        read_noise(path)
