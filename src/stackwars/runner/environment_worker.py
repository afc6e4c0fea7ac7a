"""The environment worker: what a Python environment of stackwars' holds, asked from inside it
(``runner/environments.py`` is its parent half).

Usage: ``python -m stackwars.runner.environment_worker REQUEST.json RESULT.json``. Answers
Python's version, every installed distribution's version (names normalised as PEP 503
compares them), and for each module asked for, the error importing it gave ("" when it
imported). That it answers at all shows stackwars and its dependencies import there.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import sys
from typing import Any

from stackwars.runner.child import serve
from stackwars.runner.environments import normalise


def inspect(request: dict[str, Any]) -> dict[str, Any]:
    imports = {}
    for name in request["imports"]:
        try:
            importlib.import_module(name)
        except Exception as exc:  # any failure to import is the answer, not a crash
            first = (str(exc).strip().splitlines() or [""])[0]
            imports[name] = f"{type(exc).__name__}: {first[:300]}"
        else:
            imports[name] = ""
    versions = {
        normalise(dist.metadata["Name"]): dist.version
        for dist in importlib.metadata.distributions()
        if dist.metadata["Name"]
    }
    return {"python": platform.python_version(), "versions": versions, "imports": imports}


def main(argv: list[str]) -> int:
    return serve(argv, "environment", inspect)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
