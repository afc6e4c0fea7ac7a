"""The code stays lint-, format- and type-clean (ruff, pyright: the dev extra)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Each test runs a tool over the whole repository (pyright alone takes minutes).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; fix: pip install -e '.[dev]'")
    return found


@pytest.mark.parametrize(
    "command",
    [["check", "src", "tests", "benchmarks"], ["format", "--check", "src", "tests", "benchmarks"]],
    ids=["lint", "format"],
)
def test_ruff(command: list[str]) -> None:
    result = subprocess.run(
        [tool("ruff"), *command], check=False, cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_pyright() -> None:
    # The interpreter running the tests decides where packages are, activated venv or not.
    command = [tool("pyright"), "--pythonpath", sys.executable]
    result = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
