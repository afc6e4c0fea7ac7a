"""The jax stacks for models: the family's plain-JAX functions over the canonical dicts.

Inference times ``forward(params, buffers, x)``; training times one pure train step,
``jax.value_and_grad`` of the loss, then ``optax.adamw``'s update and ``optax.apply_updates``,
returning the loss, the new parameters, buffers and optimizer state as a JAX training loop
does. The step's arguments are not donated: every timed call reuses them.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from stackwars.workloads.base import Bound
from stackwars.workloads.models import optim
from stackwars.workloads.models.adapter import ModelCell, ToDevice


def _cast(arrays: dict[str, Any], dtype: Any) -> dict[str, Any]:
    return {name: a if a.dtype == dtype else a.astype(dtype) for name, a in arrays.items()}


def _host(array: Any) -> np.ndarray:
    return np.asarray(array.astype(jnp.float32))


def bind(cell: ModelCell, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
    del mode  # jax.jit is applied by the framework
    family, name, config = cell.family_module(), cell.spec.name, cell.config
    dtype = jnp.dtype(cell.dtype)
    weights, buffers, rest = cell.split(to_device(inputs))
    params, buffers = _cast(weights, dtype), _cast(buffers, dtype)
    x = rest[0].astype(dtype) if cell.spec.inputs == "images" else rest[0]
    if not cell.train:

        def infer(params: Any, buffers: Any, x: Any) -> Any:
            return family.forward(name, config, params, buffers, x, False)[0]

        host = lambda out: [_host(a) for a in jax.tree.leaves(out)]  # noqa: E731
        return Bound(
            fn=infer, args=(params, buffers, x), host_outputs=host, computed_dtype=cell.dtype
        )
    return _bind_train(cell, params, buffers, x, rest[1])


def _bind_train(cell: ModelCell, params: Any, buffers: Any, x: Any, labels: Any) -> Bound:
    import optax

    family, name, config = cell.family_module(), cell.spec.name, cell.config
    optimizer = optax.adamw(
        optim.LR, b1=optim.BETA_1, b2=optim.BETA_2, eps=optim.EPS, weight_decay=optim.WEIGHT_DECAY
    )

    def train_step(params: Any, buffers: Any, opt_state: Any, x: Any, labels: Any) -> Any:
        def objective(params: Any) -> Any:
            return family.loss(name, config, params, buffers, x, labels)

        (loss, new_buffers), grads = jax.value_and_grad(objective, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return loss, optax.apply_updates(params, updates), new_buffers, opt_state

    order = list(params)

    def host(out: Any) -> list[np.ndarray]:
        loss, new_params = out[0], out[1]
        return [_host(loss), *(_host(new_params[n]) for n in order)]

    args = (params, buffers, optimizer.init(params), x, labels)
    return Bound(fn=train_step, args=args, host_outputs=host, computed_dtype=cell.dtype)
