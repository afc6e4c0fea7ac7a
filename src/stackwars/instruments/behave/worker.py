"""The behave worker: runs one probe on one stack in a fresh process and classifies what
happened (``stackwars behave``).

Started through ``runner/child.py`` with ``{"probe", "stack", "cache_dir", "workload_files"}``;
answers one outcome, checked in this order:

* ``error``: a call raised (the exception's class and the line that says why), unless NumPy
  raises the same class computing the reference (an index out of bounds): that error is what
  the user expects, and the call agrees.
* ``silently different``: a call returned numbers unlike the float64 NumPy reference, or a
  value where NumPy raises, or a dtype unlike NumPy's (``Probe.dtype_matters``), or left the
  caller's first argument unlike NumPy would (``Probe.input_after``: a write that did or did
  not reach the caller); or a Python side effect did not run once per call.
* ``fallback``: a compiled stack ran, but part of the program outside what it compiled
  (``Framework.fallbacks``: a torch.compile graph break, AutoGraph running a function
  unconverted), with the reasons.
* ``retraced N``: a compiled stack compiled more often than the probe expects.
* ``works``; or ``unsupported`` (no implementation for the framework).

Besides the outcome and its detail, the answer holds ``compiles`` and ``calls``: per call, its
seconds and the compilations so far, so that each retrace's cost is known (the detail says
"call 3: recompiled, 512.0 ms"). The set-up (environment, load, init, device placement) is a
timing worker's.

A probe of random draws (``Probe.expected_draws``) has no reference. Its outcome is what the
run showed, ``same numbers`` or ``new numbers`` (its two calls' draws, bit for bit), when that is
what the framework's user expects, and ``silently different`` (saying which it was) when not:
the matrix then reads as seed 000's statements, and a stack that breaks its framework's promise
stands out. A probe ``across_processes`` is run twice by the parent: the first worker answers
its draws (``drew``), the second receives them as ``earlier`` and compares its own with them.
"""

from __future__ import annotations

import copy
import os
import sys
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from typing import Any

from stackwars import workloads
from stackwars.frameworks import FRAMEWORKS, implementation_for, load_framework, parse_stack
from stackwars.frameworks.base import Framework, RunSettings
from stackwars.instruments.behave import probes
from stackwars.runner.child import serve
from stackwars.runner.worker import home_environment

RTOL = 1e-5  # float32 results of these small probes against float64


def answer(data: dict[str, Any]) -> dict[str, Any]:
    for path in data.get("workload_files", []):
        workloads.load_workload_file(path)
    probe, stack = probes.get(data["probe"]), parse_stack(data["stack"])
    outcome = {"probe": probe.name, "stack": str(stack)}
    build = implementation_for(probe.implementations, stack.framework)
    if build is None:
        reason = f"probe {probe.name!r} has no {stack.framework} implementation"
        return {**outcome, "outcome": "unsupported", "detail": reason}
    try:
        framework = start_framework(stack.framework, stack.mode, data["cache_dir"])
    except ImportError as exc:
        hint = FRAMEWORKS[stack.framework].install_hint(stack.mode)
        return {**outcome, "outcome": "unsupported", "detail": f"{exc}; fix: {hint}"}
    if probe.expected_draws:
        earlier = data.get("earlier")
        return {**outcome, **observe_draws(probe, framework, stack.mode, build, earlier)}
    return {**outcome, **observe(probe, framework, stack.mode, build)}


def start_framework(name: str, mode: str, cache_dir: str) -> Framework:
    """The framework ready as in a timing worker: its environment, loaded, initialised."""
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
    before, fell_back = framework.compile_count(), framework.fallbacks()
    timeline: list[tuple[float, int]] = []  # per call: seconds, compilations so far
    notes: list[str] = []
    for index, args in enumerate(probe.calls(), 1):
        # NumPy, and torch on the CPU, share memory with the host argument the program may
        # write into: the reference and the input check start from a copy taken first.
        pristine = copy.deepcopy(args)
        expected = _expected(probe, pristine)
        placed = tuple(_place(framework, arg) for arg in args)
        start = time.perf_counter()
        try:
            out = fn(*placed)
            framework.sync(out)
        except Exception as exc:  # the outcome, not a failure of the worker
            if not _same_class(exc, expected):
                return _ended("error", f"call {index}: {_exception_line(exc)}", timeline)
            notes.append(f"call {index} raised {_exception_line(exc)}, as NumPy does")
            out = exc
        timeline.append((time.perf_counter() - start, framework.compile_count() - before))
        first = placed[0] if placed else None
        wrong = _wrong(probe, framework, out, first_argument=first, expected=expected, was=pristine)
        if wrong:
            return _ended("silently different", f"call {index}: {wrong}", timeline)
    fallbacks = [] if mode == "eager" else _since(fell_back, framework.fallbacks())
    return _classify(probe, mode, timeline, tally[0], fallbacks=fallbacks, notes=notes)


def _expected(probe: probes.Probe, args: tuple[Any, ...]) -> Any:
    """The reference's result, or the exception NumPy raised computing it (then expected)."""
    try:
        return probe.reference(args)
    except Exception as exc:  # NumPy's own error is the expectation (an index out of bounds)
        return exc


def _same_class(raised: Exception, expected: Any) -> bool:
    """Whether the stack raised what NumPy raised, by class name (another library's
    IndexError subclass counts)."""
    if not isinstance(expected, Exception):
        return False
    return type(expected).__name__ in {cls.__name__ for cls in type(raised).__mro__}


def _exception_line(exc: Exception) -> str:
    """The class and the line that says what went wrong: the message's first, unless that
    only introduces a traceback (tf.function's "in user code:", "Graph execution error:"),
    then the last line that is neither a file line nor a node annotation."""
    name = type(exc).__name__
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    if line.endswith(":"):
        said = [s for s in lines if not s.startswith(("File ", "[[")) and not s.endswith(":")]
        line = said[-1].removeprefix(f"{name}: ") if said else line
    return f"{name}: {line}"


def _wrong(
    probe: probes.Probe,
    framework: Framework,
    out: Any,
    *,
    first_argument: Any,
    expected: Any,
    was: tuple[Any, ...],
) -> str:
    """What a call got wrong against NumPy ('' when nothing): the result, its dtype when the
    probe says it matters, and what the caller's first argument holds afterwards."""
    if isinstance(expected, Exception):
        if isinstance(out, Exception):
            return ""
        got = _show(framework.to_host(out)[0])
        return f"returned {got} where NumPy raises {_exception_line(expected)}"
    different = _difference(framework.to_host(out), expected, probe.dtype_matters)
    if different or probe.input_after is None:
        return different
    left, meant = framework.to_host(first_argument)[0], probe.input_after(was)
    if _difference([left], meant):
        return f"the caller's x is {_show(left)} after the call, where NumPy leaves {_show(meant)}"
    return ""


def _since(before: list[str], after: list[str]) -> list[str]:
    """The events in ``after`` that ``before`` did not have (multisets)."""
    return list((Counter(after) - Counter(before)).elements())


def _ended(outcome: str, detail: str, timeline: list[tuple[float, int]]) -> dict[str, Any]:
    return {"outcome": outcome, "detail": detail, "calls": timeline}


def _classify(
    probe: probes.Probe,
    mode: str,
    timeline: list[tuple[float, int]],
    ran: int,
    *,
    fallbacks: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """Numbers agreed with the reference; what remains is how the compiler got there."""
    calls = len(timeline)
    compiles = timeline[-1][1] if timeline else 0
    facts = "; ".join([*notes, f"{compiles} compilation(s)", *_call_lines(timeline)])
    data = {"compiles": compiles, "calls": timeline}
    if probe.side_effect_per_call and ran != calls:
        detail = f"the Python side effect ran {ran}× in {calls} calls; {facts}"
        return {"outcome": "silently different", "detail": detail, **data}
    if mode != "eager" and fallbacks:
        reasons = "; ".join(f"{n}× {why}" for why, n in Counter(fallbacks).items())
        return {"outcome": "fallback", "detail": f"fell back: {reasons}; {facts}", **data}
    if mode != "eager" and compiles > probe.expected_compiles:
        detail = f"{compiles} compilations where {probe.expected_compiles} expected; {facts}"
        return {"outcome": f"retraced {compiles}", "detail": detail, **data}
    return {"outcome": "works", "detail": facts, **data}


def _call_lines(timeline: list[tuple[float, int]]) -> list[str]:
    """'call 3: recompiled, 512.0 ms' per call: a retrace's cost, where it happened."""
    lines, seen = [], 0
    for index, (seconds, compiles) in enumerate(timeline, 1):
        new = compiles - seen
        what = ""
        if new:
            what = ("compiled" if seen == 0 else "recompiled") + (f" {new}×" if new > 1 else "")
            what += ", "
        lines.append(f"call {index}: {what}{seconds * 1e3:.1f} ms")
        seen = compiles
    return lines


def _place(framework: Framework, arg: Any) -> Any:
    import numpy as np

    return framework.to_device([arg])[0] if isinstance(arg, np.ndarray) else arg


def _show(values: Any) -> str:
    import numpy as np

    return np.array2string(np.asarray(values), precision=4, separator=", ")


def _difference(outputs: list[Any], reference: Any, dtype_matters: bool = False) -> str:
    """Why the outputs differ from the reference ('' when they agree)."""
    import numpy as np

    got = np.asarray(outputs[0], dtype=np.float64) if len(outputs) == 1 else None
    expected = np.asarray(reference, dtype=np.float64)
    if got is None or got.shape != expected.shape:
        shape = None if got is None else got.shape
        return f"shape {shape}, the reference's {expected.shape}"
    dtype, numpy_dtype = np.asarray(outputs[0]).dtype, np.asarray(reference).dtype
    if dtype_matters and dtype != numpy_dtype:
        return f"dtype {dtype} where NumPy gives {numpy_dtype}"
    if not np.allclose(
        got, expected, rtol=RTOL, atol=RTOL * float(np.abs(expected).max(initial=1))
    ):
        return f"max |error| {float(np.abs(got - expected).max()):.3g}"
    return ""


def observe_draws(
    probe: probes.Probe, framework: Framework, mode: str, build: Any, earlier: Any
) -> dict[str, Any]:
    """Run a probe of random draws, then compare two draws (see the module docstring)."""
    import numpy as np

    fn = build(mode, lambda f: framework.prepare(f, mode), lambda: None)
    before, fell_back = framework.compile_count(), framework.fallbacks()
    drawn: list[list[float]] = []
    for index, args in enumerate(probe.calls(), 1):
        try:
            out = fn(*(_place(framework, arg) for arg in args))
            framework.sync(out)
        except Exception as exc:  # the outcome, not a failure of the worker
            return {"outcome": "error", "detail": f"call {index}: {_exception_line(exc)}"}
        drawn.append([float(v) for v in np.ravel(framework.to_host(out)[0])])
    # The relation is the outcome; how the compiler got there is said in the detail.
    facts = {"compiles": framework.compile_count() - before}
    fallbacks = [] if mode == "eager" else _since(fell_back, framework.fallbacks())
    note = f"; fell back: {'; '.join(sorted(set(fallbacks)))}" if fallbacks else ""
    if not probe.across_processes:
        first, second, unit = drawn[0], drawn[1], "call"
    elif earlier is None:
        # The first of two processes: the parent hands these draws to the second.
        return {"outcome": "drew", "detail": f"drew {_numbers(drawn[0])}", "draws": drawn, **facts}
    else:
        first, second, unit = earlier[0], drawn[0], "process"
    relation = draws_relation(
        probe.expected_draws[framework.name], framework.name, first, second, unit
    )
    return {**relation, "detail": relation["detail"] + note, **facts}


def draws_relation(
    expected: str, framework: str, first: list[float], second: list[float], unit: str
) -> dict[str, str]:
    """Same numbers or new ones, as the framework's user expects or silently not."""
    observed = probes.SAME if first == second else probes.NEW
    seen = f"{unit} 1 drew {_numbers(first)}; {unit} 2 drew {_numbers(second)}"
    if observed == expected:
        return {"outcome": observed, "detail": seen}
    detail = f"{observed} where a {framework} user expects {expected}: {seen}"
    return {"outcome": "silently different", "detail": detail}


def _numbers(values: list[float]) -> str:
    return " ".join(f"{v:.6g}" for v in values)


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
