"""torch:xla (torch code through torchax on XLA), always in processes of its own: importing
torchax makes every later torch.compile in a process fail, so nothing here imports it into
pytest's process."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.frameworks import stack_missing_reason
from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import Cell, CellSpec
from stackwars.runner.isolate import run_in_worker
from stackwars.runner.protocol import Request
from stackwars.timing.timer import TimingConfig

MISSING = stack_missing_reason("torch", "xla")
needs_torchax = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
TINY_TIMING = TimingConfig(
    steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3
)
PHASES = {"trace_s", "lower_s", "compile_s", "execute_s"}
UNLOWERABLE = """
from stackwars.workloads import Param, Work, Workload, register

register(
    Workload(
        name="airy",
        description="an operator torchax has no lowering for",
        params=(Param("n", int, 4, "length"),),
        make_inputs=lambda params, seed: (__import__("numpy").ones(params["n"]),),
        reference=lambda params, inputs: inputs[0],
        work=lambda params: Work(flops=1.0, bytes=1.0),
        memory_bytes=lambda params: 1024,
        implementations={"torch": lambda params: __import__("torch").special.airy_ai},
    )
)
"""
# Load torch:xla as a worker does, then report whether the tolerance is gone.
AFTER_LOAD = """
import json, os, sys
import torch
from torch._ops import OpOverloadPacket
from stackwars.frameworks import load_framework
from stackwars.frameworks.base import RunSettings

lookup = OpOverloadPacket.__getattr__
settings = RunSettings(cache_dir=sys.argv[1])
framework = load_framework("torch", "xla")
os.environ.update(framework.environment(settings))
framework.load()
framework.init(settings)
try:
    torch.ops.aten.prod.dim_Dimname
    raised = False
except AttributeError:
    raised = True
tolerated = framework.runtime_settings()["torchax_tolerated_missing_overloads"]
restored = OpOverloadPacket.__getattr__ is lookup
print(json.dumps({"raised": raised, "tolerated": tolerated, "restored": restored}))
"""


def run_xla(tmp_path: Path, name: str, params: dict[str, Any], files: list[str]) -> Cell:
    spec = CellSpec(name, params, "torch:xla")
    request = Request(spec, RunSettings(cache_dir=str(tmp_path)), TINY_TIMING, workload_files=files)
    return run_in_worker(request, timeout_s=300, budget_bytes=4 * 2**30)


# Every workload's tiny cell on torch:xla, as a timing worker runs it (CellRun), one after
# another in one process: a fresh worker each took 18 imports of torch, JAX and torchax (about
# 4 s each of the suite's time); a fresh worker's own path is tested on torch:xla in
# test_end_to_end.py and below. Prints {workload: cell} as JSON.
EVERY_WORKLOAD = """
import json, sys
from stackwars import workloads
from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import CellSpec
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun
from stackwars.timing.timer import TimingConfig

timing = TimingConfig(steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3)
cells = {}
for name in sorted(workloads.registry()):
    workload = workloads.get(name)
    params = workload.resolve(workload.tiny)
    if workload.unsupported(params, "torch", "xla"):
        continue  # planned unsupported with its reason: no worker would start
    spec = CellSpec(name, params, "torch:xla")
    cells[name] = CellRun(Request(spec, RunSettings(cache_dir=sys.argv[1]), timing)).run().to_dict()
print(json.dumps(cells))
"""


# The built-in workloads, as collected: tests register workloads of their own in this
# process later; the driver's fresh process sees only these.
BUILTIN = sorted(workloads.registry())


def declared(name: str) -> str | None:
    """Why torch:xla is planned unsupported for workload ``name``'s tiny cell, if it is."""
    workload = workloads.get(name)
    return workload.unsupported(workload.resolve(workload.tiny), "torch", "xla")


@needs_torchax
@pytest.mark.slow
def test_every_workload_runs_on_torch_xla(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", EVERY_WORKLOAD, str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=True)
    cells = {
        name: Cell.from_dict(data)
        for name, data in json.loads(done.stdout.splitlines()[-1]).items()
    }
    assert list(cells) == [name for name in BUILTIN if not declared(name)]
    assert {name: cell.reason for name, cell in cells.items() if cell.status != "ok"} == {}
    for name, cell in cells.items():
        assert cell.parity.ok, name
        assert cell.compiles.first_run is not None and cell.compiles.first_run >= 1, name
        assert cell.compiles.steady == 0, name
        assert set(cell.first_run_breakdown) >= PHASES, (name, cell.first_run_breakdown)
        assert cell.settings["framework"]["torchax_version"], name


@needs_torchax
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("airy", {"n": 4}, "has no lowering"),
        ("ffn", {"task": "grad"}, "torch.autograd cannot run on torch:xla"),
    ],
)
def test_what_torchax_cannot_lower_is_unsupported_with_a_clear_reason(
    name: str, params: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    workload_file = tmp_path / "unlowerable.py"
    workload_file.write_text(UNLOWERABLE, encoding="utf-8")
    cell = run_xla(tmp_path, name, params, [str(workload_file)])
    assert cell.status == "unsupported"
    assert expected in cell.reason
    assert f"torchax {importlib.metadata.version('torchax')}" in cell.reason


@needs_torchax
@pytest.mark.slow
def test_missing_overloads_are_tolerated_only_while_torchax_loads(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", AFTER_LOAD, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["restored"]
    assert report["raised"], "a missing overload lookup no longer raises after torchax loaded"
    assert "aten.prod.dim_Dimname" in report["tolerated"]


def test_only_missing_named_tensor_overloads_are_tolerated() -> None:
    torch = pytest.importorskip("torch")
    # Importing this module imports neither torchax nor JAX.
    from stackwars.frameworks.torch_xla import MissingOverload, tolerate_missing_named_overloads

    tolerated: list[str] = []
    with tolerate_missing_named_overloads(tolerated):
        stand_in = torch.ops.aten.prod.made_up_Dimname
        with pytest.raises(AttributeError):
            _ = torch.ops.aten.prod.made_up
        assert torch.ops.aten.prod.dim_int is not None
    assert stand_in == MissingOverload("aten.prod", "made_up_Dimname")
    assert tolerated == ["aten.prod.made_up_Dimname"]
    with pytest.raises(AttributeError):
        _ = torch.ops.aten.prod.made_up_Dimname


def test_torch_xla_is_listed_and_its_fix_names_the_xla_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["list", "stacks"]) == 0
    assert "torch:xla" in capsys.readouterr().out
    monkeypatch.setattr(
        "importlib.util.find_spec", lambda name: None if name == "torchax" else object()
    )
    assert stack_missing_reason("torch", "xla") == (
        "torchax is not installed; fix: pip install 'stackwars[xla]'"
    )
    assert stack_missing_reason("torch", "compile") is None


@needs_torchax
@pytest.mark.slow
def test_torchax_trains_every_model_as_its_train_module_does(tmp_path: Path) -> None:
    """A train step on torch:xla is JAX's autodiff of the torch loss and optax's AdamW (torchax's
    train.make_train_step), checked against jax:jit's step, for each of the six models (their
    losses widen to float32 in plain Python: torchax cannot lower torch.promote_types)."""
    out = tmp_path / "run.json"
    argv = ["run", "--suite", "models", "--param", "scale=tiny", "--param", "task=train"]
    argv += ["--stacks", "torch:xla,jax:jit", "--budget", "0.05", "--second-look", "0"]
    assert main([*argv, "--quiet", "--json", str(out)]) == 0
    cells = json.loads(out.read_text("utf-8"))["cells"]
    ours = {c["workload"]: c for c in cells if c["stack"] == "torch:xla"}
    assert len(ours) == 6
    assert {name: c["reason"] for name, c in ours.items() if c["status"] != "ok"} == {}
    for name, cell in ours.items():
        theirs = next(c for c in cells if c["workload"] == name and c["stack"] == "jax:jit")
        assert theirs["status"] == "ok", theirs["reason"]
        pair = (cell["parity"]["compared_with"], theirs["parity"]["compared_with"])
        assert pair in (("jax:jit", None), (None, "torch:xla")), (name, pair)
        compared = cell if pair[0] else theirs  # the later of the two, checked against the first
        assert compared["parity"]["ok"] is True, (name, compared["parity"])
