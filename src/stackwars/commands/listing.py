"""``stackwars list`` and ``stackwars env``."""

from __future__ import annotations

import argparse

from rich.table import Table

from stackwars import workloads
from stackwars.commands.options import Subparsers, add_workload_files
from stackwars.config import parse_device
from stackwars.frameworks import FRAMEWORKS, all_stacks, installed_version, stack_missing_reason
from stackwars.report.console import report_console, warn
from stackwars.report.env import render_env
from stackwars.report.peak import peak_rows
from stackwars.results import metadata
from stackwars.runner import plan
from stackwars.service import api
from stackwars.suites import SUITES


def add_list(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("list", help="list workloads, stacks or suites")
    parser.add_argument("what", choices=("workloads", "stacks", "suites"))
    add_workload_files(parser)
    parser.set_defaults(handler=list_things)


def add_env(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("env", help="this machine and the installed framework versions")
    parser.add_argument(
        "--peak",
        action="store_true",
        help="measure this machine's GEMM FLOP/s and memory bandwidth once and store them; "
        "tables then place every cell on the roofline",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="the device --peak measures, each library's GEMM and copy kernels run on it "
        "(cpu, gpu, gpu:1, tpu; default cpu); each device's peak is stored apart",
    )
    parser.set_defaults(handler=env)


def list_things(args: argparse.Namespace, argv: list[str]) -> int:
    for path in args.workload_file:
        workloads.load_workload_file(path)
    listers = {"workloads": workload_table, "stacks": stack_table, "suites": suite_table}
    report_console().print(listers[args.what]())
    return 0


def workload_table() -> Table:
    table = Table("workload", "parameters (default)", "frameworks", "description")
    for workload in workloads.registry().values():
        params = ", ".join(f"{p.name}={p.default}" for p in workload.params)
        frameworks = ", ".join(workload.implementations)
        summary = workload.summary()
        description = f"{workload.description}; {summary}" if summary else workload.description
        table.add_row(workload.name, params, frameworks, description)
    return table


def stack_table() -> Table:
    table = Table("stack", "installed", "version", "devices", "why not")
    for stack in all_stacks():
        reason = stack_missing_reason(stack.framework, stack.mode)
        info = FRAMEWORKS[stack.framework]
        version = installed_version(stack.framework) or "-"
        installed = "no" if reason else "yes"
        devices = ", ".join(info.devices_for(stack.mode))
        table.add_row(str(stack), installed, version, devices, reason or "")
    return table


def suite_table() -> Table:
    table = Table("suite", "cells", "description")
    for suite in SUITES.values():
        count = len(plan.suite_cells(suite, None, "cpu"))
        table.add_row(suite.name, str(count), suite.description)
    return table


def env(args: argparse.Namespace, argv: list[str]) -> int:
    console = report_console()
    info = metadata.collect_env()
    info["blas_libraries"] = api.blas_libraries()
    info["devices"] = api.device_support()
    console.print(render_env(info))
    device = parse_device(args.device)
    if args.peak:
        console.print(
            f"measuring this machine's peak on {device} (GEMM per library, STREAM); "
            "~4 minutes on the cpu"
        )
        _, path = api.measure_and_store_peak(device=device)
        console.print(f"stored in {path}")
    stored, stale = api.usable_peak(metadata.machine_info(), device)
    if stale:
        warn(stale)
    if stored is None:
        option = "" if device == "cpu" else f" --device {device}"
        console.print(
            f"peak: none for {device} on this machine; run 'stackwars env --peak{option}' "
            "(once per machine)"
        )
        return 0
    table = Table(f"Peak ({device})", "value")
    for name, value in peak_rows(stored).items():
        table.add_row(name, value)
    console.print(table)
    return 0
