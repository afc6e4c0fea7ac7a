"""The noise triage (instruments/ab/data.py): a cell whose spread, measured by an A/A session
before, needs more rounds than the session has is listed "not gated in this job" instead of
making the session underpowered, and can still fail; a table is one machine's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from stackwars.errors import UsageError
from stackwars.instruments.ab import service as ab
from stackwars.instruments.ab.command import check_a_a
from stackwars.instruments.ab.data import CellNoise, NoiseTable, noise_of, read_noise, triage
from stackwars.report.comparison import comparison_json
from stackwars.results.comparison import (
    FAIL,
    NOT_GATED,
    PASS,
    PASSED,
    UNDECIDED_ROW,
    UNDERPOWERED,
    Gate,
    decide,
)
from stackwars.results.schema import Cell, Memory, Steady
from stackwars.results.verdict import verdict_of
from stackwars.runner.child import Interpreter
from stackwars.timing.sequential import rounds_to_pass
from test_gate import COMPARISON_SCHEMA, row, run_at

GATE = Gate(fail_above=5)
HERE = "here"


@pytest.fixture(autouse=True)
def this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("stackwars.instruments.ab.data._here", lambda: HERE)


def table(**spreads: float) -> NoiseTable:
    cells = {label: CellNoise(20, spread) for label, spread in spreads.items()}
    return NoiseTable(HERE, "a CPU", "2026-11-29T03:00:00+00:00", ["stackwars", "ab"], 20, cells)


def test_the_rounds_to_pass_grow_with_the_spread_and_have_the_sign_flip_s_floor() -> None:
    margin = 0.0953  # 10 %
    assert rounds_to_pass(0.001, margin, 0.05) == 5  # 2^-5 < 0.05: the sign flip's least
    assert rounds_to_pass(0.28, margin, 0.05) > 40
    assert rounds_to_pass(0.1, margin, 0.05) < rounds_to_pass(0.2, margin, 0.05)


def test_a_cell_too_noisy_for_the_session_s_rounds_is_named_with_what_it_needs() -> None:
    found = triage(table(quiet=0.01, noisy=0.3), ["quiet", "noisy", "new"], 10, 0.05, 10)
    assert list(found) == ["noisy"]
    assert found["noisy"].startswith("needs at least ")
    assert (
        "within 10% beside the 2 gated cell(s) at its noise (a round's paired spread 30.0% "
        "over 20 A/A rounds" in found["noisy"]
    )
    assert found["noisy"].endswith("this session has 10")


def test_the_triage_gates_the_cells_a_session_can_pass_together() -> None:
    """A session passes when all its gated cells pass: ten cells each shown within 10 % by 10
    rounds at 80 % would pass together about 0.8^10 = 11 % of the time. The triage gates the
    quietest cells that pass together at 80 %."""
    margin = math.log1p(0.10)
    assert rounds_to_pass(0.1, margin, 0.05) <= 10  # alone, each would be gated
    equal = table(**{f"c{i}": 0.1 for i in range(10)})
    labels = list(equal.cells)
    kept = [label for label in labels if label not in triage(equal, labels, 10, 0.05, 10)]
    power = 0.8 ** (1 / len(kept))
    assert 1 <= len(kept) < 10
    assert rounds_to_pass(0.1, margin, 0.05, power) <= 10
    assert rounds_to_pass(0.1, margin, 0.05, 0.8 ** (1 / (len(kept) + 1))) > 10
    enough = rounds_to_pass(0.1, margin, 0.05, 0.8 ** (1 / 10))
    assert triage(equal, labels, 10, 0.05, enough) == {}
    # The quietest are kept: a noisier cell goes first.
    mixed = table(quiet=0.05, middle=0.1, noisy=0.14)
    assert list(triage(mixed, ["noisy", "middle", "quiet"], 10, 0.05, 12)) == ["noisy"]


def test_a_not_gated_cell_does_not_hold_the_outcome_open_and_can_still_fail() -> None:
    rows = [row(1.0, 0.005, "quiet"), row(1.03, 0.05, "noisy")]
    assert decide(rows, GATE).outcome == UNDERPOWERED
    verdict = decide(rows, GATE, not_gated={"noisy": "needs 60 rounds"})
    assert verdict.outcome == PASS and verdict.states == (PASSED, NOT_GATED)
    assert verdict.not_gated == ("not gated in this job: noisy: needs 60 rounds",)
    assert verdict.headline().startswith(
        "Gate: PASS (all 1 judged cells shown within the limits, 1 not gated in this job;"
    )
    slow = [row(1.0, 0.005, "quiet"), row(1.5, 0.01, "noisy")]
    failed = decide(slow, GATE, not_gated={"noisy": "needs 60 rounds"})
    assert failed.outcome == FAIL and failed.states == (PASSED, FAIL) and not failed.not_gated
    alone = decide([row(1.03, 0.05, "noisy")], GATE, not_gated={"noisy": "needs 60 rounds"})
    assert alone.outcome == UNDERPOWERED  # nothing was shown within the limits


def test_a_cell_whose_spread_hides_a_slow_share_is_not_passed_by_a_lucky_session() -> None:
    """Its rounds show it within the limit this time, but its A/A spread, measured before the
    session, is so wide that a 4x round stands less than four deviations out: a share of slow
    processes would hide there (benchmarks/power/simulated_one_look.py passed two-speed cells
    with a 4x share), so it is not gated, whether the triage left it out or not. A cell the
    triage left out for its rounds alone, with a spread that shows a 4x round, stays passed."""
    rows = [row(1.0, 0.005, "quiet"), row(1.0, 0.005, "two-speed")]
    assert decide(rows, GATE).states == (PASSED, PASSED)
    wide = {"quiet": 0.01, "two-speed": math.log(4) / 4}
    for why in ({"two-speed": "needs 450 rounds"}, {}):
        verdict = decide(rows, GATE, not_gated=why, aa_spreads=wide)
        assert verdict.outcome == PASS and verdict.states == (PASSED, NOT_GATED)
        (line,) = verdict.not_gated
        assert line.startswith("not gated in this job: two-speed: its A/A rounds spread 35% a")
        assert "a round 4x slow stands less than 4 deviations out" in line
    narrower = {"quiet": 0.01, "two-speed": 0.99 * math.log(4) / 4}
    left_out = decide(rows, GATE, not_gated={"two-speed": "needs 70 rounds"}, aa_spreads=narrower)
    assert left_out.outcome == PASS and left_out.states == (PASSED, PASSED)
    assert not left_out.not_gated


def test_the_json_lists_the_cells_not_gated() -> None:
    import jsonschema

    rows = [row(1.0, 0.005, "quiet"), row(1.03, 0.05, "noisy")]
    data = json.loads(json.dumps(comparison_json(verdict_of(rows, GATE, not_gated={"noisy": "x"}))))
    jsonschema.validate(data, COMPARISON_SCHEMA)
    assert data["not_gated"] == ["not gated in this job: noisy: x"]
    assert [r["gate_state"] for r in data["rows"]] == [PASSED, NOT_GATED]


def test_a_table_is_one_machine_s_and_of_its_own_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "noise.json"
    table(quiet=0.01).write(path)
    assert read_noise(path) == table(quiet=0.01)
    monkeypatch.setattr("stackwars.instruments.ab.data._here", lambda: "elsewhere")
    with pytest.raises(UsageError, match=r"measured another machine .* --write-noise"):
        read_noise(path)
    path.write_text('{"format": 99}', encoding="utf-8")
    with pytest.raises(UsageError, match="not a noise table of format 3"):
        read_noise(path)


def test_a_table_keeps_memory_spreads_and_reads_a_first_format_table_without_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "noise.json"
    measured = NoiseTable(HERE, "a CPU", "2026-11-29T03:00:00+00:00", ["stackwars", "ab"], 20,
                          {"c": CellNoise(20, 0.1, {"peak RSS": 0.02})})  # fmt: skip
    measured.write(path)
    assert read_noise(path) == measured
    data = json.loads(path.read_text(encoding="utf-8"))
    data["format"], data["cells"] = 1, {"c": {"rounds": 20, "spread": 0.1}}
    path.write_text(json.dumps(data), encoding="utf-8")
    assert read_noise(path).cells == {"c": CellNoise(20, 0.1)}


def test_with_a_memory_limit_a_cell_is_gated_only_when_its_memory_can_be_shown_too() -> None:
    quiet = CellNoise(20, 0.01, {"peak RSS": 0.01})
    noisy_memory = CellNoise(20, 0.01, {"peak RSS": 0.3})
    cells = {"quiet": quiet, "noisy memory": noisy_memory}
    measured = NoiseTable(HERE, "a CPU", "2026-11-29T03:00:00+00:00", ["ab"], 20, cells)
    labels = ["quiet", "noisy memory"]
    assert triage(measured, labels, 10, 0.05, 10) == {}  # time alone: both are quiet
    found = triage(measured, labels, 10, 0.05, 10, memory_limit_pct=10)
    assert list(found) == ["noisy memory"]
    assert (
        "within 10% beside the 1 gated cell(s) at its noise (its peak RSS: a round's "
        in (found["noisy memory"])
    )
    # Each memory measure is one more test that must pass: two quiet cells with a measure
    # each ask for the rounds of four tests together.
    margin = math.log1p(0.10)
    spread = 0.15
    four, two = (rounds_to_pass(spread, margin, 0.05, 0.8 ** (1 / k)) for k in (4, 2))
    assert four > two
    pair = {label: CellNoise(20, spread, {"peak RSS": spread}) for label in ("a", "b")}
    both = NoiseTable(HERE, "a CPU", "2026-11-29T03:00:00+00:00", ["ab"], 20, pair)
    assert triage(both, ["a", "b"], 10, 0.05, two) == {}
    assert len(triage(both, ["a", "b"], 10, 0.05, two, memory_limit_pct=10)) == 1
    assert triage(both, ["a", "b"], 10, 0.05, four, memory_limit_pct=10) == {}


def noisy_rounds(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    swings: list[float],
    memory: list[float] | None = None,
) -> None:
    """ab's rounds without processes: cell i's baseline worker lands exp(+swings[i]) off in
    even rounds and exp(-swings[i]) in odd ones, its candidate the other way round (a paired
    log ratio of -2 swing, +2 swing, ...: centred on no change, whichever side goes first),
    beside a small fixed wobble; ``memory``: the same swings of each cell's peak RSS."""

    def fake_round(session: ab.Session, side: ab.Side, index: int) -> Path:
        record = run_at(f"2026-11-29T03:00:{index:02d}+00:00")
        record.cells = []
        sign = (-1) ** index * (1 if side.name == "baseline" else -1)
        for i, swing in enumerate(swings):
            time = 1e-3 * math.exp(sign * swing + 0.001 * math.sin(7 * index + i))
            steady = Steady(median_s=time, samples_s=[time] * 3)
            cell = Cell(f"w{i}", {}, "numpy:eager", status="ok", steady=steady)
            if memory is not None:
                wobble = 0.001 * math.cos(5 * index + i)
                cell.memory = Memory(peak_rss_bytes=int(1e9 * math.exp(sign * memory[i] + wobble)))
            record.cells.append(cell)
        path = tmp_path / f"{session.out_dir.name}-{side.name}-{index}.json"
        record.write_json(path)
        return path

    monkeypatch.setattr(ab, "_round", fake_round)
    monkeypatch.setattr(ab, "side_version", lambda interpreter, budget: "test")


def session(tmp_path: Path, name: str, noise: NoiseTable | None = None) -> ab.Session:
    sides = ab.Side("baseline"), ab.Side("candidate")
    return ab.Session((), *sides, tmp_path / name, gate=GATE, min_rounds=10, max_rounds=10,
                      noise=noise)  # fmt: skip


def test_an_a_a_session_s_table_lets_the_next_session_pass_its_quiet_cells(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An A/A session measures the spreads (a quiet cell, a noisy one); the next session, on
    the same rounds' noise, passes with the noisy cell not gated, where without the table it
    is underpowered."""
    noisy_rounds(monkeypatch, tmp_path, [0.001, 0.001, 0.3])
    ticks = iter(float(t) for t in range(100))
    measured = ab.run_session(session(tmp_path, "aa"), lambda text: None, lambda: next(ticks))
    noise = noise_of(measured.rows, measured.rounds, ["stackwars", "ab"])
    assert sorted(noise.cells) == sorted(row.label for row in measured.rows)
    assert all(noise.cells[row.label].rounds == 10 for row in measured.rows)
    plain = ab.run_session(session(tmp_path, "plain"), lambda text: None, lambda: next(ticks))
    assert plain.verdict is not None and plain.verdict.outcome == UNDERPOWERED
    assert plain.verdict.states[2] == UNDECIDED_ROW
    triaged = ab.run_session(session(tmp_path, "triaged", noise), lambda text: None,
                             lambda: next(ticks))  # fmt: skip
    assert triaged.verdict is not None and triaged.verdict.outcome == PASS
    assert triaged.verdict.states == (PASSED, PASSED, NOT_GATED)


def test_an_a_a_session_measures_memory_spreads_that_a_memory_gate_triages(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two cells quiet in time, one of them not in its peak RSS: with a gate on memory too the
    session passes the quiet one and lists the other not gated, naming its memory."""
    noisy_rounds(monkeypatch, tmp_path, [0.001, 0.001], memory=[0.001, 0.3])
    ticks = iter(float(t) for t in range(100))
    measured = ab.run_session(session(tmp_path, "aa"), lambda text: None, lambda: next(ticks))
    noise = noise_of(measured.rows, measured.rounds, ["stackwars", "ab"])
    quiet, noisy = (noise.cells[row.label].memory["peak RSS"] for row in measured.rows)
    assert quiet < 0.01 and noisy > 0.5  # a paired log ratio of -0.6, +0.6, ...
    sides = ab.Side("baseline"), ab.Side("candidate")
    gate = Gate(fail_above=5, fail_memory_above=10)
    both = ab.Session((), *sides, tmp_path / "both", gate=gate, min_rounds=10, max_rounds=10,
                      noise=noise)  # fmt: skip
    triaged = ab.run_session(both, lambda text: None, lambda: next(ticks))
    assert triaged.verdict is not None and triaged.verdict.outcome == PASS
    assert triaged.verdict.states == (PASSED, NOT_GATED)
    assert "(its peak RSS: a round's paired spread" in triaged.verdict.not_gated[0]


def test_noise_without_a_gate_on_time_and_a_write_that_is_not_a_a_are_refused(
    tmp_path: Path,
) -> None:
    sides = ab.Side("baseline"), ab.Side("candidate")
    asked = ab.Session((), *sides, tmp_path, gate=Gate(fail_memory_above=5), noise=table())
    with pytest.raises(UsageError, match=r"--noise .* give --fail-above too"):
        ab.check(asked)
    different = ab.Session((), sides[0], ab.Side("candidate", Interpreter("", {"X": "1"})),
                           tmp_path)  # fmt: skip
    with pytest.raises(UsageError, match="--write-noise measures this machine's noise"):
        check_a_a(different)
    with pytest.raises(UsageError, match="give --min-rounds equal to --max-rounds"):
        check_a_a(ab.Session((), *sides, tmp_path))
    check_a_a(ab.Session((), *sides, tmp_path, min_rounds=20, max_rounds=20))
    check_a_a(ab.Session((), *sides, tmp_path, one_look=True))
