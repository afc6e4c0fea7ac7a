"""Seed 002's transforms: derivatives of any order, Hessian-vector products and vmap.

The seed's values (f(1) = 8, f'(1) = 12, f''(1) = -6, f'''(1) = -24) come out exactly on every
framework, computed by the workloads' own builders as each mode prepares them (jax.jit,
tf.function); the float64 references are checked against central differences; and a wrong
result fails parity. ``test_workload_contract.py`` runs each workload's tiny size on every
stack; the vmap styles it does not reach are run here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stackwars import workloads
from stackwars.errors import ParameterError
from stackwars.frameworks import default_stacks, load_framework, missing_reason
from stackwars.frameworks.base import Framework, RunSettings
from stackwars.results.schema import CellSpec
from stackwars.runner import parity, plan
from stackwars.workloads import _mlp

SEED_VALUES = {0: 8.0, 1: 12.0, 2: -6.0, 3: -24.0}
# torch.compile takes 4-15 s a compile here (2 cores), so its stack is left to
# test_workload_contract.py, which compiles each workload's tiny size; torch:xla runs only in a
# process of its own (test_torch_xla.py).
STACKS = [
    s
    for s in default_stacks()
    if not s.info.needs_own_process(s.mode) and str(s) != "torch:compile"
]
STYLES = ("loop", "vmap", "vectorised")
# torch has two autodiff APIs; the other frameworks run theirs as api=func.
APIS = [(s, "func") for s in STACKS] + [(s, "autograd") for s in STACKS if s.framework == "torch"]


def compiled_slow(*values: Any) -> Any:
    """A case whose stack (its first value) compiles is slow: jax.jit, tf.function."""
    stack = values[0]
    marks = pytest.mark.slow if stack.mode != "eager" else ()
    return pytest.param(*values, id="-".join(map(str, values)), marks=marks)


def started(stack: Any, tmp_path: Path) -> Framework:
    reason = missing_reason(stack.framework)
    if reason:
        pytest.skip(reason)
    framework = load_framework(stack.framework, stack.mode)
    framework.load()
    framework.init(RunSettings(cache_dir=str(tmp_path)))
    return framework


def outputs(framework: Framework, stack: Any, name: str, params: dict[str, Any]) -> list[Any]:
    """One call of the workload's function, as the stack prepares it, on seed 0's inputs."""
    workload = workloads.get(name)
    fn = workload.implementations[stack.framework](params)
    prepared = framework.prepare(fn, stack.mode)
    return framework.to_host(prepared(*framework.to_device(workload.make_inputs(params, 0))))


def runs(name: str, params: dict[str, Any], stack: Any) -> bool:
    return not plan.skip_reason(CellSpec(name, params, str(stack)))


@pytest.mark.parametrize(("stack", "api"), [compiled_slow(*case) for case in APIS])
def test_seed_002_derivative_values_are_exact(stack: Any, api: str, tmp_path: Path) -> None:
    workload = workloads.get("derivatives")
    framework = started(stack, tmp_path)
    for order, expected in SEED_VALUES.items():
        params = workload.resolve({"order": order, "n": 0, "api": api})
        if not runs("derivatives", params, stack):
            continue  # numpy has no autodiff: it runs order 0
        (value,) = outputs(framework, stack, "derivatives", params)
        assert value.shape == ()
        assert float(value) == expected, params


def test_numpy_runs_f_and_says_why_it_has_no_derivatives() -> None:
    workload = workloads.get("derivatives")
    f = workload.implementations["numpy"](workload.resolve({"order": 0, "n": 0}))
    assert f(*workload.make_inputs(workload.resolve({"n": 0}), 0)) == 8.0
    reason = plan.skip_reason(
        CellSpec("derivatives", workload.resolve({"order": 1}), "numpy:eager")
    )
    assert "NumPy has no autodiff" in reason
    refused = workload.implementations["numpy"](workload.resolve({"order": 1}))
    with pytest.raises(NotImplementedError, match="NumPy has no autodiff"):
        refused(*workload.make_inputs(workload.resolve({"n": 0}), 0))


def test_a_wrong_derivative_fails_parity() -> None:
    workload = workloads.get("derivatives")
    params = workload.resolve({"order": 1, "n": 1000})
    (x,) = workload.make_inputs(params, 0)
    reference = workload.reference(params, (x,))
    right = -12 * x * x + 18 * x + 6
    assert parity.check(workload, params, [right], reference)[0].ok
    # Off by one in the constant, or the second derivative given for the first.
    for wrong in (right - 1, -24 * x + 18):
        checked, reason = parity.check(workload, params, [wrong], reference)
        assert not checked.ok and "beyond" in reason


def mean_grad(*arrays: Any) -> list[Any]:
    """The batch-mean loss's gradient: the mean of the per-example gradients."""
    return [g.mean(axis=0) for g in _mlp.example_grads(*arrays)]


def test_the_hvp_reference_matches_central_differences_of_the_gradient() -> None:
    workload = workloads.get("hvp")
    params = workload.resolve({**workload.tiny, "dtype": "float64"})
    inputs = workload.make_inputs(params, 0)
    weights, data, tangents = inputs[:4], inputs[4:6], inputs[6:]
    step = 1e-5
    plus = mean_grad(*(w + step * v for w, v in zip(weights, tangents, strict=True)), *data)
    minus = mean_grad(*(w - step * v for w, v in zip(weights, tangents, strict=True)), *data)
    for exact, (p, m) in zip(_mlp.hvp(*inputs), zip(plus, minus, strict=True), strict=True):
        np.testing.assert_allclose(exact, (p - m) / (2 * step), rtol=1e-7, atol=1e-9)


def test_the_per_example_gradients_match_central_differences_of_the_loss() -> None:
    params = workloads.get("vmap-grad").resolve({**_mlp.TINY, "dtype": "float64"})
    *weights, x, y = workloads.get("vmap-grad").make_inputs(params, 0)

    def loss(ws: list[Any]) -> float:
        r = np.tanh(x[0] @ ws[0] + ws[1]) @ ws[2] + ws[3] - y[0]
        return 0.5 * float(r @ r)

    step = 1e-6
    for index, exact in enumerate(_mlp.example_grads(*weights, x, y)):
        numeric = np.zeros_like(weights[index])
        for at in np.ndindex(numeric.shape):
            shifted = [w.copy() for w in weights]
            shifted[index][at] += step
            up = loss(shifted)
            shifted[index][at] -= 2 * step
            numeric[at] = (up - loss(shifted)) / (2 * step)
        np.testing.assert_allclose(exact[0], numeric, rtol=1e-6, atol=1e-8)


def test_a_dropped_tangent_fails_hvp_parity() -> None:
    workload = workloads.get("hvp")
    params = workload.resolve({})
    inputs = workload.make_inputs(params, 0)
    reference = workload.reference(params, inputs)
    float32 = [r.astype(np.float32) for r in _mlp.hvp(*inputs)]
    assert parity.check(workload, params, float32, reference)[0].ok
    without_c1 = list(inputs)
    without_c1[7] = np.zeros_like(without_c1[7])
    checked, _ = parity.check(workload, params, list(_mlp.hvp(*without_c1)), reference)
    assert not checked.ok


@pytest.mark.parametrize("name", ["vmap-convolve", "vmap-grad"])
@pytest.mark.parametrize("stack", [compiled_slow(stack) for stack in STACKS])
def test_every_style_matches_the_reference(stack: Any, name: str, tmp_path: Path) -> None:
    workload = workloads.get(name)
    cells = [workload.resolve({**workload.tiny, "style": style}) for style in STYLES]
    cells = [params for params in cells if runs(name, params, stack)]
    framework = started(stack, tmp_path)
    for params in cells:
        got = outputs(framework, stack, name, params)
        reference = workload.reference(params, workload.make_inputs(params, 0))
        checked, reason = parity.check(workload, params, got, reference)
        assert checked.ok, (params["style"], reason)


def test_numpy_has_no_vmap_and_says_so() -> None:
    for name in ("vmap-convolve", "vmap-grad"):
        params = workloads.get(name).resolve({"style": "vmap"})
        assert "np.vectorize is a Python loop" in plan.skip_reason(
            CellSpec(name, params, "numpy:eager")
        )


def test_a_kernel_longer_than_its_signal_is_refused() -> None:
    workload = workloads.get("vmap-convolve")
    with pytest.raises(ParameterError, match="kernel <= length"):
        workload.work(workload.resolve({"length": 4, "kernel": 8}))


@pytest.mark.slow
def test_ir_shows_what_nested_grad_builds(tmp_path: Path) -> None:
    """Seed 002 prints make_jaxpr(f); `stackwars ir` gives the jaxpr and StableHLO of each
    order: the third derivative's graph holds the forward and three backward passes."""
    import json

    from stackwars.cli import main

    if missing_reason("jax"):
        pytest.skip(missing_reason("jax") or "")
    lines = {}
    for order in (1, 3):
        out = tmp_path / f"order{order}"
        argv = ["ir", "--workload", "derivatives", "--param", f"order={order}"]
        argv += ["--param", "n=8", "--stacks", "jax:jit", "--out", str(out)]
        assert main(argv) == 0
        index = json.loads((out / "jax_jit" / "index.json").read_text(encoding="utf-8"))
        assert {"jaxpr", "stablehlo"} <= set(index["stages"])
        jaxpr = (out / "jax_jit" / index["stages"]["jaxpr"]).read_text(encoding="utf-8")
        assert "mul" in jaxpr
        lines[order] = len(jaxpr.splitlines())
    assert lines[3] > lines[1]
