"""Everything about a framework is declared in one place: its FrameworkInfo in the registry and
its Framework subclass (plus its implementations in the workload modules).

Every registered entry declares what the planner, the selftest, the peak, IR capture and the
model runners need; and a framework stackwars has never heard of (tests/data/fake_framework.py)
is planned, listed, selftested, measured, captured and predicted with no other change.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from stackwars import workloads
from stackwars.cli import main
from stackwars.frameworks import FRAMEWORKS, Stack, all_stacks, environments, parse_stacks
from stackwars.frameworks.base import Framework, RunSettings
from stackwars.instruments.peak import worker as peak_worker
from stackwars.instruments.selftest import task as selftest_task
from stackwars.instruments.selftest import worker as selftest_worker
from stackwars.instruments.selftest.data import StackResult
from stackwars.ir import capture
from stackwars.results.schema import CellSpec
from stackwars.runner import ir_worker, plan
from stackwars.runner.protocol import Request
from stackwars.timing.timer import TimingConfig
from stackwars.workloads.models import SPECS, memory
from stackwars.workloads.models.adapter import config_for, runner_module

ROOT = Path(__file__).parent.parent
FAKE_FILE = Path(__file__).parent / "data" / "fake_framework.py"
MODELS_PACKAGE = "stackwars.workloads.models"
# The selftest and the peak set frameworks up on the cpu.
REQUIRED_DEVICE = "cpu"


def resolve(target: str) -> Any:
    """The object a "module:name" string names."""
    module_name, _, name = target.partition(":")
    return getattr(importlib.import_module(module_name), name)


def has_model_runner(name: str) -> bool:
    return importlib.util.find_spec(f"{MODELS_PACKAGE}.{runner_module(name)}") is not None


def pip_extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return set(project["optional-dependencies"])


# (a) every registered framework declares what each consumer needs


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_registry_entry_declares_what_planning_and_listing_need(name: str) -> None:
    info = FRAMEWORKS[name]
    assert info.name == name
    assert info.modes, "a framework has at least one mode"
    assert REQUIRED_DEVICE in info.devices, "the selftest and the peak run on the cpu"
    assert isinstance(info.baseline_bytes, int) and info.baseline_bytes > 0, "memory planning"
    assert info.distributions, "versions reported by list stacks and env"
    extras = {info.extra, *(special.extra for special in info.mode_implementations.values())}
    if info.environment:
        # Its install hint is the command that makes its environment, not an extra.
        assert info.environment in environments.BUILTIN
        assert info.install_hint() == f"stackwars env create {info.environment}"
    else:
        assert extras <= pip_extras(), "install hints name extras that exist"
    assert set(info.mode_implementations) <= set(info.modes)


@pytest.mark.parametrize(
    ("name", "mode"), [(name, mode) for name, info in FRAMEWORKS.items() for mode in info.modes]
)
def test_every_mode_has_a_complete_framework_class(name: str, mode: str) -> None:
    """Workers (timing, selftest, peak, IR) load this class; every abstract method of the
    interface (selftest_step included) must be implemented. Importing it imports no
    framework."""
    info = FRAMEWORKS[name]
    cls = resolve(info.implementation_for(mode))
    assert issubclass(cls, Framework)
    assert not inspect.isabstract(cls), f"missing: {sorted(cls.__abstractmethods__)}"
    assert cls.info is info


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_ir_capture_names_stages_and_a_capturer_of_its_modes(name: str) -> None:
    info = FRAMEWORKS[name]
    for mode, ir in info.ir_capture.items():
        assert mode in info.modes
        assert ir.stages and len(set(ir.stages)) == len(ir.stages)
        assert callable(resolve(ir.capturer))
        assert capture.stages(f"{name}:{mode}") == ir.stages
    for mode in set(info.modes) - set(info.ir_capture):
        assert capture.stages(f"{name}:{mode}") == ()


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_a_framework_with_a_model_runner_declares_how_it_holds_a_model(name: str) -> None:
    info = FRAMEWORKS[name]
    assert (info.model_memory is not None) == has_model_runner(name), (
        "model_memory is set exactly when workloads/models/run_<name>.py exists"
    )
    for spec in SPECS:
        workload = workloads.get(spec.name)
        assert (name in workload.implementations) == has_model_runner(name)


def test_model_implementation_modules_are_named_after_their_framework() -> None:
    """``run_<code>.py`` and ``<family>_<code>.py``, where a code is a registered framework's
    name or family (``keras``); a code with one family module has them all."""
    package = importlib.import_module(MODELS_PACKAGE)
    families = {spec.family for spec in SPECS}
    found: dict[str, set[str]] = {}
    for module in pkgutil.iter_modules(package.__path__):
        prefix, underscore, suffix = module.name.partition("_")
        if underscore and (prefix == "run" or prefix in families):
            codes = {info.code_key for info in FRAMEWORKS.values()}
            assert suffix in codes, f"{module.name}.py names no registered framework"
            found.setdefault(suffix, set()).add(prefix)
    for framework, prefixes in found.items():
        assert "run" in prefixes, f"{framework} has model modules but no run_{framework}.py"
        # run_tensorflow.py runs the Keras definitions: a runner may have no family modules.
        present = prefixes & families
        assert not present or present == families, f"{framework} lacks {families - present}"


def test_the_peak_measures_every_registered_library() -> None:
    """Every framework with kernels of its own; a layer over another (Keras) runs on a
    registered one and is not measured twice."""
    layers = {name: info.runs_on for name, info in FRAMEWORKS.items() if info.runs_on}
    assert set(peak_worker.libraries()) == set(FRAMEWORKS) - set(layers)
    assert set(layers.values()) <= set(peak_worker.libraries())


# (b) a framework stackwars has never heard of needs nothing but its own declarations


@pytest.fixture(scope="module")
def fake_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fake_framework", FAKE_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_framework"] = module  # what FrameworkInfo.implementation names
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake(fake_module: ModuleType, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The fake framework in the framework registry and its workload in the workload registry,
    for one test."""
    monkeypatch.setitem(FRAMEWORKS, fake_module.NAME, fake_module.INFO)
    monkeypatch.setitem(workloads.registry(), fake_module.WORKLOAD.name, fake_module.WORKLOAD)
    return fake_module


def fake_cell(fake: ModuleType, mode: str = "eager", **params: Any) -> CellSpec:
    workload = fake.WORKLOAD
    return CellSpec(workload.name, workload.resolve(params), f"{fake.NAME}:{mode}", "cpu")


def test_the_fake_framework_is_planned_with_its_own_baseline(fake: ModuleType) -> None:
    cell = fake_cell(fake, n=2**20)
    assert plan.skip_reason(cell) == ""
    need, detail = plan.prediction(cell)
    assert need == fake.INFO.baseline_bytes + 12 * 2**20
    assert detail.startswith(f"{fake.NAME} runtime 0.12 GiB + ")
    (fits,) = plan.plan([cell], budget=2**30)
    assert (fits.skip_reason, fits.predicted_bytes) == ("", need)
    (too_big,) = plan.plan([cell], budget=2**20)
    assert too_big.skip_status == "oom" and f"{fake.NAME} runtime" in too_big.skip_reason


def test_the_fake_framework_is_skipped_where_it_has_no_implementation_or_device(
    fake: ModuleType,
) -> None:
    gemm = workloads.get("gemm")
    cell = CellSpec("gemm", gemm.defaults(), f"{fake.NAME}:eager", "cpu")
    assert plan.skip_reason(cell) == f"workload 'gemm' has no {fake.NAME} implementation"
    on_gpu = fake_cell(fake)
    on_gpu = CellSpec(on_gpu.workload, on_gpu.params, on_gpu.stack, "gpu")
    assert plan.skip_reason(on_gpu) == f"{on_gpu.stack} does not run on gpu: it runs on cpu"


def test_torch_xla_on_a_gpu_is_unsupported_saying_its_release_dropped_cuda(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PyTorch/XLA's own stack on a GPU: refused before any worker, with why and what to use;
    the worker's device check gives the same reason. (Its environment's absence, said first
    where it is not made, is not this test's subject.)"""
    monkeypatch.setattr(plan.environments, "stack_problem", lambda stack: "")
    gemm = workloads.get("gemm")
    reason = plan.skip_reason(CellSpec("gemm", gemm.defaults(), "torch-xla:lazy", "gpu"))
    assert "deprecated its CUDA device in release 2.8" in reason and "torch:xla" in reason
    from stackwars.frameworks.torch_lazy import TorchLazyFramework

    support = {found.kind: found.reason for found in TorchLazyFramework().device_support({})}
    assert support["gpu"] in reason


def test_the_fake_framework_is_listed_with_its_modes(
    fake: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks = [str(stack) for stack in parse_stacks(fake.NAME)]
    assert stacks == ["fakenp:eager", "fakenp:traced"]
    assert set(stacks) <= {str(stack) for stack in all_stacks()}
    assert main(["list", "stacks"]) == 0
    out = capsys.readouterr().out
    assert "fakenp:eager" in out and "fakenp:traced" in out


def test_the_fake_framework_is_selftested(
    fake: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    started: list[str] = []

    def worker(stack: Stack, device: str, timeout_s: float) -> StackResult:
        started.append(str(stack))
        return StackResult(str(stack), "ok")

    monkeypatch.setattr(selftest_task, "run_selftest_worker", worker)
    on_gpu = selftest_task.selftest_stack(Stack(fake.NAME, "eager"), "gpu", 10.0)
    assert (on_gpu.status, on_gpu.reason) == ("unsupported", "fakenp:eager runs on cpu, not gpu")
    assert selftest_task.selftest_stack(Stack(fake.NAME, "traced"), "cpu", 10.0).status == "ok"
    assert started == ["fakenp:traced"]
    # What the worker then does, in process: the framework's own step, chained and timed.
    framework = fake.FakeFramework()
    framework.load()
    framework.init(RunSettings(cache_dir=str(tmp_path)))
    checks = selftest_worker.run_checks(framework, "traced", "cpu", max_n=256)
    assert [check.name for check in checks] == ["calibration", "physical", "chain", "dispatch"]
    assert checks[3].passed is None  # synchronous


def test_the_fake_framework_gets_a_peak_without_falling_through_to_another(
    fake: ModuleType,
) -> None:
    result = peak_worker.answer({"library": fake.NAME, "quick": True})
    assert result["library"] == fake.NAME
    assert "error" not in result["runtime"], result["runtime"]
    for dtype in peak_worker.DTYPES:
        assert result["gemm"][dtype]["flops_per_s"] > 0, result["gemm"][dtype]
    assert "stream" not in result  # it declares no STREAM kernels


def test_the_fake_framework_ir_is_planned_and_captured(
    fake: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert capture.stages("fakenp:traced") == ("source",)
    assert capture.stages("fakenp:eager") == ()
    # The IR worker's capture, in process (without the home-folder redirections it would
    # make in this test process's environment).
    monkeypatch.setattr(ir_worker, "home_environment", lambda settings: {})
    request = Request(
        fake_cell(fake, "traced", n=8),
        RunSettings(cache_dir=str(tmp_path / "cache")),
        TimingConfig(),
    )
    index = ir_worker.capture(request, tmp_path)
    assert index["stages"] == {"source": "source.txt"}, index
    assert "2.0 * x + y" in (tmp_path / "source.txt").read_text(encoding="utf-8")


def test_the_fake_framework_memory_prediction_follows_its_declared_facts(
    fake: ModuleType,
) -> None:
    alike = [
        name
        for name, info in FRAMEWORKS.items()
        if name != fake.NAME and info.model_memory == fake.INFO.model_memory
    ]
    assert alike, "a registered framework declares the same model memory facts"
    spec = next(spec for spec in SPECS if spec.name == "gpt2-small")
    for task in ("infer", "train"):
        for dtype in ("float32", "bfloat16"):
            params = workloads.get(spec.name).resolve({"task": task, "dtype": dtype})
            config = config_for(spec, params)
            predicted = memory.predict(spec, config, params, fake.NAME)
            assert predicted == memory.predict(spec, config, params, alike[0])
    # It has no model runner, so no model workload runs on it.
    cell = CellSpec(spec.name, workloads.get(spec.name).defaults(), "fakenp:eager", "cpu")
    assert plan.skip_reason(cell) == f"workload 'gpt2-small' has no {fake.NAME} implementation"


@pytest.mark.slow
def test_the_fake_framework_runs_end_to_end_from_a_workload_file(tmp_path: Path) -> None:
    """``stackwars run`` and its worker, in processes of their own, with nothing but the
    workload file declaring the framework."""
    out = tmp_path / "run.json"
    argv = [
        *("run", "--workload-file", str(FAKE_FILE), "--workload", "fakenp_axpy"),
        *("--stacks", "fakenp", "--budget", "0.05", "--quiet"),
        *("--db", str(tmp_path / "db"), "--json", str(out)),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "stackwars", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cells = {cell["stack"]: cell for cell in json.loads(out.read_text())["cells"]}
    assert set(cells) == {"fakenp:eager", "fakenp:traced"}
    for cell in cells.values():
        assert cell["status"] == "ok", cell["reason"]
