"""The toolchain worker: makes the checks of the machine a stack's compiler keeps in its cache
folder once per folder, not per program (``FrameworkInfo.machine_checks``), into the folder
asked for (``runner/toolchain.py`` is its parent half).

Usage: ``python -m stackwars.runner.toolchain_worker REQUEST.json RESULT.json`` with
``{"stack", "cache_dir", "workload_files"}``. The framework is set up as a timing worker sets
it up (its environment for that cache folder, then loaded), makes its checks, and the answer
names them.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from stackwars import workloads
from stackwars.frameworks import FRAMEWORKS, load_framework, parse_stack
from stackwars.frameworks.base import RunSettings
from stackwars.runner.child import serve
from stackwars.runner.worker import home_environment


def check(request: dict[str, Any]) -> dict[str, Any]:
    for path in request.get("workload_files", []):  # a framework they declare
        workloads.load_workload_file(path)
    stack = parse_stack(request["stack"])
    framework = load_framework(stack.framework, stack.mode)
    settings = RunSettings(cache_dir=request["cache_dir"])
    os.environ.update({**home_environment(settings), **framework.environment(settings)})
    framework.load()
    framework.check_machine(stack.mode)
    return {"checked": FRAMEWORKS[stack.framework].machine_checks[stack.mode]}


def main(argv: list[str]) -> int:
    return serve(argv, "toolchain", check)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
