"""The independent user scripts (benchmarks/independent/) and their driver
(benchmarks/compare_independent.py): they owe stackwars nothing, they time and compute what
they say, and the driver runs end to end."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = BENCHMARKS / "independent"
MODES = {"numpy": "eager", "jax": "jit", "torch": "eager", "tensorflow": "graph"}
ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805
TIMEOUT_S = 120


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add("." if node.level else (node.module or "").partition(".")[0])
    return roots


def test_independent_scripts_import_nothing_of_stackwars() -> None:
    scripts = sorted(SCRIPTS.glob("*.py"))
    assert {path.stem for path in scripts} >= {f"{name}_user" for name in MODES}
    for path in scripts:
        roots = imported_roots(path)
        assert not roots & {"stackwars", "benchmarks", "peers", "."}, (path.name, roots)


def run_script(framework: str, workload: str, tmp_path: Path) -> tuple[dict[str, Any], Any]:
    if importlib.util.find_spec(framework) is None:  # not imported here: the script does it
        pytest.skip(f"{framework} is not installed")
    saved = tmp_path / "out.npz"
    command = [sys.executable, str(SCRIPTS / f"{framework}_user.py"), "--workload", workload]
    command += ["--n", "16", "--mode", MODES[framework], "--seconds", "0.05"]
    done = subprocess.run(
        [*command, "--save", str(saved)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout
    return json.loads(lines[0]), np.load(saved)


@pytest.mark.parametrize("framework", list(MODES))
def test_script_times_gemm_and_computes_it(framework: str, tmp_path: Path) -> None:
    result, saved = run_script(framework, "gemm", tmp_path)
    assert set(result) == {"median_s", "calls", "framework_version"}
    assert result["median_s"] > 0
    assert result["calls"] >= 5
    assert isinstance(result["framework_version"], str)
    a, b = (saved[name].astype(np.float64) for name in ("arr_0", "arr_1"))
    assert saved["arr_0"].dtype == np.float32
    assert saved["output"].shape == (16, 16)
    np.testing.assert_allclose(saved["output"], a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("framework", list(MODES))
def test_script_selu_matches_float64_numpy(framework: str, tmp_path: Path) -> None:
    result, saved = run_script(framework, "selu", tmp_path)
    assert result["median_s"] > 0
    x = saved["arr_0"].astype(np.float64)
    assert saved["arr_0"].dtype == np.float32
    reference = SCALE * np.where(x > 0, x, ALPHA * np.expm1(x))
    output = saved["output"]
    assert output.dtype == np.float32
    assert output.shape == reference.shape
    assert np.abs(output - reference).max() < 1e-5


def test_driver_quick_runs_end_to_end(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    env = {**os.environ, "STACKWARS_DB": str(tmp_path / "stackwars.sqlite")}
    command = [sys.executable, str(BENCHMARKS / "compare_independent.py"), "--quick"]
    command += ["--processes", "1", "--stacks", "numpy:eager", "--out-dir", str(out_dir)]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = (out_dir / "independent-report.md").read_text(encoding="utf-8")
    assert "| gemm n=64 | numpy:eager |" in report
    assert "| selu n=32 | numpy:eager |" in report
    assert "n/a (< 1 ms)" in report  # the quick cells are µs: no verdict
    raw = json.loads((out_dir / "independent-raw.json").read_text(encoding="utf-8"))
    jobs = raw["jobs"]
    assert {(job["side"], job["cell"]) for job in jobs} == {
        (side, cell) for side in ("stackwars", "independent") for cell in ("gemm64", "selu32")
    }
    assert all(job["status"] == "ok" and job["median_s"] > 0 for job in jobs), jobs
    assert {job["measure"] for job in jobs if job["side"] == "stackwars"} == {"steady median"}
    assert not (tmp_path / "stackwars.sqlite").exists()  # the driver keeps its own store


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """The driver, loaded by path (benchmarks/ is no package); registered while in use, as
    its dataclasses need."""
    name = "compare_independent"
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / "compare_independent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]


@pytest.mark.parametrize(
    ("ours", "theirs", "spread", "expected"),
    [
        (1.04e-3, 1.0e-3, 0.05, "met"),
        (0.96e-3, 1.0e-3, 0.10, "met"),
        (1.2e-3, 1.0e-3, 0.02, "MISSED: stackwars is slower, by 20.0 %"),
        (0.8e-3, 1.0e-3, 0.02, "MISSED: the independent script is slower"),
        (1.0e-3, 1.0e-3, 0.2, "n/a (independent spread 20.0 %)"),
        (5e-6, 9e-4, 0.0, "n/a (< 1 ms)"),
        (1.0e-3, 1.0e-3, None, "n/a (fewer than 2"),
        (None, 1.0e-3, 0.0, "no data"),
    ],
)
def test_driver_verdicts(
    driver: Any, ours: float | None, theirs: float | None, spread: float | None, expected: str
) -> None:
    assert driver.verdict(ours, theirs, spread).startswith(expected)
