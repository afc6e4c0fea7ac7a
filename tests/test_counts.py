"""The deterministic gate (results/counts.py): a count every worker of each side agreed on, and
the sides differ in, is a change decided in one round; on real workers an injected recompile
is caught by it with no timing involved."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from stackwars.errors import UsageError
from stackwars.frameworks.torch import running_peak
from stackwars.report.comparison import comparison_json, comparison_notes
from stackwars.results.comparison import FAIL, PASSED, Gate, decide
from stackwars.results.counts import CountChange, count_changes
from stackwars.results.schema import Cell, Compiles, Memory, Program
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


def test_a_call_s_peak_bytes_are_a_count_of_the_gate() -> None:
    baseline, candidate = workers(0, 0), workers(0, 0)
    for cell in baseline:
        cell.memory = Memory(call_peak_bytes=2**18)
    for cell in candidate:
        cell.memory = Memory(call_peak_bytes=2**19)
    assert count_changes(baseline, candidate) == (
        CountChange("bytes a call held at its peak", 2**18, 2**19),
    )


def test_a_running_peak_is_the_most_held_above_the_start_in_time_order() -> None:
    assert running_peak([(3, -100), (1, 100), (2, 50), (4, 30)]) == 150
    assert running_peak([(1, -10), (2, 5)]) == 0
    assert running_peak([]) == 0


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


def test_a_compiled_program_s_operations_and_flops_are_counts_of_the_gate() -> None:
    baseline, candidate = workers(0), workers(0)
    baseline[0].program = Program("stablehlo", 3, 2.0e6)
    candidate[0].program = Program("stablehlo", 5, 2.5e6)
    assert count_changes(baseline, candidate) == (
        CountChange("operations in the compiled program", 3, 5),
        CountChange("FLOPs the compiler estimates", 2_000_000, 2_500_000),
    )


INJECTED = [
    ("torch:compile", "REGRESS_RECOMPILE", "compilations in the second run"),
    ("jax:jit", "REGRESS_EXTRA", "operations in the compiled program"),
    ("numpy:eager", "REGRESS_COPY", "bytes a call held at its peak"),
    ("torch:eager", "REGRESS_COPY", "bytes a call held at its peak"),
]


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize(("stack", "variable", "count"), INJECTED)
def test_an_injected_change_fails_one_round_with_no_timing_involved(
    tmp_path: Path, stack: str, variable: str, count: str
) -> None:
    """One worker a side: the candidate recompiles every call (REGRESS_RECOMPILE: its
    function reads a global each call changes, so torch.compile's guards fail) or returns an
    extra copy of its product (REGRESS_COPY); the timed gate cannot decide one worker a
    side, the count gate fails it. Two baselines compared change no count: the counts repeat
    across fresh workers."""
    cell = ["--workload-file", str(REGRESSED), "--workload", "regressed-gemm", "--param", "n=64"]
    cell += ["--stacks", stack, "--budget", "0.05", "--threads", "1", "--quiet"]
    paths = []
    for name, env in (("base", {}), ("again", {}), ("cand", {variable: "1"})):
        path = tmp_path / f"{name}.json"
        done = stackwars("run", *cell, "--json", str(path), "--db", str(tmp_path / "db.sqlite"),
                         cwd=tmp_path, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        paths.append(str(path))
    gate = ["--fail-above", "50", "--fail-on-count-change"]
    out = tmp_path / "aa.json"
    done = stackwars("compare", *paths[:2], *gate, "--json", str(out), cwd=tmp_path)
    assert done.returncode != 1, done.stdout
    (same,) = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert same["counts"] == []
    out = tmp_path / "ab.json"
    done = stackwars("compare", paths[0], paths[2], *gate, "--json", str(out), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    (found,) = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert any(change["what"] == count for change in found["counts"])
    assert "COUNT CHANGED" in " ".join(done.stdout.split())
