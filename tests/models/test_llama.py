"""LLaMA-3.1 8B: published size, and the same function and gradients on every framework."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest

from stackwars.workloads.models import llama
from stackwars.workloads.models.spec import count

SPEC = llama.LLAMA_3_1_8B
TINY = SPEC.configs["tiny"]
# Meta-Llama-3.1-8B's parameter count as published.
PUBLISHED_COUNT = 8_030_261_248
BATCH, SEQ = 2, 8
FORWARD_TOL = 1e-5
LOSS_TOL = 1e-5
GRAD_TOL = 1e-4
# The compiled case of a test (jax.jit, XLA) is slow: it compiles the whole model.
COMPILED = pytest.param(True, marks=pytest.mark.slow)


@pytest.fixture(scope="module")
def weights() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    return {
        name: SPEC.init(name, shape, rng).astype(np.float64)
        for name, shape in SPEC.layout(TINY).items()
    }


@pytest.fixture(scope="module")
def weights32(weights: dict[str, Any]) -> dict[str, Any]:
    return {name: value.astype(np.float32) for name, value in weights.items()}


@pytest.fixture(scope="module")
def batch() -> tuple[Any, Any]:
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, TINY["vocab"], (BATCH, SEQ)).astype(np.int32)
    labels = rng.integers(0, TINY["vocab"], (BATCH, SEQ)).astype(np.int32)
    return tokens, labels


@pytest.fixture(scope="module")
def reference(weights: dict[str, Any], batch: tuple[Any, Any]) -> Any:
    return SPEC.forward(TINY, weights, {}, batch[0])


def reference_loss(logits: Any, labels: Any) -> float:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return float(-np.take_along_axis(log_probs, labels[..., None], axis=-1).mean())


def relative_error(got: Any, want: Any) -> float:
    got = np.asarray(got, dtype=np.float64)
    return float(np.max(np.abs(got - want)) / np.sqrt(np.mean(want * want)))


def keras_modules() -> tuple[Any, Any]:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    tf = pytest.importorskip("tensorflow")
    pytest.importorskip("keras")
    from stackwars.workloads.models import llama_keras

    return tf, llama_keras


def test_published_parameter_count() -> None:
    assert count(SPEC.layout(SPEC.configs["full"])) == PUBLISHED_COUNT
    assert SPEC.parameter_count() == PUBLISHED_COUNT


def test_torch_parameter_counts() -> None:
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import llama_torch

    module = llama_torch.build(SPEC.name, TINY)
    assert sum(p.numel() for p in module.parameters()) == count(SPEC.layout(TINY))
    assert list(module.buffers()) == []
    views = llama_torch.canonical_params(module)
    assert {name: tuple(v.shape) for name, v in views.items()} == SPEC.layout(TINY)
    assert list(views) == list(SPEC.layout(TINY))
    with torch.device("meta"):
        full = llama_torch.build(SPEC.name, SPEC.configs["full"])
    assert sum(p.numel() for p in full.parameters()) == PUBLISHED_COUNT


def test_torch_forward_matches_numpy(weights32: Any, batch: Any, reference: Any) -> None:
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import llama_torch

    module = llama_torch.build(SPEC.name, TINY)
    llama_torch.load_canonical(module, weights32)
    with torch.no_grad():
        logits = module(torch.as_tensor(batch[0]))
    assert relative_error(logits.numpy(), reference) <= FORWARD_TOL


@pytest.mark.parametrize("jit", [False, COMPILED], ids=["eager", "jit"])
def test_jax_forward_matches_numpy(weights32: Any, batch: Any, reference: Any, jit: bool) -> None:
    jax = pytest.importorskip("jax")
    from stackwars.workloads.models import llama_jax

    def run(params: Any, tokens: Any) -> Any:
        return llama_jax.forward(SPEC.name, TINY, params, {}, tokens, False)[0]

    logits = (jax.jit(run) if jit else run)(weights32, batch[0])
    assert relative_error(logits, reference) <= FORWARD_TOL


@pytest.mark.parametrize("compiled", [False, COMPILED], ids=["eager", "xla"])
def test_tf_forward_matches_numpy(
    weights32: Any, batch: Any, reference: Any, compiled: bool
) -> None:
    tf, llama_keras = keras_modules()
    model = llama_keras.build(SPEC.name, TINY, "float32")
    llama_keras.load_canonical(model, weights32)

    def run(tokens: Any) -> Any:
        return model(tokens, training=False)

    logits = (tf.function(run, jit_compile=True) if compiled else run)(batch[0])
    assert relative_error(logits, reference) <= FORWARD_TOL


def test_tf_variables_follow_layout_and_dtype() -> None:
    _, llama_keras = keras_modules()
    model = llama_keras.build(SPEC.name, TINY, "bfloat16")
    params = llama_keras.canonical_params(model)
    assert {name: tuple(v.shape) for name, v in params.items()} == SPEC.layout(TINY)
    assert list(params) == list(SPEC.layout(TINY))
    assert len(model.trainable_variables) == len(params)
    assert {str(v.dtype) for v in model.variables} == {"bfloat16"}


@pytest.fixture(scope="module")
def reference_grads(weights: Any, batch: Any) -> tuple[float, dict[str, Any]]:
    """Loss and canonical gradients in float64, by torch autograd on the float64 module."""
    pytest.importorskip("torch")
    from stackwars.workloads.models import llama_torch

    module = llama_torch.build(SPEC.name, TINY).double()
    llama_torch.load_canonical(module, weights)
    return torch_loss_and_grads(module, batch)


def torch_loss_and_grads(module: Any, batch: Any) -> tuple[float, dict[str, Any]]:
    import torch

    from stackwars.workloads.models import llama_torch

    tokens, labels = (torch.as_tensor(a) for a in batch)
    loss = module.loss(tokens, labels)
    loss.backward()
    # Gradients copied into the parameters are read through the same canonical mapping.
    with torch.no_grad():
        for param in module.parameters():
            param.copy_(param.grad)
    grads = llama_torch.canonical_params(module)
    return loss.item(), {name: g.detach().double().numpy() for name, g in grads.items()}


def test_reference_loss_is_numpy_cross_entropy(
    reference: Any, batch: Any, reference_grads: Any
) -> None:
    assert math.isclose(reference_grads[0], reference_loss(reference, batch[1]), rel_tol=1e-12)


def check_loss_and_grads(loss: float, grads: dict[str, Any], reference_grads: Any) -> None:
    want_loss, want_grads = reference_grads
    assert abs(loss - want_loss) <= LOSS_TOL * abs(want_loss)
    assert list(grads) == list(want_grads)
    for name, want in want_grads.items():
        assert relative_error(grads[name], want) <= GRAD_TOL, name


def test_torch_loss_and_grads(weights32: Any, batch: Any, reference_grads: Any) -> None:
    pytest.importorskip("torch")
    from stackwars.workloads.models import llama_torch

    module = llama_torch.build(SPEC.name, TINY)
    llama_torch.load_canonical(module, weights32)
    check_loss_and_grads(*torch_loss_and_grads(module, batch), reference_grads)


@pytest.mark.slow
def test_jax_loss_and_grads(weights32: Any, batch: Any, reference_grads: Any) -> None:
    jax = pytest.importorskip("jax")
    from stackwars.workloads.models import llama_jax

    def objective(params: Any) -> Any:
        return llama_jax.loss(SPEC.name, TINY, params, {}, *batch)[0]

    loss, grads = jax.jit(jax.value_and_grad(objective))(weights32)
    grads = {name: grads[name] for name in SPEC.layout(TINY)}
    check_loss_and_grads(float(loss), grads, reference_grads)


@pytest.mark.parametrize("compiled", [False, COMPILED], ids=["eager", "xla"])
def test_tf_loss_and_grads(
    weights32: Any, batch: Any, reference_grads: Any, compiled: bool
) -> None:
    tf, llama_keras = keras_modules()
    model = llama_keras.build(SPEC.name, TINY, "float32")
    llama_keras.load_canonical(model, weights32)
    params = llama_keras.canonical_params(model)

    def step(tokens: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = llama_keras.loss(model, tokens, labels)
        return loss, tape.gradient(loss, list(params.values()))

    loss, grads = (tf.function(step, jit_compile=True) if compiled else step)(*batch)
    # The embedding's gradient arrives as IndexedSlices (rows of the looked-up tokens).
    dense = [tf.convert_to_tensor(g) for g in grads]
    check_loss_and_grads(float(loss), dict(zip(params, dense, strict=True)), reference_grads)


def scalar_llama3_frequency(config: Any, i: int) -> tuple[float, str]:
    """One remapped inverse frequency and which branch gave it, written out per HF's rule."""
    rs = config["rope_scaling"]
    original, factor = rs["original_max_position"], rs["factor"]
    low, high = rs["low_freq_factor"], rs["high_freq_factor"]
    dim = llama.head_dim(config)
    freq = 1.0 / config["rope_theta"] ** (2 * i / dim)
    wavelen = 2 * math.pi / freq
    if wavelen < original / high:
        return freq, "high"
    if wavelen > original / low:
        return freq / factor, "low"
    smooth = (original / wavelen - low) / (high - low)
    return (1 - smooth) * freq / factor + smooth * freq, "medium"


@pytest.mark.parametrize("scale", ["tiny", "full"])
def test_llama3_rope_remapping(scale: str) -> None:
    config = SPEC.configs[scale]
    got = llama.inverse_frequencies(config)
    scalar = [scalar_llama3_frequency(config, i) for i in range(llama.head_dim(config) // 2)]
    np.testing.assert_allclose(got, [f for f, _ in scalar], rtol=1e-13, atol=0)
    assert {branch for _, branch in scalar} == {"high", "medium", "low"}


def test_grouped_query_attention_shapes_and_grouping(weights: Any, batch: Any) -> None:
    """k/v kernels are [d, kv_heads*head_dim]; GQA equals multi-head attention whose k/v heads
    are each key/value head repeated for its consecutive query heads (HF repeat_kv)."""
    for config in (TINY, SPEC.configs["full"]):
        shapes = SPEC.layout(config)
        kv_width = config["kv_heads"] * llama.head_dim(config)
        assert config["kv_heads"] < config["heads"]
        for i in range(config["layers"]):
            assert shapes[f"layers.{i}.attn.k.kernel"] == (config["d_model"], kv_width)
            assert shapes[f"layers.{i}.attn.v.kernel"] == (config["d_model"], kv_width)
    hd, group = llama.head_dim(TINY), TINY["heads"] // TINY["kv_heads"]
    mha = {**TINY, "kv_heads": TINY["heads"]}
    expanded = dict(weights)
    for name, value in weights.items():
        if name.endswith((".attn.k.kernel", ".attn.v.kernel")):
            heads = value.reshape(TINY["d_model"], TINY["kv_heads"], hd)
            expanded[name] = np.repeat(heads, group, axis=1).reshape(TINY["d_model"], -1)
    np.testing.assert_allclose(
        SPEC.forward(mha, expanded, {}, batch[0]),
        SPEC.forward(TINY, weights, {}, batch[0]),
        rtol=1e-12,
        atol=1e-12,
    )
