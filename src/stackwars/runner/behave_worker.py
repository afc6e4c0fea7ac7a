"""The behave worker: runs one probe on one stack in a fresh process and classifies what
happened (``stackwars behave``).

Started through ``runner/child.py`` with ``{"probe", "stack", "cache_dir", "workload_files"}``;
answers one outcome: ``works``, ``error`` (the exception's class and first line),
``silently different`` (numbers unlike the float64 NumPy reference, or a Python side effect that
did not run once per call), ``retraced N`` (a compiled stack compiled more often than the probe
expects), or ``unsupported`` (no implementation for the framework). The set-up (environment,
load, init, device placement) is a timing worker's.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

from stackwars import probes, workloads
from stackwars.frameworks import FRAMEWORKS, load_framework, parse_stack
from stackwars.frameworks.base import Framework, RunSettings
from stackwars.runner.child import serve
from stackwars.runner.worker import home_environment

RTOL = 1e-5  # float32 results of these small probes against float64


def answer(data: dict[str, Any]) -> dict[str, Any]:
    for path in data.get("workload_files", []):
        workloads.load_workload_file(path)
    probe, stack = probes.get(data["probe"]), parse_stack(data["stack"])
    outcome = {"probe": probe.name, "stack": str(stack)}
    build = probe.implementations.get(stack.framework)
    if build is None:
        reason = f"probe {probe.name!r} has no {stack.framework} implementation"
        return {**outcome, "outcome": "unsupported", "detail": reason}
    try:
        framework = _start(stack.framework, stack.mode, data["cache_dir"])
    except ImportError as exc:
        hint = FRAMEWORKS[stack.framework].install_hint(stack.mode)
        return {**outcome, "outcome": "unsupported", "detail": f"{exc}; fix: {hint}"}
    return {**outcome, **observe(probe, framework, stack.mode, build)}


def _start(name: str, mode: str, cache_dir: str) -> Framework:
    framework = load_framework(name, mode)
    settings = RunSettings(cache_dir=cache_dir)
    os.environ.update({**home_environment(settings), **framework.environment(settings)})
    framework.load()
    framework.init(settings)
    return framework


def observe(probe: probes.Probe, framework: Framework, mode: str, build: Any) -> dict[str, Any]:
    """Run every call of the probe, then classify."""
    tally = [0]

    def count() -> None:
        tally[0] += 1

    fn = build(mode, lambda f: framework.prepare(f, mode), count)
    calls = probe.calls()
    before = framework.compile_count()
    seconds = []
    for index, args in enumerate(calls, 1):
        placed = tuple(_place(framework, arg) for arg in args)
        start = time.perf_counter()
        try:
            out = fn(*placed)
            framework.sync(out)
        except Exception as exc:  # the outcome, not a failure of the worker
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return {"outcome": "error", "detail": f"call {index}: {type(exc).__name__}: {first}"}
        seconds.append(time.perf_counter() - start)
        different = _difference(framework.to_host(out), probe.reference(args))
        if different:
            return {"outcome": "silently different", "detail": f"call {index}: {different}"}
    compiles = framework.compile_count() - before
    return _classify(probe, mode, compiles, tally[0], seconds)


def _classify(
    probe: probes.Probe, mode: str, compiles: int, ran: int, seconds: list[float]
) -> dict[str, Any]:
    """Numbers agreed with the reference; what remains is how the compiler got there."""
    calls = len(seconds)
    timing = ", ".join(f"{s * 1e3:.1f} ms" for s in seconds)
    facts = f"{compiles} compilation(s), calls took {timing}"
    if probe.side_effect_per_call and ran != calls:
        detail = f"the Python side effect ran {ran}× in {calls} calls; {facts}"
        return {"outcome": "silently different", "detail": detail, "compiles": compiles}
    if mode != "eager" and compiles > probe.expected_compiles:
        detail = f"{compiles} compilations where {probe.expected_compiles} expected; {facts}"
        return {"outcome": f"retraced {compiles}", "detail": detail, "compiles": compiles}
    return {"outcome": "works", "detail": facts, "compiles": compiles}


def _place(framework: Framework, arg: Any) -> Any:
    import numpy as np

    return framework.to_device([arg])[0] if isinstance(arg, np.ndarray) else arg


def _difference(outputs: list[Any], reference: Any) -> str:
    """Why the outputs differ from the reference ('' when they agree)."""
    import numpy as np

    got = np.asarray(outputs[0], dtype=np.float64) if len(outputs) == 1 else None
    expected = np.asarray(reference, dtype=np.float64)
    if got is None or got.shape != expected.shape:
        shape = None if got is None else got.shape
        return f"shape {shape}, the reference's {expected.shape}"
    if not np.allclose(
        got, expected, rtol=RTOL, atol=RTOL * float(np.abs(expected).max(initial=1))
    ):
        return f"max |error| {float(np.abs(got - expected).max()):.3g}"
    return ""


def main(argv: list[str]) -> int:
    return serve(argv, "behave", _safe_answer)


def _safe_answer(data: dict[str, Any]) -> dict[str, Any]:
    try:
        return answer(data)
    except Exception as exc:  # set-up failed: say why, as data
        tail = "".join(traceback.format_exception(exc)[-8:])
        return {
            "probe": data.get("probe"),
            "stack": data.get("stack"),
            "outcome": "error",
            "detail": f"the probe could not start: {tail}",
        }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
