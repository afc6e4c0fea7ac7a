"""The shared worker (``--workers per-stack``): one stack's cells measured one after another in
one process, its framework imported and started once (see protocol.py for a cell's request).

Usage: ``python -m stackwars.runner.shared_worker REQUEST.json RESULT.json``, the request
``{"cells": [Request, ...]}`` in the order to measure them (the parent draws it). Each cell is
measured by the timing worker's own protocol (``worker.CellRun``), and its result written to
``cells/NNN.json`` in the worker's folder the moment it ends, so that the parent keeps every
finished cell when the worker is killed later (memory, time) or dies; the answer counts them.
A cell whose settings are not those the framework started with (a 64-bit cell after a 32-bit
one on JAX, a map over several host devices) cannot be measured here: its file says why
(``own_worker``) and the parent measures it in a worker of its own.

Between cells the earlier cell's objects are dropped and garbage collected; what a framework
keeps (compiled programs, allocator pools) stays, which is why a later cell's first run is not
a fresh process's and records its place (``Cell.worker``).
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.schema import Worker
from stackwars.runner.child import ProgressWriter, serve
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun, OwnWorkerNeeded, Started

KIND = "cells"
CELLS_FOLDER = "cells"  # in the worker's folder, its working directory


def cell_file(folder: Path, position: int) -> Path:
    """Where the shared worker in ``folder`` writes the result of its ``position``-th cell."""
    return folder / CELLS_FOLDER / f"{position:03d}.json"


def measure_all(data: dict[str, Any]) -> dict[str, Any]:
    requests = [Request.from_dict(item) for item in data["cells"]]
    for path in requests[0].workload_files if requests else ():
        workloads.load_workload_file(path)
    folder = Path.cwd()
    (folder / CELLS_FOLDER).mkdir(exist_ok=True)
    writer = ProgressWriter(folder)
    started: Started | None = None
    for position, request in enumerate(requests):
        label = request.cell.label()

        def progress(text: str, force: bool, label: str = label) -> None:
            writer(f"{label}: {text}", force)

        begun = time.monotonic()
        run = CellRun(request, progress, started, Worker(len(requests), position))
        try:
            cell = run.run()
            answer: dict[str, Any] = {"cell": cell.to_dict() | {"wall_s": time.monotonic() - begun}}
        except OwnWorkerNeeded as exc:
            answer = {"own_worker": str(exc)}
        started = started or run.started
        write_atomically(cell_file(folder, position), dump(answer))
        del run
        gc.collect()  # the earlier cell's arrays go before the next cell's peaks are read
    return {"cells": len(requests)}


def main(argv: list[str]) -> int:
    return serve(argv, KIND, measure_all)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
