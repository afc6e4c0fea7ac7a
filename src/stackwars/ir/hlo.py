"""The instructions of an HLO module by name, with the operations each one runs: what joins a
profile's XLA operations (named by their HLO instruction) with the optimized HLO.

A fusion (or a call, a while loop, a conditional) runs the instructions of the computations it
calls; every other instruction runs itself. A reduction's reducer (``to_apply``) is part of the
reduction, not operations of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Instructions whose presence says nothing about the work done.
BOOKKEEPING = frozenset(("parameter", "constant", "tuple", "get-tuple-element", "bitcast"))

_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(?:\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\((.*)$"
)
_CALLED = re.compile(r"\b(?:calls|body|branch_computations)=\{?([%\w.\-, ]+)\}?")
_TARGET = re.compile(r'custom_call_target="([^"]+)"')


@dataclass(frozen=True)
class Instruction:
    opcode: str
    # The operations it runs: its own opcode, or those of what it calls (a custom call as
    # "custom-call:TARGET"), without bookkeeping.
    runs: tuple[str, ...]
    computation: str  # where it is defined


def instructions(text: str) -> dict[str, Instruction]:
    """Every instruction of the HLO ``text``, by name (without the leading %)."""
    computations: dict[str, list[tuple[str, str, str]]] = {}
    current: list[tuple[str, str, str]] | None = None
    for line in text.splitlines():
        header = _COMPUTATION.match(line)
        if header:
            current = computations.setdefault(header.group(1), [])
            continue
        found = _INSTRUCTION.match(line) if current is not None else None
        if found and current is not None:
            current.append((found.group(1), found.group(2), found.group(3)))
    found_all: dict[str, Instruction] = {}
    for computation, body in computations.items():
        for name, opcode, rest in body:
            runs = _runs(opcode, rest, computations, set())
            found_all[name] = Instruction(opcode, tuple(sorted(set(runs))), computation)
    return found_all


def _runs(
    opcode: str, rest: str, computations: dict[str, list[tuple[str, str, str]]], seen: set[str]
) -> list[str]:
    called = [
        name.strip().lstrip("%")
        for group in _CALLED.findall(rest)
        for name in group.split(",")
        if name.strip()
    ]
    if not called:
        if opcode == "custom-call":
            target = _TARGET.search(rest)
            return [f"custom-call:{target.group(1)}" if target else opcode]
        return [] if opcode in BOOKKEEPING else [opcode]
    runs: list[str] = []
    for name in called:
        if name in seen or name not in computations:
            continue
        seen.add(name)
        for _, inner, inner_rest in computations[name]:
            runs.extend(_runs(inner, inner_rest, computations, seen))
    return runs
