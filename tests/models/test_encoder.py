"""BERT-base and ViT-B/16 (family "encoder"): published sizes, the same function and the same
gradients in NumPy, torch, JAX and TensorFlow at tiny scale, and the architecture details."""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest

from stackwars.workloads.models.encoder import (
    BERT_BASE,
    SPECS,
    VIT_B16,
    dense,
    layer_norm,
    vit_flops,
)
from stackwars.workloads.models.spec import ModelSpec, count

PUBLISHED = {"bert-base": 109_482_240, "vit-b16": 86_567_656}
BATCH, SEQ = 2, 8
# float32 parity (common brief): forward max |err| within this fraction of RMS(reference);
# observed errors are about 1e-6 of RMS.
FORWARD_RTOL = 1e-5
LOSS_RTOL = 1e-5
GRAD_RTOL = 1e-4

by_name = pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)


def stacks(runners: dict[str, Any], compiling: set[str]) -> list[Any]:
    """The runners' names as cases, those that compile (jax.jit, XLA) marked slow."""
    return [
        pytest.param(name, marks=pytest.mark.slow if name in compiling else ()) for name in runners
    ]


def tiny(spec: ModelSpec) -> dict[str, Any]:
    return dict(spec.configs["tiny"])


def weights(spec: ModelSpec, config: dict[str, Any]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    return {
        name: spec.init(name, shape, rng).astype(np.float64)
        for name, shape in spec.layout(config).items()
    }


def as32(arrays: dict[str, Any]) -> dict[str, Any]:
    return {name: array.astype(np.float32) for name, array in arrays.items()}


def batch(spec: ModelSpec, config: dict[str, Any]) -> tuple[Any, Any]:
    """float64 inputs (int32 tokens for BERT) and int32 labels."""
    rng = np.random.default_rng(1)
    if spec.inputs == "tokens":
        tokens = rng.integers(0, config["vocab"], (BATCH, SEQ)).astype(np.int32)
        return tokens, rng.integers(0, config["vocab"], (BATCH, SEQ)).astype(np.int32)
    shape = (BATCH, config["image"], config["image"], config["channels"])
    return rng.standard_normal(shape), rng.integers(0, config["classes"], BATCH).astype(np.int32)


def input32(x: Any) -> Any:
    return x if x.dtype == np.int32 else x.astype(np.float32)


def rms(array: Any) -> float:
    return float(np.sqrt(np.mean(np.square(array))))


def assert_close(got: Any, ref: Any, rtol: float, what: str, scale: float | None = None) -> None:
    """max |got - ref| <= rtol · scale, by default RMS(ref): zeros then demand exact zeros."""
    scale = rms(ref) if scale is None else scale
    err = float(np.max(np.abs(np.asarray(got, np.float64) - ref)))
    assert err <= rtol * scale, f"{what}: max |err| {err:.3g}, scale {scale:.3g}"


def grad_scale(name: str, grads: dict[str, Any]) -> float:
    """What a gradient's error is measured against: its RMS, but for a key bias, which adds
    the same q·bias to every score of a query and so cancels in the softmax (its gradient is
    zero up to rounding), the RMS of the key kernel's gradient."""
    if name.endswith(".attn.key.bias"):
        return rms(grads[name.removesuffix("bias") + "kernel"])
    return rms(grads[name])


def outputs(result: Any) -> tuple[Any, ...]:
    return tuple(result) if isinstance(result, tuple | list) else (result,)


def reference_loss(spec: ModelSpec, config: dict[str, Any], params: Any, x: Any, y: Any) -> float:
    """Mean cross-entropy from the NumPy float64 forward, by the family's definition."""
    out = spec.forward(config, params, {}, x)
    logits = out
    if spec is BERT_BASE:
        rows = np.concatenate([out[0], out[1][:, None]], axis=1)
        logits = rows @ params["embeddings.word.embedding"].T
        y = np.concatenate([y, y[:, :1]], axis=1)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return float(-np.take_along_axis(log_probs, y[..., None], axis=-1).mean())


@by_name
def test_full_layout_has_the_published_count(spec: ModelSpec) -> None:
    assert count(spec.layout(spec.configs["full"])) == PUBLISHED[spec.name]


@by_name
def test_torch_parameters_are_the_layout(spec: ModelSpec) -> None:
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import encoder_torch

    module = encoder_torch.build(spec.name, tiny(spec))
    assert sum(p.numel() for p in module.parameters()) == count(spec.layout(tiny(spec)))
    canonical = encoder_torch.canonical_params(module)
    assert {k: tuple(v.shape) for k, v in canonical.items()} == spec.layout(tiny(spec))
    assert list(canonical) == list(spec.layout(tiny(spec)))
    with torch.device("meta"):
        full = encoder_torch.build(spec.name, spec.configs["full"])
    assert sum(p.numel() for p in full.parameters()) == PUBLISHED[spec.name]


@by_name
def test_keras_variables_are_the_layout(spec: ModelSpec) -> None:
    pytest.importorskip("tensorflow")
    from stackwars.workloads.models import encoder_keras

    model = encoder_keras.build(spec.name, tiny(spec), "bfloat16")
    canonical = encoder_keras.canonical_params(model)
    assert {k: tuple(v.shape) for k, v in canonical.items()} == spec.layout(tiny(spec))
    assert list(canonical) == list(spec.layout(tiny(spec)))
    assert len(model.trainable_variables) == len(canonical)
    assert {v.dtype for v in model.variables} == {"bfloat16"}


def run_torch(spec: ModelSpec, config: Any, params: Any, x: Any) -> Any:
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import encoder_torch

    module = encoder_torch.build(spec.name, config)
    encoder_torch.load_canonical(module, params)
    # images arrive NCHW in torch
    tensor = torch.from_numpy(x if spec.inputs == "tokens" else x.transpose(0, 3, 1, 2).copy())
    with torch.no_grad():
        return [t.numpy() for t in outputs(module(tensor))]


def run_jax(spec: ModelSpec, config: Any, params: Any, x: Any, *, jit: bool) -> Any:
    jax = pytest.importorskip("jax")
    from stackwars.workloads.models import encoder_jax

    forward = partial(encoder_jax.forward, spec.name, config, train=False)
    out, _ = (jax.jit(forward) if jit else forward)(params, {}, x)
    return [np.asarray(t) for t in outputs(out)]


def run_tf(spec: ModelSpec, config: Any, params: Any, x: Any, *, xla: bool) -> Any:
    tf = pytest.importorskip("tensorflow")
    from stackwars.workloads.models import encoder_keras

    model = encoder_keras.build(spec.name, config, "float32")
    encoder_keras.load_canonical(model, params)
    call = partial(model, training=False)
    out = tf.function(call, jit_compile=True)(tf.constant(x)) if xla else call(x)
    return [t.numpy() for t in outputs(out)]


RUNNERS: dict[str, Callable[..., Any]] = {
    "torch": run_torch,
    "jax": partial(run_jax, jit=False),
    "jax-jit": partial(run_jax, jit=True),
    "tf": partial(run_tf, xla=False),
    "tf-xla": partial(run_tf, xla=True),
}


@by_name
@pytest.mark.parametrize("stack", stacks(RUNNERS, {"jax-jit", "tf-xla"}))
def test_forward_matches_numpy_float64(spec: ModelSpec, stack: str) -> None:
    config = tiny(spec)
    params, (x, _) = weights(spec, config), batch(spec, config)
    refs = outputs(spec.forward(config, params, {}, x))
    got = RUNNERS[stack](spec, config, as32(params), input32(x))
    assert len(got) == len(refs)
    for i, (out, ref) in enumerate(zip(got, refs, strict=True)):
        assert out.shape == ref.shape
        assert_close(out, ref, FORWARD_RTOL, f"{stack} output {i}")


def torch_loss_and_grads(spec: ModelSpec, config: Any, params: Any, x: Any, y: Any) -> Any:
    """Loss and canonical gradients from torch autograd, in the params' dtype."""
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import encoder_torch

    module = encoder_torch.build(spec.name, config)
    module.to(torch.from_numpy(next(iter(params.values()))).dtype)
    encoder_torch.load_canonical(module, params)
    tensor = torch.from_numpy(x if spec.inputs == "tokens" else x.transpose(0, 3, 1, 2).copy())
    loss = module.loss(tensor, torch.from_numpy(y))
    loss.backward()
    grads = {
        # A parameter the loss does not reach would have no gradient: zero.
        name: np.zeros(tuple(view(p).shape)) if p.grad is None else view(p.grad).numpy()
        for name, (p, view) in encoder_torch.canonical_map(module).items()
    }
    return loss.item(), grads


def jax_loss_and_grads(spec: ModelSpec, config: Any, params: Any, x: Any, y: Any) -> Any:
    jax = pytest.importorskip("jax")
    from stackwars.workloads.models import encoder_jax

    def loss(p: Any) -> Any:
        return encoder_jax.loss(spec.name, config, p, {}, x, y)[0]

    value, grads = jax.jit(jax.value_and_grad(loss))(params)
    return float(value), {name: np.asarray(g) for name, g in grads.items()}


def tf_loss_and_grads(
    spec: ModelSpec, config: Any, params: Any, x: Any, y: Any, *, xla: bool
) -> Any:
    tf = pytest.importorskip("tensorflow")
    from stackwars.workloads.models import encoder_keras

    model = encoder_keras.build(spec.name, config, "float32")
    encoder_keras.load_canonical(model, params)
    variables = encoder_keras.canonical_params(model)

    def step(inputs: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = encoder_keras.loss(model, inputs, labels)
        return loss, tape.gradient(loss, list(variables.values()))

    loss, grads = tf.function(step, jit_compile=True)(x, y) if xla else step(x, y)
    return float(loss), {
        # Embedding gradients arrive as IndexedSlices; unreached variables as None.
        name: np.zeros(v.shape) if g is None else tf.convert_to_tensor(g).numpy()
        for (name, v), g in zip(variables.items(), grads, strict=True)
    }


GRADIENTS: dict[str, Callable[..., Any]] = {
    "torch": torch_loss_and_grads,
    "jax": jax_loss_and_grads,
    "tf": partial(tf_loss_and_grads, xla=False),
    "tf-xla": partial(tf_loss_and_grads, xla=True),
}


@by_name
@pytest.mark.parametrize("stack", stacks(GRADIENTS, {"jax", "tf-xla"}))
def test_loss_and_gradients_agree(spec: ModelSpec, stack: str) -> None:
    """float32 loss and gradients of each framework against torch autograd in float64, whose
    loss is in turn the NumPy forward's cross-entropy."""
    config = tiny(spec)
    params, (x, y) = weights(spec, config), batch(spec, config)
    ref_loss, ref_grads = torch_loss_and_grads(spec, config, params, x, y)
    assert ref_loss == pytest.approx(reference_loss(spec, config, params, x, y), rel=1e-12)
    loss, grads = GRADIENTS[stack](spec, config, as32(params), input32(x), y)
    assert loss == pytest.approx(ref_loss, rel=LOSS_RTOL)
    assert grads.keys() == ref_grads.keys()
    for name, ref in ref_grads.items():
        assert grads[name].shape == ref.shape, name
        scale = grad_scale(name, ref_grads)
        assert_close(grads[name], ref, GRAD_RTOL, f"{stack} gradient of {name}", scale)


def test_bert_pooler_is_tanh_of_dense_first_token() -> None:
    config = tiny(BERT_BASE)
    params, (tokens, _) = weights(BERT_BASE, config), batch(BERT_BASE, config)
    seq, pooled = BERT_BASE.forward(config, params, {}, tokens)
    first = np.einsum("bd,de->be", seq[:, 0, :], params["pooler.kernel"])
    np.testing.assert_allclose(pooled, np.tanh(first + params["pooler.bias"]), rtol=1e-12)


def test_bert_output_is_post_layer_norm() -> None:
    """Undoing the last norm's gain and shift leaves rows of mean 0 and variance 1 (up to
    eps = 1e-12); the same weights run pre-LN do not."""
    config = tiny(BERT_BASE)
    params, (tokens, _) = weights(BERT_BASE, config), batch(BERT_BASE, config)
    last = f"layer.{config['layers'] - 1}.mlp_ln"

    def standardised(cfg: dict[str, Any]) -> Any:
        seq, _ = BERT_BASE.forward(cfg, params, {}, tokens)
        return (seq - params[f"{last}.bias"]) / params[f"{last}.scale"]

    rows = standardised(config)
    np.testing.assert_allclose(rows.mean(axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(rows.var(axis=-1), 1.0, atol=1e-9)
    assert np.max(np.abs(standardised({**config, "pre_ln": True}).var(axis=-1) - 1)) > 0.1


def test_vit_head_reads_the_class_token() -> None:
    """With no blocks the logits are the head of the normalised class token plus its position,
    whatever the image; with blocks, attention brings the image in."""
    config = {**tiny(VIT_B16), "layers": 0}
    params, (images, _) = weights(VIT_B16, config), batch(VIT_B16, config)
    cls = params["cls.embedding"][0, 0] + params["position.embedding"][0, 0]
    expected = dense(layer_norm(cls, params, "ln", config["ln_eps"]), params, "head")
    for image in (images, images[::-1], np.zeros_like(images)):
        logits = VIT_B16.forward(config, params, {}, image)
        np.testing.assert_allclose(logits, np.broadcast_to(expected, logits.shape), rtol=1e-12)
    config, params = tiny(VIT_B16), weights(VIT_B16, tiny(VIT_B16))
    logits = VIT_B16.forward(config, params, {}, images)
    assert np.min(np.abs(logits - VIT_B16.forward(config, params, {}, images[::-1]))) > 0


def test_vit_sequence_comes_from_the_image_size() -> None:
    config = tiny(VIT_B16)
    assert vit_flops(config, 1, 1) == vit_flops(config, 1, 1000)
    bigger = {**config, "image": 2 * config["image"]}
    tokens = (bigger["image"] // bigger["patch"]) ** 2 + 1
    assert VIT_B16.layout(bigger)["position.embedding"] == (1, tokens, config["d_model"])
    with pytest.raises(ValueError, match="divisible"):
        VIT_B16.layout({**config, "image": config["image"] + 1})


def test_bert_refuses_a_sequence_longer_than_its_positions() -> None:
    config = tiny(BERT_BASE)
    tokens = np.zeros((1, config["positions"] + 1), np.int32)
    with pytest.raises(ValueError, match="positions"):
        BERT_BASE.forward(config, weights(BERT_BASE, config), {}, tokens)
