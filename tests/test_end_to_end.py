"""The real path: the CLI, one fresh worker process per cell, every installed stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.frameworks import default_stacks, missing_reason
from stackwars.runner.toolchain import checks_of


@pytest.mark.slow
def test_gemm_on_every_installed_stack_in_fresh_workers(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    argv = [
        "run",
        "--workload",
        "gemm",
        "--param",
        "n=64",
        "--db",
        str(tmp_path / "db"),
        "--budget",
        "0.05",
        "--second-look",
        "0",
        "--quiet",
        "--json",
        str(out),
        "--strict",
    ]
    # The stacks of stackwars' own environment: one in an environment of its own is
    # tests/test_torch_lazy.py's (here the tests hide the user's environments).
    own = [str(stack) for stack in default_stacks() if not stack.runs_in]
    assert main([*argv, "--stacks", ",".join(own)]) == 0
    cells = {c["stack"]: c for c in json.loads(out.read_text())["cells"]}
    assert set(cells) == set(own)
    for stack, cell in cells.items():
        if missing_reason(stack.partition(":")[0]):
            assert cell["status"] == "unsupported"
            continue
        assert cell["status"] == "ok", (stack, cell["reason"])
        assert cell["times"]["import_s"] > 0, stack  # imported and timed in this worker
        assert cell["memory"]["peak_rss_bytes"] > cell["memory"]["rss_after_import_bytes"] / 2
        assert cell["settings"]["environment"]["KERAS_HOME"].startswith(str(Path("/")))
        # Its cold cache started from what its compiler checks of the machine once per folder
        # (torch:compile: Inductor's probes of the CPU), nothing elsewhere.
        assert cell["settings"]["run"]["machine_checks"] == checks_of(stack), stack
    compiled = [
        s
        for s in ("jax:jit", "torch:compile", "tensorflow:graph", "tensorflow:xla")
        if cells[s]["status"] == "ok"
    ]
    for stack in compiled:
        assert cells[stack]["compiles"]["first_run"] >= 1, stack
        assert cells[stack]["compiles"]["steady"] == 0, stack
        assert cells[stack]["first_run_breakdown"], stack
    if cells["tensorflow:xla"]["status"] == "ok":  # XLA's compile read from TensorFlow's log
        xla = cells["tensorflow:xla"]["first_run_breakdown"]
        assert set(xla) == {"trace_s", "compile_s", "execute_s"}
        assert 0 < xla["compile_s"] < cells["tensorflow:xla"]["times"]["first_run_s"]
    if cells["jax:jit"]["status"] == "ok":
        assert cells["jax:jit"]["times"]["dispatch_s"] is not None
