"""ResNet-50: published size and structure, and every framework computing the NumPy forward's
function (inference) and the same loss and gradients (training) at tiny scale."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from stackwars.workloads.models import resnet
from stackwars.workloads.models.spec import count

SPEC = resnet.RESNET50
FULL, TINY = SPEC.configs["full"], SPEC.configs["tiny"]
PUBLISHED_PARAMETERS = 25_557_032  # torchvision resnet50, trainable parameters
PUBLISHED_CONVS = 53  # stem + 16 bottlenecks × 3 + 4 shortcuts
# float32 results against the float64 reference: rounding across a few dozen layers stays
# well below this; a wrong padding, epsilon or missing term is orders of magnitude above.
FORWARD_TOLERANCE = 1e-5
LOSS_TOLERANCE = 1e-5
# Gradients: the largest error of a tensor against its RMS reached 1.1e-4 (TensorFlow's
# layer4 convolutions, whose gradient passes a training-mode BatchNorm over 16 values a
# channel) and 5.5e-5 on torch, AMD EPYC, 2026-11-29: float32 rounding, which the 1e-4 held
# before then left no margin for.
GRADIENT_TOLERANCE = 5e-4
# Training-mode BatchNorm over 4 images × 2×2 maps (last stage of the tiny config).
BATCH = 4


def rms(x: Any) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


@pytest.fixture(scope="module")
def weights() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    shapes = {**SPEC.layout(TINY), **SPEC.buffers(TINY)}
    return {name: SPEC.init(name, shape, rng).astype(np.float64) for name, shape in shapes.items()}


@pytest.fixture(scope="module")
def data() -> tuple[Any, Any]:
    rng = np.random.default_rng(1)
    images = rng.standard_normal((BATCH, TINY["image"], TINY["image"], resnet.IMAGE_CHANNELS))
    labels = rng.integers(0, TINY["classes"], BATCH).astype(np.int32)
    return images, labels


def float32(arrays: Mapping[str, Any]) -> dict[str, Any]:
    return {name: np.asarray(value, np.float32) for name, value in arrays.items()}


def split(weights: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    params = {name: weights[name] for name in SPEC.layout(TINY)}
    return params, {name: weights[name] for name in SPEC.buffers(TINY)}


def test_full_parameter_count() -> None:
    assert count(SPEC.layout(FULL)) == PUBLISHED_PARAMETERS
    assert SPEC.parameter_count() == PUBLISHED_PARAMETERS


def test_convs_and_batch_norms() -> None:
    layout = SPEC.layout(FULL)
    kernels = [name for name, shape in layout.items() if len(shape) == 4]
    scales = [name for name in layout if name.endswith(".scale")]
    means = [name for name in SPEC.buffers(FULL) if name.endswith(".mean")]
    assert len(kernels) == len(scales) == len(means) == PUBLISHED_CONVS
    assert [name for name in layout if len(layout[name]) != 4 and name.startswith("fc")] == [
        "fc.kernel",
        "fc.bias",
    ]


def test_stride_on_the_three_by_three() -> None:
    """v1.5: a downsampling block strides on its 3×3 conv and its shortcut, and each stage
    halves the side; checked on torch's full-size module, shapes only (meta device)."""
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import resnet_torch

    with torch.device("meta"):
        module = resnet_torch.build(SPEC.name, FULL)
        images = torch.empty(1, resnet.IMAGE_CHANNELS, FULL["image"], FULL["image"])
    sides: list[tuple[int, ...]] = []
    for stage in range(len(FULL["blocks"])):
        layer = getattr(module, f"layer{stage + 1}")
        stride = 1 if stage == 0 else 2
        assert layer[0].conv1.stride == (1, 1)
        assert layer[0].conv2.stride == (stride, stride)
        assert layer[0].downsample.conv.stride == (stride, stride)
        layer.register_forward_hook(lambda _m, _i, out: sides.append(tuple(out.shape[1:])))
    module(images)
    width = FULL["width"] * resnet.EXPANSION
    expected = [
        (width * 2**stage, FULL["image"] // 4 // 2**stage, FULL["image"] // 4 // 2**stage)
        for stage in range(len(FULL["blocks"]))
    ]
    assert sides == expected


def test_torch_parameters_are_the_canonical_ones() -> None:
    torch = pytest.importorskip("torch")
    from stackwars.workloads.models import resnet_torch

    module = resnet_torch.build(SPEC.name, TINY)
    assert sum(p.numel() for p in module.parameters()) == count(SPEC.layout(TINY))
    assert sum(b.numel() for b in module.buffers()) == count(SPEC.buffers(TINY))
    canonical = resnet_torch.canonical_params(module)
    assert list(canonical) == list(SPEC.layout(TINY))
    assert {name: tuple(p.shape) for name, p in canonical.items()} == SPEC.layout(TINY)
    with torch.device("meta"):
        full = resnet_torch.build(SPEC.name, FULL)
    assert sum(p.numel() for p in full.parameters()) == PUBLISHED_PARAMETERS


def torch_forward(weights: Mapping[str, Any], images: Any) -> Any:
    import torch

    from stackwars.workloads.models import resnet_torch

    module = resnet_torch.build(SPEC.name, TINY)
    resnet_torch.load_canonical(module, weights)
    module.eval()
    with torch.no_grad():
        return module(torch.from_numpy(images).permute(0, 3, 1, 2)).numpy()


def jax_forward(jit: bool) -> Callable[[Mapping[str, Any], Any], Any]:
    def run(weights: Mapping[str, Any], images: Any) -> Any:
        import jax

        from stackwars.workloads.models import resnet_jax

        def forward(params: Any, buffers: Any, x: Any) -> Any:
            return resnet_jax.forward(SPEC.name, TINY, params, buffers, x, False)[0]

        return np.asarray((jax.jit(forward) if jit else forward)(*split(weights), images))

    return run


def keras_model(weights: Mapping[str, Any], dtype: str = "float32") -> Any:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    from stackwars.workloads.models import resnet_keras

    model = resnet_keras.build(SPEC.name, TINY, dtype)
    resnet_keras.load_canonical(model, weights)
    return model


def tf_forward(jit: bool) -> Callable[[Mapping[str, Any], Any], Any]:
    def run(weights: Mapping[str, Any], images: Any) -> Any:
        import tensorflow as tf

        model = keras_model(weights)

        def forward(x: Any) -> Any:
            return model(x, training=False)

        return np.asarray((tf.function(forward, jit_compile=True) if jit else forward)(images))

    return run


def cases(stacks: Mapping[str, Any]) -> list[Any]:
    """The stacks as cases, those that compile the model (jax.jit, XLA) marked slow."""
    return [
        pytest.param(name, marks=pytest.mark.slow if name in ("jax-jit", "tf-xla") else ())
        for name in stacks
    ]


STACKS = {
    "torch": ("torch", torch_forward),
    "jax": ("jax", jax_forward(jit=False)),
    "jax-jit": ("jax", jax_forward(jit=True)),
    "tf": ("tensorflow", tf_forward(jit=False)),
    "tf-xla": ("tensorflow", tf_forward(jit=True)),
}


@pytest.mark.parametrize("stack", cases(STACKS))
def test_forward_matches_numpy(stack: str, weights: Any, data: Any) -> None:
    framework, run = STACKS[stack]
    pytest.importorskip(framework)
    images = data[0]
    reference = SPEC.forward(TINY, *split(weights), images)
    assert reference.shape == (BATCH, TINY["classes"])
    output = run(float32(weights), images.astype(np.float32))
    assert output.shape == reference.shape
    assert np.max(np.abs(output - reference)) <= FORWARD_TOLERANCE * rms(reference)


Trained = tuple[float, dict[str, Any], dict[str, Any] | None]


def torch_train(weights: Mapping[str, Any], images: Any, labels: Any) -> Trained:
    """Loss, canonical gradients and the running statistics after one training forward, in
    the precision of ``weights`` (float64 gives the reference)."""
    import torch

    from stackwars.workloads.models import resnet_torch

    module = resnet_torch.build(SPEC.name, TINY).to(torch.from_numpy(images).dtype)
    resnet_torch.load_canonical(module, weights)
    module.train()
    loss = module.loss(torch.from_numpy(images).permute(0, 3, 1, 2), torch.from_numpy(labels))
    loss.backward()
    buffers = {
        name.replace("running_mean", "mean").replace("running_var", "var"): b.numpy().copy()
        for name, b in module.named_buffers()
    }
    # Gradients take the parameters' places, so that canonical_params lays them out.
    with torch.no_grad():
        for parameter in module.parameters():
            assert parameter.grad is not None
            parameter.copy_(parameter.grad)
    canonical = resnet_torch.canonical_params(module)
    grads = {name: g.detach().numpy().copy() for name, g in canonical.items()}
    return float(loss.detach()), grads, buffers


def jax_train(jit: bool) -> Callable[[Mapping[str, Any], Any, Any], Trained]:
    def run(weights: Mapping[str, Any], images: Any, labels: Any) -> Trained:
        import jax

        from stackwars.workloads.models import resnet_jax

        params, buffers = split(weights)

        def loss(params: Any, x: Any, y: Any) -> Any:
            return resnet_jax.loss(SPEC.name, TINY, params, buffers, x, y)

        step = jax.value_and_grad(loss, has_aux=True)
        (value, new_buffers), grads = (jax.jit(step) if jit else step)(params, images, labels)
        as_numpy = {name: np.asarray(b) for name, b in new_buffers.items()}
        return float(value), {name: np.asarray(g) for name, g in grads.items()}, as_numpy

    return run


def tf_train(jit: bool) -> Callable[[Mapping[str, Any], Any, Any], Trained]:
    def run(weights: Mapping[str, Any], images: Any, labels: Any) -> Trained:
        import tensorflow as tf

        from stackwars.workloads.models import resnet_keras

        model = keras_model(weights)
        variables = resnet_keras.canonical_params(model)

        def step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                value = resnet_keras.loss(model, x, y)
            return value, tape.gradient(value, list(variables.values()))

        value, grads = (tf.function(step, jit_compile=True) if jit else step)(images, labels)
        canonical = {name: np.asarray(g) for name, g in zip(variables, grads, strict=True)}
        return float(value), canonical, None

    return run


# Eager JAX differentiation compiles every primitive once (~20 s here); jit covers jax.grad.
TRAIN_STACKS = {
    "torch": ("torch", torch_train),
    "jax-jit": ("jax", jax_train(jit=True)),
    "tf": ("tensorflow", tf_train(jit=False)),
    "tf-xla": ("tensorflow", tf_train(jit=True)),
}


@pytest.fixture(scope="module")
def trained_float64(weights: Any, data: Any) -> Trained:
    """The training step's reference: torch in float64 (its inference forward is checked
    against NumPy above)."""
    pytest.importorskip("torch")
    return torch_train(weights, *data)


@pytest.mark.parametrize("stack", cases(TRAIN_STACKS))
def test_loss_and_gradients_match(
    stack: str, weights: Any, data: Any, trained_float64: Any
) -> None:
    """Training mode (batch statistics) in float32 agrees with the float64 reference: loss,
    every gradient, and the moved running statistics where the stack exposes them."""
    framework, run = TRAIN_STACKS[stack]
    pytest.importorskip(framework)
    reference_loss, reference_grads, reference_buffers = trained_float64
    loss, grads, buffers = run(float32(weights), data[0].astype(np.float32), data[1])
    assert abs(loss - reference_loss) <= LOSS_TOLERANCE * abs(reference_loss)
    assert sorted(grads) == sorted(reference_grads)
    for name, reference in reference_grads.items():
        error = np.max(np.abs(grads[name] - reference))
        assert error <= GRADIENT_TOLERANCE * rms(reference), name
    if buffers is not None and reference_buffers is not None:
        assert sorted(buffers) == sorted(reference_buffers)
        for name, reference in reference_buffers.items():
            error = np.max(np.abs(buffers[name] - reference))
            assert error <= FORWARD_TOLERANCE * np.max(np.abs(reference)), name


def test_bfloat16_builds_and_runs(weights: Any, data: Any) -> None:
    """Keras variables take the requested dtype and the low-precision forward stays close."""
    pytest.importorskip("tensorflow")
    model = keras_model(float32(weights), "bfloat16")
    assert {variable.dtype for variable in model.variables} == {"bfloat16"}
    reference = SPEC.forward(TINY, *split(weights), data[0])
    output = np.asarray(model(data[0].astype(np.float32), training=False), np.float64)
    # bfloat16 keeps 8 significant bits: a few units of 2⁻⁸ relative after a dozen layers.
    assert np.max(np.abs(output - reference)) <= 0.1 * rms(reference)
