"""IR of PyTorch: FX graphs, Inductor's code and graph breaks for torch:compile; the exported
ATen graph, StableHLO and optimized HLO for torch:xla (through torchax)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.ir.capture import Captured, attempt, text_of


def capture_compile(fn: Callable[..., Any], args: tuple[Any, ...], framework: Any) -> Captured:
    import torch
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import run_and_get_code

    del framework
    graphs: list[str] = []

    def recording_backend(graph_module: Any, example_inputs: list[Any]) -> Any:
        graphs.append(graph_module.print_readable(print_output=False))
        return compile_fx(graph_module, example_inputs)

    captured: dict[str, str] = {}
    failed: dict[str, str] = {}
    torch._dynamo.reset()  # a fresh compile, whatever this process compiled before
    _, code = run_and_get_code(torch.compile(fn, backend=recording_backend), *args)
    captured["fx_graph"] = "\n\n".join(graphs)
    captured["inductor_code"] = "\n\n".join(code)
    attempt(captured, failed, "graph_breaks", lambda: _graph_breaks(fn, args))
    return captured, failed


def _graph_breaks(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    import torch

    torch._dynamo.reset()
    explanation = torch._dynamo.explain(fn)(*args)
    reasons = "\n".join(f"- {reason.reason}" for reason in explanation.break_reasons)
    return (
        f"graphs: {explanation.graph_count}\n"
        f"graph breaks: {explanation.graph_break_count}\n{reasons}\n"
    )


def capture_xla(fn: Callable[..., Any], args: tuple[Any, ...], framework: Any) -> Captured:
    """The ATen graph torch.export sees, and the StableHLO and optimized HLO of the function
    the stack runs: ``jax.jit`` of torchax's JAX view of the torch code, on the same arguments.

    The IR is lowered from that view rather than from the exported program because export
    decomposes some operations (attention among them) differently from torchax's own dispatch:
    XLA compiled a different module from the one that ran."""
    import jax
    import numpy as np
    import torch
    from torch.utils import _pytree
    from torchax import interop

    # A model's arguments nest (its weights come as a dict): export sees the flat leaves.
    leaves, structure = _pytree.tree_flatten(args)

    class AsModule(torch.nn.Module):
        """torch.export takes modules: this one's forward is the workload's function."""

        def forward(self, *inputs: Any) -> Any:
            return fn(*_pytree.tree_unflatten(list(inputs), structure))

    captured: dict[str, str] = {}
    failed: dict[str, str] = {}

    def exported_graph() -> str:
        host = [np.asarray(array) for array in framework.to_host(leaves)]
        exported = torch.export.export(AsModule(), tuple(torch.from_numpy(a) for a in host))
        return exported.graph_module.print_readable(print_output=False)

    attempt(captured, failed, "exported_graph", exported_graph)
    lowered = jax.jit(interop.jax_view(fn)).lower(*interop.jax_view(tuple(args)))
    attempt(captured, failed, "stablehlo", lowered.as_text)
    attempt(captured, failed, "optimized_hlo", lambda: text_of(lowered.compile().as_text()))
    return captured, failed
