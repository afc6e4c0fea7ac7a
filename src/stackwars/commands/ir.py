"""``stackwars ir``: capture each stack's IR for one workload, analyse it, and diff two."""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from rich.table import Table

from stackwars import workloads
from stackwars.config import RunOptions, default_memory_budget
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stack, parse_stacks
from stackwars.ir.analyse import analyse
from stackwars.ir.capture import COMPARABLE
from stackwars.ir.diff import explain, histogram_rows, text_diff
from stackwars.ir.normalise import normalise
from stackwars.report.console import report_console
from stackwars.runner import plan
from stackwars.runner.isolate import output_tail, run_child
from stackwars.runner.protocol import CellSpec
from stackwars.runner.session import request_for

IR_TIMEOUT_S = 600.0
HISTOGRAM_ROWS = 25


def slug(text: str) -> str:
    return re.sub(r"[^\w.=-]+", "_", text)


def capture_stack(spec: CellSpec, options: RunOptions, out_dir: Path) -> dict[str, Any]:
    """Run the IR worker for one stack; its index, or the reason it failed for every stage."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="stackwars-ir-") as scratch:
        folder = Path(scratch)
        request = request_for(spec, options, folder / "cache")
        (folder / "request.json").write_text(request.to_json(), encoding="utf-8")
        returncode, seen, output = run_child(
            "stackwars.runner.ir_worker",
            [str(folder / "request.json"), str(out_dir)],
            folder,
            options.timeout_s,
            options.memory_budget,
        )
        index_path = out_dir / "index.json"
        if index_path.exists():
            return json.loads(index_path.read_text(encoding="utf-8"))
        why = seen.detail or f"the IR worker exited with {returncode}:\n{output_tail(output)}"
        return {"stack": spec.stack, "stages": {}, "unavailable": {"*": why}}


def _cells(args: argparse.Namespace) -> list[CellSpec]:
    workload = workloads.get(args.workload)
    values = plan.parse_param_args(workload, args.param)
    if any(len(v) > 1 for v in values.values()):
        raise UsageError("ir captures one cell per stack: give one value per --param")
    names = args.stacks or ",".join(args.diff or [])
    if not names:
        raise UsageError("name the stacks: --stacks jax:jit,torch:xla or --diff A B")
    stacks = parse_stacks(names)
    for name in args.diff or []:
        if parse_stack(name) not in stacks:
            raise UsageError(f"--diff {name} must be one of --stacks")
    return plan.cells_for(workload, values, stacks, "cpu")


def ir(args: argparse.Namespace, argv: list[str]) -> int:
    for path in args.workload_file:
        workloads.load_workload_file(path)
    cells = _cells(args)
    options = RunOptions(
        timeout_s=args.timeout or IR_TIMEOUT_S, memory_budget=default_memory_budget()
    )
    params = "-".join(f"{k}={v}" for k, v in cells[0].params.items())
    root = Path(args.out or Path("stackwars-ir") / slug(f"{cells[0].workload}-{params}"))
    captures = {
        spec.stack: (root / slug(spec.stack), capture_stack(spec, options, root / slug(spec.stack)))
        for spec in cells
    }
    console = report_console()
    console.print(summary_table(captures, args.stage))
    for stack, (_, index) in captures.items():
        for stage, reason in index["unavailable"].items():
            console.print(f"{stack}: {stage}: {headline(reason)}")
    if args.diff:
        diff_pair(captures, args.diff, args.stage or "stablehlo", root)
    console.print(f"captures written under {root}")
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
