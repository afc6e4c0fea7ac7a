"""``stackwars selftest``: prove for each stack that a timed block includes its work.

Each stack runs ``instruments/selftest/worker.py`` in a fresh process, through the
instrument's service (the parent imports no framework), under a timeout that kills the
worker's whole process tree. The worker's checks
are printed as one table; the exit status is 1 when a check failed or a worker did not
finish, 0 otherwise. Stacks whose framework is not installed, or that do not run on the
device, are listed as unsupported and do not fail the command.
"""

from __future__ import annotations

import argparse
import time

from stackwars.commands.options import Subparsers
from stackwars.config import parse_device
from stackwars.frameworks import all_stacks, parse_stacks
from stackwars.instruments.selftest.render import result_table
from stackwars.instruments.selftest.service import selftest_stack, timeout_of
from stackwars.report.console import progress, report_console

EXIT_FAILED = 1


def add_selftest(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "selftest",
        help="prove that each stack's timed block includes the completion of its work",
        description=(
            "For each stack, in a fresh worker: one synchronised GEMM must take at least the "
            "time the device's peak allows (a sync that does not wait fails); k dependent "
            "calls with one sync must take about as long as k synchronised calls; and on "
            "asynchronous stacks the dispatch-only time must be well below the synchronised "
            "time. Exit 1 when a check fails."
        ),
    )
    parser.add_argument("--stacks", help="comma list of framework:mode (default: every stack)")
    parser.add_argument("--device", default="cpu", help="cpu, gpu, gpu:1 or tpu (default cpu)")
    parser.add_argument("--timeout", type=float, metavar="S", help="per stack, seconds (300)")
    parser.set_defaults(handler=selftest)


def selftest(args: argparse.Namespace, argv: list[str]) -> int:
    """Run every chosen stack's selftest; see the module docstring for the exit status."""
    del argv
    device = parse_device(args.device)
    stacks = parse_stacks(args.stacks) if args.stacks else all_stacks()
    timeout_s = timeout_of(args.timeout)
    console = report_console()
    results = []
    for number, stack in enumerate(stacks, 1):
        with console.status(f"selftest {stack} on {device}"):
            started = time.perf_counter()
            results.append(selftest_stack(stack, device, timeout_s))
        if not console.is_terminal:
            # Without a terminal the status line is silent; a log still shows the progress.
            took = time.perf_counter() - started
            done = f"{stack} on {device}: {results[-1].status} ({took:.0f} s)"
            progress(f"selftest {number}/{len(stacks)} {done}")
    console.print(result_table(results, device))
    failures = [line for result in results for line in result.failures()]
    for line in failures:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return EXIT_FAILED if failures else 0


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((190, add_selftest),)
