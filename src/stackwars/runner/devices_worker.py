"""The framework probe: which device kinds a framework sees in a fresh process, and why not,
and which BLAS and OpenMP libraries it loads, for ``stackwars env``.

Started through ``runner/child.py`` with ``{"framework": name, "mode": mode or None,
"libraries": bool}``; loads the implementation that runs that mode (torch:xla's is JAX's
runtime) the way a timing worker does. With ``libraries`` it first lists the BLAS and OpenMP
libraries the import loaded, their threads and the kernel each selected (threadpoolctl), before
asking for devices could load more. Then it asks for its ``device_facts`` (builds, plugins, the
devices of each kind or the error asking gave) and answers them with the ``device_support``
they give. No device is pinned: the process sees what a user's own script would, the user's
``JAX_PLATFORMS`` and ``CUDA_VISIBLE_DEVICES`` included (the facts say when such a variable
hides a kind).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from stackwars.frameworks import FRAMEWORKS, load_framework
from stackwars.runner.child import serve
from stackwars.runner.worker import blas_libraries


def answer(data: dict[str, Any]) -> dict[str, Any]:
    name, mode = data["framework"], data.get("mode")
    framework = load_framework(name, mode)
    try:
        framework.load()
    except ImportError as exc:
        return {"missing": f"{exc}; fix: {FRAMEWORKS[name].install_hint(mode)}"}
    libraries = {"libraries": blas_libraries()} if data.get("libraries") else {}
    facts = framework.device_facts()
    support = framework.device_support(facts)
    return {**libraries, "facts": facts, "support": [dataclasses.asdict(e) for e in support]}


def main(argv: list[str]) -> int:
    return serve(argv, "devices", answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
