"""GPT-2 small and GPT-Neo 1.3B: published parameter counts, every framework's forward against
the NumPy float64 forward at tiny scale, loss and gradients across frameworks, local attention
and the tied LM head."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from stackwars.workloads.models import gpt
from stackwars.workloads.models.spec import ModelSpec, count

PUBLISHED = {"gpt2-small": 124_439_808, "gpt-neo-1.3b": 1_315_575_808}
BATCH, SEQ = 2, 8
# Float32 against float64: relative error of a few ulps per op, far below this bound.
FORWARD_TOL = 1e-5
LOSS_TOL = 1e-5
GRAD_TOL = 1e-4

by_spec = pytest.mark.parametrize("spec", gpt.SPECS, ids=lambda spec: spec.name)


def tiny(spec: ModelSpec) -> Mapping[str, Any]:
    return spec.configs["tiny"]


def weights(spec: ModelSpec) -> dict[str, np.ndarray]:
    """Canonical weights drawn by the spec's own rule, in float64 for the float64 forwards."""
    rng = np.random.default_rng(0)
    return {
        name: spec.init(name, shape, rng).astype(np.float64)
        for name, shape in spec.layout(tiny(spec)).items()
    }


def as_float32(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: array.astype(np.float32) for name, array in arrays.items()}


def tokens(spec: ModelSpec, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, tiny(spec)["vocab"], (BATCH, SEQ), dtype=np.int32)


def reference(spec: ModelSpec) -> np.ndarray:
    return spec.forward(tiny(spec), weights(spec), {}, tokens(spec))


def reference_loss(spec: ModelSpec) -> float:
    logits = reference(spec)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return float(-np.take_along_axis(log_probs, tokens(spec, 2)[..., None], -1).mean())


def relative_error(output: Any, ref: np.ndarray) -> float:
    err = np.max(np.abs(np.asarray(output, dtype=np.float64) - ref))
    return float(err / np.sqrt(np.mean(ref**2)))


@by_spec
def test_published_parameter_count(spec: ModelSpec) -> None:
    assert count(spec.layout(spec.configs["full"])) == PUBLISHED[spec.name]


@by_spec
def test_torch_parameter_count(spec: ModelSpec) -> None:
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import gpt_torch

    small = gpt_torch.build(spec.name, tiny(spec))
    assert sum(p.numel() for p in small.parameters()) == count(spec.layout(tiny(spec)))
    with torch.device("meta"):
        full = gpt_torch.build(spec.name, spec.configs["full"])
    assert sum(p.numel() for p in full.parameters()) == PUBLISHED[spec.name]


@by_spec
def test_torch_forward_matches_numpy(spec: ModelSpec) -> None:
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import gpt_torch

    module = gpt_torch.build(spec.name, tiny(spec))
    gpt_torch.load_canonical(module, as_float32(weights(spec)))
    with torch.no_grad():
        logits = module(torch.tensor(tokens(spec)))
    assert logits.dtype == torch.float32
    assert relative_error(logits.numpy(), reference(spec)) < FORWARD_TOL


@pytest.mark.slow
@by_spec
def test_jax_forward_matches_numpy(spec: ModelSpec) -> None:
    jax = pytest.importorskip("jax")
    from stackwars.workloads.models import gpt_jax

    params = {name: jax.numpy.asarray(w) for name, w in as_float32(weights(spec)).items()}

    def run(params: Any, inputs: Any) -> Any:
        return gpt_jax.forward(spec.name, tiny(spec), params, {}, inputs, False)

    inputs = jax.numpy.asarray(tokens(spec))
    for fn in (run, jax.jit(run)):
        logits, buffers = fn(params, inputs)
        assert buffers == {}
        assert logits.dtype == jax.numpy.float32
        assert relative_error(logits, reference(spec)) < FORWARD_TOL


def keras_model(spec: ModelSpec, dtype: str = "float32") -> Any:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    pytest.importorskip("tensorflow")
    pytest.importorskip("keras")
    from stackwars.workloads.models import gpt_keras

    model = gpt_keras.build(spec.name, tiny(spec), dtype)
    gpt_keras.load_canonical(model, as_float32(weights(spec)))
    return model


@pytest.mark.slow
@by_spec
def test_tensorflow_forward_matches_numpy(spec: ModelSpec) -> None:
    model = keras_model(spec)
    import tensorflow as tf

    def run(inputs: Any) -> Any:
        return model(inputs, training=False)

    inputs = tf.constant(tokens(spec))
    for fn in (run, tf.function(run), tf.function(run, jit_compile=True)):
        logits = fn(inputs)
        assert logits.dtype == tf.float32
        assert relative_error(logits.numpy(), reference(spec)) < FORWARD_TOL


@by_spec
def test_canonical_params_round_trip(spec: ModelSpec) -> None:
    pytest.importorskip("torch")
    from stackwars.workloads.models import gpt_torch

    expected = as_float32(weights(spec))
    module = gpt_torch.build(spec.name, tiny(spec))
    gpt_torch.load_canonical(module, expected)
    from_torch = {k: v.detach().numpy() for k, v in gpt_torch.canonical_params(module).items()}
    from stackwars.workloads.models import gpt_keras

    from_tf = {k: v.numpy() for k, v in gpt_keras.canonical_params(keras_model(spec)).items()}
    for found in (from_torch, from_tf):
        assert list(found) == list(expected)
        for name, value in found.items():
            np.testing.assert_array_equal(value, expected[name], err_msg=name)


def torch_loss_and_grads(spec: ModelSpec, dtype: str) -> tuple[float, dict[str, np.ndarray]]:
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import gpt_torch

    module = gpt_torch.build(spec.name, tiny(spec)).to(getattr(torch, dtype))
    gpt_torch.load_canonical(module, weights(spec))
    loss = module.loss(torch.tensor(tokens(spec)), torch.tensor(tokens(spec, 2)))
    loss.backward()
    with torch.no_grad():
        # Gradients in canonical layout: put each into its parameter and read the views back.
        for p in module.parameters():
            assert p.grad is not None
            p.copy_(p.grad)
    grads = {k: v.detach().double().numpy() for k, v in gpt_torch.canonical_params(module).items()}
    return loss.item(), grads


def jax_loss_and_grads(spec: ModelSpec) -> tuple[float, dict[str, np.ndarray]]:
    jax = pytest.importorskip("jax")
    from stackwars.workloads.models import gpt_jax

    params = {name: jax.numpy.asarray(w) for name, w in as_float32(weights(spec)).items()}

    def objective(params: Any) -> Any:
        inputs, labels = jax.numpy.asarray(tokens(spec)), jax.numpy.asarray(tokens(spec, 2))
        return gpt_jax.loss(spec.name, tiny(spec), params, {}, inputs, labels)[0]

    loss, grads = jax.jit(jax.value_and_grad(objective))(params)
    return float(loss), {k: np.asarray(v, dtype=np.float64) for k, v in grads.items()}


def tensorflow_loss_and_grads(spec: ModelSpec, jit: bool) -> tuple[float, dict[str, np.ndarray]]:
    model = keras_model(spec)
    import tensorflow as tf

    from stackwars.workloads.models import gpt_keras

    variables = gpt_keras.canonical_params(model)

    def step(inputs: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = gpt_keras.loss(model, inputs, labels)
        return loss, tape.gradient(loss, list(variables.values()))

    fn = tf.function(step, jit_compile=True) if jit else step
    loss, grads = fn(tf.constant(tokens(spec)), tf.constant(tokens(spec, 2)))
    dense = [np.asarray(tf.convert_to_tensor(g), dtype=np.float64) for g in grads]
    return float(loss), dict(zip(variables, dense, strict=True))


@pytest.mark.slow
@by_spec
def test_loss_and_gradients_agree_across_frameworks(spec: ModelSpec) -> None:
    """float32 losses and gradients of every framework against torch autograd in float64
    (whose loss must equal the NumPy float64 one)."""
    ref_loss, ref_grads = torch_loss_and_grads(spec, "float64")
    assert abs(ref_loss - reference_loss(spec)) < 1e-12 * abs(ref_loss)
    runs = {
        "torch": torch_loss_and_grads(spec, "float32"),
        "jax": jax_loss_and_grads(spec),
        "tensorflow": tensorflow_loss_and_grads(spec, jit=False),
        "tensorflow:xla": tensorflow_loss_and_grads(spec, jit=True),
    }
    for stack, (loss, grads) in runs.items():
        assert abs(loss - ref_loss) < LOSS_TOL * abs(ref_loss), stack
        assert sorted(grads) == sorted(ref_grads), stack
        for name, grad in grads.items():
            assert relative_error(grad, ref_grads[name]) < GRAD_TOL, (stack, name)


def test_gpt_neo_local_layers_see_only_the_window() -> None:
    """Flipping GPT-Neo's local layers to global changes exactly the positions past the window."""
    spec = gpt.GPT_NEO_1_3B
    config = tiny(spec)
    window = config["window"]
    assert window < SEQ
    all_global = dict(config, layer_types=("global",) * config["layers"])
    local = spec.forward(config, weights(spec), {}, tokens(spec))
    flipped = spec.forward(all_global, weights(spec), {}, tokens(spec))
    # Within the window a local row's mask is the causal row, so the arithmetic is identical.
    np.testing.assert_array_equal(local[:, :window], flipped[:, :window])
    for position in range(window, SEQ):
        assert relative_error(local[:, position], flipped[:, position]) > 1e-3, position


def test_gpt_neo_layer_pattern_and_mask() -> None:
    full = gpt.GPT_NEO_1_3B.configs["full"]
    assert [gpt.attention_window(full, i) for i in range(4)] == [None, 256, None, 256]
    assert len(full["layer_types"]) == full["layers"]
    mask = gpt.causal_mask(SEQ, 3)
    for i in range(SEQ):
        assert [j for j in range(SEQ) if mask[i, j]] == list(range(max(0, i - 2), i + 1))
    assert gpt.attention_scale(full) == 1.0
    assert gpt.attention_scale(gpt.GPT2_SMALL.configs["full"]) == 1 / np.sqrt(768 // 12)


@by_spec
def test_projections_and_tied_head_in_layout(spec: ModelSpec) -> None:
    config = spec.configs["full"]
    shapes = spec.layout(config)
    d = config["d_model"]
    assert shapes["wte.embedding"] == (config["vocab"], d)
    assert not [name for name in shapes if "lm_head" in name]
    assert shapes["h.0.attn.out.bias"] == (d,)
    if spec is gpt.GPT2_SMALL:
        assert shapes["h.0.attn.qkv.kernel"] == (d, 3 * d)
        assert shapes["h.0.attn.qkv.bias"] == (3 * d,)
    else:
        assert [shapes[f"h.0.attn.{p}.kernel"] for p in "qkv"] == [(d, d)] * 3
        assert not [name for name in shapes if name.endswith(("q.bias", "k.bias", "v.bias"))]


def test_torch_lm_head_is_the_token_embedding() -> None:
    pytest.importorskip("torch")
    from stackwars.workloads.models import gpt_torch

    module = gpt_torch.build(gpt.GPT2_SMALL.name, tiny(gpt.GPT2_SMALL))
    assert module.lm_head.weight is module.wte.weight
    assert not [name for name, _ in module.named_parameters() if name.startswith("lm_head")]


@by_spec
def test_forward_flops_count_every_kernel(spec: ModelSpec) -> None:
    """2 FLOPs per kernel weight per token, plus scores and values, plus the tied head."""
    config, batch, seq = spec.configs["full"], 2, 64
    shapes = spec.layout(config)
    kernels = count({k: v for k, v in shapes.items() if k.endswith(".kernel")})
    attention = 4 * batch * config["layers"] * seq * seq * config["d_model"]
    head = 2 * batch * seq * count({"wte": shapes["wte.embedding"]})
    expected = 2 * batch * seq * kernels + attention + head
    assert spec.forward_flops(config, batch, seq) == expected
    sizes = spec.activations(config, batch, seq)
    assert batch * seq * config["vocab"] < sizes.peak_live < sizes.saved


@pytest.mark.slow
def test_keras_bfloat16_build() -> None:
    """Keras variables and logits in bfloat16, the loss in float32."""
    spec = gpt.GPT_NEO_1_3B
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    tf = pytest.importorskip("tensorflow")
    from stackwars.workloads.models import gpt_keras

    model = gpt_keras.build(spec.name, tiny(spec), "bfloat16")
    gpt_keras.load_canonical(model, weights(spec))
    assert {v.dtype for v in model.weights} == {"bfloat16"}
    inputs, labels = tf.constant(tokens(spec)), tf.constant(tokens(spec, 2))
    assert tf.function(model, jit_compile=True)(inputs).dtype == tf.bfloat16
    loss = tf.function(gpt_keras.loss, jit_compile=True)(model, inputs, labels)
    assert loss.dtype == tf.float32
    assert np.isfinite(loss.numpy())
