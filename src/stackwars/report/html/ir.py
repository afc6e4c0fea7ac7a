"""The report's IR data, when the run captured IR (``run --capture-ir``): each captured
stage's op histogram and categories per stack, and the structural differences that
``stackwars ir --diff`` finds between two stacks' StableHLO. Pure, like ``data.py``."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackwars.ir.analyse import analyse
from stackwars.ir.diff import explain
from stackwars.ir.normalise import normalise
from stackwars.results.run import Run

TOP_OPS = 8
DIFF_STAGE = "stablehlo"  # what the findings compare, as `stackwars ir --diff` does by default


@dataclass(frozen=True)
class IrStage:
    stack: str
    stage: str
    lines: int
    top_ops: tuple[tuple[str, int], ...]
    categories: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class IrCell:
    """One cell's captures (every stack that compiled it) and the findings between them."""

    title: str
    stages: tuple[IrStage, ...]
    findings: tuple[str, ...]


def ir_cells(
    runs: Sequence[Run], captures: Mapping[str, Mapping[str, Mapping[str, str]]]
) -> list[IrCell]:
    """``captures``: run id -> cell key (as the store writes it) -> stage -> text."""
    several = len(runs) > 1
    found = []
    for run in runs:
        grouped: dict[str, dict[str, Mapping[str, str]]] = {}
        for key_text, stages in captures.get(run.id, {}).items():
            workload, params, stack, device, to_host = json.loads(key_text)
            host = " →host" if to_host else ""
            title = f"{workload}({params}){host} @ {device}"
            grouped.setdefault(title, {})[stack] = stages
        suffix = f" (run {run.id})" if several else ""
        found.extend(_ir_cell(title + suffix, stacks) for title, stacks in grouped.items())
    return found


def _ir_cell(title: str, stacks: Mapping[str, Mapping[str, str]]) -> IrCell:
    normalised = {
        stack: {stage: normalise(text) for stage, text in stages.items()}
        for stack, stages in stacks.items()
    }
    stages = tuple(
        _stage(stack, stage, text)
        for stack, texts in normalised.items()
        for stage, text in texts.items()
    )
    findings = []
    for a, b in itertools.combinations(normalised, 2):
        text_a, text_b = normalised[a].get(DIFF_STAGE), normalised[b].get(DIFF_STAGE)
        if text_a is None or text_b is None:
            continue
        found = explain(text_a, text_b, (a, b))
        findings.extend(f"{a} vs {b}: {finding.describe(a, b)}" for finding in found)
        if not found:
            findings.append(f"{a} vs {b}: no structural difference found in {DIFF_STAGE}")
    return IrCell(title, stages, tuple(findings))


def _stage(stack: str, stage: str, text: str) -> IrStage:
    found = analyse(text)
    return IrStage(
        stack=stack,
        stage=stage,
        lines=found.lines,
        top_ops=tuple(found.ops.most_common(TOP_OPS)),
        categories=tuple((name, n) for name, n in found.categories.items() if n),
    )
