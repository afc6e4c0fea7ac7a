"""``python -m stackwars.instruments.ab.side REQUEST RESULT``: one side's round of ``stackwars ab``.

Started by ``instruments/ab/task.py`` through ``runner/child.py`` (kind ``side``) with the side's
Python and environment variables. It runs ``stackwars`` with the round's arguments in this
process, so that the round's own timing workers start from the side's Python too, and answers
the exit status and this install's version; ``cpus`` (``ab --duet``) pins the round to
them. ``{"argv": []}`` asks only the version (the check
that stackwars is installed where the side's Python looks). An entry point like
``__main__``: it sits above the command line it calls.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from stackwars.instruments.ab.task import KIND
from stackwars.runner.child import serve
from stackwars.version import __version__


def handle(request: Mapping[str, Any]) -> dict[str, Any]:
    version = __version__
    argv = list(request["argv"])
    if not argv:
        return {"version": version, "exit": 0}
    from stackwars.cli import main

    # The user's folder: relative paths in the round's arguments (--workload-file) are theirs.
    os.chdir(request["cwd"])
    if request.get("cpus"):
        # ab --duet: this side's round on its own core; its workers inherit the affinity.
        os.sched_setaffinity(0, set(request["cpus"]))
    return {"version": version, "exit": main(argv)}


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:], KIND, handle))
