"""``stackwars ir``'s cells: one per stack, one value per parameter, on one device; and
``run --capture-ir``'s after-run step. The capture itself is the core's (``runner/ir_task.py``:
claims' IR lines use it too)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from stackwars import workloads
from stackwars.config import RunOptions
from stackwars.errors import UsageError
from stackwars.frameworks import parse_stack, parse_stacks
from stackwars.results.captures import RunCapture
from stackwars.results.run import Run
from stackwars.results.schema import CellSpec
from stackwars.results.store import CAPTURES, CAPTURES_FORMAT, Store, capture_key, key_text
from stackwars.runner import plan
from stackwars.runner.ir_task import capture_run_ir
from stackwars.service.choices import Selection


def ir_cells(selection: Selection, diff: Sequence[str] = (), device: str = "cpu") -> list[CellSpec]:
    """One cell per stack for IR capture on ``device``; ``diff`` names two of the stacks to
    compare."""
    for path in selection.workload_files:
        workloads.load_workload_file(path)
    workload = workloads.get(selection.workload or "")
    values = plan.parse_param_args(workload, selection.params)
    if any(len(v) > 1 for v in values.values()):
        raise UsageError("ir captures one cell per stack: give one value per --param")
    names = selection.stacks or ",".join(diff)
    if not names:
        raise UsageError("name the stacks: --stacks jax:jit,torch:xla or --diff A B")
    stacks = parse_stacks(names)
    for name in diff:
        if parse_stack(name) not in stacks:
            raise UsageError(f"--diff {name} must be one of --stacks")
    return plan.cells_for(workload, values, stacks, device)


@dataclass(frozen=True)
class CaptureAfterRun:
    """``run --capture-ir``, an after-run step (``service.execution.AfterRun``): each ok cell
    whose stack compiles has its IR captured in a fresh worker after the run, and stored with
    the run as it comes."""

    name: str = "ir"

    def findings(
        self, record: Run, options: RunOptions, files: Path, on_progress: Callable[[str], None]
    ) -> Iterator[RunCapture]:
        del files  # the captures live in the store
        for capture in capture_run_ir(record, options):
            on_progress(f"captured {capture.cell.label()}")
            yield capture

    def keep(self, results: Store, record: Run, finding: RunCapture) -> None:
        cell_key = key_text(finding.cell.key())
        for stage, text in finding.texts.items():
            payload = {"cell_key": cell_key, "stage": stage, "text": text}
            key = capture_key(cell_key, stage)
            results.add_data(record, CAPTURES, CAPTURES_FORMAT, payload, key=key)
