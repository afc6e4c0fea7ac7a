"""Seed 002's pmap: simulated host devices asked for by the workload, each style on its stack,
and the stacks without a map over devices unsupported with the reason."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.frameworks import missing_reason
from stackwars.frameworks.base import RunSettings
from stackwars.frameworks.jax import HOST_DEVICES_FLAG, JaxFramework
from stackwars.results.schema import CellSpec
from stackwars.runner import plan
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun, cell_settings
from stackwars.timing.timer import TimingConfig
from stackwars.workloads import pmap

SMALL = {"batch": 8, "length": 64, "kernel": 5}
QUICK = TimingConfig(steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3)
# Each style and the stacks it runs on; every other stack is unsupported.
RUNS_ON = {
    "pmap": {"jax:jit"},
    "sharding": {"jax:jit", "torch:xla"},
    "mirrored": {"tensorflow:graph"},
}
ALL_STACKS = (
    "numpy:eager",
    "jax:eager",
    "jax:jit",
    "torch:eager",
    "torch:compile",
    "torch:xla",
    "tensorflow:eager",
    "tensorflow:graph",
    "tensorflow:xla",
)


def reason(style: str, stack: str, **params: Any) -> str:
    """Why the parent refuses the cell ('' when it runs), decided without a worker."""
    resolved = pmap.pmap.resolve({**SMALL, "style": style, **params})
    return plan.skip_reason(CellSpec("pmap", resolved, stack))


@pytest.mark.parametrize("style", pmap.STYLES)
def test_each_style_runs_on_its_stacks_and_says_why_not_elsewhere(style: str) -> None:
    for stack in ALL_STACKS:
        if missing_reason(stack.partition(":")[0]):
            continue
        why = reason(style, stack)
        assert (why == "") == (stack in RUNS_ON[style]), (style, stack, why)


def test_stacks_without_a_map_over_devices_give_the_reason() -> None:
    for framework in ("torch", "tensorflow", "jax"):
        if missing_reason(framework):
            pytest.skip(missing_reason(framework) or "")
    for style in pmap.STYLES:
        assert reason(style, "numpy:eager") == pmap.NO_DEVICES
        for stack in ("torch:eager", "torch:compile"):
            why = reason(style, stack)
            assert "DataParallel is CUDA-only" in why
            assert "one process per device" in why
    assert "style=mirrored (tensorflow:graph)" in reason("pmap", "tensorflow:graph")
    assert "style=sharding (torch:xla)" in reason("mirrored", "torch:xla")
    assert "significant overhead" in reason("mirrored", "tensorflow:eager")
    assert "shard_map" in reason("pmap", "jax:eager")


def test_a_batch_the_devices_cannot_share_is_refused_before_any_worker() -> None:
    assert "does not split evenly over devices=4" in reason("pmap", "jax:jit", batch=6, devices=4)
    assert reason("pmap", "jax:jit", batch=8, devices=4) == ""


def test_the_workload_asks_for_its_host_devices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = pmap.pmap.resolve({"devices": 4})
    assert cell_settings(RunSettings(), pmap.pmap, params).host_devices == 4
    gemm = workloads.get("gemm")
    assert cell_settings(RunSettings(), gemm, gemm.resolve({})).host_devices == 1
    # jax gets them from XLA's flag, after the flags the user set, which it keeps.
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_thunk_runtime=true")
    settings = RunSettings(cache_dir=str(tmp_path), host_devices=4)
    flags = JaxFramework().environment(settings)["XLA_FLAGS"]
    assert flags == f"--xla_cpu_use_thunk_runtime=true {HOST_DEVICES_FLAG}=4"
    one = dataclasses.replace(settings, host_devices=1)
    assert "XLA_FLAGS" not in JaxFramework().environment(one)


@pytest.mark.parametrize("style", ["pmap", "sharding"])
def test_the_timed_function_is_the_users_own(style: str, tmp_path: Path) -> None:
    """What jax.jit wraps is a function of the workload's own around the map (see
    test_builders_are_user_code.py), not jax.pmap's callable handed over directly."""
    if missing_reason("jax"):
        pytest.skip(missing_reason("jax") or "")
    framework = JaxFramework()
    framework.load()
    framework.init(RunSettings(cache_dir=str(tmp_path)))
    params = pmap.pmap.resolve({**SMALL, "devices": 1, "style": style})
    built: Any = pmap.pmap.implementations["jax"](params)  # a Stateful: bind places the inputs
    bound = built.bind(pmap.pmap.make_inputs(params, 0), framework.to_device, "jit")
    assert inspect.isfunction(bound.fn) and bound.fn.__module__ == pmap.__name__


def in_process(stack: str, tmp_path: Path, **params: Any) -> Any:
    spec = CellSpec("pmap", {**SMALL, "devices": 1, **params}, stack)
    return CellRun(Request(spec, RunSettings(cache_dir=str(tmp_path)), QUICK)).run()


def test_a_worker_asked_for_an_unsupported_cell_says_why(tmp_path: Path) -> None:
    cell = in_process("numpy:eager", tmp_path, style="pmap")
    assert cell.status == "unsupported"
    assert pmap.NO_DEVICES in cell.reason


@pytest.mark.slow
def test_wrong_rows_from_the_devices_are_a_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if missing_reason("jax"):
        pytest.skip(missing_reason("jax") or "")
    real = pmap.pmap.reference

    def reversed_rows(params: Any, inputs: Any) -> Any:
        return real(params, inputs)[::-1]

    altered = dataclasses.replace(pmap.pmap, reference=reversed_rows)
    monkeypatch.setitem(workloads.registry(), "pmap", altered)
    cell = in_process("jax:jit", tmp_path, style="pmap")
    assert cell.status == "mismatch", cell.reason


@pytest.mark.slow
def test_every_style_maps_over_four_simulated_devices_in_workers(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    argv = [
        *("run", "--workload", "pmap", "--param", "devices=4"),
        *("--param", "style=pmap,sharding,mirrored"),
        *(arg for name, value in SMALL.items() for arg in ("--param", f"{name}={value}")),
        *("--stacks", "numpy,jax:jit,torch:eager,torch:xla,tensorflow:graph"),
        *("--db", str(tmp_path / "db"), "--budget", "0.02", "--second-look", "0"),
        *("--quiet", "--json", str(out)),
    ]
    assert main(argv) == 0
    for cell in json.loads(out.read_text())["cells"]:
        stack, style = cell["stack"], cell["params"]["style"]
        if stack not in RUNS_ON[style] or missing_reason(stack.partition(":")[0]):
            assert cell["status"] == "unsupported" and cell["reason"], (stack, style)
            continue
        assert cell["status"] == "ok", (stack, style, cell["reason"])
        assert cell["parity"]["ok"]
        assert cell["settings"]["run"]["host_devices"] == 4
        if stack != "tensorflow:graph":
            flags = cell["settings"]["environment"]["XLA_FLAGS"]
            assert flags.endswith(f"{HOST_DEVICES_FLAG}=4")
