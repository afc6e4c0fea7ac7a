"""``stackwars list`` and ``stackwars env``."""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor

from rich.table import Table

from stackwars import workloads
from stackwars.commands.options import Subparsers, add_workload_files
from stackwars.config import parse_device
from stackwars.frameworks import (
    FRAMEWORKS,
    all_stacks,
    environments,
    installed_version,
    stack_missing_reason,
)
from stackwars.instruments.peak.render import peak_rows
from stackwars.instruments.peak.service import measure_and_store_peak
from stackwars.report.console import progress, report_console, warn
from stackwars.report.env import render_env
from stackwars.results import metadata
from stackwars.runner import plan
from stackwars.service import api
from stackwars.service import environments as service_environments
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
    actions = parser.add_subparsers(
        dest="action",
        metavar="{create,remove}",
        description="Python environments of their own, for stacks that cannot share this one "
        "(torch-xla:lazy: torch_xla needs torch 2.9) or for one framework at another version "
        "beside this one in a run (--stacks jax:jit,jax:jit@NAME). A bare 'stackwars env' "
        "lists them with the versions they hold.",
    )
    create = actions.add_parser(
        "create",
        help="make an environment (or find it ready): a venv with the pinned packages",
        description="Make a Python environment for stacks to run in, under $STACKWARS_ENVS "
        "(default ~/.cache/stackwars/environments): a virtual environment with its pinned "
        "packages and stackwars' dependencies, checked by a worker there. Built in: "
        f"{', '.join(sorted(environments.BUILTIN))} (the project's pins). Any other name needs "
        "--pin. A second call finds it ready and changes nothing.",
    )
    create.add_argument("name", help="the environment's name, e.g. torch-xla or jax-0.9.2")
    create.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="PACKAGE==VERSION",
        help="a package it holds, pinned (repeat it: --pin jax==0.9.2 --pin jaxlib==0.9.2); "
        "for an environment that is not built in",
    )
    create.add_argument("--force", action="store_true", help="make it again even if ready")
    create.set_defaults(handler=env_create)
    remove = actions.add_parser("remove", help="delete an environment's folder")
    remove.add_argument("name")
    remove.set_defaults(handler=env_remove)


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
    device = parse_device(args.device)
    info = metadata.collect_env()
    # A worker in each environment of its own checks it beside the frameworks' workers: all
    # are questions, not measurements (the peak below is measured after them, alone).
    with ThreadPoolExecutor(max_workers=1) as beside:
        checked = beside.submit(service_environments.states)
        probes = api.probe_frameworks()
        states = checked.result()
    info["blas_libraries"] = probes.libraries
    info["devices"] = probes.devices
    console.print(render_env(info))
    if args.peak:
        console.print(
            f"measuring this machine's peak on {device} (GEMM per library, STREAM); "
            "~4 minutes on the cpu"
        )
        _, path = measure_and_store_peak(device=device)
        console.print(f"stored in {path}")
    console.print(environment_table(states))
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


def environment_table(states: list[service_environments.EnvironmentState]) -> Table:
    table = Table(
        "environment", "state", "holds", "size", "where", title="Python environments of their own"
    )
    for state in states:
        versions = ", ".join(f"{name} {v}" for name, v in state.versions.items())
        size = state.description.get("size_bytes")
        shown = "-" if size is None else f"{size / 2**30:.1f} GiB"
        table.add_row(
            state.name, state.problem or "ready", versions or "-", shown, str(state.folder)
        )
    return table


def env_create(args: argparse.Namespace, argv: list[str]) -> int:
    console = report_console()
    creation = service_environments.create(args.name, args.pin, force=args.force, say=progress)
    state = creation.state
    if not creation.made:
        console.print(f"environment {state.name!r} is ready in {state.folder} (nothing to do)")
    else:
        size = state.description.get("size_bytes", 0) / 2**30
        console.print(
            f"environment {state.name!r} made in {creation.seconds:.0f} s, {size:.1f} GiB, "
            f"in {state.folder}"
        )
    console.print(environment_table([state]))
    return 0


def env_remove(args: argparse.Namespace, argv: list[str]) -> int:
    folder = service_environments.remove(args.name)
    report_console().print(f"removed {folder}")
    return 0


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((20, add_list), (30, add_env))
