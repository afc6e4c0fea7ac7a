"""ab --duet: both sides' rounds at once, each pinned to a core of its own, which side on
which core drawn each round; refused without one thread a worker or two cores."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from stackwars.errors import UsageError
from stackwars.instruments.ab import service as ab
from stackwars.results.comparison import Gate
from stackwars.results.schema import Cell, Steady
from test_gate import CELL, run_at, stackwars

TWO_CORES = len(os.sched_getaffinity(0)) >= 2


def duet(tmp_path: Path, *options: str) -> ab.Session:
    sides = ab.Side("baseline"), ab.Side("candidate")
    return ab.Session(tuple(options), *sides, tmp_path, gate=Gate(fail_above=5), duet=True,
                      min_rounds=3, max_rounds=4)  # fmt: skip


def test_a_duet_needs_one_thread_a_worker() -> None:
    with pytest.raises(UsageError, match="add --threads 1 to the run options"):
        ab.check(duet(Path("."), "--stacks", "numpy"))
    with pytest.raises(UsageError, match="add --threads 1"):
        ab.check(duet(Path("."), "--threads", "2"))
    if TWO_CORES:
        ab.check(duet(Path("."), "--threads", "1"))
        ab.check(duet(Path("."), "--threads=1"))


@pytest.mark.skipif(not TWO_CORES, reason="a duet needs two cores")
def test_a_duet_round_runs_both_sides_at_once_each_on_its_core(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each fake round waits at a barrier the other side's must reach too: the session only
    ends if the two run at once. The side drawn first each round is on the first core."""
    together = threading.Barrier(2, timeout=10)
    cores = sorted(os.sched_getaffinity(0))[:2]
    seen: list[tuple[int, str, tuple[int, ...]]] = []

    def fake_round(session: ab.Session, side: ab.Side, index: int, cpus: tuple[int, ...]) -> Path:
        together.wait()
        seen.append((index, side.name, cpus))
        record = run_at(f"2026-11-29T04:00:{index:02d}+00:00")
        steady = Steady(median_s=1e-3, samples_s=[1e-3] * 3)
        record.cells = [Cell("w", {}, "numpy:eager", status="ok", steady=steady)]
        path = tmp_path / f"{side.name}-{index}.json"
        record.write_json(path)
        return path

    monkeypatch.setattr(ab, "_round", fake_round)
    monkeypatch.setattr(ab, "side_version", lambda interpreter, budget: "test")
    session = duet(tmp_path, "--threads", "1")
    ticks = iter(float(t) for t in range(100))
    outcome = ab.run_session(session, lambda text: None, lambda: next(ticks))
    assert outcome.rounds >= 3
    for index, first in enumerate(outcome.first):
        placed = {name: cpus for at, name, cpus in seen if at == index}
        other = "candidate" if first == "baseline" else "baseline"
        assert placed == {first: (cores[0],), other: (cores[1],)}


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.skipif(not TWO_CORES, reason="a duet needs two cores")
def test_a_real_duet_pins_each_side_s_workers_to_one_core(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    done = stackwars(
        "ab", "--duet", "--max-rounds", "3", "--min-rounds", "3", "--fail-above", "100",
        "--json", str(out), "--out", str(tmp_path / "rounds"), "--",
        *CELL, "--stacks", "numpy", "--budget", "0.05", "--threads", "1", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 3), done.stdout + done.stderr
    session = json.loads(out.read_text(encoding="utf-8"))["session"]
    assert session["duet"] is True and session["rounds"] == 3
    for path in sorted((tmp_path / "rounds").glob("*-0[1-3].json")):
        run = json.loads(path.read_text(encoding="utf-8"))["run"]
        assert run["machine"]["usable_cores"] == 1, path
