"""PyTorch on XLA (the torch:xla stack): the workloads' torch code, traced by torchax into a
JAX function, lowered to StableHLO and compiled and run by XLA through ``jax.jit``.

Everything after the trace is JAX's, so this is the jax framework with torch code on top: the
same environment (platforms, 64-bit, pre-allocation, persistent cache), device, compile
counting and first-run phases from JAX's monitoring events. ``trace_s`` is JAX tracing the
function, which here means running the torch code through torchax's op-by-op translation.

torchax 0.0.13 refers, while it loads, to named-tensor operator overloads that torch 2.13 no
longer has (``aten::prod.dim_Dimname``, ``aten::norm.names_out``, ...). ``load`` tolerates
exactly those lookups, only while torchax loads, and records which ones it tolerated: they
are named-tensor variants no workload calls.

Importing torchax registers a "jax" accelerator with torch, after which every torch.compile
in the process fails: this implementation runs only in a worker of its own.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import RunSettings
from stackwars.frameworks.jax import JaxFramework
from stackwars.frameworks.torch import TorchFramework

MODE = "xla"
# An overload of a named-tensor variant: a "dimname"/"names" word in its overload name.
NAMED_TENSOR_OVERLOAD = re.compile(r"(?:^|_)(?:dimname|names)(?:_|$)", re.IGNORECASE)
MISSING_OVERLOAD_MESSAGE = "has no overload name"

# Overloads tolerated while torchax loaded; a process loads torchax once.
_TOLERATED: list[str] = []


@dataclass(frozen=True)
class MissingOverload:
    """Stands in for an operator overload this torch build does not have. torchax only uses
    overloads as dictionary keys and decomposition-table entries while it loads; torch's
    decomposition lookup skips anything that is not an operator."""

    packet: str
    overload: str


@contextmanager
def tolerate_missing_named_overloads(tolerated: list[str]) -> Iterator[None]:
    """While active, looking up a named-tensor overload that torch does not have returns a
    :class:`MissingOverload` (appended to ``tolerated``) instead of raising; every other
    failed lookup still raises. Undone on exit."""
    from torch._ops import OpOverloadPacket

    lookup = OpOverloadPacket.__getattr__

    def tolerant(self: OpOverloadPacket, key: str) -> Any:
        try:
            return lookup(self, key)
        except AttributeError as exc:
            if MISSING_OVERLOAD_MESSAGE not in str(exc) or not NAMED_TENSOR_OVERLOAD.search(key):
                raise
            name = f"{self}.{key}"
            if name not in tolerated:  # torchax names some overloads in several tables
                tolerated.append(name)
            return MissingOverload(str(self), key)

    OpOverloadPacket.__getattr__ = tolerant
    try:
        yield
    finally:
        OpOverloadPacket.__getattr__ = lookup


class TorchXlaFramework(JaxFramework):
    """torch code through torchax and ``jax.jit``; mode ``xla`` only."""

    info = FRAMEWORKS["torch"]

    def __init__(self) -> None:
        super().__init__()
        self._torch = TorchFramework()

    def environment(self, settings: RunSettings) -> dict[str, str]:
        # torch's own settings keep anything torch caches inside the cell's folder; its CUDA
        # allocator is not used (arrays are JAX's), so its settings are not applied.
        caches = self._torch.environment(dataclasses.replace(settings, allocator_conf=""))
        return super().environment(settings) | caches

    def load(self) -> None:
        super().load()
        self._torch.load()
        # torchax makes a JAX array (its random key) while it loads.
        self.require_platform()
        # torchax's dispatch goes through functions wrapped by torch._disable_dynamo, whose
        # first call imports Dynamo (2-3 s): importing it here counts that as import time,
        # not as tracing the first workload.
        import torch._dynamo

        with tolerate_missing_named_overloads(_TOLERATED):
            import torchax

            # The default environment loads torchax's operator tables and decompositions,
            # which name missing overloads too; loading them here keeps that inside the
            # tolerance and out of the first call.
            environment = torchax.default_env()
        # Without this, torch.autograd.grad fails deep in the autograd engine with "element 0
        # of tensors does not require grad", which does not say why.
        environment.override_op_definition(torch.autograd.grad, _autograd_is_not_traced)

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        from torchax import interop

        return tuple(interop.torch_view(super().to_device(arrays)))

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        from torchax import interop

        if mode != MODE:
            raise ValueError(
                f"torch through torchax has no mode {mode!r}; it runs only {MODE!r} "
                "(torch's other modes run without torchax)"
            )
        return interop.jax_jit(fn)

    def sync(self, out: Any) -> None:
        from torchax import interop

        super().sync(interop.jax_view(out))

    def to_host(self, out: Any) -> list[Any]:
        from torchax import interop

        return super().to_host(interop.jax_view(out))

    def selftest_step(self) -> Callable[[Any, Any], Any]:
        return self._torch.selftest_step()  # torch code, run through torchax

    def gemm_call(self, a: Any, b: Any) -> Callable[[], Any]:
        return partial(self.prepare(operator.matmul, MODE), a, b)

    def attach(self, device: str) -> None:
        del device
        raise NotImplementedError(
            "torch:xla loads torchax, which breaks torch.compile for the rest of the process; "
            "it runs only in a worker of its own (stackwars.run)"
        )

    def first_call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        from torchax.tensor import OperatorNotFound

        try:
            return super().first_call(fn, args)
        except OperatorNotFound as exc:
            # torchax's message names the operator ("Operator with name aten::x has no
            # lowering"); say which stack could not lower it.
            raise NotImplementedError(
                f"torchax {_torchax_version()} cannot lower this torch code to JAX: {exc}"
            ) from exc

    def runtime_settings(self) -> dict[str, Any]:
        return super().runtime_settings() | {
            "jax_device": str(self._device),
            "torchax_version": _torchax_version(),
            "torchax_tolerated_missing_overloads": list(_TOLERATED),
        }


def _autograd_is_not_traced(*args: Any, **kwargs: Any) -> Any:
    del args, kwargs
    raise NotImplementedError(
        f"torch.autograd cannot run on torch:xla: torchax {_torchax_version()} turns torch "
        "operations into JAX ones before torch's autograd sees them, so no backward graph "
        "exists (JAX's own autodiff, jax.vjp, is what differentiates there); run this "
        "workload's forward task on torch:xla"
    )


def _torchax_version() -> str:
    import torchax

    return torchax.__version__
