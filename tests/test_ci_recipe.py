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
import time
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


def test_a_campaigns_sittings_add_up_in_its_summary() -> None:
    """``summarise --into`` adds a sitting's sessions to the summary file of the sittings
    before it (their rounds gone with their machine): in order of start, a session summarised
    twice once, a summary of another kind refused."""
    merged = FRESH["merged"]

    def summary(*started: str, kind: str = "recipe") -> dict[str, Any]:
        sessions = [{"fingerprint": "f", "started": s, "outcome": "pass"} for s in started]
        return {"format": FRESH["SUMMARY_FORMAT"], "kind": kind, "injected": {},
                "sessions": sessions}  # fmt: skip

    earlier, sitting = (
        summary("2026-11-29T09:52Z", "2026-11-29T10:07Z"),
        summary("2026-11-30T08:00Z", "2026-11-29T10:07Z"),
    )
    sitting["sessions"][1]["outcome"] = "fail"
    both = merged(earlier, sitting)
    assert [(s["started"], s["outcome"]) for s in both["sessions"]] == [
        ("2026-11-29T09:52Z", "pass"),
        ("2026-11-29T10:07Z", "fail"),
        ("2026-11-30T08:00Z", "pass"),
    ]
    with pytest.raises(SystemExit, match="kind 'recipe'"):
        merged(earlier, summary("2026-11-30T08:00Z", kind="recipe-ab"))


def test_a_campaign_runs_the_kind_furthest_behind_until_it_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``campaign`` picks, session by session, the recipe kind furthest behind its share of
    ``CAMPAIGN``, counting what the summaries already hold, and adds each session to its
    kind's summary as it ends; it stops when both kinds have their sessions."""
    campaign = FRESH["campaign"]
    summaries = tmp_path / "summaries"
    summaries.mkdir()
    for kind, held in (("recipe", 6), ("recipe-ab", 2)):
        sessions = [{"started": str(i)} for i in range(held)]
        (summaries / f"{kind}.json").write_text(json.dumps({"sessions": sessions}), "utf-8")
    ran: list[str] = []

    def one_session(venvs: Path, kind: str, folder: Path, extra: list[str]) -> dict[str, Any]:
        ran.append(kind)
        return {}

    def summarise(out: Path, kind: str, into: Path) -> None:
        data = json.loads(into.read_text(encoding="utf-8"))
        data["sessions"].append({"started": f"new {len(ran)}"})
        into.write_text(json.dumps(data), encoding="utf-8")

    monkeypatch.setitem(campaign.__globals__, "one_session", one_session)
    monkeypatch.setitem(campaign.__globals__, "summarise", summarise)
    campaign(tmp_path / "venvs", tmp_path / "out", summaries, time.time() + 3600, [])
    assert ran[:3] == ["recipe-ab", "recipe-ab", "recipe"]
    assert (ran.count("recipe"), ran.count("recipe-ab")) == (14, 10)


@pytest.mark.parametrize(
    ("until", "says"),
    [
        ("tomorrow", "'tomorrow' is not a UTC minute: write it as 2026-11-30T21:00Z"),
        (None, "campaign needs --until YYYY-MM-DDTHH:MMZ and --into FOLDER"),
    ],
)
def test_a_campaign_without_a_clear_deadline_says_how_to_write_one(
    until: str | None,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A deadline the campaign cannot read is a one-line usage error naming the form it wants,
    before any session starts (not a traceback from the date parser)."""
    argv = ["fresh_sessions.py", "campaign", "--into", "summaries"]
    monkeypatch.setattr(sys, "argv", [*argv, *(["--until", until] if until else [])])
    with pytest.raises(SystemExit) as exit_:
        FRESH["main"]()
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_a_pair_of_separate_runs_is_summarised_with_its_workers_and_rendered(
    tmp_path: Path,
) -> None:
    """A ``separate`` pair (two runs and their compare.json, no rounds) summarised and
    rendered: its outcome, what it was without the stacks' levels, and per cell how far apart
    its workers landed and whether the two sides' workers overlapped (here one cell's sides
    1.5x apart, the other's interleaved)."""
    from stackwars.results.schema import Cell, Steady

    render = runpy.run_path(str(ROOT / "benchmarks" / "power" / "render_recipe.py"))["render"]
    folder = tmp_path / "separate" / "000"
    folder.mkdir(parents=True)
    medians = {
        "baseline": {"gemm": [1.0, 1.01, 1.02], "selu": [2.0, 2.2, 2.1]},
        "candidate": {"gemm": [1.5, 1.52, 1.53], "selu": [2.1, 2.05, 2.3]},
    }
    for side, cells in medians.items():
        raw = [
            Cell(workload=name, params={}, stack="numpy:eager", repeat=repeat, status="ok",
                 steady=Steady(median_s=ms / 1e3, samples_s=[ms / 1e3])).to_dict()
            for name, values in cells.items()
            for repeat, ms in enumerate(values)
        ]  # fmt: skip
        (folder / f"{side}.json").write_text(json.dumps({"cells": raw}), "utf-8")
    rows = [{"cell": f"{name}() numpy:eager @ cpu", "gate_state": "undecided",
             "comparison": {"ratio": 1.0}} for name in ("gemm", "selu")]  # fmt: skip
    compare = {"outcome": "underpowered", "exit_status": 3, "session": {"elapsed_s": 190.4},
               "rows": rows}  # fmt: skip
    (folder / "compare.json").write_text(json.dumps(compare), "utf-8")
    machine = {"cpu_model": "CPU", "fingerprint": "f", "started": "2026-11-30T08:03:00Z"}
    (folder / "machine.json").write_text(json.dumps(machine), "utf-8")
    alone = {"outcome": "fail", "failures": ["REGRESSION above 5%: gemm"]}
    (folder / "spread-alone.json").write_text(json.dumps(alone), "utf-8")
    session = FRESH["_summary_of"](folder / "compare.json")
    assert session["rounds"] is None
    gemm = session["medians"]["gemm() numpy:eager @ cpu"]["candidate"]
    assert gemm == pytest.approx([1.5e-3, 1.52e-3, 1.53e-3])
    text = render({"format": FRESH["SUMMARY_FORMAT"], "kind": "separate", "injected": {},
                   "sessions": [session]})  # fmt: skip
    assert "1 fresh A/A pairs of two separate runs" in text
    assert "| 2026-11-30 08:03 | underpowered | 3 | none | 190 | undecided 2 | the same |" in text
    assert "alone (`compare` before the stacks' levels of time" in text
    assert "spread-alone`): 1 of 1 failed; REGRESSION above 5%: gemm." in text
    assert "| gemm() numpy:eager @ cpu | 6 | 1.53x | 1 of 1 | 1.47x |" in text
    assert "| selu() numpy:eager @ cpu | 6 | 1.15x | 0 of 1 | none |" in text


def test_spread_alone_without_pairs_names_the_folder_it_wants(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="give the --out of 'sessions --kind separate'"):
        FRESH["spread_alone"](tmp_path)
