"""``stackwars profile``: one cell on each stack, timed and then profiled with the framework's
own profiler; the stacks side by side, each stack's costliest operations, the raw traces."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

from stackwars.commands.options import (
    Subparsers,
    add_framework_settings,
    add_workload_files,
    framework_settings,
)
from stackwars.config import INPUT_MODES, RunOptions
from stackwars.errors import UsageError
from stackwars.instruments.profile.service import profile_cell, profile_cells
from stackwars.profiling.result import PROFILE_FORMAT, Profile
from stackwars.report import profile as render
from stackwars.report.console import report_console
from stackwars.results.jsonio import dump, write_atomically
from stackwars.service import api
from stackwars.timing.timer import TimingConfig

DEFAULT_BUDGET_S = 1.0


def add_profile(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="where the time goes: per-operation profiles of one cell across stacks",
        description=(
            "Measure one cell on each stack in a fresh worker (the timing protocol gives its "
            "unprofiled steady time), then profile --calls more steady calls with the "
            "framework's own profiler (torch.profiler, jax.profiler, tf.profiler): time per "
            "operation and per category (matmul/conv, elementwise/fused, reduction, data "
            "movement, overhead/idle), operations and fused kernels per call, threads, the "
            "profiler's overhead, XLA's operations named from the optimized HLO. The raw "
            "traces (Perfetto, TensorBoard) are kept under --out. NumPy has no profiler and is "
            "reported unsupported, with what a Python-level profiler could not see."
        ),
        epilog="example: stackwars profile --workload selu --param n=2000 "
        "--stacks jax:jit,torch:eager,torch:compile,tensorflow:xla",
    )
    parser.add_argument("--workload", required=True)
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--stacks", required=True, help="comma list of framework:mode")
    parser.add_argument(
        "--calls", type=int, default=20, metavar="N", help="steady calls profiled (20)"
    )
    parser.add_argument(
        "--budget", type=float, metavar="S", help="steady budget of the unprofiled timing (1)"
    )
    parser.add_argument("--top", type=int, default=10, metavar="N", help="operations shown (10)")
    parser.add_argument(
        "--out", metavar="DIR", help="where traces go (./stackwars-profile/WORKLOAD-PARAMS)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the profiles as JSON")
    parser.add_argument("--timeout", type=float, metavar="S", help="per stack, seconds (600)")
    parser.add_argument("--memory-budget", metavar="SIZE", help="per worker, e.g. 8GiB")
    add_workload_files(parser)
    parser.add_argument(
        "--inputs",
        choices=INPUT_MODES,
        default="resident",
        help="per-call: every call places the host inputs on the device (as run --inputs)",
    )
    add_framework_settings(parser)
    parser.set_defaults(handler=profile)


def slug(text: str) -> str:
    return re.sub(r"[^\w.=-]+", "_", text)


def profile(args: argparse.Namespace, argv: list[str]) -> int:
    del argv
    if args.calls < 1:
        raise UsageError(f"--calls {args.calls}: profile at least one call")
    files = tuple(str(Path(path).resolve()) for path in args.workload_file)
    cells = profile_cells(args.workload, tuple(args.param), args.stacks, files)
    options = options_of(args, files)
    params = "-".join(f"{k}={v}" for k, v in cells[0].params.items())
    root = Path(args.out or Path("stackwars-profile") / slug(f"{cells[0].workload}-{params}"))
    console = report_console()
    profiles: list[Profile] = []
    for spec in cells:
        with console.status(f"{spec.label()}: starting") as status:

            def progress(text: str, label: str = spec.label()) -> None:
                status.update(f"{label}: {text}")

            found = profile_cell(spec, options, root / slug(spec.stack), args.calls, progress)
            profiles.append(found)
    title = f"{cells[0].workload}({params.replace('-', ', ')}): {args.calls} profiled calls"
    console.print(render.side_by_side(profiles, title))
    for found in profiles:
        if found.status == "ok":
            console.print(render.operations(found, args.top))
    for line in render.not_profiled(profiles):
        console.print(line)
    for line in render.caveats(profiles):
        console.print(line, style="dim", highlight=False)
    for line in render.files(profiles):
        console.print(line, highlight=False)
    if args.json:
        data = {"format": PROFILE_FORMAT, "profiles": [p.to_dict() for p in profiles]}
        write_atomically(Path(args.json), dump(data))
        console.print(f"profiles written to {args.json}")
    return 0


def options_of(args: argparse.Namespace, files: tuple[str, ...]) -> RunOptions:
    """The options of every profiled cell, the framework settings as ``run`` takes them; each
    cell's unprofiled steady state is measured with the timing protocol in a budget of
    ``--budget`` seconds (it stops earlier once precise enough)."""
    budget = DEFAULT_BUDGET_S if args.budget is None else args.budget
    measure = api.Measure(
        timeout_s=args.timeout or api.IR_TIMEOUT_S,
        memory_budget=args.memory_budget,
        inputs=args.inputs,
        **framework_settings(args),
    )
    timing = TimingConfig(steady_budget_s=budget, warmup_budget_s=max(budget, 2.0))
    return dataclasses.replace(api.run_options(measure, "cpu", None, files), timing=timing)


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((180, add_profile),)
