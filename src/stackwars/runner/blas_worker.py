"""The BLAS probe: which BLAS and OpenMP libraries a framework loads, with their threads and
the kernel each selected (threadpoolctl), for ``stackwars env``.

Started through ``runner/child.py`` with ``{"framework": name}``; imports the framework the
way a timing worker does and answers ``{"libraries": [...]}``.
"""

from __future__ import annotations

import sys
from typing import Any

from stackwars.frameworks import load_framework
from stackwars.runner.child import serve
from stackwars.runner.worker import blas_libraries


def answer(data: dict[str, Any]) -> dict[str, Any]:
    load_framework(data["framework"]).load()
    return {"libraries": blas_libraries()}


def main(argv: list[str]) -> int:
    return serve(argv, "blas", answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
