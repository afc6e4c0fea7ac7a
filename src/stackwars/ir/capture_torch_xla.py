"""IR of PyTorch/XLA's lazy tensors (the torch-xla:lazy stack), captured in its own
environment: the function is called once without a step boundary, so that its graph is still
pending, and torch_xla renders what it recorded.

* ``lazy_ir``: torch_xla's own graph of the function's outputs (its IR nodes: ATen operations
  and XLA's), before lowering;
* ``stablehlo``: the StableHLO of every pending tensor on the device, which is the graph the
  next step boundary would cut and compile (for a train step: the loss and every parameter and
  optimizer-state update, not only what the function returns);
* ``hlo``: the HLO of the function's outputs, as torch_xla lowers them for XLA.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from stackwars.frameworks.base import flatten
from stackwars.ir.capture import Captured, attempt


def capture_lazy(fn: Callable[..., Any], args: tuple[Any, ...], framework: Any) -> Captured:
    del framework
    xla = importlib.import_module("torch_xla")
    model = importlib.import_module("torch_xla.core.xla_model")
    xla.sync()  # nothing pending but the function's own graph
    outputs = [leaf for leaf in flatten(fn(*args)) if hasattr(leaf, "device")]
    captured: dict[str, str] = {}
    failed: dict[str, str] = {}
    bindings = xla._XLAC  # torch_xla's C++ bindings: the graph renderers
    attempt(captured, failed, "lazy_ir", lambda: bindings._get_xla_tensors_text(outputs))
    attempt(captured, failed, "stablehlo", model.get_stablehlo)
    attempt(captured, failed, "hlo", lambda: bindings._get_xla_tensors_hlo(outputs))
    xla.sync()
    return captured, failed
