"""Options that several commands take with the same meaning and help: the results store, the
workload files, the settings a framework runs with, the comparison verdict and the gate. Not a
command: every command module may import it, and it imports none."""

from __future__ import annotations

import argparse
from typing import Any, TypeAlias

from stackwars.config import EXECUTORS, MATMUL_PRECISIONS
from stackwars.results.comparison import DEFAULT_PASS_BELOW, Gate

# The gate's exit statuses are the verdict's (EXIT_FAIL, EXIT_UNDERPOWERED: re-exported for the
# tests and scripts that read them with the options).
from stackwars.results.verdict import (  # noqa: F401
    DEFAULT_ALPHA_PCT,
    EXIT_FAIL,
    EXIT_UNDERPOWERED,
    gate_settings,
)

# Written as a string: argparse's action class is not subscriptable at run time.
Subparsers: TypeAlias = "argparse._SubParsersAction[Any]"

DB_HELP = "results store (default $STACKWARS_DB or ./stackwars.sqlite)"


def add_db(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--db", metavar="PATH", help=DB_HELP)


def add_workload_files(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workload-file", action="append", default=[], metavar="PATH")


def add_framework_settings(parser: argparse.ArgumentParser) -> None:
    """How each framework runs a cell: threads, 64-bit JAX, matmul precision, accelerator
    memory (read back by :func:`framework_settings`)."""
    settings = parser.add_argument_group("framework settings")
    settings.add_argument(
        "--threads", type=int, metavar="N", help="threads per framework (default: its own)"
    )
    settings.add_argument(
        "--x64",
        default="auto",
        choices=("auto", "on", "off"),
        help="JAX 64-bit: auto turns it on for cells whose dtype parameter, or without one "
        "whose inputs, are float64",
    )
    settings.add_argument(
        "--matmul-precision",
        choices=MATMUL_PRECISIONS,
        default="highest",
        help="float32 matmuls: highest (full precision, the default), high (the framework's "
        "faster mode: TF32 on NVIDIA GPUs) or default (as each framework leaves them: TF32 on "
        "in TensorFlow, and in JAX on GPUs, off in torch); recorded in each cell",
    )
    settings.add_argument(
        "--preallocate",
        action="store_true",
        help="let JAX and TensorFlow reserve most of an accelerator's memory upfront, their "
        "default (stackwars turns it off so memory peaks are the work's); no effect on cpu",
    )
    settings.add_argument(
        "--memory-fraction",
        type=float,
        metavar="F",
        help="the share of a gpu's memory JAX and torch may take, in (0, 1] (JAX: "
        "XLA_PYTHON_CLIENT_MEM_FRACTION, what --preallocate reserves; torch: "
        "set_per_process_memory_fraction); default: each framework's own",
    )
    settings.add_argument(
        "--allocator-conf",
        metavar="TEXT",
        help="PYTORCH_CUDA_ALLOC_CONF for torch's cells on a gpu, e.g. "
        "expandable_segments:True (default: torch's own)",
    )


def framework_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The options :func:`add_framework_settings` added, named as ``api.Measure`` names them."""
    return {
        "threads": args.threads,
        "x64": args.x64,
        "matmul_precision": args.matmul_precision,
        "preallocate": args.preallocate,
        "memory_fraction": args.memory_fraction,
        "allocator_conf": args.allocator_conf,
    }


DEFAULT_THRESHOLD_PCT = 5.0


def add_threshold(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threshold",
        type=float,
        metavar="PCT",
        help="smallest change a row calls a difference when significant (default: the "
        f"--fail-above limit where a gate is asked for, so rows and gate speak of one limit; "
        f"else {DEFAULT_THRESHOLD_PCT:g})",
    )


def threshold_pct(args: argparse.Namespace) -> float:
    """--threshold as given; else the gate's --fail-above (a row read against another limit
    than its gate's would say 'undecided' of a cell the gate has failed) where it can be a
    row's threshold (below 100 %: a change both ways); else the default."""
    if args.threshold is not None:
        return args.threshold
    fail_above: float | None = getattr(args, "fail_above", None)
    if fail_above is not None and 0 <= fail_above < 100:
        return fail_above
    return DEFAULT_THRESHOLD_PCT


def add_verdict_options(parser: argparse.ArgumentParser) -> None:
    add_threshold(parser)
    parser.add_argument(
        "--fail-above",
        type=float,
        metavar="PCT",
        help="exit 1 when a cell is significantly slower (95 %% interval above 1) and its "
        "change is more than PCT percent, or (compare, ab) when a cell ok in the baseline is "
        "not ok or absent in the candidate; cells with fewer than 3 workers per side are "
        "inconclusive and never fail on time",
    )
    parser.add_argument(
        "--within-process",
        action="store_true",
        help="judge cells with fewer than 3 workers per side by the blocks of one process "
        "(their interval then ignores the variation between processes)",
    )


def add_alpha(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--alpha``, wherever a gate is applied (compare, show --baseline, ab, bisect)."""
    parser.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA_PCT,
        metavar="PCT",
        help="the gate's false-alarm budget per suite run: every cell x {time, memory} (and "
        "every look of 'ab') is one family, controlled by Holm's procedure "
        f"({DEFAULT_ALPHA_PCT:g})",
    )


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    """What a gate is asked for besides ``--fail-above`` (which each command words its own
    way): ``--alpha``, ``--fail-on-undecided``, ``--fail-memory-above``, ``--allow-failures``
    (read back by :func:`gate_options`)."""
    add_alpha(parser)
    parser.add_argument(
        "--fail-on-undecided",
        action="store_true",
        help="an underpowered outcome (cells neither failed nor shown within the limits) "
        "fails the gate (exit 1) instead of exiting 3",
    )
    parser.add_argument(
        "--pass-below",
        type=float,
        metavar="PCT",
        help="a cell passes when shown slower by less than PCT percent (default: the larger of "
        f"{DEFAULT_PASS_BELOW:g} and --fail-above); between the two limits it is undecided",
    )
    parser.add_argument(
        "--fail-memory-above",
        type=float,
        metavar="PCT",
        help="exit 1 when a cell's peak memory (RSS, and device peak where measured) is "
        "significantly larger by more than PCT percent",
    )
    parser.add_argument(
        "--fail-on-count-change",
        action="store_true",
        help="a count every worker of each side agreed on and the sides differ in (the "
        "compilations of the first run, the second run, steady state) fails its cell, with no "
        "timing involved; such changes are listed either way",
    )
    parser.add_argument(
        "--allow-failures",
        action="store_true",
        help="a cell ok in the baseline and failed or absent in the candidate does not fail "
        "the gate (it is still listed)",
    )


def gate_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :func:`add_gate_options` and ``--fail-above``, named as the service's
    ``compare`` and ``compare_with_stack`` (and ``results.verdict.gate_settings``) name them."""
    return {
        "fail_above": args.fail_above,
        "fail_memory_above": args.fail_memory_above,
        "alpha_pct": args.alpha,
        "allow_failures": args.allow_failures,
        "fail_on_undecided": args.fail_on_undecided,
        "pass_below": args.pass_below,
        "fail_on_count_change": args.fail_on_count_change,
    }


def gate_of(args: argparse.Namespace) -> Gate:
    """The gate the options of :func:`add_gate_options` and ``--fail-above`` ask for, checked
    (``results/verdict.py``'s ``gate_settings``, as the service builds it)."""
    return gate_settings(**gate_options(args))


def add_executor(parser: argparse.ArgumentParser, what: str) -> None:
    """--executor and --ray-address: where the command's ``what`` (cells, probes) run."""
    where = parser.add_argument_group(f"where {what} run")
    where.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help=f"local: on this machine, --jobs at a time (default); ray: each of the {what} a Ray "
        "task starting the same worker on a cluster node, the results streamed into the store "
        "(needs pip install 'stackwars[ray]')",
    )
    where.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="the Ray cluster's head, HOST:PORT as 'ray start --head' prints it (or 'auto'); "
        "default: a Ray instance of its own on this machine",
    )
    where.add_argument(
        "--ray-resource",
        metavar="NAME",
        action="append",
        default=[],
        help=f"with --executor ray, the {what} run only on nodes offering Ray the resource NAME "
        "(given with 'ray start --resources', or Ray's accelerator_type:H100): one kind of node "
        "(repeatable: nodes offering all)",
    )
