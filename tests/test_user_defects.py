"""What a new user hit (issue 10): options given twice, scale=tiny, a corrupt store, a run
whose process died, ``ir`` without ``--out``, the BLAS kernel and the user's environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import psutil
import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.frameworks import influential_environment
from stackwars.results import store
from stackwars.results.run import Run, displayed_status, now, owner_alive, this_process
from stackwars.runner.protocol import CellSpec

FAULTY = str(Path(__file__).parent / "data" / "faulty_workloads.py")


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


@pytest.mark.parametrize("model", ["gpt2-small", "bert-base", "llama-3.1-8b", "vit-b16"])
def test_scale_tiny_brings_sizes_that_fit_the_tiny_model(model: str) -> None:
    workload = workloads.get(model)
    params = workload.resolve({"scale": "tiny"})
    assert params["scale"] == "tiny"
    for name, value in workload.tiny.items():
        assert params[name] == value
    workload.work(params)  # raises when a size does not fit the tiny config


def test_scale_tiny_on_a_suite_and_an_explicit_misfit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db.sqlite")
    assert main(["run", "--suite", "models", "--param", "scale=tiny", "--find-max-batch"]) == 0
    code = main(["run", "--workload", "gpt2-small", "--param", "scale=tiny", "--param", "seq=64"])
    err = capsys.readouterr().err
    assert code == 2
    assert "seq=64 exceeds gpt2-small's 32 positions at scale=tiny; use seq<=32" in err
    assert not Path(db).exists()


@pytest.mark.parametrize("damage", ["random", "truncated"])
def test_a_corrupt_store_is_one_line_and_left_untouched(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    if damage == "random":
        db.write_bytes(os.urandom(5000))
    else:
        good = store.Store(db)
        good.begin_run(Run(id="r1", started=now(), machine={}, versions={}, argv=["x" * 9000]))
        db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    before = db.read_bytes()
    for argv in (["runs"], ["show", "latest"], ["run", "--workload", "gemm", "--stacks", "numpy"]):
        assert main([*argv, "--db", str(db)]) == 2
        err = capsys.readouterr().err
        assert f"results store {db} cannot be read" in err
        assert "left untouched" in err
        assert len(err.strip().splitlines()) == 1
    assert db.read_bytes() == before


def dead_owner() -> dict[str, object]:
    # Any program that exits at once: its pid then names no process of ours.
    child = subprocess.Popen(["true"])
    child.wait()
    return {**this_process(), "pid": child.pid}


def test_a_run_whose_process_is_gone_reads_as_abandoned() -> None:
    assert owner_alive(this_process()) is True
    assert owner_alive(dead_owner()) is False
    assert owner_alive({**this_process(), "host": "elsewhere"}) is None
    # A reused pid is another process: its start time differs.
    reused = {**this_process(), "process_started": psutil.Process().create_time() - 100}
    assert owner_alive(reused) is False
    assert displayed_status({"status": "running", "owner": dead_owner()}) == "abandoned"
    assert displayed_status({"status": "running", "owner": this_process()}) == "running"
    assert displayed_status({"status": "complete", "owner": dead_owner()}) == "complete"


def _abandoned_run(db: Path) -> Run:
    results = store.Store(db)
    spec = CellSpec("doubles", {"size": 8}, "numpy:eager")
    options = {
        "timing": {"steady_budget_s": 0.05, "min_steady_s": 0.0},
        "workload_files": [FAULTY],
    }
    record = Run(
        id="killed",
        started=now(),
        machine={},
        versions={},
        argv=["stackwars", "run"],
        options=options,
        planned=[vars(spec)],
        owner=dead_owner(),
    )
    results.begin_run(record)
    return record


@pytest.mark.slow
def test_resume_finishes_an_abandoned_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    _abandoned_run(db)
    assert main(["runs", "--db", str(db)]) == 0
    assert "abandoned" in capsys.readouterr().out
    assert main(["run", "--resume", "killed", "--db", str(db), "--quiet"]) == 0
    finished = store.Store(db).load_run("killed")
    assert finished.status == "complete"
    assert [cell.status for cell in finished.cells] == ["ok"]


def test_resume_refuses_a_run_that_is_still_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    record = _abandoned_run(db)
    record.owner = this_process()
    store.Store(db).begin_run(record)
    assert main(["run", "--resume", "killed", "--db", str(db)]) == 2
    assert "is still running" in capsys.readouterr().err


@pytest.mark.slow
def test_ir_without_out_writes_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["ir", "--workload", "layernorm", "--param", "batch=2", "--param", "seq=4"]
    argv += ["--param", "d_model=8", "--stacks", "jax:jit"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (index_path,) = tmp_path.glob("stackwars-ir/*/jax_jit/index.json")
    index = json.loads(index_path.read_text(encoding="utf-8"))
    assert "stablehlo" in index["stages"]
    assert "exited with" not in out


def test_influential_environment_names_what_frameworks_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/terraform/rc")
    everything = influential_environment()
    assert everything["OPENBLAS_CORETYPE"] == "Haswell"
    assert everything["KERAS_BACKEND"] == "jax"
    assert "TF_CLI_CONFIG_FILE" not in everything  # Terraform's, not TensorFlow's
    assert "KERAS_BACKEND" not in influential_environment("numpy")


@pytest.mark.slow
def test_run_warns_before_it_starts_when_openblas_kernels_are_forced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    argv = ["run", "--workload-file", FAULTY, "--workload", "doubles", "--param", "size=8"]
    argv += ["--stacks", "numpy", "--budget", "0.05", "--db", str(tmp_path / "db"), "--quiet"]
    assert main([*argv, "--json", str(tmp_path / "run.json")]) == 0
    printed = capsys.readouterr()
    # OPENBLAS_L2_SIZE may be set too (it is on this project's machines): both are named.
    warning = r"warning: OPENBLAS_CORETYPE=Haswell(, \S+)* is set"
    assert re.search(warning, " ".join(printed.err.split()))
    assert "warning:" not in printed.out
    (cell,) = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["cells"]
    assert cell["settings"]["inherited_environment"]["OPENBLAS_CORETYPE"] == "Haswell"
    openblas = [lib for lib in cell["settings"]["blas"] if lib["internal_api"] == "openblas"]
    assert openblas and openblas[0]["architecture"] == "Haswell"
