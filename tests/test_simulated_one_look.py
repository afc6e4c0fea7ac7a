"""benchmarks/power/simulated_one_look.py: the recipe's one-look gate on simulated sessions,
decided by the project's own functions. At test size (a few dozen seeded sessions) the rates
the benchmark measures at full size hold in kind: unchanged code rarely fails, a cell at the
pass limit rarely passes, a cell twice as slow always fails, and the models behave as named."""

from __future__ import annotations

import math
import random
import runpy
import statistics
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIMULATION: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def beside_its_neighbours(monkeypatch: pytest.MonkeyPatch) -> None:
    """The script imports its neighbours as ``python SCRIPT`` finds them."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks" / "power"))


def simulation() -> dict[str, Any]:
    """The script's namespace, loaded once."""
    if not SIMULATION:
        SIMULATION.update(runpy.run_path(str(ROOT / "benchmarks/power/simulated_one_look.py")))
    return SIMULATION


def test_each_model_spreads_its_cells_as_its_docstring_says() -> None:
    sim = simulation()
    rng = random.Random(1)
    rounds = [sim["round_of"]("iid", 6)(rng) for _ in range(2000)]
    spreads = [statistics.stdev(r[cell][1] - r[cell][0] for r in rounds) for cell in range(6)]
    # A pair's ratio spreads sqrt(2) times one worker's: 2, 5, 10 % in turn.
    for cell, expected in enumerate([0.02, 0.05, 0.10] * 2):
        assert math.isclose(spreads[cell], expected * math.sqrt(2), rel_tol=0.1)
    two_speed = [b - a for a, b in (sim["round_of"]("two-speed", 3)(rng)[2] for _ in range(2000))]
    assert max(two_speed) > math.log(1.9) * 0.9 and min(two_speed) < -math.log(1.9) * 0.9


def test_unchanged_code_rarely_fails_and_a_cell_at_the_pass_limit_rarely_passes() -> None:
    found = simulation()["design"]("bursts", 12, 12, 40, 7)
    assert found["aa"].get("fail", 0) <= 3  # 5 % of 40 is 2; a seeded draw, not a rate
    passed = sum(tally.get("cell passed", 0) for tally in found["at_limit"].values())
    assert passed <= 3
    assert sum(tally.get("cell passed", 0) for tally in found["share"].values()) <= 3


def test_a_cell_twice_as_slow_fails_every_session() -> None:
    sim = simulation()
    rng = random.Random(3)
    draw = sim["round_of"]("iid", 12)
    table = sim["noise_table"](draw, 12, rng)
    for _ in range(5):
        drawn = sim["session"](draw, 12, rng, sim["shifted"](0, math.log(2.0), 1.0))
        assert sim["judge"](table, 12)(drawn).states[0] == "fail"


def test_the_rendering_has_a_row_per_design() -> None:
    sim = simulation()
    found = sim["design"]("iid", 12, 12, 6, 1)
    text = sim["render"]({"seed": 1, "limit": 0.10, "designs": [found, found]})
    assert text.count("| iid | 12 | 12 |") == 2


def test_nonsense_is_refused_in_one_line_naming_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main = simulation()["main"]
    for argv, fix in (
        ([str(tmp_path / "out.json"), "--sessions", "0"], "give at least 1"),
        ([str(tmp_path / "missing.json"), "--render"], "write it first without --render"),
    ):
        with pytest.raises(SystemExit):
            main(argv)
        assert fix in capsys.readouterr().err


def test_the_two_speed_cells_are_split_in_the_noise_table_and_a_change_within_fails() -> None:
    sim = simulation()
    rng = random.Random(4)
    draw = sim["round_of"]("two-speed", 6)
    table = sim["noise_table"](draw, 6, rng)
    # The 4x cell parts; the 1.9x one only where its round effects (10 %) leave a gap.
    split = [label for label, cell in table.cells.items() if cell.speeds]
    assert "cell05" in split and set(split) <= {"cell02", "cell05"}
    drawn = sim["session"](draw, 52, rng, sim["shifted"](5, math.log(1.1), 1.0))
    assert sim["judge"](table, 52)(drawn).states[5] == "fail"
