"""The independent user scripts (benchmarks/independent/) and their driver
(benchmarks/compare_independent.py, with benchmarks/independent_report.py): they owe stackwars
nothing, they time and compute what they say, and the driver plans only what the scripts
write, runs end to end and reports Keras's cost over each backend as both sides see it. The
peer harnesses' driver (benchmarks/compare_peers.py) runs end to end too; both drivers render
their report again from their stored raw file, as docs/evidence.md does."""

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
# Every BERT script at the tiny size: (script, arguments before the workload's).
BERT_SCRIPTS = {
    "jax": ("jax_user.py", "--mode", "jit"),
    "torch": ("torch_user.py", "--mode", "eager"),
    "keras-jax": ("keras_user.py", "--backend", "jax", "--mode", "jit"),
    "keras-torch": ("keras_user.py", "--backend", "torch", "--mode", "eager"),
}
KERAS_STACKS = ("jax:jit", "keras-jax:jit", "torch:eager", "keras-torch:eager")
JAX_PAIR = KERAS_STACKS[:2]


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
    command = [str(SCRIPTS / f"{framework}_user.py"), "--workload", workload]
    command += ["--n", "16", "--mode", MODES[framework]]
    return run_command(command, (framework,), tmp_path)


def run_command(
    command: list[str], libraries: tuple[str, ...], tmp_path: Path
) -> tuple[dict[str, Any], Any]:
    """The script's one JSON line and what it saved."""
    for library in libraries:  # not imported here: the script does it
        if importlib.util.find_spec(library) is None:
            pytest.skip(f"{library} is not installed")
    saved = tmp_path / "out.npz"
    done = subprocess.run(
        [sys.executable, *command, "--seconds", "0.05", "--save", str(saved)],
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BERT_SCRIPTS))
def test_bert_script_computes_the_whole_forward(name: str, tmp_path: Path) -> None:
    """Weights are each script's own, so no values to compare; but the final post-LN
    normalises every token (unit scale, zero shift at initialisation) and the pooler's tanh
    sees the first token: outputs the scripts' timed call really computes."""
    script, *options = BERT_SCRIPTS[name]
    command = [str(SCRIPTS / script), *options, "--workload", "bert", "--scale", "tiny"]
    libraries = ("keras", name.partition("-")[2]) if "keras" in name else (name,)
    result, saved = run_command([*command, "--batch", "2", "--seq", "16"], libraries, tmp_path)
    assert result["median_s"] > 0
    if "keras" in name:
        assert result["backend"] == name.partition("-")[2]
        assert set(result) == {"median_s", "calls", "framework_version", "keras_version", "backend"}
    tokens, output, pooled = saved["arr_0"], saved["output"], saved["pooled"]
    assert tokens.shape == (2, 16) and tokens.min() >= 0 and tokens.max() < 97  # tiny vocab
    assert output.shape == (2, 16, 16) and output.dtype == np.float32
    np.testing.assert_allclose(output.mean(axis=-1), 0, atol=1e-4)
    np.testing.assert_allclose(output.std(axis=-1), 1, atol=1e-3)
    assert pooled.shape == (2, 16) and np.abs(pooled).max() < 1
    assert not np.allclose(output[0], output[1])  # each example's own tokens


def run_driver(options: list[str], tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """The driver's report and raw records, its stackwars store kept apart from the user's."""
    out_dir = tmp_path / "out"
    env = {**os.environ, "STACKWARS_DB": str(tmp_path / "stackwars.sqlite")}
    command = [sys.executable, str(BENCHMARKS / "compare_independent.py"), *options]
    done = subprocess.run(
        [*command, "--processes", "1", "--out-dir", str(out_dir)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not (tmp_path / "stackwars.sqlite").exists()  # the driver keeps its own store
    report = (out_dir / "independent-report.md").read_text(encoding="utf-8")
    return report, json.loads((out_dir / "independent-raw.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_driver_quick_runs_end_to_end(tmp_path: Path) -> None:
    report, raw = run_driver(["--quick", "--stacks", "numpy:eager"], tmp_path)
    assert "| gemm n=64 | numpy:eager |" in report
    assert "| selu n=32 | numpy:eager |" in report
    assert "n/a (< 1 ms)" in report  # the quick cells are µs: no verdict
    assert "Keras/native" not in report  # no Keras stack ran
    jobs = raw["jobs"]
    assert raw["version"] == 3
    ours = [job for job in jobs if job["side"] == "stackwars"]
    assert all("fingerprint" in job["machine"] and job["started"] for job in ours), ours
    # numpy_user.py writes no BERT: the quick tiny BERT cell is left out, not failed.
    assert {(job["side"], job["cell"]) for job in jobs} == {
        (side, cell) for side in ("stackwars", "independent") for cell in ("gemm64", "selu32")
    }
    assert all(job["status"] == "ok" and job["median_s"] > 0 for job in jobs), jobs
    assert {job["measure"] for job in jobs if job["side"] == "stackwars"} == {"steady median"}
    assert {job["params"]["n"] for job in jobs} == {"64", "32"}


@pytest.mark.slow
def test_driver_keras_quick_reports_keras_over_native_from_both_sides(tmp_path: Path) -> None:
    """One backend's pair end to end (each job a fresh process importing Keras and the
    backend); the other pair's scripts are checked by test_bert_script_computes_the_whole_forward,
    its selection and its report row by the tests after this one."""
    report, raw = run_driver(["--quick", "--keras", "--backends", "jax"], tmp_path)
    jobs = raw["jobs"]
    assert {(job["side"], job["stack"]) for job in jobs} == {
        (side, stack) for side in ("stackwars", "independent") for stack in JAX_PAIR
    }
    assert all(job["status"] == "ok" and job["median_s"] > 0 for job in jobs), jobs
    assert {job["cell"] for job in jobs} == {"bert16-tiny"}
    params = {"task": "infer", "batch": "2", "seq": "16", "dtype": "float32", "scale": "tiny"}
    assert all(job["workload"] == "bert-base" and job["params"] == params for job in jobs)
    for stack in JAX_PAIR:
        assert f"| bert-base tiny infer b=2 s=16 | {stack} |" in report
    lines = report.splitlines()
    header = lines.index("| cell | backend | stacks | stackwars | independent | difference |")
    row = lines[header + 2].split(" | ")
    assert row[1:3] == ["jax", "keras-jax:jit / jax:jit"]
    # Two ratios and their difference, every one a number.
    assert float(row[3].removesuffix("×")) > 0 and float(row[4].removesuffix("×")) > 0
    assert row[5].endswith(" % |")
    assert lines[header + 3] == "", "no row for the pair that was not asked for"


@pytest.mark.slow
def test_peers_driver_quick_runs_and_renders_its_report_again_from_its_raw_file(
    tmp_path: Path,
) -> None:
    script = str(BENCHMARKS / "compare_peers.py")
    options = ["--quick", "--cells", "gemm64", "--stacks", "numpy:eager", "--repeats", "1"]
    env = {**os.environ, "STACKWARS_DB": str(tmp_path / "stackwars.sqlite")}
    done = subprocess.run(
        [sys.executable, script, *options, "--out-dir", str(tmp_path / "out")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    raw = tmp_path / "out" / "peers-raw.json"
    again = subprocess.run(
        [sys.executable, script, "--render", str(raw)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=True,
    )  # fmt: skip
    head, _, report = again.stdout.partition("\n\n")
    assert head.startswith("Machine ") and "(fingerprint " in head
    assert f"`python benchmarks/compare_peers.py {' '.join(options)} --out-dir " in head
    written = (tmp_path / "out" / "peers-report.md").read_text(encoding="utf-8")
    assert written.startswith(report)  # the file adds the run's total wall time
    assert "gemm(n=64, dtype=float32) on numpy:eager" in report


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """The driver, loaded by path (benchmarks/ is no package) with benchmarks/ importable as
    when it runs, for its report module; registered while in use, as its dataclasses need."""
    name = "compare_independent"
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / "compare_independent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))
        del sys.modules[name]
        sys.modules.pop("independent_report", None)


def test_driver_plans_each_stack_with_the_cells_its_script_writes(driver: Any) -> None:
    cells, stacks = driver.selection(driver.parse_args(["--quick"]))
    planned = driver.pairs(cells, stacks, [])
    assert planned == [
        ("gemm64", "numpy:eager"),
        ("gemm64", "jax:jit"),
        ("selu32", "numpy:eager"),
        ("selu32", "jax:jit"),
        ("bert16-tiny", "jax:jit"),
    ]
    cells, stacks = driver.selection(driver.parse_args(["--keras"]))
    assert driver.pairs(cells, stacks, []) == [("bert64", stack) for stack in KERAS_STACKS]
    cells, stacks = driver.selection(
        driver.parse_args(["--quick", "--keras", "--backends", "torch"])
    )
    assert driver.pairs(cells, stacks, []) == [
        ("bert16-tiny", "torch:eager"),
        ("bert16-tiny", "keras-torch:eager"),
    ]
    cells, stacks = driver.selection(driver.parse_args([]))
    keras = [pair for pair in driver.pairs(cells, stacks, []) if "keras" in pair[1]]
    assert keras == [("bert64", "keras-jax:jit"), ("bert64", "keras-torch:eager")]


def test_driver_refuses_a_keras_stack_without_a_bert_cell(driver: Any) -> None:
    args = driver.parse_args(["--cells", "gemm256", "--stacks", "keras-jax:jit,numpy:eager"])
    cells, stacks = driver.selection(args)
    with pytest.raises(SystemExit, match=r"nothing to run for keras-jax:jit: .*keras-jax:jit runs"):
        driver.pairs(cells, stacks, [*cells, *stacks])
    with pytest.raises(SystemExit):  # argparse's usage error
        driver.parse_args(["--keras", "--stacks", "jax:jit"])
    with pytest.raises(SystemExit):
        driver.parse_args(["--backends", "jax"])
    with pytest.raises(SystemExit, match="unknown backend tensorflow; known: jax, torch"):
        driver.selection(driver.parse_args(["--keras", "--backends", "tensorflow"]))


def test_a_stored_raw_file_renders_its_report_after_its_machine_and_dates(
    driver: Any, tmp_path: Path
) -> None:
    common = {"cell": "gemm1024", "stack": "numpy:eager", "status": "ok", "load_1min": 0.1,
              "warnings": []}  # fmt: skip
    ours = {**common, "side": "stackwars", "measure": "steady median",
            "machine": "AMD EPYC (fingerprint 494b45b52493)"}  # fmt: skip
    jobs = [
        {**ours, "median_s": 6.9e-3, "started": "2026-11-29T17:40:00+00:00"},
        {**ours, "median_s": 7.1e-3, "started": "2026-11-29T17:43:00+00:00"},
        {**common, "side": "independent", "median_s": 6.8e-3},
        {**common, "side": "independent", "median_s": 7.0e-3},
    ]
    settings = {"argv": ["--cells", "gemm1024"], "planned": [["gemm1024", "numpy:eager"]]}
    raw = tmp_path / "independent-raw.json"
    raw.write_text(json.dumps({"version": 3, "settings": settings, "jobs": jobs}), "utf-8")
    text = driver.render_raw(raw)
    assert text.startswith(
        "Machine AMD EPYC (fingerprint 494b45b52493); stackwars' jobs 2026-11-29T17:40 to "
        "2026-11-29T17:43 UTC; `python benchmarks/compare_independent.py --cells gemm1024`.\n"
    )
    assert "| gemm n=1024 | numpy:eager | 7 ms (steady median) | 6.9 ms | 2.9 % |" in text
    raw.write_text(json.dumps({"version": 2, "settings": settings, "jobs": jobs}), "utf-8")
    with pytest.raises(SystemExit, match="not of format 3: measure it again"):
        driver.render_raw(raw)


@pytest.fixture(scope="module")
def report(driver: Any) -> Any:
    """The report module, as the driver imported it."""
    return sys.modules["independent_report"]


def test_keras_table_is_the_ratio_of_medians_per_side(report: Any) -> None:
    def job(side: str, stack: str, median_s: float) -> dict[str, Any]:
        return {"side": side, "cell": "c", "stack": stack, "status": "ok", "median_s": median_s}

    records = [
        *(job("stackwars", "k:jit", t) for t in (2.0, 2.2, 9.0)),  # median 2.2
        job("stackwars", "n:jit", 1.0),
        job("independent", "k:jit", 3.0),
        job("independent", "n:jit", 1.5),
        {**job("independent", "n:jit", 0.1), "status": "error"},  # ignored
    ]
    planned = [("c", "k:jit"), ("c", "n:jit")]
    lines = report.keras_table(records, planned, {"c": "cell c"}, [("b", "k:jit", "n:jit")])
    assert "| cell c | b | k:jit / n:jit | 2.200× | 2.000× | +10.0 % |" in lines
    assert report.keras_table(records, planned[:1], {"c": "c"}, [("b", "k:jit", "n:jit")]) == []


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
    report: Any, ours: float | None, theirs: float | None, spread: float | None, expected: str
) -> None:
    assert report.verdict(ours, theirs, spread).startswith(expected)
