"""The IR worker: captures every IR stage a stack gives for one workload, in a fresh process.

Usage: ``python -m stackwars.runner.ir_worker REQUEST.json OUT_DIR``. Writes one text file
per captured stage into OUT_DIR and ``index.json`` naming them and the stages it could not
capture (with the reason). The set-up (environment, load, init, inputs on the device) is the
same as a timing worker's, so the captured IR is the IR that was timed.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.frameworks import load_framework
from stackwars.ir.capture import NO_COMPILER, capturer, stages
from stackwars.results.jsonio import dump, write_atomically
from stackwars.runner.protocol import Request
from stackwars.runner.worker import home_environment


def capture(request: Request, out_dir: Path) -> dict[str, Any]:
    spec, settings = request.cell, request.settings
    index: dict[str, Any] = {
        "stack": spec.stack,
        "workload": spec.workload,
        "params": spec.params,
        "stages": {},
        "unavailable": {},
    }
    if not stages(spec.stack):
        index["unavailable"]["*"] = NO_COMPILER
        return index
    workload = workloads.get(spec.workload)
    params = workload.resolve(spec.params)
    builder = workload.implementations.get(spec.framework)
    if builder is None:
        index["unavailable"]["*"] = f"{spec.workload} has no {spec.framework} implementation"
        return index
    framework = load_framework(spec.framework, spec.mode)
    os.environ.update({**home_environment(settings), **framework.environment(settings)})
    framework.load()
    framework.init(settings)
    inputs = workload.make_inputs(params, request.seed)
    built: Any = builder(params)
    if hasattr(built, "bind"):
        # A model: capture the function that is timed, on the arguments it is timed with.
        bound = built.bind(inputs, framework.to_device, spec.mode)
        fn, args = bound.fn, bound.args
    else:
        fn, args = built, framework.to_device(inputs)
    captured, failed = capturer(spec.stack)(fn, args, framework)
    for stage, text in captured.items():
        name = f"{stage}.txt"
        (out_dir / name).write_text(text, encoding="utf-8")
        index["stages"][stage] = name
    index["unavailable"].update(failed)
    return index


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m stackwars.runner.ir_worker REQUEST.json OUT_DIR", file=sys.stderr)
        return 2
    request = Request.from_json(Path(argv[0]).read_text(encoding="utf-8"))
    out_dir = Path(argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in request.workload_files:
        workloads.load_workload_file(path)
    try:
        index = capture(request, out_dir)
    except Exception as exc:  # the whole capture failed: say why, as data
        tail = "".join(traceback.format_exception(exc)[-20:])
        index = {"stack": request.cell.stack, "stages": {}, "unavailable": {"*": tail}}
    write_atomically(out_dir / "index.json", dump(index))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
