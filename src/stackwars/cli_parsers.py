"""The subcommands of ``stackwars`` besides run, rerun, list, env and selftest: their
arguments and help (parsing only; ``cli.py`` builds the parser and dispatches)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from stackwars.claims.files import FORMAT_HELP
from stackwars.config import EXECUTORS
from stackwars.timing.compare import MIN_WORKERS

if TYPE_CHECKING:  # argparse's action class is not subscriptable at run time
    Subparsers = argparse._SubParsersAction[Any]


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


def add_behave(subparsers: Subparsers) -> None:
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
        help="workers at a time with --executor local (default: 2, or 1 on a one-core "
        "machine); --jobs 1 leaves each probe's per-call times (the cost of a retrace) "
        "undisturbed by another worker",
    )
    behave.add_argument("--quiet", action="store_true", help="only the matrix")
    behave.add_argument("--workload-file", action="append", default=[], metavar="PATH")
    add_executor(behave, "probes")


def add_claims(subparsers: Subparsers) -> None:
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
        default="auto",
        metavar="N|auto",
        help=f"fresh workers per cell, interleaved; auto (the default): {MIN_WORKERS}, then one "
        "more round at a time for the cells of claims still inconclusive that more workers "
        "would likely decide, up to --max-workers and --time-budget",
    )
    parser.add_argument(
        "--max-workers", type=int, default=10, metavar="N", help="with --repeat auto (10)"
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=1200.0,
        metavar="S",
        help="with --repeat auto: no round starts that would end past S seconds (1200)",
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


def add_ir(subparsers: Subparsers) -> None:
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


def add_profile(subparsers: Subparsers) -> None:
    profile = subparsers.add_parser(
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
    profile.add_argument("--workload", required=True)
    profile.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    profile.add_argument("--stacks", required=True, help="comma list of framework:mode")
    profile.add_argument(
        "--calls", type=int, default=20, metavar="N", help="steady calls profiled (20)"
    )
    profile.add_argument(
        "--budget", type=float, metavar="S", help="steady budget of the unprofiled timing (1)"
    )
    profile.add_argument("--top", type=int, default=10, metavar="N", help="operations shown (10)")
    profile.add_argument(
        "--out", metavar="DIR", help="where traces go (./stackwars-profile/WORKLOAD-PARAMS)"
    )
    profile.add_argument("--json", metavar="PATH", help="also write the profiles as JSON")
    profile.add_argument("--timeout", type=float, metavar="S", help="per stack, seconds (600)")
    profile.add_argument("--memory-budget", metavar="SIZE", help="per worker, e.g. 8GiB")
    profile.add_argument("--workload-file", action="append", default=[], metavar="PATH")


def add_results_commands(subparsers: Subparsers) -> None:
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
        "run_a",
        metavar="RUN_A",
        help="the baseline: a run id, 'latest', or an exported .json; several joined by commas "
        "are pooled (same machine only)",
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
    _add_gate_options(compare)
    compare.add_argument(
        "--run-drift",
        type=float,
        metavar="PCT",
        help="run-to-run standard deviation added when the sides are separate runs (default: "
        "the value measured here, docs/results.md); 0 trusts the runs' own workers",
    )
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


def add_report(subparsers: Subparsers) -> None:
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


def _add_gate_options(parser: argparse.ArgumentParser) -> None:
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


def add_ab(subparsers: Subparsers) -> None:
    ab = subparsers.add_parser(
        "ab",
        help="baseline and candidate alternately in one session, until every cell is decided "
        "(the regression gate)",
        description=(
            "Run the same cells as baseline and candidate in alternating rounds (one fresh "
            "worker per cell and side a round, ABBA order), and compare after each round from "
            "--min-rounds on, until every cell is decided, --max-rounds, or --time-budget. "
            "The sides differ by their Python (--baseline-python: another venv with other "
            "framework versions and this stackwars), environment variables (--candidate-env) "
            "or stackwars run options (--candidate-options). Every round's run file is kept "
            "in --out. Exit 1 when the gate fails (--fail-above, --fail-memory-above)."
        ),
        epilog=(
            "example: stackwars ab --candidate-env XLA_FLAGS=--xla_cpu_use_thunk_runtime=false "
            "--fail-above 5 -- --workload gemm --param n=512 --stacks jax:jit"
        ),
    )
    for side in ("baseline", "candidate"):
        ab.add_argument(
            f"--{side}-python", metavar="PYTHON", default="", help=f"the {side}'s Python"
        )
        ab.add_argument(
            f"--{side}-env",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"an environment variable of the {side}'s rounds (repeat for more)",
        )
        ab.add_argument(
            f"--{side}-options",
            default="",
            metavar="TEXT",
            help=f"stackwars run options of the {side} only, as one quoted string",
        )
    ab.add_argument("--min-rounds", type=int, default=3, help="rounds before the first look (3)")
    ab.add_argument("--max-rounds", type=int, default=10, help="rounds at most (10)")
    ab.add_argument(
        "--time-budget", type=float, default=900.0, metavar="S", help="seconds at most (900)"
    )
    ab.add_argument(
        "--out", metavar="DIR", help="folder for the rounds (default ./stackwars-ab/TIME)"
    )
    ab.add_argument("--markdown", metavar="PATH", help="also write the comparison as Markdown")
    ab.add_argument("--json", metavar="PATH", help="also write the comparison as JSON")
    _add_threshold(ab)
    ab.add_argument(
        "--fail-above",
        type=float,
        metavar="PCT",
        help="exit 1 when a cell is significantly slower and its change above PCT percent",
    )
    _add_gate_options(ab)
    ab.add_argument(
        "run_options",
        nargs=argparse.REMAINDER,
        metavar="-- RUN_OPTIONS",
        help="after --: the stackwars run options both sides share (cells, budgets)",
    )


def _add_threshold(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threshold",
        type=float,
        default=5.0,
        metavar="PCT",
        help="smallest change called a difference when significant (5)",
    )
