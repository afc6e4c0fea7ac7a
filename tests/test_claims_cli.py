"""Claims end to end with real workers: a claim file at a tiny size through the command line,
its cells run once for both claims, the verdicts stored with the run and shown by ``show``;
and the built-in claim sets read from an installed package (a wheel built from the tree)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from stackwars.cli import main
from stackwars.instruments.claims.verdict import FAILS, NOT_CHECKABLE, VERDICTS, ClaimResult
from stackwars.results.store import Store

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
TINY = """\
format = 1
description = "two claims on the same two cells"

[[claims]]
id = "numpy-small"
source = "tests/test_claims_cli.py"
quote = "NumPy is faster for small arrays"
workload = "gemm"
params = { n = 16, dtype = "float32" }
subject = "numpy:eager"
baseline = "jax:jit"
relation = "faster"

[[claims]]
id = "impossible"
source = "tests/test_claims_cli.py"
quote = "jit makes a 16² GEMM a thousand times faster"
workload = "gemm"
params = { n = 16, dtype = "float32" }
subject = "jax:jit"
baseline = "numpy:eager"
relation = ">= 1000x"
"""


def test_a_tiny_claim_file_runs_is_stored_and_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claims, db = tmp_path / "tiny.toml", str(tmp_path / "s.sqlite")
    claims.write_text(TINY, encoding="utf-8")
    argv = ["claims", str(claims), "--repeat", "3", "--budget", "0.05", "--quiet", "--db", db]
    assert main([*argv, "--strict", "--markdown", str(tmp_path / "claims.md")]) == 1
    printed = capsys.readouterr().out
    assert "numpy:eager faster than jax:jit on gemm n=16 dtype=float32" in printed
    record = Store(Path(db)).load_run("latest")
    assert len(record.cells) == 6  # two cells, three workers each, shared by both claims
    results = {c["id"]: ClaimResult.from_dict(c) for c in record.claims}
    assert results["impossible"].verdict == FAILS
    small = results["numpy-small"]
    assert small.verdict in VERDICTS and small.verdict != NOT_CHECKABLE
    assert small.workers == (3, 3) and small.low is not None and small.high is not None
    assert small.value is not None and small.low <= small.value <= small.high
    assert "| impossible |" in (tmp_path / "claims.md").read_text(encoding="utf-8")
    assert main(["show", "latest", "--db", db]) == 0
    shown = capsys.readouterr().out
    assert f"Claims checked in run {record.id}" in shown and "impossible" in shown
    assert main(argv) == 0  # without --strict a failing claim is data


def test_the_builtin_claims_load_from_an_installed_package(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    subprocess.run([*build, "-q", "-w", str(tmp_path / "dist"), str(tree)], check=True)
    (wheel,) = (tmp_path / "dist").glob("stackwars-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    assert "stackwars/instruments/claims/builtin/seed-001.toml" in names
    script = (
        "import stackwars; from stackwars.instruments.claims.files import builtin_sets; "
        "print(stackwars.__file__); print(sorted(s.name for s in builtin_sets()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    where, sets = done.stdout.splitlines()
    assert where.startswith(str(tmp_path / "site"))
    assert sets == "['keras', 'seed-000', 'seed-001', 'seed-002']"
