"""docs/ci.md's recipe is the one its figures were measured on: the gate step of its workflow
and its nightly noise step run benchmarks/power/fresh_sessions.py's ``recipe`` kind exactly
(``RECIPE_GATE``, ``RECIPE_AB``, ``RECIPE_RUN``), so that what the fresh sessions measured is
what a user copying the recipe runs."""

from __future__ import annotations

import json
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / "docs" / "ci.md"
FRESH: dict[str, Any] = runpy.run_path(str(ROOT / "benchmarks" / "power" / "fresh_sessions.py"))


def step(name: str) -> list[str]:
    """The command of the workflow step ``name`` (a folded ``run: >`` block), as words."""
    text = CI.read_text(encoding="utf-8")
    found = re.search(rf"- name: {name}\n\s+run: >\n((?:\s{{10}}\S.*\n)+)", text)
    assert found, f"docs/ci.md has no step {name!r} with a folded run block"
    return shlex.split(found.group(1))


def options(words: list[str]) -> tuple[list[str], list[str]]:
    """ab's own options and the run options after ``--``."""
    split = words.index("--")
    return words[:split], words[split + 1 :]


def pairs(words: list[str]) -> set[tuple[str, ...]]:
    """Each option with its value (a flag alone)."""
    found: set[tuple[str, ...]] = set()
    for index, word in enumerate(words):
        if word.startswith("--"):
            value = words[index + 1 : index + 2]
            found.add((word, *value) if value and not value[0].startswith("--") else (word,))
    return found


def test_the_gate_step_is_the_measured_recipe() -> None:
    words = step("gate")
    assert words[0].endswith("stackwars") and words[1] == "ab"
    ab, run = options(words)
    assert run == FRESH["RECIPE_RUN"]
    assert pairs(FRESH["RECIPE_AB"]) <= pairs(ab)
    assert pairs(FRESH["RECIPE_GATE"]) <= pairs(ab)
    assert any(option[0] == "--noise" for option in pairs(ab))


def test_the_noise_step_measures_the_cells_the_gate_step_gates() -> None:
    ab, run = options(step("noise"))
    assert run == FRESH["RECIPE_RUN"]
    assert {("--duet",), ("--one-look",)} <= pairs(ab)
    written = next(option[1] for option in pairs(ab) if option[0] == "--write-noise")
    read = next(option[1] for option in pairs(options(step("gate"))[0]) if option[0] == "--noise")
    assert written == read


def at_test_size(words: list[str], tmp_path: Path) -> list[str]:
    """A step's command as the test runs it: this Python on both sides, the files in
    ``tmp_path``, a minute's budget, the suite's cells at n = 32, and --fail-above 100 (two
    runs of unchanged code at test size may differ by more than 5 %: the outcome tested is the
    recipe's, not this machine's noise)."""
    ab, run = options(words)
    swapped = {"--baseline-python": sys.executable, "--candidate-python": sys.executable,
               "--time-budget": "60", "--max-rounds": "8", "--fail-above": "100"}  # fmt: skip
    shown = []
    for index, word in enumerate(ab[1:], start=1):
        before = ab[index - 1]
        if before in swapped:
            shown.append(swapped[before])
        elif before in ("--noise", "--write-noise", "--out", "--markdown", "--json"):
            shown.append(str(tmp_path / Path(word).name))
        else:
            shown.append(word)
    return [*shown, "--", *run, "--param", "n=32", "--budget", "0.05"]


@pytest.mark.slow
@pytest.mark.serial
def test_the_recipe_at_test_size_writes_its_noise_then_judges_every_cell_at_its_look(
    tmp_path: Path,
) -> None:
    """The noise step, then the gate step on two sides of unchanged code. What the recipe
    promises whatever this machine's noise: the session looks once at the rounds it ran and
    judges every gated cell there (its first sessions ran out of budget before their look and
    judged none), and unchanged code does not fail. Whether it passes rests on the noise
    (four times in five by design): docs/ci.md measures that on fresh sessions."""
    noise = subprocess.run(
        [sys.executable, "-m", "stackwars", *at_test_size(step("noise"), tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert noise.returncode == 0, noise.stdout + noise.stderr
    assert (tmp_path / "noise.json").is_file()
    gate = subprocess.run(
        [sys.executable, "-m", "stackwars", *at_test_size(step("gate"), tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert gate.returncode in (0, 3), gate.stdout + gate.stderr
    data = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))
    rounds = data["session"]["rounds"]
    assert data["family"]["looks"] == f"one look after round {rounds}, paired by round"
    assert len(data["rows"]) == 12 and not data["gate"]["failures"]
    assert {row["gate_state"] for row in data["rows"]} <= {"pass", "not gated", "undecided"}
    assert "pass" in {row["gate_state"] for row in data["rows"]}
    assert not any("first look is after" in line for line in data["undecided"])
