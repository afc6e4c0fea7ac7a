"""IR capture through the real IR worker: each stage holds what it must; stacks without a
stage say so instead of failing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.config import RunOptions
from stackwars.frameworks import missing_reason, stack_missing_reason
from stackwars.ir.analyse import analyse
from stackwars.results.schema import CellSpec
from stackwars.service.api import capture_stack

GEMM = {"n": 16, "dtype": "float32"}
MUST_CONTAIN = {
    ("torch:xla", "stablehlo"): "dot_general",
    ("torch:xla", "optimized_hlo"): "dot",
    ("jax:jit", "jaxpr"): "dot_general",
    ("jax:jit", "stablehlo"): "dot_general",
    ("jax:jit", "hlo"): "dot",
    ("jax:jit", "optimized_hlo"): "dot",
    ("tensorflow:xla", "stablehlo"): "dot",
    ("tensorflow:xla", "hlo"): "dot",
    ("tensorflow:graph", "graph_ops"): "MatMul",
}


def captured(stack: str, tmp_path: Path) -> tuple[Path, dict[str, object]]:
    framework, _, mode = stack.partition(":")
    missing = stack_missing_reason(framework, mode)
    if missing:
        pytest.skip(missing)
    folder = tmp_path / stack.replace(":", "_")
    index = capture_stack(CellSpec("gemm", GEMM, stack), RunOptions(), folder)
    return folder, index


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["jax:jit", "torch:xla", "tensorflow:xla", "tensorflow:graph"])
def test_gemm_stages_hold_the_matmul(stack: str, tmp_path: Path) -> None:
    folder, index = captured(stack, tmp_path)
    stages = index["stages"]
    assert isinstance(stages, dict)
    for (for_stack, stage), op in MUST_CONTAIN.items():
        if for_stack != stack:
            continue
        text = (folder / stages[stage]).read_text()
        assert analyse(text).ops[op] >= 1, (stage, text[:500])


@pytest.mark.slow
def test_jax_cost_analysis_counts_the_gemm_flops(tmp_path: Path) -> None:
    import json

    folder, index = captured("jax:jit", tmp_path)
    stages = index["stages"]
    assert isinstance(stages, dict)
    cost = json.loads((folder / stages["cost_analysis"]).read_text())
    assert cost["flops"] == pytest.approx(2 * 16**3, rel=0.01)


@pytest.mark.slow
def test_an_eager_stack_reports_no_compiler_ir(tmp_path: Path) -> None:
    _, index = captured("numpy:eager", tmp_path)
    assert index["stages"] == {}
    assert "no compiler IR" in str(index["unavailable"])


@pytest.mark.slow
def test_diff_against_a_stack_without_the_stage_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "ir",
            "--workload",
            "gemm",
            "--param",
            "n=16",
            "--stacks",
            "jax:jit,numpy",
            "--diff",
            "jax:jit",
            "numpy:eager",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 2
    assert "numpy:eager has no stablehlo to compare: no compiler IR" in capsys.readouterr().err


def test_ir_refuses_sweeps(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ir", "--workload", "gemm", "--param", "n=16,32", "--stacks", "jax:jit"]) == 2
    assert "one value per --param" in capsys.readouterr().err


@pytest.mark.slow
def test_run_capture_ir_stores_the_ir_with_the_run(tmp_path: Path) -> None:
    from stackwars.results import store

    if missing_reason("jax"):
        pytest.skip(missing_reason("jax") or "")
    db = tmp_path / "db.sqlite"
    argv = [
        "run",
        "--workload",
        "gemm",
        "--param",
        "n=16",
        "--stacks",
        "numpy,jax:jit",
        "--budget",
        "0.05",
        "--second-look",
        "0",
        "--quiet",
        "--db",
        str(db),
        "--capture-ir",
    ]
    assert main(argv) == 0
    captures = store.Store(db).captures("latest")
    (key,) = captures  # numpy has no compiler IR: only jax:jit's cell is stored
    assert "jax:jit" in key
    assert "dot_general" in captures[key]["stablehlo"]


@pytest.mark.slow
def test_torch_xla_exports_the_aten_graph(tmp_path: Path) -> None:
    folder, index = captured("torch:xla", tmp_path)
    stages = index["stages"]
    assert isinstance(stages, dict)
    assert "aten.matmul" in (folder / stages["exported_graph"]).read_text()


@pytest.mark.slow
def test_torch_compile_gives_fx_graph_inductor_code_and_graph_breaks(tmp_path: Path) -> None:
    folder, index = captured("torch:compile", tmp_path)
    stages = index["stages"]
    assert isinstance(stages, dict)
    assert "matmul" in (folder / stages["fx_graph"]).read_text()  # a @ b, as a user writes it
    assert "def call(" in (folder / stages["inductor_code"]).read_text()
    assert "graph breaks: 0" in (folder / stages["graph_breaks"]).read_text()


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


@pytest.mark.slow
def test_ir_on_a_device_the_framework_does_not_see_says_why_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = stack_missing_reason("jax", "jit")
    if missing:
        pytest.skip(missing)
    args = ["ir", "--workload", "gemm", "--param", "n=16", "--stacks", "jax:jit"]
    assert main([*args, "--device", "gpu", "--out", str(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "jax:jit: *:" in out
    assert "stackwars[cuda]" in out  # the fix, its brackets not read as markup
    assert "Traceback" not in out
    index = json.loads((tmp_path / "jax_jit" / "index.json").read_text())
    assert index["stages"] == {}
    assert "gpu" in index["unavailable"]["*"].lower()
