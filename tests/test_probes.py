"""The probes of mutation, loops, retracing, dtypes and indexing, and the worker's checks they
need: the caller's input after a call, the result's dtype, an error NumPy raises, per-call
compile timing and the ``fallback`` outcome."""

from __future__ import annotations

import logging
import sys
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stackwars.frameworks.numpy import NumpyFramework
from stackwars.frameworks.tensorflow import _AUTOGRAPH, TensorflowFramework
from stackwars.frameworks.torch import TorchFramework
from stackwars.instruments.behave import probes
from stackwars.instruments.behave import worker as behave_worker
from stackwars.instruments.behave.render import STYLES
from stackwars.instruments.behave.service import behave
from stackwars.instruments.behave.worker import _call_lines, _classify, _exception_line, answer

NEW_PROBES = (
    "setitem-input",
    "inplace-add",
    "functional-set",
    "range-loop",
    "while-loop",
    "new-dtype",
    "python-scalar",
    "float64-input",
    "out-of-bounds",
)


def run_numpy(name: str, program: Callable[..., Any]) -> dict[str, Any]:
    """The probe's calls and checks, with ``program`` as its NumPy implementation."""
    probe = probes.get(name)
    return behave_worker.observe(probe, NumpyFramework(), "eager", lambda *_: program)


def test_numpy_as_a_user_writes_it_meets_every_expectation(tmp_path: Path) -> None:
    for name in NEW_PROBES:
        request = {"probe": name, "stack": "numpy:eager", "cache_dir": str(tmp_path)}
        assert answer(request)["outcome"] == "works", name
    request = {"probe": "out-of-bounds", "stack": "numpy:eager", "cache_dir": str(tmp_path)}
    assert "raised IndexError: index 10 is out of bounds" in answer(request)["detail"]


def test_a_write_that_does_not_reach_the_caller_is_silently_different() -> None:
    def set_first_of_a_copy(x: Any) -> Any:  # what jax.jit and tf.function do to x += 1
        y = x.copy()
        y[0] = 1
        return y * 2

    result = run_numpy("setitem-input", set_first_of_a_copy)
    assert result["outcome"] == "silently different"
    assert "the caller's x is [0., 1., 2., 3.] after the call" in result["detail"]
    assert "NumPy leaves [1., 1., 2., 3.]" in result["detail"]


def test_a_functional_update_that_writes_into_its_input_is_caught() -> None:
    def set_first_in_place(x: Any) -> Any:
        x[0] = 1
        return x

    result = run_numpy("functional-set", set_first_in_place)
    assert result["outcome"] == "silently different"
    assert "NumPy leaves [0., 1., 2., 3.]" in result["detail"]


def test_the_dtype_counts_where_the_probe_says_so() -> None:
    result = run_numpy("float64-input", lambda x: (x * 2 + 1).astype(np.float32))
    assert result["outcome"] == "silently different"
    assert result["detail"] == "call 1: dtype float32 where NumPy gives float64"
    # Elsewhere float32 results stand for the float64 reference.
    assert run_numpy("new-dtype", lambda x: (x * 2 + 1).astype(np.float32))["outcome"] == "works"


def test_an_index_out_of_bounds_clamped_or_refused_otherwise() -> None:
    clamped = run_numpy("out-of-bounds", lambda x, i: np.take(x, i, mode="clip"))
    assert clamped["outcome"] == "silently different"
    assert clamped["detail"].startswith("call 1: returned [1., 3.] where NumPy raises IndexError")

    def refuse(x: Any, i: Any) -> Any:
        raise ValueError("indices[1] = 10 is not in [0, 4)")

    refused = run_numpy("out-of-bounds", refuse)
    assert refused["outcome"] == "error"
    assert refused["detail"] == "call 1: ValueError: indices[1] = 10 is not in [0, 4)"


class GraphBreaking(NumpyFramework):
    """NumPy posing as a compiler that leaves its graph on every call."""

    def __init__(self) -> None:
        self.events = ["from an earlier program"]
        self.compiles = 0

    def compile_count(self) -> int:
        return self.compiles

    def fallbacks(self) -> list[str]:
        return list(self.events)


def test_a_graph_break_during_the_calls_is_a_fallback_with_its_reason() -> None:
    framework = GraphBreaking()

    def build(mode: str, prepare: Any, tally: Any) -> Any:
        def program(x: Any, n: Any) -> Any:
            framework.events.append("Tensor.item() call")
            framework.compiles += 1
            return x * 2 ** int(n)

        return program

    result = behave_worker.observe(probes.get("range-loop"), framework, "compile", build)
    assert result["outcome"] == "fallback"
    assert result["detail"].startswith("fell back: 2× Tensor.item() call; 2 compilation(s)")
    assert "from an earlier program" not in result["detail"]
    assert [compiles for _, compiles in result["calls"]] == [1, 2]
    # Eager stacks compile nothing, so nothing falls back.
    eager = behave_worker.observe(probes.get("range-loop"), framework, "eager", build)
    assert eager["outcome"] == "works"


def test_a_fallback_outranks_a_retrace_but_not_wrong_effects() -> None:
    timeline = [(0.5, 1), (0.01, 1), (0.2, 2)]
    fell = _classify(probes.get("new-shape"), "jit", timeline, 0, fallbacks=["a", "a"])
    assert fell["outcome"] == "fallback" and fell["detail"].startswith("fell back: 2× a;")
    side = _classify(probes.get("side-effect"), "jit", timeline, 1, fallbacks=["a"])
    assert side["outcome"] == "silently different"
    assert STYLES["fallback"] != STYLES["works"]


def test_each_call_says_whether_it_compiled_and_how_long_it_took() -> None:
    timeline = [(0.1, 1), (0.001, 1), (0.512, 3)]
    assert _call_lines(timeline) == [
        "call 1: compiled, 100.0 ms",
        "call 2: 1.0 ms",
        "call 3: recompiled 2×, 512.0 ms",
    ]
    detail = _classify(probes.get("new-dtype"), "jit", timeline, 0)["detail"]
    assert detail.startswith("3 compilations where 1 expected; 3 compilation(s); call 1:")


def test_the_error_line_is_the_one_that_says_what_went_wrong() -> None:
    graph = 'Graph execution error:\n\n  File "p.py", line 2, in take\n\nindices[1] = 10 is '
    graph += "not in [0, 4)\n\t [[{{node GatherV2}}]] [Op:__inference_take_9]"
    assert _exception_line(ValueError(graph)) == "ValueError: indices[1] = 10 is not in [0, 4)"
    user = 'in user code:\n\n    File "p.py", line 3, in f  *\n        x[0] = 1\n\n    '
    user += "TypeError: 'SymbolicTensor' object does not support item assignment\n"
    assert _exception_line(TypeError(user)) == (
        "TypeError: 'SymbolicTensor' object does not support item assignment"
    )
    assert _exception_line(KeyError()) == "KeyError: "


def test_torch_counts_graph_breaks_and_frames_dynamo_gave_up_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Dynamo never imported (an eager cell): nothing was compiled, nothing fell back.
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils", raising=False)
    assert TorchFramework().fallbacks() == []
    counters = {
        "graph_break": Counter({"Tensor.item() call\n  Explanation: ...": 2}),
        "unimplemented": Counter({"Data-dependent branching\n  Explanation: ...": 1}),
    }
    monkeypatch.setitem(
        sys.modules, "torch._dynamo.utils", types.SimpleNamespace(counters=counters)
    )
    assert sorted(TorchFramework().fallbacks()) == [
        "Data-dependent branching",
        "Tensor.item() call",
        "Tensor.item() call",
    ]


def test_tensorflow_reports_autograph_running_a_function_unconverted() -> None:
    framework = TensorflowFramework()
    _AUTOGRAPH.watch()  # what load does once TensorFlow is imported
    before = framework.fallbacks()
    logger = logging.getLogger("tensorflow")
    logger.warning("Using a while_loop for converting Range")  # not a fallback
    message = "AutoGraph could not transform %s and will run it as-is.\nCause: %s"
    logger.warning(message, "<function <lambda> at 0x1>", "could not parse the source code")
    new = framework.fallbacks()[len(before) :]
    assert new == [
        "AutoGraph could not transform <function <lambda> at 0x1> and will run it as-is."
    ]


def test_every_new_probe_is_written_for_all_four_frameworks() -> None:
    for name in NEW_PROBES:
        assert set(probes.get(name).implementations) == {"numpy", "jax", "torch", "tensorflow"}


@pytest.mark.slow
def test_jax_jit_refuses_writes_drops_float64_and_clamps_indices() -> None:
    pytest.importorskip("jax")
    names = ["setitem-input", "inplace-add", "float64-input", "out-of-bounds", "range-loop"]
    found = {o.probe: o for o in behave([*names, "python-scalar"], "jax:jit")}
    assert found["setitem-input"].outcome == "error"
    assert "TypeError: JAX arrays are immutable" in found["setitem-input"].detail
    # x += 1 rebinds x to a new array: the caller's array keeps its values.
    assert found["inplace-add"].outcome == "silently different"
    assert "the caller's x is [0., 1., 2., 3.] after the call" in found["inplace-add"].detail
    assert found["float64-input"].outcome == "silently different"
    assert "dtype float32 where NumPy gives float64" in found["float64-input"].detail
    # The Sharp Bits: an out-of-bounds gather is clamped to the last element.
    assert found["out-of-bounds"].outcome == "silently different"
    assert "returned [1., 3.] where NumPy raises IndexError" in found["out-of-bounds"].detail
    assert found["range-loop"].outcome == "error"
    assert "ConcretizationTypeError" in found["range-loop"].detail
    # A Python float is weakly typed: a signature of its own, compiled on call 2.
    scalar = found["python-scalar"]
    assert scalar.outcome.startswith("retraced") and "call 2: recompiled" in scalar.detail
    assert "call 4: recompiled" not in scalar.detail  # 3.0 reuses 2.0's compilation


@pytest.mark.slow
def test_torch_compile_writes_through_and_falls_back_on_a_python_number() -> None:
    pytest.importorskip("torch")
    found = {o.probe: o for o in behave(["setitem-input", "range-loop"], "torch:compile")}
    assert found["setitem-input"].outcome == "works"
    # int(n) asks the tensor for its value: Dynamo breaks the graph there.
    loop = found["range-loop"]
    assert loop.outcome == "fallback"
    assert "Tensor.item()" in loop.detail and "call 1: compiled" in loop.detail
