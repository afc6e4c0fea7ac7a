"""Every implementation is the code a user of its framework writes (issue 10).

What a builder returns is what the stack times, wrapped by the mode: ``jax.jit(fn)``,
``torch.compile(fn)``, ``tf.function(fn)``. A user wraps a function of their own, ``a @ b`` or
``tf.matmul(a, b)``, never the library's entry point: ``tf.function(tf.linalg.matmul)`` took
~600 µs a call at 256x256 against ~330 µs over a user's function, binding its keyword arguments;
``jax.jit(jnp.matmul)`` or ``torch.compile(torch.matmul)`` wrap a library function instead of a
program. So every builder, and every model's timed function, must be a plain Python function
defined in stackwars' workload code.

Builders are called in this process, as ``test_workload_contract.py`` runs whole cells here:
a builder only imports its framework, and a model's ``bind`` builds the tiny model.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from stackwars import workloads
from stackwars.frameworks import FRAMEWORKS, load_framework, missing_reason
from stackwars.frameworks.base import RunSettings
from stackwars.workloads.base import Stateful

OWN_CODE = "stackwars.workloads"


def _tiny_variants(workload: workloads.Workload) -> list[dict[str, Any]]:
    """The tiny parameters, and again with every other ``task`` (ffn and mha's task=grad
    returns a different function: the forward wrapped by the framework's autodiff)."""
    tiny = workload.resolve(workload.tiny)
    tasks = next((p.choices for p in workload.params if p.name == "task"), None) or ()
    others = [{**tiny, "task": task} for task in tasks if task != tiny.get("task")]
    return [tiny, *others]


def _is_model(workload: workloads.Workload) -> bool:
    # Model builders return a ModelCell, whose bind says what to time; building one is free.
    builder = workload.implementations["numpy"]
    return isinstance(builder(workload.resolve(workload.tiny)), Stateful)


BUILTIN = sorted(workloads.registry())
OPS = [name for name in BUILTIN if not _is_model(workloads.get(name))]
MODELS = [name for name in BUILTIN if name not in OPS]


def assert_user_function(fn: Any, where: str) -> None:
    assert inspect.isfunction(fn), (
        f"{where} returns {fn!r}, not a Python function: return the function a user writes "
        "(def or lambda over the arrays), not the library's callable"
    )
    assert fn.__module__.startswith(OWN_CODE), (
        f"{where} returns {fn.__module__}.{fn.__qualname__}, a library function handed "
        "straight to jit/compile/tf.function; wrap it in a function of the workload's own"
    )


def _skip_if_missing(framework: str) -> None:
    reason = missing_reason(framework)
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@pytest.mark.parametrize("name", OPS)
def test_every_op_builder_returns_a_users_function(name: str, framework: str) -> None:
    _skip_if_missing(framework)
    workload = workloads.get(name)
    builder = workload.builder(framework)
    if builder is None:
        pytest.skip(f"{name} has no {framework} implementation")
    for params in _tiny_variants(workload):
        assert_user_function(builder(params), f"{name} on {framework} with {params}")


def test_the_check_catches_a_library_callable() -> None:
    import numpy as np

    from stackwars.workloads import ffn

    # A C callable (np.matmul, torch.matmul, jnp.matmul) and a Python function of a library
    # (tf.linalg.matmul, jax.nn.softmax) are both refused; a workload's own function passes.
    with pytest.raises(AssertionError, match="not a Python function"):
        assert_user_function(np.matmul, "np.matmul")
    with pytest.raises(AssertionError, match="library function"):
        assert_user_function(np.testing.assert_allclose, "np.testing.assert_allclose")
    assert_user_function(ffn.ffn_forward, "ffn_forward")


# The Keras stacks on JAX and PyTorch pick their backend once per process (test_keras.py
# runs their models in workers); keras-tensorflow's models are tensorflow's.
NATIVE = sorted(name for name, info in FRAMEWORKS.items() if info.runs_on is None)


@pytest.mark.parametrize("framework", NATIVE)
@pytest.mark.parametrize("name", MODELS)
def test_every_models_timed_function_is_a_users_function(
    name: str, framework: str, tmp_path: Path
) -> None:
    """The function a model's ``bind`` hands to the mode (``infer``, ``train_step``), for every
    task at the tiny size, on the framework's first mode. Every mode binds the same functions
    except torch:xla, which needs a process of its own (see test_torch_xla.py); its ``infer``
    is a local function of run_torch.py too."""
    _skip_if_missing(framework)
    workload = workloads.get(name)
    mode = FRAMEWORKS[framework].modes[0]
    stack = load_framework(framework, mode)
    stack.load()
    stack.init(RunSettings(cache_dir=str(tmp_path)))
    for params in _tiny_variants(workload):
        if workload.unsupported(params, framework, mode):
            continue  # numpy has no autodiff: no train step
        cell: Any = workload.implementations[framework](params)  # a ModelCell
        bound = cell.bind(workload.make_inputs(params, 0), stack.to_device, mode)
        assert_user_function(bound.fn, f"{name}'s bind on {framework}:{mode} with {params}")
