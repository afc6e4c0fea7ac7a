"""JSON files that are never half-written, and JSON that has no inf or nan."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` so that a reader sees the old file or the new one, never half of it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def dump(data: Any) -> str:
    """JSON for results: non-finite floats become null, as JSON has no inf or nan."""
    return json.dumps(_finite(data), indent=1)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
