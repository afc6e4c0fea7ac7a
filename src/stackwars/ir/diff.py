"""Compare two captures: op histograms side by side, an aligned diff of the normalised text,
and findings that name the structural differences, each citing the lines it rests on.

The findings are the kind seed 001 found by hand between JAX and PyTorch/XLA StableHLO:
one front end flattens batch×sequence before ``dot_general``; one emits layer norm as
explicit reductions and the other as ``batch_norm_training``; an embedding is a ``gather``
in one and a ``call @take`` in the other; one has extra ``convert`` or ``transpose`` ops.
Line numbers refer to the normalised text (``normalise.normalise``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from stackwars.ir.analyse import Analysis, analyse, op_name

MAX_CITED_LINES = 5
# Ops whose presence in one capture and absence in the other changes what XLA can do.
NOTABLE_OPS = (
    "gather",
    "scatter",
    "batch_norm_training",
    "batch_norm_inference",
    "custom_call",
    "transpose",
    "convert",
    "iota",
    "while",
    "dynamic_slice",
    "dynamic_update_slice",
    "reduce_window",
    "convolution",
    "sort",
)
COUNTED_OPS = ("convert", "transpose", "reshape", "broadcast_in_dim", "dot_general", "reduce")

_DOT = re.compile(r"stablehlo\.dot_general\s.*?:\s*\(tensor<((?:\d+x)*)\w+>")
_RESHAPE = re.compile(
    r"stablehlo\.reshape\s.*?:\s*\(tensor<((?:\d+x)*)\w+>\)\s*->\s*tensor<((?:\d+x)*)\w+>"
)
_OP_AT_LINE = re.compile(
    r"(?:^\s*|=\s*)\"?(?:stablehlo|chlo|mhlo)\.([a-z_0-9]+)|call @([A-Za-z_]+)"
)


@dataclass(frozen=True)
class Finding:
    title: str
    lines_a: tuple[int, ...]
    lines_b: tuple[int, ...]

    def describe(self, name_a: str, name_b: str) -> str:
        cite = []
        if self.lines_a:
            cite.append(f"{name_a} lines {', '.join(map(str, self.lines_a))}")
        if self.lines_b:
            cite.append(f"{name_b} lines {', '.join(map(str, self.lines_b))}")
        return f"{self.title} ({'; '.join(cite)})" if cite else self.title


def _lines_with(text: str, pattern: str) -> tuple[int, ...]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _OP_AT_LINE.finditer(line):
            name = match.group(1) or f"call @{match.group(2)}"
            if name == pattern or (pattern == "call @take" and name.startswith("call @take")):
                found.append(number)
                break
    return tuple(found[:MAX_CITED_LINES])


def _rank(shape: str) -> int:
    return shape.count("x")


def _dot_ranks(text: str) -> dict[int, tuple[int, ...]]:
    """Line numbers of dot_general ops, by the rank of their left operand."""
    ranks: dict[int, list[int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = _DOT.search(line)
        if match:
            ranks.setdefault(_rank(match.group(1)), []).append(number)
    return {rank: tuple(lines[:MAX_CITED_LINES]) for rank, lines in ranks.items()}


def _flattening_reshapes(text: str) -> tuple[int, ...]:
    """Reshapes that merge leading dimensions (e.g. 2x64x768 -> 128x768)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _RESHAPE.search(line)
        if match and _rank(match.group(2)) < _rank(match.group(1)) and _rank(match.group(2)) >= 1:
            found.append(number)
    return tuple(found[:MAX_CITED_LINES])


def _flattening(text_a: str, text_b: str, names: tuple[str, str]) -> list[Finding]:
    """One capture contracts 3-D (or higher) operands; the other only 2-D ones, after
    reshapes that merge the leading dimensions."""
    texts = (text_a, text_b)
    findings = []
    for keeper in (0, 1):
        flattener = 1 - keeper
        kept, flat = _dot_ranks(texts[keeper]), _dot_ranks(texts[flattener])
        high = [rank for rank in kept if rank >= 3]
        if not high or 2 not in flat or any(rank >= 3 for rank in flat):
            continue
        title = (
            f"{names[flattener]} flattens batch×sequence before dot_general (reshapes to 2-D "
            f"operands), {names[keeper]} contracts {max(high)}-D operands directly"
        )
        flat_lines = tuple(sorted(set(_flattening_reshapes(texts[flattener]) + flat[2])))
        cited = {keeper: kept[max(high)], flattener: flat_lines[:MAX_CITED_LINES]}
        findings.append(Finding(title, cited[0], cited[1]))
    return findings


def _presence(
    a: Analysis, b: Analysis, text_a: str, text_b: str, names: tuple[str, str]
) -> list[Finding]:
    findings = []
    ops_a = {op for op, n in a.ops.items() if n}
    ops_b = {op for op, n in b.ops.items() if n}
    for op in sorted(ops_a ^ ops_b):
        if op_name(op) not in NOTABLE_OPS and not op.startswith("call @"):
            continue
        has, lacks = (names[0], names[1]) if op in ops_a else (names[1], names[0])
        title = f"{has} uses {op} ({(a.ops if op in ops_a else b.ops)[op]}×), {lacks} never does"
        if op.startswith("batch_norm") and (a.ops["reduce"] or b.ops["reduce"]):
            title += "; it writes the same normalisation as explicit reduce ops"
        findings.append(Finding(title, _lines_with(text_a, op), _lines_with(text_b, op)))
    return findings


def _counts(
    a: Analysis, b: Analysis, text_a: str, text_b: str, names: tuple[str, str]
) -> list[Finding]:
    findings = []
    for op in COUNTED_OPS:
        if a.ops[op] and b.ops[op] and a.ops[op] != b.ops[op]:
            more, fewer = (names[0], names[1]) if a.ops[op] > b.ops[op] else (names[1], names[0])
            title = (
                f"{more} has {abs(a.ops[op] - b.ops[op])} more {op} ops than {fewer} "
                f"({a.ops[op]} vs {b.ops[op]})"
            )
            findings.append(Finding(title, _lines_with(text_a, op), _lines_with(text_b, op)))
    return findings


def explain(text_a: str, text_b: str, names: tuple[str, str]) -> list[Finding]:
    """Structural differences between two normalised StableHLO texts."""
    a, b = analyse(text_a), analyse(text_b)
    return (
        _flattening(text_a, text_b, names)
        + _presence(a, b, text_a, text_b, names)
        + _counts(a, b, text_a, text_b, names)
    )


def histogram_rows(a: Analysis, b: Analysis) -> list[tuple[str, int, int, int]]:
    """(op, count in a, count in b, b - a), the largest differences first."""
    ops: Iterable[str] = set(a.ops) | set(b.ops)
    rows = [(op, a.ops[op], b.ops[op], b.ops[op] - a.ops[op]) for op in ops]
    return sorted(rows, key=lambda row: (-abs(row[3]), row[0]))


def text_diff(text_a: str, text_b: str, names: tuple[str, str]) -> str:
    return "".join(
        difflib.unified_diff(
            text_a.splitlines(keepends=True),
            text_b.splitlines(keepends=True),
            fromfile=names[0],
            tofile=names[1],
            n=2,
        )
    )
