"""The transformer workloads (ffn, mha, layernorm, softmax): references checked against
independent computations, wrong implementations caught by parity, gradients on every stack."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stackwars import workloads
from stackwars.errors import ParameterError
from stackwars.frameworks import all_stacks, missing_reason
from stackwars.frameworks.base import RunSettings, flatten
from stackwars.results.schema import CellSpec
from stackwars.runner import parity
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun
from stackwars.timing.timer import TimingConfig
from stackwars.workloads import attention, ffn
from stackwars.workloads._numpy_ops import SOFTMAX_FLOPS_PER_ELEMENT, softmax

TINY_TIMING = TimingConfig(
    steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3
)


def params_for(name: str, size: str, **given: Any) -> dict[str, Any]:
    workload = workloads.get(name)
    return workload.resolve({**(workload.tiny if size == "tiny" else {}), **given})


def inputs_for(name: str, params: Mapping[str, Any]) -> list[np.ndarray]:
    return list(workloads.get(name).make_inputs(params, 0))


def finite_difference_grads(
    forward: Callable[..., Any], primals: list[np.ndarray], ct: np.ndarray
) -> list[np.ndarray]:
    """Central differences of sum(forward(*primals) * ct), one element at a time."""
    step, grads = 1e-6, []
    for array in primals:
        grad = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            original = array[index]
            array[index] = original + step
            above = np.sum(forward(*primals) * ct)
            array[index] = original - step
            below = np.sum(forward(*primals) * ct)
            array[index] = original
            grad[index] = (above - below) / (2 * step)
        grads.append(grad)
    return grads


@pytest.mark.parametrize(
    ("name", "given"),
    [("ffn", {}), ("mha", {"causal": False}), ("mha", {"causal": True})],
    ids=["ffn", "mha", "mha-causal"],
)
def test_hand_written_backward_matches_finite_differences(name: str, given: dict[str, Any]) -> None:
    params = params_for(name, "tiny", task="grad", dtype="float64", **given)
    arrays = inputs_for(name, params)
    result = workloads.get(name).reference(params, tuple(arrays))
    forward = workloads.get(name).implementations["numpy"]({**params, "task": "forward"})
    numeric = finite_difference_grads(forward, arrays[:-1], arrays[-1])
    for analytic, estimate in zip(result[1:], numeric, strict=True):
        np.testing.assert_allclose(analytic, estimate, rtol=1e-6, atol=1e-7)


def attention_by_loops(params: Mapping[str, Any], arrays: list[np.ndarray]) -> np.ndarray:
    """MHA one sequence, head and query at a time, attending only to keys it may see."""
    x, w_qkv, b_qkv, w_out, b_out = arrays
    d, heads = params["d_model"], params["heads"]
    width = d // heads
    qkv = x @ w_qkv + b_qkv
    merged = np.zeros_like(x)
    for b, s, h in np.ndindex(x.shape[0], x.shape[1], heads):
        cols = slice(h * width, (h + 1) * width)
        seen = s + 1 if params["causal"] else x.shape[1]
        q = qkv[b, s, cols]
        keys = qkv[b, :seen, d:][:, cols]
        values = qkv[b, :seen, 2 * d :][:, cols]
        weights = np.exp(keys @ q / math.sqrt(width))
        merged[b, s, cols] = weights @ values / weights.sum()
    return merged @ w_out + b_out


@pytest.mark.parametrize("causal", [False, True])
def test_mha_reference_matches_attention_by_loops(causal: bool) -> None:
    params = params_for("mha", "tiny", task="forward", dtype="float64", causal=causal)
    arrays = inputs_for("mha", params)
    expected = attention_by_loops(params, arrays)
    np.testing.assert_allclose(workloads.get("mha").reference(params, tuple(arrays)), expected)


def test_ffn_reference_matches_gpt2_gelu_by_formula() -> None:
    params = params_for("ffn", "tiny", dtype="float64")
    x, w1, b1, w2, b2 = inputs_for("ffn", params)
    pre = x @ w1 + b1
    # GPT-2's gelu(), as its TensorFlow source writes it.
    hidden = 0.5 * pre * (1 + np.tanh(math.sqrt(2 / math.pi) * (pre + 0.044715 * pre**3)))
    result = workloads.get("ffn").reference(params, (x, w1, b1, w2, b2))
    np.testing.assert_allclose(result, hidden @ w2 + b2)


def test_layernorm_and_softmax_references_match_numpy_formulas() -> None:
    params = params_for("layernorm", "tiny")
    x, gamma, beta = inputs_for("layernorm", params)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    result = workloads.get("layernorm").reference(params, (x, gamma, beta))
    np.testing.assert_allclose(result, expected * gamma + beta, rtol=1e-6)
    (scores,) = inputs_for("softmax", params_for("softmax", "tiny"))
    probs = workloads.get("softmax").reference(params_for("softmax", "tiny"), (scores,))
    np.testing.assert_allclose(probs.sum(-1), 1.0)
    np.testing.assert_allclose(np.log(probs[:, 1:] / probs[:, :1]), scores[:, 1:] - scores[:, :1])


def gelu_exact(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf, otypes=[x.dtype])
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def ffn_exact_gelu(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    return gelu_exact(x @ w1 + b1) @ w2 + b2


def ffn_without_output_bias(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    return ffn.gelu(x @ w1 + b1) @ w2


def mha_with(scale: float | None, mask: Callable[[int], np.ndarray]) -> Callable[..., Any]:
    """An MHA whose score scale (None: 1/sqrt(d_head)) or causal mask may be wrong."""

    def wrong_mha(x: Any, w_qkv: Any, b_qkv: Any, w_out: Any, b_out: Any, **kw: Any) -> Any:
        projected = np.split(x @ w_qkv + b_qkv, 3, axis=-1)
        q, k, v = (attention.split_heads(t, kw["heads"]) for t in projected)
        scores = q @ k.swapaxes(-1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
        scores = np.where(mask(x.shape[1]), scores, -np.inf)
        return attention.merge_heads(softmax(scores) @ v) @ w_out + b_out

    return wrong_mha


def everywhere(seq: int) -> np.ndarray:
    return np.ones((seq, seq), dtype=bool)


def upper(seq: int) -> np.ndarray:
    return np.tri(seq, dtype=bool).T


def mha_grad_without_softmax_row_term(*arrays: Any, heads: int, causal: bool) -> Any:
    """Backward that forgets the row-sum term of softmax's derivative."""

    def attention_grad(q: Any, k: Any, v: Any, probs: Any, d_out: Any) -> Any:
        d_scores = probs * (d_out @ v.swapaxes(-1, -2)) * q.shape[-1] ** -0.5
        return d_scores @ k, d_scores.swapaxes(-1, -2) @ q, probs.swapaxes(-1, -2) @ d_out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(attention, "attention_grad", attention_grad)
        return attention.mha_grad(*arrays, heads=heads, causal=causal)


def layernorm_unbiased_variance(x: Any, gamma: Any, beta: Any) -> Any:
    centered = x - x.mean(-1, keepdims=True)
    return centered / np.sqrt(x.var(-1, ddof=1, keepdims=True) + 1e-5) * gamma + beta


WRONG = {
    "tanh GELU replaced by exact": ("ffn", {}, ffn_exact_gelu),
    "output bias dropped": ("ffn", {}, ffn_without_output_bias),
    "no 1/sqrt(d_head) scale": ("mha", {}, mha_with(1.0, everywhere)),
    "causal mask missing": ("mha", {"causal": True}, mha_with(None, everywhere)),
    "causal mask transposed": ("mha", {"causal": True}, mha_with(None, upper)),
    "softmax backward without its row term": (
        "mha",
        {"task": "grad"},
        mha_grad_without_softmax_row_term,
    ),
    "unbiased variance": ("layernorm", {}, layernorm_unbiased_variance),
}


def float32_parity(name: str, params: Mapping[str, Any], fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` run in float32 on the workload's inputs passes parity."""
    workload, arrays = workloads.get(name), inputs_for(name, params)
    extra = {"heads": params["heads"], "causal": params["causal"]} if name == "mha" else {}
    outputs = [np.asarray(a) for a in flatten(fn(*arrays, **extra))]
    result, _ = parity.check(workload, params, outputs, workload.reference(params, tuple(arrays)))
    return result.ok is True


@pytest.mark.parametrize("size", ["tiny", "default"])
@pytest.mark.parametrize("bug", list(WRONG))
def test_a_wrong_implementation_fails_parity(bug: str, size: str) -> None:
    name, given, wrong = WRONG[bug]
    params = params_for(name, size, dtype="float32", **given)
    right = workloads.get(name).implementations["numpy"](params)
    assert float32_parity(name, params, lambda *arrays, **_: right(*arrays))
    assert not float32_parity(name, params, wrong)


def test_mha_refuses_heads_that_do_not_divide_d_model() -> None:
    mha = workloads.get("mha")
    params = mha.resolve({"heads": 5, "d_model": 768})
    for stage in (mha.work, mha.memory_bytes, lambda p: mha.make_inputs(p, 0)):
        with pytest.raises(
            ParameterError, match=r"d_model divisible by heads.*d_model=768, heads=5"
        ):
            stage(params)


def test_ffn_forward_flops_are_the_two_matmuls_plus_bias_and_gelu() -> None:
    b, s, d, f = 2, 64, 768, 3072
    forward = workloads.get("ffn").work(params_for("ffn", "default"))
    matmuls = 2 * b * s * (d * f + f * d)
    elementwise = b * s * f * (1 + ffn.GELU_FLOPS_PER_ELEMENT) + b * s * d
    assert forward.flops == matmuls + elementwise
    grad = workloads.get("ffn").work(params_for("ffn", "default", task="grad"))
    backward = 2 * matmuls + b * s * f * (ffn.GELU_GRAD_FLOPS_PER_ELEMENT + 1) + b * s * d
    assert grad.flops == forward.flops + backward
    assert grad.bytes == 2 * forward.bytes


def test_mha_flops_count_projections_and_both_attention_matmuls() -> None:
    b, s, d = 2, 64, 768
    work = workloads.get("mha").work(params_for("mha", "default"))
    matmuls = 2 * b * s * d * 4 * d + 2 * 2 * b * s * s * d
    scale_and_softmax = b * 12 * s * s * (1 + SOFTMAX_FLOPS_PER_ELEMENT)
    assert work.flops == matmuls + 4 * b * s * d + scale_and_softmax


@pytest.mark.parametrize(("name", "given"), [("ffn", {}), ("mha", {"causal": True})])
def test_grad_returns_the_output_then_x_and_every_weight_and_bias(
    name: str, given: dict[str, Any]
) -> None:
    params = params_for(name, "tiny", task="grad", **given)
    arrays = inputs_for(name, params)
    expected = [arrays[-1].shape] + [a.shape for a in arrays[:-1]]
    for result in (
        workloads.get(name).reference(params, tuple(arrays)),
        workloads.get(name).implementations["numpy"](params)(*arrays),
    ):
        assert [r.shape for r in result] == expected


@pytest.mark.parametrize(
    "name", ["ffn", "mha", "layernorm", "softmax"], ids=lambda name: f"{name}-default"
)
def test_memory_estimate_covers_the_inputs_and_the_reference(name: str) -> None:
    for task in ("forward", "grad") if name in ("ffn", "mha") else ("forward",):
        given = {"task": task} if name in ("ffn", "mha") else {}
        params = params_for(name, "default", **given)
        arrays = inputs_for(name, params)
        reference = flatten(workloads.get(name).reference(params, tuple(arrays)))
        needed = sum(a.nbytes for a in arrays) + sum(r.nbytes for r in reference)
        assert workloads.get(name).memory_bytes(params) > 2 * needed


# A stack that needs a process of its own (torch:xla, whose torchax breaks torch.compile for
# the rest of the process) cannot run here; torch:xla refuses autograd in any case.
GRAD_CELLS = [
    pytest.param(
        name,
        given,
        str(stack),
        id=f"{name}-grad-{stack}",
        # A compiling mode compiles the whole backward (torch.compile: 4-15 s here).
        marks=pytest.mark.slow if stack.mode != "eager" else (),
    )
    for name, given in (("ffn", {}), ("mha", {"causal": True}))
    for stack in all_stacks()
    # Keras stacks pick their backend once per process: test_keras.py runs them in workers.
    if not stack.info.needs_own_process(stack.mode) and stack.info.runs_on is None
]


@pytest.mark.parametrize(("name", "given", "stack"), GRAD_CELLS)
def test_every_stack_computes_gradients_at_tiny_size(
    name: str, given: dict[str, Any], stack: str, tmp_path: Path
) -> None:
    # The contract test runs the tiny forward task; this is the grad task's counterpart.
    framework = stack.partition(":")[0]
    if missing_reason(framework):
        pytest.skip(missing_reason(framework) or "")
    spec = CellSpec(name, params_for(name, "tiny", task="grad", **given), stack)
    request = Request(spec, RunSettings(cache_dir=str(tmp_path)), TINY_TIMING)
    cell = CellRun(request).run()
    assert cell.status == "ok", cell.reason
    assert cell.parity.ok
