"""Options that several commands take with the same meaning and help: the results store, the
workload files, the comparison verdict and the gate. Not a command: every command module may
import it, and it imports none."""

from __future__ import annotations

import argparse
from typing import Any, TypeAlias

from stackwars.config import EXECUTORS

# Written as a string: argparse's action class is not subscriptable at run time.
Subparsers: TypeAlias = "argparse._SubParsersAction[Any]"

DB_HELP = "results store (default $STACKWARS_DB or ./stackwars.sqlite)"


def add_db(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--db", metavar="PATH", help=DB_HELP)


def add_workload_files(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workload-file", action="append", default=[], metavar="PATH")


def add_threshold(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threshold",
        type=float,
        default=5.0,
        metavar="PCT",
        help="smallest change called a difference when significant (5)",
    )


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


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-memory-above",
        type=float,
        metavar="PCT",
        help="exit 1 when a cell's peak memory (RSS, and device peak where measured) is "
        "significantly larger by more than PCT percent",
    )
    parser.add_argument(
        "--allow-failures",
        action="store_true",
        help="a cell ok in the baseline and failed or absent in the candidate does not fail "
        "the gate (it is still listed)",
    )


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
