"""What a capture contains: op histogram, the op categories that explain performance, and
the parameters it takes. Works on StableHLO/MLIR, HLO text, jaxprs and TensorFlow op lists."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

DTYPE_BYTES = {
    "f64": 8,
    "f32": 4,
    "f16": 2,
    "bf16": 2,
    "i64": 8,
    "i32": 4,
    "i16": 2,
    "i8": 1,
    "i1": 1,
    "ui64": 8,
    "ui32": 4,
    "ui8": 1,
    "s64": 8,
    "s32": 4,
    "s8": 1,
    "u32": 4,
    "u8": 1,
    "pred": 1,
}

# Categories a reader of seed 001's comparison looks for, by op name (either dialect).
CATEGORIES: dict[str, tuple[str, ...]] = {
    "matmul": ("dot_general", "dot", "convolution"),
    "reduction": ("reduce", "reduce_window", "reduce_precision"),
    "broadcast": ("broadcast_in_dim", "broadcast"),
    "reshape/transpose": ("reshape", "transpose"),
    "convert": ("convert",),
    "gather/scatter": ("gather", "scatter", "dynamic_slice", "dynamic_update_slice"),
    "custom_call": ("custom_call", "custom-call"),
    "fusion": ("fusion",),
    "call": ("call",),
    "batch_norm": ("batch_norm_training", "batch_norm_inference", "batch_norm_grad"),
}

# An op stands at the start of a line or right after "=": attributes (mhlo.num_replicas) and a
# reduce's body shorthand ("applies stablehlo.add") are not ops of their own.
_MLIR_OP = re.compile(
    r"(?:^\s*|=\s*)\"?((?:stablehlo|chlo|mhlo|arith|math|tensor)\.[a-z_0-9]+)", re.MULTILINE
)
_MLIR_CALL = re.compile(r"\bcall @([A-Za-z_]+?)(?:_\d+)?\(")
_HLO_OP = re.compile(r"=\s+(?:\([^=]*?\)|[\w\[\],{}:]+)\s+([a-z][\w-]*)\(")
_JAXPR_OP = re.compile(r"=\s+([a-z_][\w]*)(?:\[|\s)")
_TENSOR = re.compile(r"tensor<((?:\d+x)*)([a-z]+\d*)>")
_HLO_PARAMETER = re.compile(r"=\s+([a-z]+\d*)\[([\d,]*)\][^=]*\sparameter\(")
_MAIN_SIGNATURE = re.compile(r"func\.func\s+(?:public\s+)?@main\((.*?)\)\s*(?:->|\{)", re.S)


@dataclass
class Analysis:
    dialect: str  # stablehlo, hlo, jaxpr, oplist, text
    lines: int
    ops: Counter[str] = field(default_factory=Counter)
    parameters: int = 0
    parameter_bytes: int = 0

    @property
    def categories(self) -> dict[str, int]:
        return {name: sum(self.ops[op] for op in ops) for name, ops in CATEGORIES.items()}


def dialect_of(text: str) -> str:
    if "stablehlo." in text or "func.func" in text:
        return "stablehlo"
    if "HloModule" in text or "ENTRY" in text:
        return "hlo"
    if text.lstrip().startswith("{ lambda"):
        return "jaxpr"
    if text and all(re.fullmatch(r"[A-Za-z_][\w]*", line) for line in text.split()):
        return "oplist"
    return "text"


def op_name(raw: str) -> str:
    """``stablehlo.dot_general`` -> ``dot_general``; HLO names are already bare."""
    return raw.rsplit(".", 1)[-1]


def analyse(text: str) -> Analysis:
    dialect = dialect_of(text)
    lines = [line for line in text.splitlines() if line.strip()]
    result = Analysis(dialect=dialect, lines=len(lines))
    if dialect == "stablehlo":
        result.ops.update(op_name(m) for m in _MLIR_OP.findall(text))
        calls = _MLIR_CALL.findall(text)
        result.ops.update(f"call @{name}" for name in calls)
        if calls:
            result.ops["call"] += len(calls)
        result.parameters, result.parameter_bytes = _mlir_parameters(text)
    elif dialect == "hlo":
        result.ops.update(_HLO_OP.findall(text))
        result.parameters, result.parameter_bytes = _hlo_parameters(text)
    elif dialect == "jaxpr":
        result.ops.update(_JAXPR_OP.findall(text))
    elif dialect == "oplist":
        result.ops.update(text.split())
    return result


def _mlir_parameters(text: str) -> tuple[int, int]:
    match = _MAIN_SIGNATURE.search(text)
    if not match:
        return 0, 0
    tensors = _TENSOR.findall(match.group(1))
    return len(tensors), sum(
        _bytes(shape.rstrip("x").split("x"), dtype) for shape, dtype in tensors
    )


def _hlo_parameters(text: str) -> tuple[int, int]:
    entry = text[text.find("ENTRY") :] if "ENTRY" in text else text
    found = _HLO_PARAMETER.findall(entry)
    return len(found), sum(_bytes(dims.split(","), dtype) for dtype, dims in found)


def _bytes(dims: list[str], dtype: str) -> int:
    elements = math.prod(int(d) for d in dims if d)
    return elements * DTYPE_BYTES.get(dtype, 4)
