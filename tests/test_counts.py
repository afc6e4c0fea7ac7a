"""The deterministic gate (results/counts.py): a count every worker of each side agreed on, and
the sides differ in, is a change decided in one round; on real workers an injected recompile
is caught by it with no timing involved."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from stackwars.errors import UsageError
from stackwars.report.comparison import comparison_json, comparison_notes
from stackwars.results.comparison import FAIL, PASSED, Gate, decide
from stackwars.results.counts import CountChange, count_changes
from stackwars.results.schema import Cell, Compiles
from stackwars.results.verdict import gate_settings, verdict_of
from test_gate import REGRESSED, row, stackwars


def workers(*steady: int | None, first: int = 1) -> list[Cell]:
    return [Cell("gemm", {}, "jax:jit", compiles=Compiles(first, 0, n)) for n in steady]


def test_a_count_every_worker_agreed_on_that_the_sides_differ_in_is_a_change() -> None:
    assert count_changes(workers(0, 0), workers(1, 1)) == (
        CountChange("compilations in steady state", 0, 1),
    )
    assert count_changes(workers(0, 0), workers(0, 0)) == ()
    assert count_changes(workers(0, 0), workers(1, 0)) == ()  # not one value: not compared
    assert count_changes(workers(0), workers(None)) == ()  # not counted by the stack


def test_a_changed_count_fails_its_cell_only_when_asked_and_is_listed_always() -> None:
    changed = replace(row(1.0, 0.005), counts=count_changes(workers(0), workers(2)))
    plain = decide([changed], Gate(fail_above=5))
    assert plain.states == (PASSED,)
    strict = decide([changed], Gate(fail_above=5, fail_on_count_change=True))
    assert strict.states == (FAIL,)
    assert strict.failures == ("COUNT CHANGED: cell: compilations in steady state 0 → 2",)
    notes = comparison_notes([changed], None)
    assert "count changed: cell: compilations in steady state 0 → 2" in notes
    data = comparison_json(verdict_of([changed], Gate(fail_above=5)))
    assert data["rows"][0]["counts"] == [
        {"what": "compilations in steady state", "baseline": 0, "candidate": 2}
    ]
    with pytest.raises(UsageError, match="give --fail-above too"):
        gate_settings(fail_on_count_change=True)


@pytest.mark.slow
@pytest.mark.serial
def test_an_injected_recompile_fails_one_round_with_no_timing_involved(tmp_path: Path) -> None:
    """One worker a side, torch.compile: the candidate's function reads a global each call
    changes (REGRESS_RECOMPILE), so its guards fail and it compiles again; the timed gate
    cannot decide one worker a side, the count gate fails it."""
    cell = ["--workload-file", str(REGRESSED), "--workload", "regressed-gemm", "--param", "n=64"]
    cell += ["--stacks", "torch:compile", "--budget", "0.05", "--threads", "1", "--quiet"]
    paths = []
    for name, env in (("base", {}), ("cand", {"REGRESS_RECOMPILE": "1"})):
        path = tmp_path / f"{name}.json"
        done = stackwars("run", *cell, "--json", str(path), "--db", str(tmp_path / "db.sqlite"),
                         cwd=tmp_path, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        paths.append(str(path))
    out = tmp_path / "c.json"
    done = stackwars("compare", *paths, "--fail-above", "50", "--fail-on-count-change",
                     "--json", str(out), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stdout
    (found,) = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert any(change["what"] == "compilations in the second run" for change in found["counts"])
    assert "COUNT CHANGED" in " ".join(done.stdout.split())
