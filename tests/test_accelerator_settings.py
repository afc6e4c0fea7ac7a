"""--matmul-precision, --preallocate, --memory-fraction and --allocator-conf: each reaches the
framework that reads it, on the devices it governs only, and is recorded with the cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackwars.config import RunOptions, option_warnings
from stackwars.errors import UsageError
from stackwars.frameworks import stack_missing_reason
from stackwars.frameworks.base import RunSettings
from stackwars.frameworks.jax import JaxFramework
from stackwars.frameworks.torch import TorchFramework
from stackwars.frameworks.torch_xla import TorchXlaFramework
from stackwars.service import api, execution

ALLOCATOR_VARIABLES = (
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "PYTORCH_CUDA_ALLOC_CONF",
)


def settings(device: str, tmp_path: Path) -> RunSettings:
    return RunSettings(
        device=device,
        cache_dir=str(tmp_path),
        preallocate=True,
        memory_fraction=0.5,
        allocator_conf="expandable_segments:True",
    )


@pytest.mark.parametrize("device", ["cpu", "tpu"])
@pytest.mark.parametrize("framework", [JaxFramework, TorchXlaFramework])
def test_jax_sets_no_gpu_allocator_variable_where_there_is_no_gpu(
    framework: type[JaxFramework], device: str, tmp_path: Path
) -> None:
    environment = framework().environment(settings(device, tmp_path))
    assert not set(environment) & set(ALLOCATOR_VARIABLES)


def test_jax_on_a_gpu_gets_the_preallocation_and_the_fraction(tmp_path: Path) -> None:
    environment = JaxFramework().environment(settings("gpu", tmp_path))
    assert environment["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"
    assert environment["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.5"
    assert "PYTORCH_CUDA_ALLOC_CONF" not in environment
    default = JaxFramework().environment(RunSettings(device="gpu:1", cache_dir=str(tmp_path)))
    assert default["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false", "the work's peak, not 75 %"
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION" not in default


def test_torchs_allocator_settings_reach_its_gpu_cells_only(tmp_path: Path) -> None:
    on_gpu = TorchFramework().environment(settings("gpu", tmp_path))
    assert on_gpu["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert "PYTORCH_CUDA_ALLOC_CONF" not in TorchFramework().environment(settings("cpu", tmp_path))
    # torch:xla's arrays are JAX's: torch's CUDA allocator never runs there.
    through_jax = TorchXlaFramework().environment(settings("gpu", tmp_path))
    assert "PYTORCH_CUDA_ALLOC_CONF" not in through_jax
    assert through_jax["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.5"


def test_allocator_options_on_cpu_are_warned_about() -> None:
    (warning,) = option_warnings(RunOptions(memory_fraction=0.5, allocator_conf="x"))
    assert warning.startswith("--memory-fraction, --allocator-conf change nothing on cpu")
    (alone,) = option_warnings(RunOptions(preallocate=True))
    assert alone.startswith("--preallocate changes nothing on cpu")
    (on_gpu,) = option_warnings(RunOptions(device="gpu", memory_fraction=0.5))
    assert "TensorFlow 2 has no fraction setting" in on_gpu
    assert option_warnings(RunOptions(device="gpu", preallocate=True)) == []


@pytest.mark.parametrize("fraction", [0.0, 1.5, -0.1])
def test_a_fraction_outside_zero_to_one_is_refused(fraction: float) -> None:
    with pytest.raises(UsageError, match=r"must be in \(0, 1\]"):
        api.run_options(api.Measure(memory_fraction=fraction), "gpu", None, ())


def test_an_unknown_matmul_precision_is_refused() -> None:
    with pytest.raises(UsageError, match="medium"):
        api.run_options(api.Measure(matmul_precision="medium"), "cpu", None, ())


# What each framework reports after the worker applied each precision: its own reading
# (runtime_settings' matmul_precision). "default" leaves each framework's own default: jax's
# config unset, torch's "highest", TensorFlow's TF32 on.
READ_BACK = {
    "jax:jit": {"highest": "highest", "high": "high", "default": None},
    "torch:eager": {"highest": "highest", "high": "high", "default": "highest"},
    "tensorflow:eager": {"highest": "tf32 off", "high": "tf32 on", "default": "tf32 on"},
}


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["highest", "high", "default"])
def test_the_matmul_precision_reaches_each_framework_and_is_recorded(precision: str) -> None:
    stacks = [s for s in READ_BACK if stack_missing_reason(*s.split(":")) is None]
    run = execution.run(
        "gemm",
        params={"n": 16},
        stacks=stacks,
        budget_s=0.05,
        matmul_precision=precision,
        second_look_s=0,
    )
    for cell in run.cells:
        assert cell.status == "ok", cell.reason
        assert cell.settings["run"]["matmul_precision"] == precision
        assert cell.settings["framework"]["matmul_precision"] == READ_BACK[cell.stack][precision]
    torch_cells = [cell for cell in run.cells if cell.stack == "torch:eager"]
    for cell in torch_cells:  # cuDNN's convolutions follow too (TF32 unless "highest")
        conv = cell.settings["framework"]["cudnn_conv_fp32_precision"]
        assert conv == ("ieee" if precision == "highest" else "tf32")
    assert run.options["matmul_precision"] == precision
