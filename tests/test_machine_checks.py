"""A cold cell's fresh compile cache starts from its stack's checks of the machine, made once per
run in a toolchain worker (runner/toolchain.py): the fake framework's tracer declares one
(tests/data/fake_framework.py); torch:compile declares Inductor's probes of the CPU's vector
instruction sets, which a user pays once per machine, not once per program (its cells record
them in tests/test_end_to_end.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stackwars.frameworks import FRAMEWORKS
from stackwars.runner.toolchain import checks_of

FAKE_FILE = Path(__file__).parent / "data" / "fake_framework.py"
FAKE_CHECKS = "the fake tracer's probe of the machine"


def test_only_the_modes_that_declare_checks_make_them() -> None:
    assert checks_of("torch:compile") == FRAMEWORKS["torch"].machine_checks["compile"]
    assert checks_of("torch:eager") == checks_of("jax:jit") == checks_of("numpy:eager") == ""
    assert checks_of("nosuch:mode") == ""


def fake_run(
    tmp_path: Path, *extra: str, **env: str
) -> tuple[subprocess.CompletedProcess[str], dict[tuple[str, int], Any]]:
    """``stackwars run`` of two fakenp_axpy sizes on both fakenp modes, in a process of its own;
    its cells by (stack, n)."""
    out = tmp_path / "run.json"
    argv = [
        *("run", "--workload-file", str(FAKE_FILE), "--workload", "fakenp_axpy"),
        *("--param", "n=8,16", "--stacks", "fakenp", "--budget", "0.02", "--quiet"),
        *("--second-look", "0", "--db", str(tmp_path / "db"), "--json", str(out), *extra),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "stackwars", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={
            **os.environ,
            "FAKENP_PROBES": str(tmp_path / "probes.txt"),
            "STACKWARS_MACHINE_CHECKS": str(tmp_path / "machine"),
            **env,
        },
    )
    cells = json.loads(out.read_text())["cells"] if out.exists() else []
    return done, {(cell["stack"], cell["params"]["n"]): cell for cell in cells}


def probes(tmp_path: Path) -> list[str]:
    """What the fake tracer's checks did, run after run: made, or found made before."""
    path = tmp_path / "probes.txt"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow
def test_cold_cells_start_from_the_machines_checks_brought_up_to_date_once_a_run(
    tmp_path: Path,
) -> None:
    done, cells = fake_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert probes(tmp_path) == ["made"]  # two traced cells, one toolchain worker
    for n in (8, 16):
        traced, eager = cells["fakenp:traced", n], cells["fakenp:eager", n]
        assert traced["status"] == eager["status"] == "ok"
        assert traced["settings"]["run"]["machine_checks"] == FAKE_CHECKS
        assert traced["settings"]["framework"]["probed"] is True
        assert eager["settings"]["run"]["machine_checks"] == ""  # its mode declares none
        assert eager["settings"]["framework"]["probed"] is False
    # The machine keeps them: the next run's worker finds them made, as a compiler does.
    done, cells = fake_run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert probes(tmp_path) == ["made", "found"]
    assert cells["fakenp:traced", 8]["settings"]["framework"]["probed"] is True


@pytest.mark.slow
def test_pristine_cells_make_every_check_themselves(tmp_path: Path) -> None:
    done, cells = fake_run(tmp_path, "--cache", "pristine")
    assert done.returncode == 0, done.stderr
    assert probes(tmp_path) == []
    for n in (8, 16):
        assert cells["fakenp:traced", n]["settings"]["run"]["machine_checks"] == ""
        assert cells["fakenp:traced", n]["settings"]["framework"]["probed"] is False


@pytest.mark.slow
def test_checks_that_fail_make_that_stacks_cells_errors_that_name_the_fix(tmp_path: Path) -> None:
    done, cells = fake_run(tmp_path, FAKENP_PROBE_FAILS="1")
    assert done.returncode == 0, done.stderr  # cells that fail are results, not a failed run
    for n in (8, 16):
        traced = cells["fakenp:traced", n]
        assert traced["status"] == "error"
        assert "fakenp:traced's checks of the machine" in traced["reason"]
        assert "the fake probe failed, as asked" in traced["reason"]
        assert "fix: --cache pristine" in traced["reason"]
        assert cells["fakenp:eager", n]["status"] == "ok"


@pytest.mark.slow
def test_a_folder_the_checks_cannot_be_kept_in_is_an_error_naming_the_variable(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    done, cells = fake_run(tmp_path, STACKWARS_MACHINE_CHECKS=str(tmp_path / "file" / "checks"))
    assert done.returncode == 0, done.stderr
    reason = cells["fakenp:traced", 8]["reason"]
    assert "cannot be kept in" in reason and "fix: $STACKWARS_MACHINE_CHECKS" in reason
    assert cells["fakenp:eager", 8]["status"] == "ok"
