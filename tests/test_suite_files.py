"""Suites written in TOML files, suites registered from workload files, and rerun."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.suite_files import load_suite_file
from stackwars.suites import SUITES, Suite, SuiteEntry, register_suite

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")
GOOD = """
name = "tiny-gemm"
description = "two GEMM sizes"
[timing]
steady_budget_s = 0.05
[[cells]]
workload = "gemm"
params = { n = [16, 32], dtype = "float32" }
stacks = ["numpy:eager"]
"""


@pytest.mark.slow
def test_a_suite_file_runs_its_cells(tmp_path: Path) -> None:
    path = tmp_path / "suite.toml"
    path.write_text(GOOD, encoding="utf-8")
    suite = load_suite_file(path)
    assert suite.name == "tiny-gemm" and suite.timing == {"steady_budget_s": 0.05}
    assert suite.entries[0].params == {"n": (16, 32), "dtype": ("float32",)}
    out = tmp_path / "run.json"
    argv = ["run", "--suite-file", str(path), "--db", str(tmp_path / "db"), "--quiet"]
    assert main([*argv, "--json", str(out)]) == 0
    cells = json.loads(out.read_text(encoding="utf-8"))["cells"]
    assert [(c["params"]["n"], c["status"]) for c in cells] == [(16, "ok"), (32, "ok")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[cells]]\nworkload = 'gemm'\ncolour = 1\n", "unknown cell 1 key 'colour'; allowed"),
        ("titel = 'x'\n[[cells]]\nworkload = 'gemm'\n", "unknown suite key 'titel'; allowed"),
        ("[[cells]]\nworkload = 'gemmm'\n", "unknown workload 'gemmm'"),
        ("[[cells]]\nworkload = 'gemm'\nparams = { m = 3 }\n", "has no parameter 'm'"),
        ("[[cells]]\nworkload = 'gemm'\nparams = { n = 'big' }\n", "n='big' is not an int"),
        ("[[cells]]\nworkload = 'gemm'\nstacks = ['jax:fast']\n", "unknown stack 'jax:fast'"),
        ("[timing]\nbudget = 1\n[[cells]]\nworkload = 'gemm'\n", "unknown timing key 'budget'"),
        ("description = 'no cells'\n", "no [[cells]]"),
        ("[[cells]\n", "is not valid TOML"),
    ],
)
def test_a_mistake_in_a_suite_file_is_one_line(
    text: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["run", "--suite-file", str(path), "--db", str(tmp_path / "db")]) == 2
    err = capsys.readouterr().err
    assert f"suite file {path}" in err and expected in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "db").exists()


def test_register_suite_adds_a_suite_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("stackwars.suites.SUITES", dict(SUITES))
    suite = Suite("mine", "mine", (SuiteEntry("gemm", {"n": (8,)}),))
    from stackwars import suites

    assert register_suite(suite) is suites.SUITES["mine"]
    with pytest.raises(Exception, match="a suite named 'mine' exists already"):
        register_suite(suite)


@pytest.mark.slow
def test_rerun_repeats_a_stored_plan_exactly(tmp_path: Path) -> None:
    db = str(tmp_path / "db.sqlite")
    argv = ["run", "--workload-file", FAULTY, "--workload", "doubles", "--param", "size=8,16"]
    argv += ["--stacks", "numpy", "--budget", "0.05", "--seed", "3", "--db", db, "--quiet"]
    assert main([*argv, "--json", str(tmp_path / "a.json")]) == 0
    assert main(["rerun", "latest", "--db", db, "--quiet", "--json", str(tmp_path / "b.json")]) == 0
    first, second = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ab")
    assert first["run"]["id"] != second["run"]["id"]
    assert second["run"]["planned"] == first["run"]["planned"]
    assert second["run"]["options"] == first["run"]["options"]
    assert [c["status"] for c in second["cells"]] == ["ok", "ok"]


def test_the_unified_eager_benchmark_file_runs_the_unified_suites_cells() -> None:
    """benchmarks/unified_eager.toml is the unified suite on the eager modes it leaves out:
    a cell or a timing added to the suite and not to the file would make docs/results.md's
    eager tables compare other cells than its compiled ones."""
    path = Path(__file__).parents[1] / "benchmarks" / "unified_eager.toml"
    eager = load_suite_file(path)
    unified = SUITES["unified"]
    assert [(e.workload, e.params) for e in eager.entries] == [
        (e.workload, e.params) for e in unified.entries
    ]
    assert eager.timing == unified.timing
    eager_stacks = {"keras-jax:eager", "jax:eager", "keras-tensorflow:eager", "tensorflow:eager"}
    assert all(set(e.stacks or ()) == eager_stacks for e in eager.entries)
