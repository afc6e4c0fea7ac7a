"""The ``stackwars`` command: argument parsing and dispatch only.

Exit status: 0 when every cell ran, whatever its status (failures are data); 1 with
``--strict`` when a cell is not ok; 2 on bad input (a bare ``stackwars`` too: it prints the
help); 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from stackwars import __version__, cli_parsers, commands
from stackwars.config import CACHE_MODES, MATMUL_PRECISIONS
from stackwars.errors import UsageError

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
NO_COMMAND = "stackwars: no command given; 'stackwars run' runs the quick suite"

RUN_EXAMPLES = """\
examples:
  stackwars run                                   the quick suite on every installed stack
  stackwars run --suite seed-blog --json out.json seed 000's GEMM and SELU at full size
  stackwars run --workload gemm --param n=256,1024 --stacks numpy,jax:jit,torch:*
  stackwars run --workload poly --param n=64..4096:x2 --stacks numpy,jax:jit
  stackwars run --workload-file my_workloads.py --workload my_op
  stackwars run --suite stack-wars --executor ray --ray-address 10.0.0.1:6379
                                                  each cell a task on a Ray cluster

Each cell runs in a fresh worker process. Every cell's result is stored in the results
store (--db) the moment it ends; Ctrl-C keeps what finished and marks the run interrupted.
"""


class _StoreOnce(argparse._StoreAction):
    """argparse's default action, except that an option given twice is refused: argparse
    would keep the last value and silently drop the first (``--workload a --workload b``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given: dict[str, Any] = namespace.__dict__.setdefault("_given_once", {})
        if self.dest in given and option_string:
            parser.error(
                f"{option_string} was given twice ({given[self.dest]!r}, then {values!r}); give "
                "it once (options that take several values take a comma list)"
            )
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Argument groups share this registry, so every plain option is stored once.
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"stackwars: error: {message}; see '{self.prog} --help'\n")


def _add_run(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    run = subparsers.add_parser(
        "run",
        help="measure cells (default: the quick suite)",
        description="Measure workloads on stacks, one fresh worker per cell.",
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = run.add_argument_group("what to run")
    choice = what.add_mutually_exclusive_group()
    choice.add_argument("--suite", help="a named suite (see 'stackwars list suites')")
    choice.add_argument(
        "--workload",
        help="workloads, a comma list (see 'stackwars list workloads'); a --param goes to "
        "each of them that has it",
    )
    choice.add_argument(
        "--suite-file", metavar="PATH", help="a suite written in TOML (see docs/methodology.md)"
    )
    what.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="workload parameter values; a list or a range lo..hi:x2 expands into one cell each",
    )
    what.add_argument("--stacks", help="comma list of framework:mode; 'torch' means every mode")
    what.add_argument("--device", default="cpu", help="cpu, gpu, gpu:1 or tpu (default cpu)")
    what.add_argument("--to-host", action="store_true", help="time the copy of results to host")
    what.add_argument(
        "--workload-file",
        action="append",
        default=[],
        metavar="PATH",
        help="a Python file that registers more workloads",
    )
    _add_run_limits(run)
    _add_run_output(run)
    cli_parsers.add_executor(run, "cells")


def _add_run_limits(run: argparse.ArgumentParser) -> None:
    limits = run.add_argument_group("limits and fairness")
    limits.add_argument("--timeout", type=float, metavar="S", help="per cell, seconds (900)")
    limits.add_argument(
        "--memory-budget",
        metavar="SIZE",
        help="per worker, e.g. 8GiB (default: 75%% of available memory, split between --jobs)",
    )
    limits.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="cells measured at a time on this machine (default 1: cells timed side by side "
        "share the cores and disturb each other's timings; more is faster, and the run "
        "records it and warns)",
    )
    limits.add_argument(
        "--device-memory-budget",
        metavar="SIZE",
        help="what an accelerator cell's predicted device peak must fit, e.g. 70GiB (default: "
        "90%% of the GPU's memory as nvidia-smi reports it; unchecked when unknown)",
    )
    limits.add_argument(
        "--target-ci",
        type=float,
        metavar="PCT",
        help="stop when the 95%% CI of the median is within PCT %% (1)",
    )
    limits.add_argument(
        "--budget",
        type=float,
        metavar="S",
        help="steady-state time budget per cell, seconds (10; quick: 0.3)",
    )
    limits.add_argument(
        "--cache",
        choices=CACHE_MODES,
        help="compile caches: fresh per cell (cold, the default), shared (warm), fresh "
        "including toolchain artifacts such as Inductor's headers (pristine), or each cell "
        "cold and then its first run again in a fresh worker with the cache it filled "
        "(cold-then-warm; the compile-cache suite's)",
    )
    limits.add_argument(
        "--cache-dir",
        metavar="PATH",
        help="keep persistent compile caches (JAX's, Inductor's) in PATH across runs: the "
        "first run fills it, later runs start warm (implies --cache warm)",
    )
    limits.add_argument(
        "--preallocate",
        action="store_true",
        help="let JAX and TensorFlow reserve most of an accelerator's memory upfront, their "
        "default (stackwars turns it off so memory peaks are the work's); no effect on cpu",
    )
    limits.add_argument(
        "--memory-fraction",
        type=float,
        metavar="F",
        help="the share of a gpu's memory JAX and torch may take, in (0, 1] (JAX: "
        "XLA_PYTHON_CLIENT_MEM_FRACTION, what --preallocate reserves; torch: "
        "set_per_process_memory_fraction); default: each framework's own",
    )
    limits.add_argument(
        "--allocator-conf",
        metavar="TEXT",
        help="PYTORCH_CUDA_ALLOC_CONF for torch's cells on a gpu, e.g. "
        "expandable_segments:True (default: torch's own)",
    )
    limits.add_argument(
        "--matmul-precision",
        choices=MATMUL_PRECISIONS,
        default="highest",
        help="float32 matmuls: highest (full precision, the default), high (the framework's "
        "faster mode: TF32 on NVIDIA GPUs) or default (as each framework leaves them: TF32 on "
        "in TensorFlow, and in JAX on GPUs, off in torch); recorded in each cell",
    )
    limits.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="threads per framework (default: the framework's own)",
    )
    limits.add_argument(
        "--x64",
        default="auto",
        choices=("auto", "on", "off"),
        help="JAX 64-bit: auto turns it on for float64 cells",
    )
    limits.add_argument(
        "--force",
        action="store_true",
        help="run cells whose predicted peak exceeds the memory budget (the watchdog still "
        "stops them at the budget); without it they are reported oom with the prediction",
    )
    limits.add_argument(
        "--find-max-batch",
        action="store_true",
        help="run nothing: for each cell, print the largest batch whose predicted peak fits "
        "the memory budget (workloads with a batch parameter)",
    )
    limits.add_argument("--seed", type=int, default=0, help="input seed (0)")
    limits.add_argument(
        "--repeat",
        default="1",
        metavar="N|auto",
        help="measure each cell in N fresh workers, in random interleaved order; statistics "
        "then treat workers as the unit. auto: 3, then one more round at a time for the cells "
        "whose interval across workers is wider than ±3 %%, up to 10 workers and 20 minutes",
    )
    limits.add_argument(
        "--order-seed", type=int, default=0, metavar="N", help="seed of the --repeat order (0)"
    )


def _add_run_output(run: argparse.ArgumentParser) -> None:
    output = run.add_argument_group("output")
    output.add_argument("--json", metavar="PATH", help="also write the run as JSON, kept current")
    output.add_argument(
        "--resume",
        metavar="RUN",
        help="finish an interrupted run (an id or 'latest') without redoing finished cells",
    )
    output.add_argument(
        "--db", metavar="PATH", help="results store (default $STACKWARS_DB or ./stackwars.sqlite)"
    )
    output.add_argument("--markdown", metavar="PATH", help="also write the tables as markdown")
    output.add_argument("--strict", action="store_true", help="exit 1 when a cell is not ok")
    output.add_argument(
        "--capture-ir",
        action="store_true",
        help="after the run, capture each compiled cell's IR and store it with the run",
    )
    output.add_argument("--quiet", action="store_true", help="no progress, only the tables")
    output.add_argument(
        "--label", metavar="TEXT", help="a name for the run, shown by 'runs' (e.g. baseline)"
    )


def _add_rerun_output(rerun: argparse.ArgumentParser) -> None:
    rerun.add_argument(
        "--db", metavar="PATH", help="results store (default $STACKWARS_DB or ./stackwars.sqlite)"
    )
    rerun.add_argument("--json", metavar="PATH", help="also write the run as JSON, kept current")
    rerun.add_argument("--markdown", metavar="PATH", help="also write the tables as markdown")
    rerun.add_argument("--strict", action="store_true", help="exit 1 when a cell is not ok")
    rerun.add_argument("--quiet", action="store_true", help="no progress, only the tables")
    rerun.add_argument("--label", metavar="TEXT", default="", help="a name for the new run")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="stackwars",
        description=(
            "Run the same work on NumPy, JAX, PyTorch and TensorFlow in every execution mode, "
            "and report first run, runs to steady state, steady state with its uncertainty, "
            "memory and parity."
        ),
    )
    parser.add_argument("--version", action="version", version=f"stackwars {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_run(subparsers)
    listing = subparsers.add_parser("list", help="list workloads, stacks or suites")
    listing.add_argument("what", choices=("workloads", "stacks", "suites"))
    listing.add_argument("--workload-file", action="append", default=[], metavar="PATH")
    env = subparsers.add_parser("env", help="this machine and the installed framework versions")
    env.add_argument(
        "--peak",
        action="store_true",
        help="measure this machine's GEMM FLOP/s and memory bandwidth once and store them; "
        "tables then place every cell on the roofline",
    )
    env.add_argument(
        "--device",
        default="cpu",
        help="the device --peak measures, each library's GEMM and copy kernels run on it "
        "(cpu, gpu, gpu:1, tpu; default cpu); each device's peak is stored apart",
    )
    rerun = subparsers.add_parser(
        "rerun", help="measure a stored run's plan again, exactly (same cells, same options)"
    )
    rerun.add_argument("run", metavar="RUN", help="a run id or 'latest'")
    _add_rerun_output(rerun)
    cli_parsers.add_executor(rerun, "cells")
    cli_parsers.add_behave(subparsers)
    cli_parsers.add_claims(subparsers)
    cli_parsers.add_results_commands(subparsers)
    cli_parsers.add_report(subparsers)
    cli_parsers.add_ir(subparsers)
    cli_parsers.add_ab(subparsers)
    cli_parsers.add_profile(subparsers)
    selftest = subparsers.add_parser(
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
    selftest.add_argument("--stacks", help="comma list of framework:mode (default: every stack)")
    selftest.add_argument("--device", default="cpu", help="cpu, gpu, gpu:1 or tpu (default cpu)")
    selftest.add_argument("--timeout", type=float, metavar="S", help="per stack, seconds (300)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # a bare 'stackwars' starts nothing: a run takes minutes
        parser.print_help(sys.stderr)
        print(f"\n{NO_COMMAND}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return commands.dispatch(args.command, args, list(sys.argv if argv is None else argv))
    except UsageError as exc:
        print(f"stackwars: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("stackwars: interrupted; finished cells are stored", file=sys.stderr)
        return EXIT_INTERRUPTED
