"""The torch stacks for models: the family's ``torch.nn`` module, as its users run it.

torch:eager, torch:compile and torch-xla:lazy (the same code on torch_xla's lazy tensors) hold
the weights in the module, on the device the inputs were placed on, and time ``model(x)`` under
``no_grad`` (inference) or a whole train step: zero the gradients, loss, ``backward()``,
``torch.optim.AdamW.step()``. torch:xla runs the same module through torchax, whose ``jax_jit``
would bake closed-over weights into the program as constants, so there the weights are
arguments: ``torch.func.functional_call(model, state, (x,))``, as torchax's own module wrapper
does; it trains as torchax's ``train.make_train_step`` does (JAX's autodiff of the torch loss,
optax's AdamW), since torch's autograd cannot run inside torchax.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from stackwars.frameworks.base import flatten
from stackwars.workloads.base import Bound
from stackwars.workloads.models import optim
from stackwars.workloads.models.adapter import ModelCell, ToDevice, unsupported_reason


def _to_host(tensor: torch.Tensor) -> np.ndarray:
    # NumPy has no bfloat16: widen on the device first (exact).
    return tensor.detach().float().cpu().numpy()


def _model_input(cell: ModelCell, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if cell.spec.inputs == "images":
        # Canonical images are NHWC; torch's convolutions take NCHW.
        return x.permute(0, 3, 1, 2).contiguous().to(dtype)
    return x.long()  # torch's embeddings and losses take int64 ids


def _model(cell: ModelCell, state: Mapping[str, Any], dtype: torch.dtype, device: Any) -> Any:
    """The module on ``device`` (a CUDA GPU, torch_xla's lazy XLA device), holding ``state``'s
    values in ``dtype``. The values are loaded on the host and the module is moved once, as
    users move a model: placing the weights first and copying them into a module already on
    the device held two copies of them there (measured on an H100, 2026-11-26: an inference
    cell's device peak was twice the weights)."""
    family = cell.family_module()
    model = family.build(cell.spec.name, cell.config)
    family.load_canonical(model, state)
    return _moved(model.to(dtype), device)


def _moved(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """``model`` on ``device`` with its tied parameters still tied. Moving to another kind of
    device (torch_xla's) makes a new Parameter per module, so GPT-2's output layer would stop
    sharing the embedding's weight; torch_xla's users tie them again after the move."""
    groups: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        groups.setdefault(id(parameter), []).append(name)
    model.to(device)
    for first, *others in groups.values():
        shared = model.get_parameter(first)
        for name in others:
            owner, _, leaf = name.rpartition(".")
            setattr(model.get_submodule(owner), leaf, shared)
    return model


def bind(cell: ModelCell, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
    if mode == "xla":
        return _bind_xla(cell, inputs, to_device)
    dtype = getattr(torch, cell.dtype)
    weights, buffers, host_rest = cell.split(inputs)
    state = {**weights, **buffers}
    rest = to_device(host_rest)
    model = _model(cell, state, dtype, rest[0].device)
    x = _model_input(cell, rest[0], dtype)
    if not cell.train:
        model.eval()

        def infer(x: torch.Tensor) -> Any:
            with torch.no_grad():
                return model(x)

        host = lambda out: [_to_host(t) for t in flatten(out)]  # noqa: E731
        return Bound(fn=infer, args=(x,), host_outputs=host, computed_dtype=cell.dtype)
    # A reset copies the host weights into the module again: torch_xla may have donated the
    # parameters' buffers to their in-place updates, and a copy from the host needs no second
    # placement on the device.
    return _bind_train(cell, model, state, x, rest[1].long())


def _bind_train(
    cell: ModelCell,
    model: Any,
    host_state: Mapping[str, Any],
    x: torch.Tensor,
    labels: torch.Tensor,
) -> Bound:
    family = cell.family_module()
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=optim.LR,
        betas=(optim.BETA_1, optim.BETA_2),
        eps=optim.EPS,
        weight_decay=optim.WEIGHT_DECAY,
    )

    def train_step(x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = model.loss(x, labels)
        loss.backward()
        optimizer.step()
        return loss.detach()

    def reset() -> None:
        family.load_canonical(model, host_state)
        optimizer.state.clear()

    def host(loss: torch.Tensor) -> list[np.ndarray]:
        weights = family.canonical_params(model).values()
        return [_to_host(loss), *(_to_host(w) for w in weights)]

    return Bound(
        fn=train_step, args=(x, labels), host_outputs=host, computed_dtype=cell.dtype, reset=reset
    )


def _bind_xla(cell: ModelCell, inputs: tuple[Any, ...], to_device: ToDevice) -> Bound:
    import jax.numpy as jnp
    from torchax import interop

    reason = unsupported_reason(cell.params, "torch", "xla")
    if reason:
        raise NotImplementedError(reason)
    weights, buffers, rest = cell.split(tuple(torch.from_numpy(a) for a in inputs))
    dtype = getattr(torch, cell.dtype)
    model = _model(cell, {**weights, **buffers}, dtype, torch.device("cpu")).eval()
    jax_dtype = jnp.dtype(cell.dtype)
    state = {
        name: interop.torch_view(jnp.asarray(tensor.detach().float().numpy(), dtype=jax_dtype))
        # Buffers too, including the ones state_dict leaves out (e.g. RoPE frequencies):
        # inside jax_jit every tensor the module touches must be a torchax tensor.
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]
    }
    host_x = rest[0].numpy()
    if cell.spec.inputs == "images":
        # torchax tensors compute only inside its environment: convert on the host.
        host_x = np.ascontiguousarray(host_x.transpose(0, 3, 1, 2))
    (x,) = to_device([host_x])
    if cell.spec.inputs == "images" and jax_dtype != jnp.float32:
        x = interop.torch_view(interop.jax_view(x).astype(jax_dtype))

    if cell.train:
        (labels,) = to_device([rest[1].numpy()])
        return _bind_xla_train(cell, model, state, x, labels)

    def infer(state: dict[str, Any], x: Any) -> Any:
        return torch.func.functional_call(model, state, (x,))

    def host_outputs(out: Any) -> list[np.ndarray]:
        return [np.asarray(interop.jax_view(t).astype(jnp.float32)) for t in flatten(out)]

    return Bound(fn=infer, args=(state, x), host_outputs=host_outputs, computed_dtype=cell.dtype)


class _Loss(torch.nn.Module):
    """The model's loss as a module's forward, so that ``functional_call`` can run it."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: Any, labels: Any) -> Any:
        return self.model.loss(x, labels)


def _bind_xla_train(
    cell: ModelCell, model: Any, state: dict[str, Any], x: Any, labels: Any
) -> Bound:
    """One AdamW step as torchax trains (its ``train.make_train_step``): JAX's autodiff of the
    torch loss (``interop.jax_value_and_grad``), then optax's AdamW, on the weights as
    arguments; torch's own autograd cannot run inside torchax."""
    import optax
    import torchax
    from torchax import interop

    wrapped = _Loss(model).train()
    names = [name for name, _ in model.named_parameters()]
    weights = {name: state[name] for name in names}
    buffers = {name: tensor for name, tensor in state.items() if name not in weights}
    optimizer = optax.adamw(
        optim.LR, b1=optim.BETA_1, b2=optim.BETA_2, eps=optim.EPS, weight_decay=optim.WEIGHT_DECAY
    )
    environment = torchax.default_env()

    def loss(weights: Any, buffers: Any, x: Any, labels: Any) -> Any:
        with environment:
            named = {f"model.{name}": t for name, t in {**weights, **buffers}.items()}
            return torch.func.functional_call(wrapped, named, (x, labels))

    value_and_grad = interop.jax_value_and_grad(loss)

    def train_step(weights: Any, buffers: Any, opt_state: Any, x: Any, labels: Any) -> Any:
        value, grads = value_and_grad(weights, buffers, x, labels)
        updated: Any = interop.call_jax(optimizer.update, grads, opt_state, weights)
        updates, opt_state = updated
        return value, interop.call_jax(optax.apply_updates, weights, updates), opt_state

    def host_outputs(out: Any) -> list[np.ndarray]:
        # The new weights loaded into the host module, read back in the canonical order.
        value, new_weights = out[0], out[1]
        family = cell.family_module()
        host = {
            name: torch.from_numpy(np.asarray(interop.jax_view(t)))
            for name, t in new_weights.items()
        }
        model.load_state_dict(host, strict=False)
        return [
            np.asarray(interop.jax_view(value)),
            *(_to_host(w) for w in family.canonical_params(model).values()),
        ]

    opt_state = optimizer.init(interop.jax_view(weights))
    args = (weights, buffers, opt_state, x, labels)
    return Bound(fn=train_step, args=args, host_outputs=host_outputs, computed_dtype=cell.dtype)
