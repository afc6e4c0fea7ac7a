"""The parent half of the IR worker (runner/ir_worker.py): one cell's IR captured in a fresh
worker, and every ok cell of a run captured (``run --capture-ir``; the ir instrument's service
stores it)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.ir.capture import stages
from stackwars.results.aggregate import ok_once
from stackwars.results.captures import RunCapture
from stackwars.results.run import Run
from stackwars.results.schema import CellSpec
from stackwars.runner import session
from stackwars.runner.child import Limits, run_child
from stackwars.runner.environments import interpreter_for, stack_problem

WORKER = "stackwars.runner.ir_worker"
IR_TIMEOUT_S = 600.0


def capture_stack(spec: CellSpec, options: RunOptions, out_dir: Path) -> dict[str, Any]:
    """Run the IR worker for one stack; its index, or the reason it failed for every stage.
    A stack whose environment of its own is missing or broken is a UsageError naming the fix:
    the user asked for its IR by name."""
    if spec.environment:
        broken = stack_problem(spec.stack)
        if broken:
            raise UsageError(f"{spec.stack}: {broken}")
    out_dir = out_dir.resolve()  # the worker runs in its own folder
    with tempfile.TemporaryDirectory(prefix="stackwars-ir-") as scratch:
        request = session.request_for(spec, options, Path(scratch) / "cache")
        end = run_child(
            WORKER,
            "ir",
            {"request": request.to_dict(), "out_dir": str(out_dir)},
            Limits(options.timeout_s, options.memory_budget),
            interpreter=interpreter_for(spec.environment),
        )
    if end.ok and end.result is not None:
        return end.result
    return {"stack": spec.stack, "stages": {}, "unavailable": {"*": end.detail}}


def capture_run_ir(record: Run, options: RunOptions) -> Iterator[RunCapture]:
    """The IR of every ok cell of a run whose stack has a compiler, once per cell key, each
    yielded as it is captured (nothing stored: ``run --capture-ir``'s step,
    instruments/ir/service.py, keeps it)."""
    for cell in ok_once(record.cells):
        if not stages(cell.stack):
            continue
        with tempfile.TemporaryDirectory(prefix="stackwars-ir-") as scratch:
            index = capture_stack(cell.spec(), options, Path(scratch))
            texts = {
                stage: (Path(scratch) / name).read_text(encoding="utf-8")
                for stage, name in index["stages"].items()
            }
        yield RunCapture(cell, texts, dict(index["unavailable"]))
