"""The IR worker: captures every IR stage a stack gives for one workload, in a fresh process.

Started through ``runner/child.py`` with ``{"request": Request, "out_dir": absolute path}``.
Writes one text file per captured stage into out_dir and ``index.json`` naming them and the
stages it could not capture (with the reason), and answers with that index. The set-up
(environment, load, init, inputs on the device) is the same as a timing worker's, so the
captured IR is the IR that was timed.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.frameworks import load_framework
from stackwars.frameworks.base import DeviceUnavailable
from stackwars.ir.capture import NO_COMPILER, capturer, stages
from stackwars.results.jsonio import dump, write_atomically
from stackwars.runner.child import serve
from stackwars.runner.protocol import Request
from stackwars.runner.worker import cell_settings, home_environment
from stackwars.workloads.base import Stateful


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
    settings = cell_settings(settings, workload, params)
    builder = workload.builder(spec.framework)
    if builder is None:
        index["unavailable"]["*"] = f"{spec.workload} has no {spec.framework} implementation"
        return index
    framework = load_framework(spec.framework, spec.mode)
    os.environ.update({**home_environment(settings), **framework.environment(settings)})
    framework.load()
    framework.init(settings)
    inputs = workload.make_inputs(params, request.seed)
    built: Any = builder(params)
    if isinstance(built, Stateful):
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


def answer(data: dict[str, Any]) -> dict[str, Any]:
    """Capture into ``data["out_dir"]`` (absolute) and return the index, also written there as
    index.json."""
    request = Request.from_dict(data["request"])
    out_dir = Path(data["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in request.workload_files:
        workloads.load_workload_file(path)
    try:
        index = capture(request, out_dir)
    except DeviceUnavailable as exc:  # its message says why and names the fix: no traceback
        index = {"stack": request.cell.stack, "stages": {}, "unavailable": {"*": str(exc)}}
    except Exception as exc:  # the whole capture failed: say why, as data
        tail = "".join(traceback.format_exception(exc)[-20:])
        index = {"stack": request.cell.stack, "stages": {}, "unavailable": {"*": tail}}
    write_atomically(out_dir / "index.json", dump(index))
    return index


def main(argv: list[str]) -> int:
    return serve(argv, "ir", answer)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
