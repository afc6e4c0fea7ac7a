"""``stackwars ir``: capture each stack's IR for one workload, analyse it, and diff two."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from rich.table import Table

from stackwars.commands.options import Subparsers, add_workload_files
from stackwars.config import RunOptions, default_memory_budget, parse_device
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stack
from stackwars.instruments.ir.service import ir_cells
from stackwars.ir.analyse import analyse
from stackwars.ir.capture import COMPARABLE
from stackwars.ir.diff import explain, histogram_rows, text_diff
from stackwars.ir.normalise import normalise
from stackwars.report.console import report_console
from stackwars.service import api

HISTOGRAM_ROWS = 25


def add_ir(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "ir",
        help="capture, analyse and diff each stack's compiler IR for one workload",
        description=(
            "Capture every IR stage each stack gives (jax:jit: jaxpr, StableHLO, HLO, "
            "optimized HLO, cost and memory analysis; torch:xla: exported graph, StableHLO, "
            "optimized HLO; torch:compile: FX graphs, Inductor code, graph breaks; "
            "tensorflow:xla: StableHLO, HLO, optimized HLO; tensorflow:graph: its ops), "
            "normalise and analyse it, and with --diff compare two stacks. With --device gpu "
            "the compiler targets the GPU (its optimized HLO and memory analysis are the GPU's; "
            "nothing is run, so a batch too large to run can still be compiled and sized)."
        ),
        epilog="example: stackwars ir --workload ffn --stacks jax:jit,torch:xla "
        "--diff jax:jit torch:xla",
    )
    parser.add_argument("--workload", required=True)
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--stacks", help="comma list of framework:mode")
    parser.add_argument(
        "--device", default="cpu", help="cpu, gpu, gpu:1 or tpu: the compiler's target (cpu)"
    )
    parser.add_argument("--stage", help="only this stage (and the stage --diff compares)")
    parser.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two stacks' IR")
    parser.add_argument("--out", metavar="DIR", help="where captures go (./stackwars-ir/...)")
    parser.add_argument("--timeout", type=float, metavar="S", help="per stack, seconds (600)")
    add_workload_files(parser)
    parser.set_defaults(handler=ir)


def slug(text: str) -> str:
    return re.sub(r"[^\w.=-]+", "_", text)


def ir(args: argparse.Namespace, argv: list[str]) -> int:
    choice = api.Selection(
        workload=args.workload,
        params=tuple(args.param),
        stacks=args.stacks,
        workload_files=tuple(args.workload_file),
    )
    cells = ir_cells(choice, args.diff or (), parse_device(args.device))
    options = RunOptions(
        timeout_s=args.timeout or api.IR_TIMEOUT_S,
        memory_budget=default_memory_budget(),
        workload_files=tuple(str(Path(path).resolve()) for path in args.workload_file),
    )
    params = "-".join(f"{k}={v}" for k, v in cells[0].params.items())
    if cells[0].device != "cpu":
        params += f"-{cells[0].device}"
    root = Path(args.out or Path("stackwars-ir") / slug(f"{cells[0].workload}-{params}"))
    captures = {
        spec.stack: (
            root / slug(spec.stack),
            api.capture_stack(spec, options, root / slug(spec.stack)),
        )
        for spec in cells
    }
    console = report_console()
    console.print(summary_table(captures, args.stage))
    for stack, (_, index) in captures.items():
        for stage, reason in index["unavailable"].items():
            # As text: a reason's fix may name an extra in brackets (stackwars[cuda]).
            console.print(f"{stack}: {stage}: {headline(reason)}", markup=False)
    if args.diff:
        diff_pair(captures, args.diff, args.stage or "stablehlo", root)
    console.print(f"captures written under {root.resolve()}")
    return 0


def headline(reason: str, limit: int = 300) -> str:
    """A failure reason on one line, shortened for the terminal (index.json keeps it whole)."""
    flat = " ".join(reason.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def summary_table(captures: dict[str, tuple[Path, dict[str, Any]]], stage: str | None) -> Table:
    table = Table("stack", "stage", "lines", "most frequent ops", "categories", "parameters")
    for stack, (folder, index) in captures.items():
        for name, file in index["stages"].items():
            if stage and name != stage:
                continue
            text = normalise((folder / file).read_text(encoding="utf-8"))
            (folder / f"{name}.normalised.txt").write_text(text, encoding="utf-8")
            found = analyse(text)
            top = ", ".join(f"{op} {n}" for op, n in found.ops.most_common(4))
            categories = ", ".join(f"{c} {n}" for c, n in found.categories.items() if n)
            parameters = f"{found.parameters} ({found.parameter_bytes:,} B)"
            table.add_row(stack, name, str(found.lines), top, categories, parameters)
    return table


def diff_pair(
    captures: dict[str, tuple[Path, dict[str, Any]]], pair: list[str], stage: str, root: Path
) -> None:
    if stage not in COMPARABLE:
        raise UsageError(f"--diff compares {', '.join(COMPARABLE)}; not {stage!r}")
    names = (str(parse_stack(pair[0])), str(parse_stack(pair[1])))
    texts = []
    for name in names:
        folder, index = captures[name]
        if stage not in index["stages"]:
            reason = (
                index["unavailable"].get(stage) or index["unavailable"].get("*") or "not captured"
            )
            raise UsageError(f"{name} has no {stage} to compare: {headline(reason)}")
        texts.append(normalise((folder / index["stages"][stage]).read_text(encoding="utf-8")))
    console = report_console()
    console.print(histogram_table(texts[0], texts[1], names, stage))
    findings = explain(texts[0], texts[1], names)
    for finding in findings:
        console.print(f"finding: {finding.describe(*names)}")
    if not findings:
        console.print("finding: no structural difference found")
    path = root / slug(f"diff-{names[0]}-vs-{names[1]}.{stage}.diff")
    path.write_text(text_diff(texts[0], texts[1], names), encoding="utf-8")
    console.print(f"aligned diff of the normalised text: {path}")


def histogram_table(text_a: str, text_b: str, names: tuple[str, str], stage: str) -> Table:
    table = Table("op", names[0], names[1], "delta", title=f"{stage} op histogram")
    for op, count_a, count_b, delta in histogram_rows(analyse(text_a), analyse(text_b))[
        :HISTOGRAM_ROWS
    ]:
        table.add_row(op, str(count_a), str(count_b), f"{delta:+d}" if delta else "0")
    return table


# Where each command stands in ``stackwars --help`` (commands/__init__.py finds them).
COMMANDS = ((150, add_ir),)
