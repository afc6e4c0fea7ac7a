"""The ``stackwars`` command: argument parsing and dispatch only.

Exit status: 0 when every cell ran, whatever its status (failures are data); 1 with
``--strict`` when a cell is not ok; 2 on bad input; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from stackwars import commands
from stackwars.claims.files import FORMAT_HELP
from stackwars.config import CACHE_MODES, EXECUTORS
from stackwars.errors import UsageError
from stackwars.timing.compare import MIN_WORKERS

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

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
    choice.add_argument("--workload", help="one workload (see 'stackwars list workloads')")
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
    _add_run_executor(run)


def _add_run_executor(parser: argparse.ArgumentParser) -> None:
    where = parser.add_argument_group("where cells run")
    where.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="local: one cell at a time on this machine (default); ray: each cell a Ray task "
        "starting the same worker on a cluster node, the results streamed into the store "
        "(needs pip install 'stackwars[ray]')",
    )
    where.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="the Ray cluster's head, HOST:PORT as 'ray start --head' prints it (or 'auto'); "
        "default: a Ray instance of its own on this machine",
    )


def _add_run_limits(run: argparse.ArgumentParser) -> None:
    limits = run.add_argument_group("limits and fairness")
    limits.add_argument("--timeout", type=float, metavar="S", help="per cell, seconds (900)")
    limits.add_argument(
        "--memory-budget",
        metavar="SIZE",
        help="per worker, e.g. 8GiB (default: 75%% of available memory)",
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
        type=int,
        default=1,
        metavar="N",
        help="measure each cell in N fresh workers, in random interleaved order; statistics "
        "then treat workers as the unit",
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
    rerun = subparsers.add_parser(
        "rerun", help="measure a stored run's plan again, exactly (same cells, same options)"
    )
    rerun.add_argument("run", metavar="RUN", help="a run id or 'latest'")
    _add_rerun_output(rerun)
    _add_run_executor(rerun)
    _add_behave(subparsers)
    _add_claims(subparsers)
    _add_results_commands(subparsers)
    _add_report(subparsers)
    _add_ir(subparsers)
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


def _add_behave(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    behave = subparsers.add_parser(
        "behave",
        help="how each stack behaves when ordinary Python meets its compiler (probes)",
        description=(
            "Run small probe programs (seed 000's JIT pitfalls and their fixes, Python side "
            "effects, a new shape) on every stack, each in a fresh worker, and classify what "
            "happened: works, error, fallback, silently different, retraced N, same or new "
            "numbers (random draws), unsupported. The outcomes are stored as a run: "
            "'stackwars runs' lists it, 'show' and 'export' read it."
        ),
        epilog="example: stackwars behave --probes boolean-mask,value-if --stacks jax",
    )
    behave.add_argument("--probes", metavar="A,B", help="comma list (default: every probe)")
    behave.add_argument("--stacks", help="comma list of framework:mode (default: every stack)")
    behave.add_argument("--list", action="store_true", help="list the probes and stop")
    behave.add_argument("--details", action="store_true", help="one line per cell: what happened")
    behave.add_argument("--json", metavar="PATH", help="also write the run (its outcomes) as JSON")
    behave.add_argument("--label", help="a name for this run in 'stackwars runs'")
    behave.add_argument(
        "--db", metavar="PATH", help="results store (default $STACKWARS_DB or ./stackwars.sqlite)"
    )
    behave.add_argument("--timeout", type=float, metavar="S", help="per probe and stack (300)")
    behave.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="workers at a time (default: 2, or 1 on a one-core machine); --jobs 1 leaves "
        "each probe's per-call times (the cost of a retrace) undisturbed by another worker",
    )
    behave.add_argument("--quiet", action="store_true", help="only the matrix")
    behave.add_argument("--workload-file", action="append", default=[], metavar="PATH")


def _add_claims(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    what = (
        "Measure the cells the claims are about (each once, in --repeat interleaved fresh "
        "workers), and judge each claim by its value's 95% interval. The verdicts are stored "
        "with the run ('show', 'report'). Exit 1 with --strict when a claim fails."
    )
    epilog = FORMAT_HELP  # argparse formats %(prog)s in descriptions and epilogs only
    formatter = argparse.RawDescriptionHelpFormatter
    several = subparsers.add_parser(
        "claims",
        help="check claims from files, or the built-in ones (the seeds', Keras's) on this machine",
        description=what,
        epilog="example: stackwars claims --builtin --repeat 3\n\n" + epilog,
        formatter_class=formatter,
    )
    several.add_argument("files", nargs="*", metavar="FILE", help="claim files (TOML)")
    several.add_argument(
        "--builtin", action="store_true", help="every quantitative claim of the seeds, and Keras's"
    )
    several.add_argument("--only", metavar="IDS", help="comma list of ids or patterns (seed002-*)")
    _add_claim_options(several)
    one = subparsers.add_parser(
        "claim",
        help="check one claim written on one line",
        description=what,
        epilog='example: stackwars claim "jax:jit >= 6x numpy:eager on poly n=10000"\n\n' + epilog,
        formatter_class=formatter,
    )
    one.add_argument(
        "claim", metavar="CLAIM", help="e.g. 'jax:jit faster than numpy:eager on gemm'"
    )
    _add_claim_options(one)


def _add_claim_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repeat",
        type=int,
        default=MIN_WORKERS,
        metavar="N",
        help=f"fresh workers per cell, interleaved ({MIN_WORKERS}, the fewest a verdict accepts)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a parameter in every claim whose workload has it, e.g. --param n=32 --param "
        "scale=tiny for a quick check at test size: the verdicts then speak of those sizes, "
        "not the claims' (for a crossover over KEY, a comma list replaces the values swept)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a claim fails")
    parser.add_argument("--budget", type=float, metavar="S", help="steady budget per cell (1)")
    parser.add_argument("--timeout", type=float, metavar="S", help="per cell, seconds (900)")
    parser.add_argument("--memory-budget", metavar="SIZE", help="per worker, e.g. 8GiB")
    parser.add_argument("--order-seed", type=int, default=0, metavar="N", help="of the order (0)")
    parser.add_argument(
        "--db", metavar="PATH", help="results store (default $STACKWARS_DB or ./stackwars.sqlite)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the run and its claims as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="also write the claims as Markdown")
    parser.add_argument("--label", metavar="TEXT", default="", help="a name for the run")
    parser.add_argument("--quiet", action="store_true", help="no progress, only the claims")


def _add_ir(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    ir = subparsers.add_parser(
        "ir",
        help="capture, analyse and diff each stack's compiler IR for one workload",
        description=(
            "Capture every IR stage each stack gives (jax:jit: jaxpr, StableHLO, HLO, "
            "optimized HLO, cost and memory analysis; torch:xla: exported graph, StableHLO, "
            "optimized HLO; torch:compile: FX graphs, Inductor code, graph breaks; "
            "tensorflow:xla: StableHLO, HLO, optimized HLO; tensorflow:graph: its ops), "
            "normalise and analyse it, and with --diff compare two stacks."
        ),
        epilog="example: stackwars ir --workload ffn --stacks jax:jit,torch:xla "
        "--diff jax:jit torch:xla",
    )
    ir.add_argument("--workload", required=True)
    ir.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    ir.add_argument("--stacks", help="comma list of framework:mode")
    ir.add_argument("--stage", help="only this stage (and the stage --diff compares)")
    ir.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two stacks' IR")
    ir.add_argument("--out", metavar="DIR", help="where captures go (./stackwars-ir/...)")
    ir.add_argument("--timeout", type=float, metavar="S", help="per stack, seconds (600)")
    ir.add_argument("--workload-file", action="append", default=[], metavar="PATH")


def _add_results_commands(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    db_help = "results store (default $STACKWARS_DB or ./stackwars.sqlite)"
    runs = subparsers.add_parser("runs", help="list the stored runs")
    runs.add_argument("--db", metavar="PATH", help=db_help)
    runs.add_argument("--label", metavar="TEXT", help="only runs with this label")
    runs.add_argument(
        "--machine", metavar="FINGERPRINT", help="only runs of this machine (the machine column)"
    )
    show = subparsers.add_parser(
        "show", help="the tables of a stored run, with sweeps and crossovers"
    )
    show.add_argument("run", nargs="?", default="latest", help="a run id or 'latest' (default)")
    show.add_argument("--db", metavar="PATH", help=db_help)
    show.add_argument("--markdown", metavar="PATH", help="also write the tables as markdown")
    show.add_argument("--baseline", metavar="STACK", help="compare every stack with this one")
    show.add_argument(
        "--details",
        action="store_true",
        help="also the signals the tables leave out: start-up times, first-run phases, "
        "dispatch, CPU and page faults per call, compiles, memory, threads and BLAS",
    )
    _add_verdict_options(show)
    export = subparsers.add_parser("export", help="a stored run as JSON or CSV")
    export.add_argument("run", help="a run id or 'latest'")
    export.add_argument("--format", choices=("json", "csv"), default="json")
    export.add_argument("--out", metavar="PATH", help="write here instead of standard output")
    export.add_argument("--db", metavar="PATH", help=db_help)
    imported = subparsers.add_parser(
        "import", help="add a run exported as JSON (e.g. a CI baseline) to the store"
    )
    imported.add_argument("file", metavar="RUN.json", help="from export --format json or --json")
    imported.add_argument("--db", metavar="PATH", help=db_help)
    compare = subparsers.add_parser(
        "compare", help="the same cells in two runs: ratio, interval, test, verdict"
    )
    compare.add_argument(
        "run_a", metavar="RUN_A", help="the baseline: a run id, 'latest', or an exported .json"
    )
    compare.add_argument("run_b", metavar="RUN_B", help="the candidate, the same way")
    compare.add_argument("--db", metavar="PATH", help=db_help)
    compare.add_argument("--markdown", metavar="PATH", help="also write the report as Markdown")
    compare.add_argument("--json", metavar="PATH", help="also write the comparison as JSON")
    compare.add_argument(
        "--github-summary",
        action="store_true",
        help="append the Markdown report to $GITHUB_STEP_SUMMARY (GitHub Actions)",
    )
    _add_verdict_options(compare)
    history = subparsers.add_parser(
        "history", help="stored results of one workload on one stack over time, with steps"
    )
    history.add_argument("--workload", required=True)
    history.add_argument("--stack", required=True, help="framework:mode")
    history.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="only these parameters"
    )
    history.add_argument("--db", metavar="PATH", help=db_help)
    history.add_argument("--label", metavar="TEXT", help="only runs with this label")
    history.add_argument(
        "--machine", metavar="FINGERPRINT", help="only runs of this machine (see 'runs')"
    )
    history.add_argument("--markdown", metavar="PATH", help="also write the tables as Markdown")
    history.add_argument("--json", metavar="PATH", help="also write the series as JSON")
    _add_threshold(history)


def _add_report(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    report = subparsers.add_parser(
        "report",
        help="one self-contained HTML file (or Markdown) with plots of stored runs",
        description=(
            "Write one HTML file that opens offline (styles and plots inside): per workload "
            "steady time with its interval, speed-up, first-run phases and memory; sweeps "
            "and crossovers; warm-up series; CPU, page faults and dispatch; comparisons "
            "between the runs given; IR; the fairness manifest, every warning and every cell "
            "that did not end ok. --format md writes Markdown with the plots as SVG files."
        ),
        epilog="example: stackwars report latest --baseline numpy:eager --out report.html",
    )
    report.add_argument(
        "runs", nargs="*", metavar="RUN", help="run ids, 'latest' or exported .json (latest)"
    )
    report.add_argument("--baseline", metavar="STACK", help="speed-ups against this stack")
    report.add_argument("--out", metavar="PATH", help="report.html, or report.md with --format md")
    report.add_argument("--format", choices=("html", "md"), help="default: from --out, else html")
    report.add_argument(
        "--db", metavar="PATH", help="results store (default $STACKWARS_DB or ./stackwars.sqlite)"
    )
    _add_threshold(report)
    report.add_argument(
        "--within-process",
        action="store_true",
        help="judge cells of one worker per side by the blocks of one process",
    )


def _add_verdict_options(parser: argparse.ArgumentParser) -> None:
    _add_threshold(parser)
    parser.add_argument(
        "--fail-above",
        type=float,
        metavar="PCT",
        help="exit 1 when a cell is significantly slower by more than PCT percent (for CI); "
        "cells with fewer than 3 workers per side are inconclusive and never fail",
    )
    parser.add_argument(
        "--within-process",
        action="store_true",
        help="judge cells with fewer than 3 workers per side by the blocks of one process "
        "(their interval then ignores the variation between processes)",
    )


def _add_threshold(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threshold",
        type=float,
        default=5.0,
        metavar="PCT",
        help="smallest change called a difference when significant (5)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = args.command or "run"
    if args.command is None:
        args = build_parser().parse_args(["run"])
    try:
        return commands.dispatch(command, args, list(sys.argv if argv is None else argv))
    except UsageError as exc:
        print(f"stackwars: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("stackwars: interrupted; finished cells are stored", file=sys.stderr)
        return EXIT_INTERRUPTED
