"""PyTorch/XLA (the ``torch-xla:lazy`` stack): the workloads' torch code on torch_xla's lazy
tensors, as seed 001 ran it. Not torchax (``torch:xla``), which turns torch code into one JAX
function: here every torch operation on an XLA tensor records a node of a lazy graph, a step
boundary (``torch_xla.sync()``, the old ``xm.mark_step()``) cuts the graph recorded since the
last one, looks its hash up in the compiled-graph cache, compiles it with XLA on a miss, and
starts executing it; ``xm.wait_device_ops()`` waits until every execution started has ended.

It runs in an environment of its own (``stackwars env create torch-xla``): torch_xla 2.9.0
needs torch 2.9.0, and the main environment has torch 2.13.

Timing: a call is the function and its step boundary, as a torch_xla training loop writes it
(without the boundary, calls timed back to back would grow one graph that is never cut, and
only the last call's outputs would be computed). ``sync`` is the framework's own wait. A
compilation is torch_xla's ``UncachedCompile`` counter; its metrics (graphs executed, compile
and execute time, transfers, operators that fell back to the CPU) are the cell's counters.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import DeviceSupport, RunSettings, split_device, unavailable
from stackwars.frameworks.torch import TorchFramework

MODE = "lazy"
# torch_xla's metrics (torch_xla.debug.metrics): counters are counts; metrics hold a number of
# samples and an accumulated value (nanoseconds for the *Time ones).
COUNTERS = {
    "graphs_compiled": "UncachedCompile",
    "graphs_from_cache": "CachedCompile",
    "graphs_executed": "ExecuteComputation",
    "steps": "MarkStep",
}
TIMES = {
    "compile_s": "CompileTime",
    "execute_s": "ExecuteTime",
    "trace_s": "LazyTracing",
}
TRANSFERS = {
    "to_device": "TransferToDeviceTime",
    "from_device": "TransferFromDeviceTime",
}
# A counter named "aten::op" counts calls of an operator torch_xla has no lowering for: it ran
# on the CPU, its inputs copied off the device and its result back.
FALLBACK_PREFIX = "aten::"
NANOSECONDS = 1e-9
PJRT_DEVICES = {"cpu": "CPU", "gpu": "CUDA"}


def _torch_xla(module: str = "") -> Any:
    """torch_xla, or one of its modules. It is installed in the torch-xla environment only, so
    it is imported by name: the main environment's type checker cannot see it."""
    return importlib.import_module(f"torch_xla.{module}" if module else "torch_xla")


def _metrics() -> Any:
    return _torch_xla("debug.metrics")


class TorchLazyFramework(TorchFramework):
    info = FRAMEWORKS["torch-xla"]

    def __init__(self) -> None:
        super().__init__()
        self._before_first: dict[str, float] = {}

    def environment(self, settings: RunSettings) -> dict[str, str]:
        kind = split_device(settings.device)[0]
        # PJRT_DEVICE picks torch_xla's runtime; without it torch_xla guesses and warns.
        return {"PJRT_DEVICE": PJRT_DEVICES.get(kind, kind.upper())}

    def load(self) -> None:
        for module in ("", "core.xla_model", "debug.metrics"):
            _torch_xla(module)

    def init(self, settings: RunSettings) -> dict[str, Any]:
        import torch

        torch_xla = _torch_xla()

        if split_device(settings.device)[0] != "cpu":
            raise unavailable(self.device_support(self.device_facts()), settings.device)
        self._device = torch_xla.device()
        if settings.threads is not None:
            torch.set_num_threads(settings.threads)
        return {"device": str(self._device)}

    def device_facts(self) -> dict[str, Any]:
        return {}

    def device_support(self, facts: Mapping[str, Any]) -> list[DeviceSupport]:
        del facts
        return [DeviceSupport("cpu", ("xla:0",))] + [
            DeviceSupport(kind, reason=why) for kind, why in self.info.not_on.items()
        ]

    def attach(self, device: str) -> None:
        torch_xla = _torch_xla()

        del device
        self._device = torch_xla.device()

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        torch_xla = _torch_xla()

        if mode != MODE:
            raise ValueError(f"torch-xla has no mode {mode!r}; modes: {', '.join(self.info.modes)}")

        def step(*args: Any) -> Any:
            out = fn(*args)
            torch_xla.sync()  # the step boundary: cut, compile if new, start executing
            return out

        # What the set-up left pending (a model's weights copied into its module) is cut and
        # run now, so that the first timed call's graph is the function's own: otherwise it
        # would hold the copies, and the second call would compile the function again.
        self.settle()
        return step

    def settle(self) -> None:
        _torch_xla().sync()
        _torch_xla("core.xla_model").wait_device_ops()

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        import torch

        tensors = tuple(torch.as_tensor(array).to(self._device) for array in arrays)
        self.sync(tensors)
        return tensors

    def sync(self, out: Any) -> None:
        xm = _torch_xla("core.xla_model")

        # Every call ends at a step boundary (prepare), so what is left is to wait for the
        # executions it started.
        del out
        xm.wait_device_ops()

    def is_async(self) -> bool:
        return True

    def compile_count(self) -> int:
        return int(_metrics().counter_value(COUNTERS["graphs_compiled"]) or 0)

    def counters(self) -> dict[str, float]:
        metrics = _metrics()
        found: dict[str, float] = {
            name: float(metrics.counter_value(counter) or 0) for name, counter in COUNTERS.items()
        }
        for name, metric in TIMES.items():
            found[name] = _accumulated(metrics, metric) * NANOSECONDS
        for name, metric in TRANSFERS.items():
            data = metrics.metric_data(metric)
            found[f"transfers_{name}"] = float(data[0]) if data else 0.0
        found["cpu_fallbacks"] = float(
            sum(
                metrics.counter_value(name) or 0
                for name in metrics.counter_names()
                if name.startswith(FALLBACK_PREFIX)
            )
        )
        return found

    def fallbacks(self) -> list[str]:
        """Operators torch_xla could not lower, which ran on the CPU instead, once per call."""
        metrics = _metrics()
        return [
            f"{name} ran on the CPU: torch_xla has no XLA lowering for it"
            for name in metrics.counter_names()
            if name.startswith(FALLBACK_PREFIX)
            for _ in range(int(metrics.counter_value(name) or 0))
        ]

    def first_call(self, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
        self._before_first = self.counters()
        return fn(*args)

    def first_run_phases(self, total_s: float) -> dict[str, float]:
        """trace_s (recording the lazy graph), compile_s (XLA compiling the graphs cut) and
        execute_s (running them), from torch_xla's own metrics; what is left of the total is
        stackwars' and torch's Python."""
        after = self.counters()
        spent = {
            name: after.get(name, 0.0) - self._before_first.get(name, 0.0)
            for name in ("trace_s", "compile_s", "execute_s")
        }
        if sum(spent.values()) > total_s:
            # Execution runs on torch_xla's own threads and may overlap the host's tracing.
            spent["execute_s"] = max(0.0, total_s - spent["trace_s"] - spent["compile_s"])
        return {name: seconds for name, seconds in spent.items() if seconds > 0}

    def device_memory_stats(self) -> dict[str, Any] | None:
        return None

    def runtime_settings(self) -> dict[str, Any]:
        import os

        import torch

        torch_xla = _torch_xla()

        return {
            "device": str(self._device),
            "threads": torch.get_num_threads(),
            "torch_xla": torch_xla.__version__,
            "pjrt_device": os.environ.get("PJRT_DEVICE"),
            "xla_flags": os.environ.get("XLA_FLAGS"),
        }

    def gemm_call(self, a: Any, b: Any) -> Callable[[], Any]:
        import torch

        torch_xla = _torch_xla()

        def gemm() -> Any:
            out = torch.matmul(a, b)
            torch_xla.sync()
            return out

        return gemm

    def stream_kernels(self, elements: int, scalar: float) -> dict[str, Callable[[], Any]]:
        del elements, scalar
        return {}  # lazy tensors have no in-place write the STREAM kernels could time


def _accumulated(metrics: Any, name: str) -> float:
    """A metric's accumulated value (0 when it has no sample yet)."""
    data = metrics.metric_data(name)
    return float(data[1]) if data else 0.0
