"""Normalise compiler IR text so that two captures compare on structure, not on noise.

Applied to StableHLO/MLIR and to HLO text:

* locations and metadata go: ``loc(...)`` suffixes, ``#loc`` definitions, HLO
  ``metadata={...}`` and its file/stack-frame tables, source-file attributes, module names
  that carry ids;
* value names become canonical, numbered in order of first appearance (``%v0``, ``%v1``…),
  so that renumbering by a front end does not show as a difference;
* large constants are summarised by their type: ``dense<…>`` of more than a few elements
  becomes ``dense<…N values…>``, as their bytes say nothing about structure;
* blank lines and trailing spaces go.
"""

from __future__ import annotations

import re

_LOC_SUFFIX = re.compile(r"\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_LOC_DEFINITION = re.compile(r"^#loc\d*\s*=.*$", re.MULTILINE)
_HLO_DEBUG_SECTIONS = re.compile(
    r"^(?:FileNames|FunctionNames|FileLocations|StackFrames)\n(?:.+\n?)*", re.MULTILINE
)
_HLO_METADATA = re.compile(r",?\s*metadata=\{[^{}]*\}")
_SOURCE_ATTRIBUTES = re.compile(r',?\s*(?:source_file|source_line|op_name)="[^"]*"')
_MODULE_NAME = re.compile(r"(module @)[\w.$-]+")
_HLO_MODULE_NAME = re.compile(r"^(HloModule )[\w.$-]+", re.MULTILINE)
_VALUE = re.compile(r"%[\w.$-]+(?:#\d+)?")
_DENSE = re.compile(r"dense<(\[[^<>]*\]|\"[^\"]*\")>")
_MAX_CONSTANT_ELEMENTS = 8


def _summarise_constant(match: re.Match[str]) -> str:
    body = match.group(1)
    if body.startswith('"'):
        return "dense<…hex…>" if len(body) > 40 else match.group(0)
    elements = body.count(",") + 1
    if elements <= _MAX_CONSTANT_ELEMENTS:
        return match.group(0)
    return f"dense<…{elements} values…>"


def _canonical_values(text: str) -> str:
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        name = match.group(0)
        if name.startswith("%arg"):  # function arguments keep their own, stable numbering
            return name
        if name not in names:
            names[name] = f"%v{len(names)}"
        return names[name]

    return _VALUE.sub(rename, text)


def normalise(text: str) -> str:
    """The IR text with locations, metadata, value names and large constants normalised."""
    text = _HLO_DEBUG_SECTIONS.sub("", text)
    text = _LOC_DEFINITION.sub("", text)
    text = _LOC_SUFFIX.sub("", text)
    text = _HLO_METADATA.sub("", text)
    text = _SOURCE_ATTRIBUTES.sub("", text)
    text = _MODULE_NAME.sub(r"\1module", text)
    text = _HLO_MODULE_NAME.sub(r"\1module", text)
    text = _DENSE.sub(_summarise_constant, text)
    text = _canonical_values(text)
    lines = (line.rstrip() for line in text.splitlines())
    return "\n".join(line for line in lines if line.strip()) + "\n"
