"""Test-wide settings: frameworks and stackwars write caches, config and stores into a
temporary folder, and a test that starts Python must be marked slow."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from stackwars.frameworks import environments

# The user's environments of their own (stackwars env create), before the tests hide them: the
# tests of the stacks that run there use these (torch_xla_environment), every other test sees
# none, so that planning a stack of one starts no worker to check it.
# Read once, by the first process: pytest-xdist's workers inherit the variables this file sets,
# so a worker reads the user's root from the variable the first process left, not from the
# hidden one.
USER_ENVIRONMENTS = os.environ.setdefault("STACKWARS_TESTS_USER_ENVS", str(environments.root()))
# Set before any test imports a framework: they read these at import time.
_SCRATCH = tempfile.mkdtemp(prefix="stackwars-tests-")
for _name, _sub in (
    (environments.ROOT_VARIABLE, "environments"),
    ("KERAS_HOME", "keras"),
    ("MPLCONFIGDIR", "matplotlib"),
    ("TORCHINDUCTOR_CACHE_DIR", "torchinductor"),
    # Nothing the user stored (a measured peak, a results store) leaks into a test.
    ("STACKWARS_PEAK", "peak.json"),
    ("STACKWARS_DB", "stackwars.sqlite"),
    # The machine's compiler checks (runner/toolchain.py): made once per xdist worker here.
    ("STACKWARS_MACHINE_CHECKS", "machine-checks"),
):
    os.environ[_name] = os.path.join(_SCRATCH, _sub)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Ray clusters the tests start (tests/test_ray_*.py, the README's) listen on loopback only
# (Ray reads this when imported), report no usage statistics and write no token to the home
# folder.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["RAY_AUTH_MODE"] = "disabled"


# The fast tier (pytest -m "not slow") starts no Python: no worker, no CLI in a subprocess, no
# tool written in Python. Small programs (git, a fake nvidia-smi) are allowed. A test that
# starts Python without the slow mark fails here, naming what it started, so that the fast tier
# stays fast as tests are added.
_PYTHON_PROGRAMS = ("python", "ruff", "pyright")


def _starts_python(args: Any) -> bool:
    program = str(args[0] if isinstance(args, list | tuple) else args).split()[0]
    return program == sys.executable or os.path.basename(program).startswith(_PYTHON_PROGRAMS)


@pytest.fixture(autouse=True)
def _fast_tests_start_no_python(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if request.node.get_closest_marker("slow"):
        yield
        return
    started: list[str] = []
    popen_init = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        if _starts_python(args):
            if threading.current_thread() is not threading.main_thread():
                started.append(str(args)[:200])
            pytest.fail(f"this test starts Python ({str(args)[:200]}): mark it @pytest.mark.slow")
        popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
    yield
    # Refused in another thread (a run's executor), the start fails the test here.
    if started:
        pytest.fail(f"this test starts Python ({started[0]}): mark it @pytest.mark.slow")
