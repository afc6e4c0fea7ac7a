"""The parent process imports no framework: planning, listing and reporting stay light."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Each test starts Python in a subprocess, to see what a fresh process imports.
pytestmark = pytest.mark.slow

PROBE = """
import json, sys
from stackwars import workloads
from stackwars.commands import listing
from stackwars.cli import build_parser
from stackwars.frameworks import FRAMEWORKS, all_stacks
from stackwars.ir import capture
from stackwars.runner import plan
from stackwars.suites import SUITES
for suite in SUITES.values():
    plan.plan(plan.suite_cells(suite, None, "cpu"), 2**40)
for workload in workloads.registry().values():
    workload.work(workload.defaults()); workload.memory_bytes(workload.defaults())
listing.workload_table(); listing.stack_table(); listing.suite_table()
for stack in all_stacks():
    capture.stages(str(stack))
# Every module a stack imports: each framework's, and those its special modes need.
modules = {info.import_name for info in FRAMEWORKS.values()} | {
    name
    for info in FRAMEWORKS.values()
    for special in info.mode_implementations.values()
    for name in special.import_names
}
print(json.dumps(sorted(m for m in modules if m in sys.modules)))
"""


def test_planning_and_listing_import_no_framework() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    )
    assert json.loads(result.stdout) == []
