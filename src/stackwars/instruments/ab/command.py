"""``stackwars ab -- RUN_OPTIONS``: an interleaved A/B session and its gate (``ab.py``)."""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
from pathlib import Path

from stackwars.commands.options import (
    Subparsers,
    add_gate_options,
    add_threshold,
    gate_of,
    threshold_pct,
)
from stackwars.config import default_memory_budget
from stackwars.errors import UsageError
from stackwars.instruments.ab import service as ab
from stackwars.instruments.ab.data import noise_of, read_noise
from stackwars.report.comparison import comparison_json, comparison_markdown, comparison_report
from stackwars.report.console import report_console
from stackwars.results.jsonio import write_atomically
from stackwars.service.api import Interpreter


def add_ab(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "ab",
        help="baseline and candidate alternately in one session, until every cell is decided "
        "(the regression gate)",
        description=(
            "Run the same cells as baseline and candidate in rounds (one fresh worker per cell "
            "and side a round, which side goes first drawn at random), and compare after each "
            "round from --min-rounds on, until every cell is decided, --max-rounds, or "
            "--time-budget. "
            "The sides differ by their Python (--baseline-python: another venv with other "
            "framework versions and this stackwars), environment variables (--candidate-env) "
            "or stackwars run options (--candidate-options). Every round's run file is kept "
            "in --out. With a gate (--fail-above, --fail-memory-above) the session ends pass "
            "(exit 0), fail (exit 1) or underpowered (exit 3; 1 with --fail-on-undecided)."
        ),
        epilog=(
            "example: stackwars ab --candidate-env XLA_FLAGS=--xla_cpu_use_thunk_runtime=false "
            "--fail-above 5 -- --workload gemm --param n=512 --stacks jax:jit"
        ),
    )
    for side in ("baseline", "candidate"):
        _add_side(parser, side)
    parser.add_argument(
        "--min-rounds",
        type=int,
        default=3,
        help="rounds before the first look (3); equal to --max-rounds, the session looks once "
        "and fails cells by max-T over joint flips of its rounds, from 5 rounds whatever the "
        "number of cells",
    )
    parser.add_argument("--max-rounds", type=int, default=10, help="rounds at most (10)")
    parser.add_argument(
        "--one-look",
        action="store_true",
        help="look once, where --time-budget ends the rounds (at most after --max-rounds; "
        "--min-rounds is then unused): the rounds are fixed by their durations alone, and "
        "cells fail by max-T over joint flips of every round, no alpha spent on looks before",
    )
    parser.add_argument(
        "--time-budget", type=float, default=900.0, metavar="S", help="seconds at most (900)"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="folder for the rounds (default ./stackwars-ab/TIME)"
    )
    parser.add_argument("--markdown", metavar="PATH", help="also write the comparison as Markdown")
    parser.add_argument("--json", metavar="PATH", help="also write the comparison as JSON")
    add_threshold(parser)
    parser.add_argument(
        "--fail-above",
        type=float,
        metavar="PCT",
        help="exit 1 when a cell is significantly slower and its change above PCT percent",
    )
    add_gate_options(parser)
    parser.add_argument(
        "--duet",
        action="store_true",
        help="both sides' rounds at once, each on a core of its own (which side on which drawn "
        "each round; needs --threads 1 in the run options): a round takes about half the "
        "time and both sides see the same moment of the machine; write its noise table "
        "(--write-noise) before you gate on it",
    )
    parser.add_argument(
        "--noise",
        metavar="FILE",
        help="this machine's noise table (written by an A/A session's --write-noise): a cell "
        "it says --max-rounds cannot show within --pass-below is, when left undecided, listed "
        "'not gated in this job' with the rounds it needs and does not make the session "
        "underpowered; it can still fail; a cell it found at two speeds is judged within "
        "them and by its share of the slow one (never passed when they lie so far apart that a "
        "4x slow process hides in the slow one); a cell whose spread there hides a 4x slow "
        "round is never passed",
    )
    parser.add_argument(
        "--write-noise",
        metavar="FILE",
        help="write each cell's paired spread, and the two speeds of a cell whose workers' "
        "times part at a gap, as this machine's noise table; the sides must "
        "be the same (an A/A session: no --*-python, --*-env or --*-options that differ) and its "
        "rounds fixed (--min-rounds equal to --max-rounds, e.g. 20, or --one-look)",
    )
    parser.add_argument(
        "run_options",
        nargs=argparse.REMAINDER,
        metavar="-- RUN_OPTIONS",
        help="after --: the stackwars run options both sides share (cells, budgets)",
    )
    parser.set_defaults(handler=ab_command)


def _add_side(parser: argparse.ArgumentParser, side: str) -> None:
    parser.add_argument(
        f"--{side}-python", metavar="PYTHON", default="", help=f"the {side}'s Python"
    )
    parser.add_argument(
        f"--{side}-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"an environment variable of the {side}'s rounds (repeat for more)",
    )
    parser.add_argument(
        f"--{side}-options",
        default="",
        metavar="TEXT",
        help=f"stackwars run options of the {side} only, as one quoted string",
    )


def ab_command(args: argparse.Namespace, argv: list[str]) -> int:
    session = session_of(args)
    if args.write_noise:
        check_a_a(session)
    console = report_console()
    console.print(f"A/B session in {session.out_dir} (each round's run file is kept there)")
    outcome = ab.run_session(session, console.print, ab.default_clock)
    verdict = outcome.verdict
    assert verdict is not None  # run_session judges the rounds it measured
    title = (
        f"candidate against baseline: {outcome.rounds} rounds, {outcome.elapsed_s:.0f} s, "
        f"{outcome.stopped} (threshold {threshold_pct(args):g}%, {outcome.looks}, "
        f"the first side of each round drawn with seed {outcome.order_seed})"
    )
    for part in comparison_report(verdict, title):
        console.print(part)
    console.print(f"stackwars versions: {outcome.versions}")
    console.print(f"again, from the files: {ab.compare_command(outcome.files)}", soft_wrap=True)
    if args.markdown:
        markdown = comparison_markdown(verdict, title)
        Path(args.markdown).write_text(markdown + f"- {outcome.plan}\n", encoding="utf-8")
    if args.json:
        data = comparison_json(verdict)
        data["session"] = {"rounds": outcome.rounds, "elapsed_s": outcome.elapsed_s}
        data["session"] |= {"stopped": outcome.stopped, "plan": outcome.plan}
        data["session"] |= {"order_seed": outcome.order_seed, "first": outcome.first}
        data["session"] |= {"duet": session.duet}
        write_atomically(Path(args.json), json.dumps(data, indent=1))
    if args.write_noise:
        typed = ["stackwars", *argv[argv.index("ab") if "ab" in argv else 0 :]]
        noise_of(outcome.rows, outcome.rounds, typed).write(Path(args.write_noise))
        console.print(f"noise table: {args.write_noise}")
    return verdict.exit_status


def session_of(args: argparse.Namespace) -> ab.Session:
    options = list(args.run_options)
    if options[:1] == ["--"]:
        options = options[1:]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return ab.Session(
        run_options=tuple(options),
        baseline=side_of(args, "baseline"),
        candidate=side_of(args, "candidate"),
        out_dir=Path(args.out or Path("stackwars-ab") / stamp),
        threshold=threshold_pct(args) / 100,
        gate=gate_of(args),
        min_rounds=args.min_rounds,
        max_rounds=args.max_rounds,
        time_budget_s=args.time_budget,
        memory_budget=default_memory_budget(),
        noise=read_noise(Path(args.noise)) if args.noise else None,
        find_speeds=bool(args.write_noise),
        duet=args.duet,
        one_look=args.one_look,
    )


def check_a_a(session: ab.Session) -> None:
    """--write-noise measures noise only: both sides must run the same thing, every cell over
    the same rounds."""
    base, cand = session.baseline, session.candidate
    if (base.interpreter, base.options) != (cand.interpreter, cand.options):
        raise UsageError(
            "--write-noise measures this machine's noise with an A/A session: leave out the "
            "--baseline-*/--candidate-* options that make the sides differ"
        )
    if session.min_rounds != session.max_rounds and not session.one_look:
        raise UsageError(
            "--write-noise measures every cell over the same rounds: give --min-rounds equal "
            "to --max-rounds (e.g. 20 and 20) or --one-look, so that the session does not stop "
            "once its cells are decided"
        )


def side_of(args: argparse.Namespace, name: str) -> ab.Side:
    environment = {}
    for item in getattr(args, f"{name}_env"):
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise UsageError(f"--{name}-env {item!r} must be NAME=VALUE")
        environment[key] = value
    python = getattr(args, f"{name}_python")
    options = tuple(shlex.split(getattr(args, f"{name}_options")))
    return ab.Side(name, Interpreter(python, environment), options)


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((160, add_ab),)
