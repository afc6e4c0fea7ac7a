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
from dataclasses import dataclass

from stackwars.errors import UnknownNameError
from stackwars.frameworks.base import (
    Framework,
    FrameworkInfo,
    IrCapture,
    ModeImplementation,
    ModelMemory,
)

MIB = 2**20
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
        ),
        FrameworkInfo(
            name="jax",
            modes=("eager", "jit"),
            import_name="jax",
            extra="jax",
            implementation="stackwars.frameworks.jax:JaxFramework",
            baseline_bytes=400 * MIB,
            model_memory=ModelMemory(weights="device copy", functional_train_step=True),
            devices=("cpu", "gpu", "tpu"),
            distributions=("jax", "jaxlib"),
            environment_prefixes=("JAX_", "TPU_"),
            compile_caches=dict.fromkeys(("eager", "jit"), "JAX's persistent compilation cache"),
            ir_capture={
                "jit": IrCapture(
                    stages=(
                        "jaxpr",
                        "stablehlo",
                        "hlo",
                        "optimized_hlo",
                        "cost_analysis",
                        "memory_analysis",
                    ),
                    capturer="stackwars.ir.capture_jax:capture_jit",
                )
            },
        ),
        FrameworkInfo(
            name="torch",
            modes=("eager", "compile", "xla"),
            import_name="torch",
            extra="torch",
            implementation="stackwars.frameworks.torch:TorchFramework",
            baseline_bytes=600 * MIB,
            model_memory=ModelMemory(weights="own copy"),
            devices=("cpu", "gpu"),
            distributions=("torch",),
            environment_prefixes=("TORCH", "PYTORCH_"),
            compile_caches={
                "compile": "Inductor's FX-graph and AOTAutograd caches",
                "xla": "JAX's persistent compilation cache (torchax compiles with jax.jit)",
            },
            mode_implementations={
                "xla": ModeImplementation(
                    implementation="stackwars.frameworks.torch_xla:TorchXlaFramework",
                    import_names=("jax", "torchax"),
                    extra="xla",
                    own_process=True,
                )
            },
            ir_capture={
                "xla": IrCapture(
                    stages=("exported_graph", "stablehlo", "optimized_hlo"),
                    capturer="stackwars.ir.capture_torch:capture_xla",
                ),
                "compile": IrCapture(
                    stages=("fx_graph", "inductor_code", "graph_breaks"),
                    capturer="stackwars.ir.capture_torch:capture_compile",
                ),
            },
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
            distributions=("tensorflow-cpu", "tensorflow", "keras"),
            environment_prefixes=("TF_", "KERAS_"),
            ir_capture={
                "xla": IrCapture(
                    stages=("stablehlo", "hlo", "optimized_hlo"),
                    capturer="stackwars.ir.capture_tensorflow:capture_xla",
                ),
                "graph": IrCapture(
                    stages=("graph_ops",),
                    capturer="stackwars.ir.capture_tensorflow:capture_graph",
                ),
            },
        ),
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


@dataclass(frozen=True, order=True)
class Stack:
    """A framework and a mode: the thing being compared, written ``framework:mode``."""

    framework: str
    mode: str

    def __str__(self) -> str:
        return f"{self.framework}:{self.mode}"

    @property
    def info(self) -> FrameworkInfo:
        return FRAMEWORKS[self.framework]


def all_stacks() -> list[Stack]:
    return [Stack(info.name, mode) for info in FRAMEWORKS.values() for mode in info.modes]


def parse_stack(text: str) -> Stack:
    """``"jax:jit"`` -> Stack; a bare framework name is refused (say which mode)."""
    allowed = [str(stack) for stack in all_stacks()]
    framework, _, mode = text.strip().partition(":")
    info = FRAMEWORKS.get(framework)
    if info is None or mode not in info.modes:
        raise UnknownNameError(
            "stack", text, allowed, "write framework:mode, see 'stackwars list stacks'"
        )
    return Stack(framework, mode)


def parse_stacks(text: str) -> list[Stack]:
    """A comma list of stacks; ``framework:*`` or a bare framework name means all its modes."""
    stacks: list[Stack] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name = item.removesuffix(":*")
        if name in FRAMEWORKS and ":" not in name:
            stacks.extend(Stack(name, mode) for mode in FRAMEWORKS[name].modes)
        else:
            stacks.append(parse_stack(item))
    return list(dict.fromkeys(stacks))


def missing_reason(framework: str) -> str | None:
    """Why a framework cannot be imported here, with the fix; None when it is installed."""
    info = FRAMEWORKS[framework]
    if importlib.util.find_spec(info.import_name) is None:
        return f"{info.name} is not installed; fix: {info.install_hint()}"
    return None


def stack_missing_reason(framework: str, mode: str) -> str | None:
    """Why a stack cannot run here, with the fix; None when everything it needs is installed.

    Some modes need packages besides their framework (torch:xla needs jax and torchax); the
    fix then names the mode's extra, which installs the framework too.
    """
    info = FRAMEWORKS[framework]
    special = info.mode_implementations.get(mode)
    needed = (info.import_name, *(special.import_names if special else ()))
    for name in needed:
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed; fix: {info.install_hint(mode)}"
    return None


def installed_version(framework: str) -> str | None:
    for distribution in FRAMEWORKS[framework].distributions:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def load_framework(name: str, mode: str | None = None) -> Framework:
    """Import and instantiate the implementation that runs ``mode`` of framework ``name``
    (workers only); without a mode, the framework's own implementation."""
    module_name, _, class_name = FRAMEWORKS[name].implementation_for(mode).partition(":")
    module = importlib.import_module(module_name)
    framework: Framework = getattr(module, class_name)()
    return framework
