"""The framework registry: static facts about each framework, and stack names.

Frameworks are few, so the registry is one explicit table, and the only one: whatever the parent
needs to know about a framework (modes, devices, packages, baseline memory, IR stages, how its
models hold memory) is a field of its FrameworkInfo (see ``base.py``). Nothing here imports a
framework: availability is decided with ``importlib.util.find_spec`` and package metadata, and
the implementation class is imported only when a worker asks for it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from stackwars.errors import UnknownNameError
from stackwars.frameworks import environments
from stackwars.frameworks.base import (
    Framework,
    FrameworkInfo,
    IrCapture,
    ModeImplementation,
    ModelMemory,
    Profiler,
)

T = TypeVar("T")
MIB = 2**20
JAX_IR = IrCapture(
    stages=("jaxpr", "stablehlo", "hlo", "optimized_hlo", "cost_analysis", "memory_analysis"),
    capturer="stackwars.ir.capture_jax:capture_jit",
)
TF_XLA_IR = IrCapture(
    stages=("stablehlo", "hlo", "optimized_hlo"),
    capturer="stackwars.ir.capture_tensorflow:capture_xla",
)
TF_GRAPH_IR = IrCapture(
    stages=("graph_ops",), capturer="stackwars.ir.capture_tensorflow:capture_graph"
)
TORCH_COMPILE_IR = IrCapture(
    stages=("fx_graph", "inductor_code", "graph_breaks"),
    capturer="stackwars.ir.capture_torch:capture_compile",
)
# torch_xla's lazy tensors: the HLO and StableHLO of the graph a step cut (mark_step).
TORCH_LAZY_IR = IrCapture(
    stages=("lazy_ir", "stablehlo", "hlo"),
    capturer="stackwars.ir.capture_torch_xla:capture_lazy",
)
TORCH_LAZY_PROFILER = Profiler(
    profiler="stackwars.profiling.profile_torch_xla:profile_calls",
    blind_spots=(
        "torch_xla's profiler records the XLA operations each graph executes and torch_xla's "
        "own host events (lazy tracing, the step marker, transfers); not which torch operator "
        "an XLA operation came from (torch_xla's graph is lowered whole), nor what happens "
        "inside one XLA operation. Per cell, torch_xla's metrics (graphs compiled and "
        "executed, compile and execute time, transfers) are the cell's counters"
    ),
)
# The frameworks' own profilers (stackwars profile), and what each cannot see.
_XLA_BLIND = (
    "what happens inside one XLA operation (how it splits over threads, its memory traffic) "
    "and Python between calls (the Python tracer is off)"
)
JAX_PROFILER = Profiler(
    profiler="stackwars.profiling.profile_jax:profile_calls",
    blind_spots=(
        "jax.profiler records each operation XLA's runtime executes (a fusion, a dot, a copy) "
        f"on the thread that runs it, and when XLA's Eigen threads start work; not {_XLA_BLIND}"
    ),
)
TORCH_XLA_PROFILER = Profiler(
    profiler=JAX_PROFILER.profiler,
    blind_spots=(
        "torchax turns the torch code into one XLA executable, so jax.profiler sees XLA's "
        f"operations, not torch's; not {_XLA_BLIND}"
    ),
)
_TORCH_BLIND = (
    "torch.profiler records every ATen operator on the thread that dispatches it; the "
    "OpenMP and oneDNN threads an operator runs on inside are not traced (threads seen are "
    "dispatching threads only)"
)
TORCH_PROFILER = Profiler(
    profiler="stackwars.profiling.profile_torch:profile_calls", blind_spots=_TORCH_BLIND
)
TORCH_COMPILE_PROFILER = Profiler(
    profiler=TORCH_PROFILER.profiler,
    blind_spots=(
        f"{_TORCH_BLIND}; Inductor's generated C++ kernels appear by name because the profile "
        "worker compiles them with a profiler mark each (TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE)"
    ),
    environment={"TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "1"},
)
TF_PROFILER = Profiler(
    profiler="stackwars.profiling.profile_tensorflow:profile_calls",
    blind_spots=(
        "tf.profiler records each TensorFlow kernel (an eager op, a graph node, an XLA "
        "operation under xla) on the thread that runs it, and when its Eigen threads start "
        "work; not what happens inside a kernel. Under graph, the executor traces only the "
        "kernels its cost model deems expensive (TensorFlow 2.21's binding ignores the verbose "
        "host-tracer level asked for: it logs 'host_tracer_level expects an i value'), and "
        "the model decides per kernel as it measures it: a cheap kernel (a 48² matmul, GPT-2's "
        "layer-norm and residual additions) may be traced in some calls and not in others. "
        "Their time counts as overhead/idle; a call with no kernel traced is named in the notes"
    ),
)
_BACKEND_PROFILERS = {
    "jax": {"eager": JAX_PROFILER, "jit": JAX_PROFILER},
    "torch": {"eager": TORCH_PROFILER, "compile": TORCH_COMPILE_PROFILER},
    "tensorflow": dict.fromkeys(("eager", "graph", "xla"), TF_PROFILER),
}
NUMPY_NO_PROFILER = (
    "NumPy has no profiler of its own: its ufuncs and BLAS calls run in C and emit no trace "
    "events. A Python-level profiler (cProfile, or a sampler without native frames) sees only "
    "the Python line that called them, one per NumPy expression, not the kernels, the "
    "temporaries and copies inside an expression, or BLAS's threads; a native sampler "
    "(perf, py-spy --native) would see C functions without knowing which NumPy call they "
    "serve. stackwars reports no profile rather than a misleading one"
)
# Keras 3 on each backend: the modes Keras itself applies there (jit_compile on JAX and
# TensorFlow, where jit_compile=False still runs a tf.function graph; torch.compile on
# PyTorch), and the resident memory of a worker that imported the backend and Keras (which
# imports jax whatever its backend), measured here and rounded up.
KERAS_BACKENDS = (
    ("jax", ("eager", "jit"), 600 * MIB),
    ("torch", ("eager", "compile"), 900 * MIB),
    ("tensorflow", ("eager", "graph", "xla"), 1200 * MIB),
)
# What a Keras stack shares with the native framework of its backend.
_BACKEND_IR = {
    "jax": {"jit": JAX_IR},
    "torch": {"compile": TORCH_COMPILE_IR},
    "tensorflow": {"graph": TF_GRAPH_IR, "xla": TF_XLA_IR},
}
_BACKEND_DEVICES = {
    "jax": ("cpu", "gpu", "tpu"),
    "torch": ("cpu", "gpu"),
    "tensorflow": ("cpu", "gpu", "tpu"),
}
_BACKEND_PREFIXES = {
    "jax": ("JAX_", "TPU_"),
    "torch": ("TORCH", "PYTORCH_"),
    "tensorflow": ("TF_",),
}
# TensorFlow keeps no compile cache between processes.
_BACKEND_CACHES: dict[str, dict[str, str]] = {
    "jax": dict.fromkeys(("eager", "jit"), "JAX's persistent compilation cache"),
    "torch": {"compile": "Inductor's FX-graph and AOTAutograd caches"},
    "tensorflow": {},
}


# Where each backend's stacks ran on real hardware: an H100 lent on 2026-11-25 and 26
# (docs/accelerators.md); TensorFlow could not be installed there, and nothing ran on a TPU.
_PROVEN_DEVICES = {"jax": ("cpu", "gpu"), "torch": ("cpu", "gpu"), "tensorflow": ("cpu",)}
# The share of a GPU's memory JAX's client lets a process take when XLA_PYTHON_CLIENT_MEM_FRACTION
# is unset (FrameworkInfo.device_memory_share).
JAX_CLIENT_SHARE = 0.75


def _keras(backend: str, modes: tuple[str, ...], baseline: int) -> FrameworkInfo:
    """Keras 3 on ``backend``: one framework per backend, the family ``keras``."""
    return FrameworkInfo(
        name=f"keras-{backend}",
        modes=modes,
        import_name="keras",
        extra=f"keras-{backend}",
        implementation=f"stackwars.frameworks.keras:Keras{backend.title()}Framework",
        baseline_bytes=baseline,
        # Keras variables are the backend's own arrays; on JAX a compiled train step is
        # stateless (new variables returned), as Keras's own JAX trainer runs it.
        model_memory=ModelMemory(weights="own copy", functional_train_step=backend == "jax"),
        devices=_BACKEND_DEVICES[backend],
        device_memory_share=JAX_CLIENT_SHARE if backend == "jax" else None,
        takes_memory_fraction=backend != "tensorflow",
        proven_devices=_PROVEN_DEVICES[backend],
        distributions=("keras",),
        environment_prefixes=("KERAS_", *_BACKEND_PREFIXES[backend]),
        compile_caches=_BACKEND_CACHES[backend],
        ir_capture=_BACKEND_IR[backend],
        profilers=_BACKEND_PROFILERS[backend],
        runs_on=backend,
        family="keras",
        release_note="its backend's release matters as much as its own: bisect the backend",
    )


FRAMEWORKS: dict[str, FrameworkInfo] = {
    info.name: info
    for info in (
        FrameworkInfo(
            name="numpy",
            modes=("eager",),
            import_name="numpy",
            extra="numpy",
            implementation="stackwars.frameworks.numpy:NumpyFramework",
            baseline_bytes=100 * MIB,
            model_memory=ModelMemory(weights="host"),
            distributions=("numpy",),
            no_profiler=NUMPY_NO_PROFILER,
            release_note="stackwars itself runs on its pinned numpy in every environment",
        ),
        FrameworkInfo(
            name="jax",
            modes=("eager", "jit"),
            import_name="jax",
            extra="jax",
            implementation="stackwars.frameworks.jax:JaxFramework",
            baseline_bytes=400 * MIB,
            model_memory=ModelMemory(weights="device copy", functional_train_step=True),
            devices=_BACKEND_DEVICES["jax"],
            distributions=("jax", "jaxlib"),
            release_packages=("jax", "jaxlib"),
            device_memory_share=JAX_CLIENT_SHARE,
            takes_memory_fraction=True,
            proven_devices=_PROVEN_DEVICES["jax"],
            environment_prefixes=("JAX_", "TPU_"),
            compile_caches=_BACKEND_CACHES["jax"],
            ir_capture={"jit": JAX_IR},
            profilers=_BACKEND_PROFILERS["jax"],
        ),
        FrameworkInfo(
            name="torch",
            modes=("eager", "compile", "xla"),
            import_name="torch",
            extra="torch",
            implementation="stackwars.frameworks.torch:TorchFramework",
            baseline_bytes=600 * MIB,
            model_memory=ModelMemory(
                weights="own copy",
                keeps_attention_scores=False,
                loss_backward_logits=3,
                cached_free_logits=1,
            ),
            devices=("cpu", "gpu"),
            distributions=("torch",),
            release_packages=("torch",),
            takes_memory_fraction=True,
            proven_devices=_PROVEN_DEVICES["torch"],
            environment_prefixes=("TORCH", "PYTORCH_"),
            compile_caches={
                **_BACKEND_CACHES["torch"],
                "xla": "JAX's persistent compilation cache (torchax compiles with jax.jit)",
            },
            machine_checks={"compile": "Inductor's probes of the CPU's vector instruction sets"},
            mode_implementations={
                "xla": ModeImplementation(
                    implementation="stackwars.frameworks.torch_xla:TorchXlaFramework",
                    import_names=("jax", "torchax"),
                    extra="xla",
                    own_process=True,
                    devices=_BACKEND_DEVICES["jax"],
                    device_memory_share=JAX_CLIENT_SHARE,
                )
            },
            ir_capture={
                "xla": IrCapture(
                    stages=("exported_graph", "stablehlo", "optimized_hlo"),
                    capturer="stackwars.ir.capture_torch:capture_xla",
                ),
                "compile": TORCH_COMPILE_IR,
            },
            profilers={**_BACKEND_PROFILERS["torch"], "xla": TORCH_XLA_PROFILER},
        ),
        FrameworkInfo(
            name="tensorflow",
            modes=("eager", "graph", "xla"),
            import_name="tensorflow",
            extra="tensorflow",
            implementation="stackwars.frameworks.tensorflow:TensorflowFramework",
            baseline_bytes=1000 * MIB,
            model_memory=ModelMemory(weights="own copy"),
            devices=("cpu", "gpu", "tpu"),
            # Not keras: Keras 3 installs without TensorFlow, and its version is not TF's.
            distributions=("tensorflow-cpu", "tensorflow"),
            release_packages=("tensorflow",),
            environment_prefixes=("TF_", "KERAS_"),
            ir_capture={"xla": TF_XLA_IR, "graph": TF_GRAPH_IR},
            profilers=_BACKEND_PROFILERS["tensorflow"],
        ),
        FrameworkInfo(
            name="torch-xla",
            modes=("lazy",),
            import_name="torch_xla",
            extra="torch-xla",
            implementation="stackwars.frameworks.torch_lazy:TorchLazyFramework",
            # A worker that imported torch 2.9 and torch_xla and started the PJRT CPU client,
            # measured here (2026-11-26) and rounded up.
            baseline_bytes=1000 * MIB,
            model_memory=ModelMemory(weights="own copy"),
            distributions=("torch_xla", "torch"),
            release_packages=("torch_xla", "torch"),
            environment_prefixes=("PJRT_", "XLA_", "TORCH", "PYTORCH_"),
            ir_capture={"lazy": TORCH_LAZY_IR},
            profilers={"lazy": TORCH_LAZY_PROFILER},
            runs_code_of="torch",
            environment="torch-xla",
            not_on={
                "gpu": "PyTorch/XLA deprecated its CUDA device in release 2.8 "
                "(pytorch/xla#9295) and removed the CUDA plugin after it (#9597): torch_xla 2.9 "
                "runs on CPU and TPU only; for PyTorch on a GPU use torch:eager, torch:compile "
                "or torch:xla (torchax, on JAX's CUDA runtime)",
                "tpu": "the torch-xla environment holds PyPI's torch_xla with its CPU runtime "
                "(PJRT_DEVICE=CPU); a TPU needs its TPU runtime (libtpu) there, which "
                "stackwars has not proven",
            },
        ),
        *(_keras(backend, modes, baseline) for backend, modes, baseline in KERAS_BACKENDS),
    )
}


# Variables every numerical library reads (BLAS threading and kernels, XLA, device
# visibility), besides each framework's own (FrameworkInfo.environment_prefixes).
SHARED_ENVIRONMENT_PREFIXES = ("OMP_", "MKL_", "OPENBLAS_", "GOTO_", "BLIS_", "XLA_", "CUDA_")
# Terraform's variables share TensorFlow's TF_ prefix and change nothing here.
TERRAFORM_PREFIXES = ("TF_CLI_", "TF_VAR_", "TF_LOG", "TF_DATA_DIR", "TF_PLUGIN_CACHE_DIR")


def influential_environment(framework: str | None = None) -> dict[str, str]:
    """Variables set in this process's environment that change what ``framework`` (every
    framework when None) computes or how fast."""
    infos = FRAMEWORKS.values() if framework is None else (FRAMEWORKS[framework],)
    prefixes = (*SHARED_ENVIRONMENT_PREFIXES, *(p for i in infos for p in i.environment_prefixes))
    return {
        name: value
        for name, value in sorted(os.environ.items())
        if name.startswith(prefixes) and not name.startswith(TERRAFORM_PREFIXES)
    }


ENVIRONMENT_MARK = "@"


@dataclass(frozen=True, order=True)
class Stack:
    """A framework, a mode and the Python environment its workers run in: the thing being
    compared, written ``framework:mode``, or ``framework:mode@environment`` for a stack run in
    a named environment of its own (frameworks/environments.py) instead of its default one."""

    framework: str
    mode: str
    environment: str = ""

    def __str__(self) -> str:
        named = f"{ENVIRONMENT_MARK}{self.environment}" if self.environment else ""
        return f"{self.framework}:{self.mode}{named}"

    @property
    def info(self) -> FrameworkInfo:
        return FRAMEWORKS[self.framework]

    @property
    def runs_in(self) -> str:
        """The environment its workers run in: the one named, else its framework's own;
        "" for stackwars' own."""
        return self.environment or self.info.environment


def device_memory_share(framework: str, mode: str, fraction: float | None) -> float | None:
    """The share of a GPU's memory one process of the stack may take: ``fraction``
    (--memory-fraction) where the framework applies it, else the mode's or the framework's
    own default (None: no limit of its own)."""
    info = FRAMEWORKS[framework]
    if fraction is not None and info.takes_memory_fraction:
        return fraction
    implementation = info.mode_implementations.get(mode)
    if implementation is not None and implementation.device_memory_share is not None:
        return implementation.device_memory_share
    return info.device_memory_share


def proven_on(stack: str, device: str) -> bool:
    """Whether this project has run ``stack`` on ``device``'s kind of hardware (``gpu:1``: a
    gpu), as FrameworkInfo.proven_devices records."""
    framework = split_stack(stack)[0]
    return device.partition(":")[0] in FRAMEWORKS[framework].proven_devices


def split_stack(text: str) -> tuple[str, str, str]:
    """``"jax:jit@jax-0.9"`` -> ``("jax", "jit", "jax-0.9")``; no environment gives ""."""
    named, _, environment = text.strip().partition(ENVIRONMENT_MARK)
    framework, _, mode = named.partition(":")
    return framework, mode, environment


def stack_environment(text: str) -> str:
    """The environment the workers of stack ``text`` run in ("" for stackwars' own)."""
    framework, _, environment = split_stack(text)
    info = FRAMEWORKS.get(framework)
    return environment or (info.environment if info else "")


def all_stacks() -> list[Stack]:
    return [Stack(info.name, mode) for info in FRAMEWORKS.values() for mode in info.modes]


def default_stacks() -> list[Stack]:
    """The stacks of a run that names none: every framework that is not a layer over another
    (the Keras stacks are asked for by name, by family, or by the suites made for them)."""
    return [stack for stack in all_stacks() if stack.info.runs_on is None]


def family_members(name: str) -> list[str]:
    """The frameworks of family ``name`` (``keras``); [] when no family has that name."""
    return [info.name for info in FRAMEWORKS.values() if info.family == name]


def parse_stack(text: str) -> Stack:
    """``"jax:jit"`` -> Stack; a bare framework name is refused (say which mode)."""
    allowed = [str(stack) for stack in all_stacks()]
    framework, mode, environment = split_stack(text)
    info = FRAMEWORKS.get(framework)
    if info is None or mode not in info.modes:
        raise UnknownNameError(
            "stack",
            text,
            allowed,
            "write framework:mode (or framework:mode@ENVIRONMENT), see 'stackwars list stacks'",
        )
    if environment:
        environments.check_name(environment)
    return Stack(framework, mode, environment)


def parse_stacks(text: str) -> list[Stack]:
    """A comma list of stacks; ``framework:*`` or a bare framework name means all its modes,
    a family name (``keras``) all the modes of all its frameworks."""
    stacks: list[Stack] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        named, _, environment = item.partition(ENVIRONMENT_MARK)
        name = named.removesuffix(":*")
        members = [name] if name in FRAMEWORKS else family_members(name)
        if members and ":" not in name:
            if environment:
                environments.check_name(environment)
            stacks.extend(
                Stack(m, mode, environment) for m in members for mode in FRAMEWORKS[m].modes
            )
        else:
            stacks.append(parse_stack(item))
    return list(dict.fromkeys(stacks))


def implementation_for(implementations: Mapping[str, T], framework: str) -> T | None:
    """A workload's or probe's implementation for ``framework``: its own entry, else its
    family's (one written with ``keras.ops`` for every Keras stack); None when neither."""
    found = implementations.get(framework)
    if found is None and framework in FRAMEWORKS:
        found = implementations.get(FRAMEWORKS[framework].code_key)
    return found


def missing_reason(framework: str) -> str | None:
    """Why a framework cannot be imported here, with the fix; None when it is installed.

    A framework that lives in an environment of its own (torch_xla) is never importable
    here, made or not: the reason says where its stacks run instead of a fix that, once
    done, would still leave it unimportable in this process."""
    info = FRAMEWORKS[framework]
    for name in (info.import_name, *_backend_import(info)):
        if importlib.util.find_spec(name) is None:
            if info.environment:
                return (
                    f"{name} is not importable in this process: its stacks run in workers of "
                    f"the '{info.environment}' environment ({info.install_hint()} makes it)"
                )
            return f"{name} is not installed; fix: {info.install_hint()}"
    return None


def _backend_import(info: FrameworkInfo) -> tuple[str, ...]:
    return () if info.runs_on is None else (FRAMEWORKS[info.runs_on].import_name,)


def needed_imports(framework: str, mode: str) -> tuple[str, ...]:
    """The modules a worker of the stack imports: its framework's, a layer's backend's, and
    those its mode needs besides (torch:xla: jax and torchax)."""
    info = FRAMEWORKS[framework]
    special = info.mode_implementations.get(mode)
    return (info.import_name, *_backend_import(info), *(special.import_names if special else ()))


def stack_missing_reason(framework: str, mode: str, environment: str = "") -> str | None:
    """Why a stack cannot run here, with the fix; None when everything it needs is installed.

    Some modes need packages besides their framework (torch:xla needs jax and torchax); the
    fix then names the mode's extra, which installs the framework too. A stack that runs in an
    environment of its own (``environment``, else its framework's) is judged from that
    environment's files: what it can import is known only by a worker there
    (runner/environments.py checks that before a run uses it).
    """
    info = FRAMEWORKS[framework]
    where = environment or info.environment
    if where:
        return environments.absent_reason(where) or None
    for name in needed_imports(framework, mode):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed; fix: {info.install_hint(mode)}"
    return None


def distribution_version(name: str) -> str | None:
    """The installed version of the package ``name`` (a pip name); None when not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_version(framework: str) -> str | None:
    """The framework's version where its stacks run: this Python's, or for a framework that
    runs in an environment of its own, what that environment recorded when it was made (None
    when it is not made; this Python's torch is not torch-xla's)."""
    info = FRAMEWORKS[framework]
    if info.environment:
        recorded = (environments.described(info.environment) or {}).get("versions", {})
        versions = (recorded.get(name.replace("_", "-").lower()) for name in info.distributions)
    else:
        versions = map(distribution_version, info.distributions)
    return next((version for version in versions if version is not None), None)


def load_framework(name: str, mode: str | None = None) -> Framework:
    """Import and instantiate the implementation that runs ``mode`` of framework ``name``
    (workers only); without a mode, the framework's own implementation."""
    module_name, _, class_name = FRAMEWORKS[name].implementation_for(mode).partition(":")
    module = importlib.import_module(module_name)
    framework: Framework = getattr(module, class_name)()
    return framework
