"""The characters the report writes that are not on a keyboard, each defined once and written by
name (ruff flags some of them as ambiguous in source)."""

from __future__ import annotations

TIMES = "\N{MULTIPLICATION SIGN}"  # a speed-up or a ratio: 6.41×
