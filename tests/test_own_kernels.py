"""A scientist's own kernels, first try: modules a project already has (one per framework,
tests/data/kernels/), wrapped in a workload file as the README shows, float64 in and out.

Every stack computes in the inputs' precision under --x64 auto (JAX's 64-bit mode follows
float64 inputs when no dtype parameter says otherwise), every cell is ok with the default
tolerances, and a stack that computes another dtype than its inputs says so, with the option
that changes it. Through the command line, on the six stacks of issue 35, every row shows its
time; the kernel loaded the way a first attempt loads it fails torch:compile with the fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stackwars import workloads
from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import CellSpec
from stackwars.runner.protocol import Request
from stackwars.runner.session import x64_from_inputs
from stackwars.runner.worker import CellRun
from stackwars.timing.timer import TimingConfig

KERNELS = Path(__file__).parent / "data" / "kernels"
WORKLOAD_FILE = str(KERNELS / "kernels_workload.py")
BY_PATH = str(KERNELS / "kernels_by_path.py")
STACKWARS = str(Path(sys.executable).with_name("stackwars"))
ISSUE_STACKS = "numpy,jax:jit,torch:eager,torch:compile,tensorflow:eager,tensorflow:xla"
QUICK = TimingConfig(steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3)
TINY = {"n": 4096, "degree": 24, "scale": 1.0}


@pytest.fixture(autouse=True)
def restore_jax_and_environment() -> Iterator[None]:
    """A cell run in this process sets JAX's 64-bit mode and the stack's variables for the
    process: put them back, so that later tests find both as they were."""
    import jax

    before, environment = jax.config.values["jax_enable_x64"], dict(os.environ)
    yield
    jax.config.update("jax_enable_x64", before)
    os.environ.clear()
    os.environ.update(environment)


def run_cell(
    stack: str, tmp_path: Path, *, x64: bool, from_inputs: bool, rtol: float | None = None
) -> dict[str, object]:
    """One cell of the kernels' workload in this process (eager stacks only), as a dict."""
    workloads.load_workload_file(WORKLOAD_FILE)
    request = Request(
        CellSpec("damped-rational", TINY, stack),
        RunSettings(cache_dir=str(tmp_path), x64=x64),
        QUICK,
        workload_files=[WORKLOAD_FILE],
        x64_from_inputs=from_inputs,
        rtol=rtol,
    )
    return CellRun(request).run().to_dict()


def test_auto_leaves_x64_to_the_inputs_only_when_no_dtype_parameter_decides() -> None:
    plain = CellSpec("damped-rational", TINY, "jax:jit")
    typed = CellSpec("gemm", {"n": 8, "dtype": "float32"}, "jax:jit")
    assert x64_from_inputs(plain, "auto") and not x64_from_inputs(typed, "auto")
    assert not x64_from_inputs(plain, "on") and not x64_from_inputs(plain, "off")


@pytest.mark.parametrize("stack", ["numpy:eager", "jax:eager", "torch:eager", "tensorflow:eager"])
def test_float64_kernels_compute_float64_and_pass_the_defaults(stack: str, tmp_path: Path) -> None:
    cell = run_cell(stack, tmp_path, x64=False, from_inputs=True)
    assert cell["status"] == "ok", cell["reason"]
    parity = cell["parity"]
    assert isinstance(parity, dict)
    assert parity["computed_dtype"] == parity["requested_dtype"] == "float64"
    assert not [w for w in cell["warnings"] if "computed" in w]  # type: ignore[union-attr]


def test_jax_without_x64_says_it_computed_float32_and_the_option(tmp_path: Path) -> None:
    on = run_cell("jax:eager", tmp_path / "on", x64=False, from_inputs=True)
    settings = on["settings"]
    assert isinstance(settings, dict)
    assert settings["run"]["x64"] is True
    assert settings["environment"]["JAX_ENABLE_X64"] == "true"
    off = run_cell("jax:eager", tmp_path / "off", x64=False, from_inputs=False)
    note = "the inputs are float64, the stack computed float32: --x64 on computes in 64 bits"
    assert off["status"] == "ok"  # within float32's tolerance, and still said
    assert any(str(warning).startswith(note) for warning in off["warnings"])  # type: ignore[union-attr]
    # Held to float64's precision, it misses, and the reason says why and what changes it.
    strict = run_cell("jax:eager", tmp_path / "strict", x64=False, from_inputs=False, rtol=1e-9)
    assert strict["status"] == "mismatch"
    assert "--rtol" in str(strict["reason"]) and note in str(strict["reason"])


def stackwars_run(argv: list[str], folder: Path) -> dict[str, object]:
    done = subprocess.run(  # noqa: PLW1510 (the exit status is asserted)
        [STACKWARS, "run", *argv, "--budget", "0.05", "--second-look", "0", "--json", "run.json"],
        cwd=folder,
        env={**os.environ, "STACKWARS_DB": str(folder / "db.sqlite")},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {"out": done.stdout, **json.loads((folder / "run.json").read_text(encoding="utf-8"))}


@pytest.mark.slow
def test_the_kernels_on_the_six_stacks_of_the_issue_are_ok_or_show_time_and_fix(
    tmp_path: Path,
) -> None:
    argv = ["--workload-file", WORKLOAD_FILE, "--workload", "damped-rational"]
    run = stackwars_run([*argv, "--param", "n=65536", "--stacks", ISSUE_STACKS], tmp_path)
    cells = run["cells"]
    assert isinstance(cells, list) and len(cells) == len(ISSUE_STACKS.split(","))
    for cell in cells:
        assert cell["steady"]["median_s"], cell["stack"]  # every stack was timed
        if cell["status"] != "ok":  # then its row names the stack, its status and the fix
            assert f"{cell['stack']} {cell['status'].upper()}" in str(run["out"])
            assert "--rtol" in cell["reason"] or "fix:" in cell["reason"], cell["reason"]
    assert [cell["status"] for cell in cells] == ["ok"] * len(cells)


@pytest.mark.slow
def test_a_kernel_torch_compile_cannot_import_again_is_an_error_with_the_fix(
    tmp_path: Path,
) -> None:
    argv = ["--workload-file", BY_PATH, "--workload", "damped-rational-by-path"]
    run = stackwars_run([*argv, "--stacks", "torch:compile"], tmp_path)
    (cell,) = run["cells"]  # type: ignore[misc]
    assert cell["status"] == "error"
    head, fix = cell["reason"].splitlines()[:2]
    assert head.endswith("ModuleNotFoundError: No module named 'kernel_pytorch'")
    assert "stackwars.workloads.load_module(path)" in fix
    assert "ERROR: " in str(run["out"]) and "Traceback" not in str(run["out"])
