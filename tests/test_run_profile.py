"""run --profile: a run's ok cells profiled after its timed cells, the profiles stored with the
run (store, run JSON, export and import) and the raw traces beside the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stackwars.cli import main
from stackwars.profiling.result import PROFILE_FORMAT, Profile
from stackwars.results import store
from stackwars.results.run import Run, now
from stackwars.results.schema import Cell


def _profile(stack: str) -> Profile:
    found = Profile(stack, "selu", {"n": 64}, steady_s=1e-3, profiled_s=1.2e-3, traced_s=1e-3)
    found.categories = {"elementwise/fused": 8e-4, "overhead/idle": 2e-4}
    return found


def test_profiles_are_stored_with_the_run_and_travel_with_its_file(tmp_path: Path) -> None:
    results = store.Store(tmp_path / "db.sqlite")
    run = Run("r1", now(), {}, {}, ["stackwars"], status="complete")
    run.cells = [Cell("selu", {"n": 64}, "jax:jit", status="ok")]
    results.begin_run(run)
    results.add_cell(run, run.cells[0])
    for stack in ("jax:jit", "torch:eager"):
        results.add_data(run, "profile", PROFILE_FORMAT, _profile(stack).to_dict())
    results.finish_run(run)
    loaded = results.load_run("r1")
    assert [Profile.from_dict(p) for p in loaded.profiles] == [
        _profile("jax:jit"),
        _profile("torch:eager"),
    ]
    loaded.write_json(tmp_path / "r1.json")
    other = str(tmp_path / "other.sqlite")
    assert main(["import", str(tmp_path / "r1.json"), "--db", other]) == 0
    assert store.Store(Path(other)).load_run("r1").profiles == loaded.profiles


@pytest.mark.slow
def test_run_profile_profiles_the_ok_cells_after_timing_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, out = tmp_path / "db.sqlite", tmp_path / "run.json"
    argv = ["run", "--workload", "selu", "--param", "n=64", "--stacks", "numpy,torch:eager"]
    options = ["--budget", "0.05", "--second-look", "0", "--quiet", "--db", str(db)]
    options += ["--json", str(out)]
    assert main([*argv, *options, "--profile"]) == 0
    printed = capsys.readouterr().out
    written: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    profiles = {p["stack"]: Profile.from_dict(p) for p in written["profiles"]}
    assert profiles["numpy:eager"].status == "unsupported"
    torch = profiles["torch:eager"]
    assert torch.status == "ok", torch.reason
    assert (torch.workload, torch.params["n"], torch.device) == ("selu", 64, "cpu")
    assert torch.adds_up is not None and torch.traced_s
    trace = Path(torch.files["chrome"])
    run_id = written["run"]["id"]
    assert trace.is_file() and (tmp_path / "stackwars-profiles" / run_id) in trace.parents
    assert "steady, unprofiled" in printed and "2 profile(s) stored" in printed
    # The timed cells are the ones the run stored before profiling began, unchanged.
    stored = store.Store(db).load_run(run_id)
    assert [c.to_dict() for c in stored.cells] == written["cells"]
    assert stored.profiles == written["profiles"]


@pytest.mark.slow
def test_run_profile_names_the_stacks_to_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    argv = ["run", "--workload", "gemm", "--param", "n=16", "--stacks", "numpy,torch:eager"]
    argv += ["--budget", "0.05", "--second-look", "0", "--quiet", "--db", str(db)]
    assert main([*argv, "--profile", "torch"]) == 0
    capsys.readouterr()
    (found,) = store.Store(db).load_run("latest").profiles
    assert found["stack"] == "torch:eager" and found["status"] == "ok"


def test_a_stack_to_profile_that_does_not_exist_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    argv = ["run", "--workload", "gemm", "--param", "n=16", "--stacks", "numpy", "--db", str(db)]
    assert main([*argv, "--profile", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert not db.exists()  # nothing ran, nothing was stored
