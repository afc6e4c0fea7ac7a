"""A framework stackwars has never heard of: "fakenp", NumPy under another name, declared the
way a new framework is (a FrameworkInfo, a Framework subclass, an implementation in a
workload), to prove that nothing else in stackwars has to change for it.

The in-process tests import this module as ``fake_framework`` and add the framework and its
workload to the registries themselves, temporarily. Loaded as a ``--workload-file`` (by the
parent of ``stackwars run`` and then by its worker), it adds both itself: a workload file is
the one thing a worker loads before it looks a stack up.
"""

from __future__ import annotations

import inspect
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stackwars.frameworks import FRAMEWORKS
from stackwars.frameworks.base import (
    Framework,
    FrameworkInfo,
    IrCapture,
    ModelMemory,
    Profiler,
    RunSettings,
    flatten,
)
from stackwars.ir.capture import Captured
from stackwars.profiling.trace import OpEvent, Trace, timed_calls
from stackwars.workloads import Param, Work, Workload, register

NAME = "fakenp"
INFO = FrameworkInfo(
    name=NAME,
    modes=("eager", "traced"),
    import_name="numpy",  # installed wherever stackwars is
    extra="numpy",
    implementation=f"{__name__}:FakeFramework",
    baseline_bytes=123 * 2**20,
    # The same facts as a framework that computes with the device copy of the weights and
    # trains functionally: its model memory prediction must be that framework's.
    model_memory=ModelMemory(weights="device copy", functional_train_step=True),
    distributions=("numpy",),
    ir_capture={"traced": IrCapture(stages=("source",), capturer=f"{__name__}:capture_source")},
    profilers={
        "traced": Profiler(
            profiler=f"{__name__}:profile_calls",
            blind_spots="each call is one operation, named after the workload's function",
        )
    },
    machine_checks={"traced": "the fake tracer's probe of the machine"},
)
PROBED = "probed"  # the file the fake tracer's machine check leaves in its cache folder


class FakeFramework(Framework):
    """NumPy arrays copied onto a pretend device; ``traced`` runs the function as it is."""

    info = INFO

    def environment(self, settings: RunSettings) -> dict[str, str]:
        return {"FAKENP_CACHE": settings.cache_dir}

    def load(self) -> None:
        import numpy  # noqa: F401

    def check_machine(self, mode: str) -> None:
        """Leaves PROBED in the cache folder, as a compiler keeps what it checked; appends
        "made" (or "found", when PROBED was there) to $FAKENP_PROBES, when set; fails when
        $FAKENP_PROBE_FAILS is set."""
        if mode != "traced":
            return
        if os.environ.get("FAKENP_PROBE_FAILS"):
            raise RuntimeError("the fake probe failed, as asked")
        probed = Path(os.environ["FAKENP_CACHE"]) / PROBED
        found = probed.exists()
        probed.write_text("ok", encoding="utf-8")
        if os.environ.get("FAKENP_PROBES"):
            with open(os.environ["FAKENP_PROBES"], "a", encoding="utf-8") as probes:
                probes.write("found\n" if found else "made\n")

    def runtime_settings(self) -> dict[str, Any]:
        """Whether the cell's cache folder held the probe's result when the worker started."""
        cache = os.environ.get("FAKENP_CACHE")
        return {"probed": bool(cache) and (Path(cache) / PROBED).exists()}

    def init(self, settings: RunSettings) -> dict[str, Any]:
        if settings.device != "cpu":
            raise ValueError(f"{NAME} runs on cpu only, not {settings.device}")
        return {"device": "cpu"}

    def to_device(self, arrays: Sequence[Any]) -> tuple[Any, ...]:
        import numpy as np

        return tuple(np.array(array, copy=True) for array in arrays)

    def prepare(self, fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
        if mode not in self.info.modes:
            raise ValueError(f"{NAME} has no mode {mode!r}")
        return fn

    def sync(self, out: Any) -> None:
        del out

    def to_host(self, out: Any) -> list[Any]:
        import numpy as np

        return [np.asarray(leaf) for leaf in flatten(out)]

    def selftest_step(self) -> Callable[[Any, Any], Any]:
        import numpy as np

        def step(x: Any, w: Any) -> Any:
            return np.tanh(x @ w)

        return step


def capture_source(fn: Callable[..., Any], args: tuple[Any, ...], framework: Any) -> Captured:
    """The "IR" of fakenp:traced: the function's source."""
    del args, framework
    return {"source": inspect.getsource(fn)}, {}


def profile_calls(call: Callable[[], Any], calls: int, out_dir: Path) -> Trace:
    """The "profiler" of fakenp:traced: each call is one operation on one thread, inside its
    annotation; the events are written as Chrome trace JSON."""
    windows: list[tuple[float, float]] = []
    ops: list[OpEvent] = []

    def now_us() -> float:
        return time.perf_counter() * 1e6

    @contextmanager
    def annotate(index: int) -> Iterator[None]:
        start = now_us()
        yield
        if index >= 0:
            windows.append((start, now_us()))

    def traced() -> None:
        start = now_us()
        call()
        ops.append(OpEvent("axpy", "main", start, now_us() - start))

    seconds = timed_calls(traced, calls, annotate)
    ops = ops[1:]  # the warm-up call's
    path = out_dir / "fake-trace.json"
    events = [{"ph": "X", "name": o.name, "ts": o.start_us, "dur": o.duration_us} for o in ops]
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    return Trace(ops, windows, ["main"], seconds, {"chrome": str(path)})


def _inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    n = int(params["n"])
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def _reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    import numpy as np

    x, y = (np.asarray(array, dtype=np.float64) for array in inputs)
    return 2.0 * x + y


def axpy(x: Any, y: Any) -> Any:
    return 2.0 * x + y


WORKLOAD = Workload(
    name="fakenp_axpy",
    description="2x + y, implemented for fakenp only",
    params=(Param("n", int, 1024, "vector length", minimum=1),),
    make_inputs=_inputs,
    reference=_reference,
    work=lambda params: Work(flops=2.0 * params["n"], bytes=12.0 * params["n"]),
    memory_bytes=lambda params: 12 * int(params["n"]),
    implementations={NAME: lambda params: axpy},
    tiny={"n": 16},
)

if __name__ != "fake_framework":  # loaded as a --workload-file
    FRAMEWORKS.setdefault(NAME, INFO)
    register(WORKLOAD)
