"""``stackwars selftest``: prove for each stack that a timed block includes its work.

Each stack runs ``runner/selftest_worker.py`` in a fresh process (the parent imports no
framework), under a timeout that kills the worker's whole process tree. The worker's checks
are printed as one table; the exit status is 1 when a check failed or a worker did not
finish, 0 otherwise. Stacks whose framework is not installed, or that do not run on the
device, are listed as unsupported and do not fail the command.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from stackwars.config import parse_device
from stackwars.errors import UsageError
from stackwars.frameworks import (
    FRAMEWORKS,
    Stack,
    all_stacks,
    parse_stacks,
    stack_missing_reason,
)
from stackwars.frameworks.base import split_device
from stackwars.report.console import report_console
from stackwars.runner.isolate import OUTPUT_TAIL_CHARS, kill_tree
from stackwars.runner.selftest_worker import Check

EXIT_FAILED = 1
# A stack takes seconds; torch.compile's cold compiles make it about half a minute on 2 cores.
DEFAULT_TIMEOUT_S = 300.0
PASSED = {True: ("yes", "green"), False: ("FAILED", "bold red"), None: ("n/a", "dim")}


@dataclass
class StackResult:
    """One stack's selftest: status ok (checks ran), unsupported, error, oom or timeout."""

    stack: str
    status: str
    reason: str = ""
    checks: list[Check] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StackResult:
        checks = [Check(**check) for check in data["checks"]]
        return cls(data["stack"], data["status"], data["reason"], checks)

    def failures(self) -> list[str]:
        """A line per failed check, or for a worker that did not finish."""
        if self.status not in ("ok", "unsupported"):
            return [f"FAILED: {self.stack} worker ({self.status}): {self.reason}"]
        return [
            f"FAILED: {self.stack} {check.name}: {check.message}"
            for check in self.checks
            if check.passed is False
        ]


def selftest(args: argparse.Namespace, argv: list[str]) -> int:
    """Run every chosen stack's selftest; see the module docstring for the exit status."""
    del argv
    device = parse_device(args.device)
    stacks = parse_stacks(args.stacks) if args.stacks else all_stacks()
    timeout_s = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if timeout_s <= 0:
        raise UsageError(f"--timeout {timeout_s:g} must be a positive number of seconds")
    console = report_console()
    results = []
    for stack in stacks:
        with console.status(f"selftest {stack} on {device}"):
            results.append(check_stack(stack, device, timeout_s))
    console.print(result_table(results, device))
    failures = [line for result in results for line in result.failures()]
    for line in failures:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return EXIT_FAILED if failures else 0


def check_stack(stack: Stack, device: str, timeout_s: float) -> StackResult:
    """One stack's result; unsupported without a worker when it cannot run here."""
    reason = stack_missing_reason(stack.framework, stack.mode)
    devices = FRAMEWORKS[stack.framework].devices
    if reason is None and split_device(device)[0] not in devices:
        reason = f"{stack.framework} runs on {', '.join(devices)}, not {device}"
    if reason is not None:
        return StackResult(str(stack), "unsupported", reason)
    return run_worker(stack, device, timeout_s)


def run_worker(stack: Stack, device: str, timeout_s: float) -> StackResult:
    """The selftest worker's result; a worker that does not write one becomes its status."""
    with tempfile.TemporaryDirectory(prefix="stackwars-selftest-") as scratch:
        folder = Path(scratch)
        request_path, result_path = folder / "request.json", folder / "result.json"
        output_path = folder / "output.txt"
        request = {"stack": str(stack), "device": device, "cache_dir": str(folder / "cache")}
        request_path.write_text(json.dumps(request), encoding="utf-8")
        command = [sys.executable, "-m", "stackwars.runner.selftest_worker"]
        with output_path.open("wb") as output:
            popen = subprocess.Popen(
                [*command, str(request_path), str(result_path)],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=folder,
            )
            try:
                popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                kill_tree(popen)
                tail = _tail(output_path)
                detail = f"still running after {timeout_s:g} s; raise it with --timeout\n{tail}"
                return StackResult(str(stack), "timeout", detail)
            finally:
                # Whatever interrupted the parent, no worker is left running.
                if popen.poll() is None:
                    kill_tree(popen)
        if result_path.exists():
            return StackResult.from_dict(json.loads(result_path.read_text(encoding="utf-8")))
        detail = f"exited with status {popen.returncode} without a result\n{_tail(output_path)}"
        return StackResult(str(stack), "error", detail)


def _tail(output_path: Path) -> str:
    return output_path.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL_CHARS:]


def result_table(results: list[StackResult], device: str) -> Table:
    table = Table("stack", "check", "passed", "numbers", title=f"selftest on {device}")
    for result in results:
        if not result.checks:
            last_line = result.reason.strip().splitlines()[-1:] or [""]
            status = Text(result.status, style="dim" if result.status == "unsupported" else "red")
            table.add_row(result.stack, "-", status, Text(last_line[0]))
        for check in result.checks:
            text, style = PASSED[check.passed]
            table.add_row(result.stack, check.name, Text(text, style=style), Text(check.message))
    return table
