"""Bad input gives one clear line and exit status 2, with nothing written; the JSON contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackwars.cli import main

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--workload", "nope"], "unknown workload 'nope'; allowed: "),
        (
            ["--suite", "nope"],
            "unknown suite 'nope'; allowed: compile-cache, models, numpy-vs-jax, quick, seed-blog",
        ),
        (["--workload", "gemm", "--stacks", "jax:fast"], "unknown stack 'jax:fast'"),
        (["--workload", "gemm", "--param", "m=3"], "has no parameter 'm'; allowed: n, dtype"),
        (["--workload", "gemm", "--param", "n=big"], "n='big' is not an int; example: n=1024"),
        (["--workload", "gemm", "--param", "n=0"], "below the minimum 1"),
        (["--workload", "gemm", "--param", "dtype=int7"], "not one of: float32, float64"),
        (["--workload", "gemm", "--param", "n"], "is not KEY=VALUE"),
        (["--workload", "gemm", "--param", "n=64..8:x2"], "is not a valid range"),
        (["--workload", "gemm", "--param", "n=8..64:x1"], "is not a valid range"),
        (["--workload", "gemm", "--device", "quantum"], "unknown device 'quantum'"),
        (["--param", "nope=3"], "no workload of suite 'quick' has a parameter 'nope'"),
        (["--workload", "vit-b16", "--param", "image=100"], "choose image as a multiple of 16"),
        (["--workload", "gpt2-small", "--param", "seq=5000"], "use seq<=1024"),
        (["--resume", "latest", "--find-max-batch"], "drop the other selection options"),
        (["--workload", "gemm", "--memory-budget", "lots"], "memory size 'lots'"),
        (["--workload", "gemm", "--timeout", "-1"], "--timeout -1.0 must be a positive"),
        (["--workload-file", "/no/such.py"], "does not exist"),
        (["--workload", "gemm", "--target-ci", "0"], "--target-ci 0.0 must be a percentage"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    args: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, out = tmp_path / "db.sqlite", tmp_path / "out.json"
    code = main(["run", *args, "--db", str(db), "--json", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert len(err.strip().splitlines()) == 1
    assert not db.exists() and not out.exists()


def test_a_workload_file_that_fails_to_import_names_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1\nraise RuntimeError('boom')\n")
    assert main(["run", "--workload-file", str(broken), "--db", str(tmp_path / "db")]) == 2
    err = capsys.readouterr().err
    assert "failed to import: RuntimeError: boom (line 2)" in err


def test_argparse_errors_also_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--cache", "lukewarm"])
    assert exit_info.value.code == 2
    assert "see 'stackwars run --help'" in capsys.readouterr().err


REQUIRED = {
    "times": {
        "import_s",
        "init_s",
        "transfer_s",
        "setup_s",
        "first_run_s",
        "second_run_s",
        "dispatch_s",
    },
    "steady": {
        "median_s",
        "ci95_low_s",
        "ci95_high_s",
        "iqr_s",
        "mad_s",
        "min_s",
        "mean_s",
        "std_s",
        "blocks",
        "inner_loops",
        "stable",
    },
    "compiles": {"first_run", "steady"},
    "memory": {"peak_rss_bytes", "device_peak_bytes"},
    "cpu": {"user_s_per_call", "sys_s_per_call", "page_faults_per_call"},
    "parity": {"ok", "max_abs_err", "max_rel_err", "atol", "rtol", "computed_dtype"},
    "work": {"flops", "bytes"},
}
TOP = {
    "workload",
    "params",
    "stack",
    "device",
    "status",
    "reason",
    "first_run_breakdown",
    "runs_to_steady",
    "gflops",
    "settings",
    "node",
    *REQUIRED,
}


@pytest.mark.slow
def test_json_has_the_documented_names(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    argv = [
        "run",
        "--workload-file",
        FAULTY,
        "--workload",
        "doubles",
        "--stacks",
        "numpy",
        "--db",
        str(tmp_path / "db"),
        "--budget",
        "0.05",
        "--quiet",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    data = json.loads(out.read_text())
    assert data["schema_version"] == 2
    assert {"id", "started", "finished", "machine", "versions", "argv"} <= set(data["run"])
    assert data["run"]["finished"] is not None and data["run"]["status"] == "complete"
    (cell,) = data["cells"]
    assert set(cell) >= TOP
    for group, names in REQUIRED.items():
        assert names <= set(cell[group]), group
    assert cell["status"] == "ok"
    assert cell["node"]["executor"] == "local" and cell["node"]["fingerprint"]
    assert (
        cell["steady"]["ci95_low_s"] <= cell["steady"]["median_s"] <= cell["steady"]["ci95_high_s"]
    )
    assert cell["settings"]["timing"]["steady_budget_s"] == 0.05


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["run", "--workload", "gemm", "--workload", "selu"], "--workload"),
        (["run", "--suite", "quick", "--suite", "models"], "--suite"),
        (["run", "--stacks", "numpy", "--stacks", "jax"], "--stacks"),
        (["run", "--timeout", "1", "--timeout", "2"], "--timeout"),
        (["show", "latest", "--db", "a", "--db", "b"], "--db"),
        (["ir", "--workload", "gemm", "--workload", "selu"], "--workload"),
    ],
)
def test_an_option_given_twice_is_refused_in_one_line(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"{option} was given twice" in err
    assert len(err.strip().splitlines()) == 1


def test_repeatable_options_still_accumulate() -> None:
    from stackwars.cli import build_parser

    args = build_parser().parse_args(["run", "--param", "n=1", "--param", "dtype=float32"])
    assert args.param == ["n=1", "dtype=float32"]
