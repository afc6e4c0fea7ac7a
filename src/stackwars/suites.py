"""Suites: named lists of cells, with the timing settings that suit them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from stackwars.errors import UnknownNameError, UsageError


@dataclass(frozen=True)
class SuiteEntry:
    """One workload; each parameter's values expand into one cell per combination."""

    workload: str
    params: dict[str, tuple[Any, ...]]
    stacks: tuple[str, ...] | None = None  # None: every stack
    to_host: tuple[bool, ...] = (False,)


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    entries: tuple[SuiteEntry, ...]
    timing: dict[str, float] = field(default_factory=dict)  # TimingConfig overrides
    cache: str | None = None  # the compile-cache mode it needs (None: the run's, cold)


SEED_002 = ("numpy:eager", "jax:eager", "jax:jit")
CROSSOVER = ("numpy:eager", "jax:jit")
SWEEP = tuple(2**k for k in range(4, 13))  # 16 .. 4096
GPT2_SMALL: dict[str, tuple[Any, ...]] = {"batch": (2,), "seq": (64,), "d_model": (768,)}
TASKS = ("forward", "grad")
# Seed 001's end-to-end models, in its order; each infers and trains at its defaults (batch 2,
# sequence 64, images 224², float32, full size).
MODELS = ("resnet50", "bert-base", "gpt2-small", "vit-b16", "gpt-neo-1.3b", "llama-3.1-8b")
MODEL_ENTRIES = tuple(SuiteEntry(model, {"task": ("infer", "train")}) for model in MODELS)
# A model call takes 10 ms to seconds: a few seconds of blocks give a stable median.
MODEL_TIMING = {"steady_budget_s": 5.0, "warmup_budget_s": 10.0}
STACK_WARS_OPS = (
    SuiteEntry("gemm", {"n": (768,), "dtype": ("float32",)}),
    SuiteEntry("ffn", {**GPT2_SMALL, "d_ff": (3072,), "task": TASKS}),
    SuiteEntry("mha", {**GPT2_SMALL, "heads": (12,), "causal": (True,), "task": TASKS}),
)

# Issue 15's comparison: each Keras stack beside the native stack of its backend in the same
# mode (the cost of the abstraction), and the Keras backends side by side (which is best).
UNIFIED_STACKS = (
    "keras-jax:jit",
    "jax:jit",
    "keras-torch:eager",
    "torch:eager",
    "keras-torch:compile",
    "torch:compile",
    "keras-tensorflow:graph",
    "tensorflow:graph",
    "keras-tensorflow:xla",
    "tensorflow:xla",
)
UNIFIED_OPS = (
    *STACK_WARS_OPS,
    SuiteEntry("selu", {"n": (512,), "dtype": ("float32",)}),
    SuiteEntry("poly", {"n": (512,), "dtype": ("float32",)}),
    SuiteEntry("layernorm", {"batch": (2,), "seq": (64,), "d_model": (768,)}),
    SuiteEntry("softmax", {"rows": (128,), "cols": (1024,)}),
)
# The four of seed 001's models that fit this project's 24 GiB machine in every mode; GPT-Neo
# 1.3B and LLaMA 8B run on the same stacks with --workload (their train steps are planned oom).
UNIFIED_MODELS = MODELS[:4]

# Seed 002's second half: its transforms, each on every stack that has it (the others are
# planned unsupported, with the reason), at sizes where a call takes milliseconds.
TRANSFORMS = (
    SuiteEntry("derivatives", {"order": (1, 2, 3), "n": (1_000_000,)}),
    SuiteEntry("hvp", {}),
    SuiteEntry("vmap-convolve", {"style": ("loop", "vmap", "vectorised")}),
    SuiteEntry("vmap-grad", {"style": ("loop", "vmap", "vectorised")}),
    SuiteEntry("pmap", {"devices": (1, 2, 4), "style": ("pmap", "sharding", "mirrored")}),
)

SUITES: dict[str, Suite] = {
    suite.name: suite
    for suite in (
        Suite(
            name="quick",
            description="every op workload at small sizes on every stack (the default)",
            entries=(
                SuiteEntry("gemm", {"n": (256,), "dtype": ("float32",)}),
                SuiteEntry("selu", {"n": (512,), "dtype": ("float32",)}),
                SuiteEntry("poly", {"n": (512,), "dtype": ("float32",)}),
            ),
            # Short budgets keep the default run near 90 s on 2 cores (cold torch.compile alone
            # takes ~10 s a cell); cells that miss the 1 % target in time say so (stable:
            # false) instead of running longer.
            timing={"steady_budget_s": 0.3, "warmup_budget_s": 0.5, "min_steady_s": 0.1},
        ),
        Suite(
            name="seed-blog",
            description=(
                "seed 000: GEMM 3000² on every stack; SELU 3000² eager vs compiled, "
                "result on the device and copied to host"
            ),
            entries=(
                SuiteEntry("gemm", {"n": (3000,), "dtype": ("float32",)}),
                SuiteEntry("selu", {"n": (3000,), "dtype": ("float32",)}, to_host=(False, True)),
            ),
        ),
        Suite(
            name="numpy-vs-jax",
            description=(
                "seed 002 in full: poly and GEMM over 10000² on numpy, jax:eager and jax:jit, "
                "size sweeps from 16² to 4096² that find where NumPy and jax.jit cross, and "
                "the transforms suite's grad, vmap and pmap cells on those stacks"
            ),
            entries=(
                SuiteEntry("poly", {"n": (10_000,), "dtype": ("float32", "float64")}, SEED_002),
                SuiteEntry("gemm", {"n": (10_000,), "dtype": ("float32",)}, SEED_002),
                SuiteEntry("gemm", {"n": SWEEP, "dtype": ("float32",)}, CROSSOVER),
                SuiteEntry("poly", {"n": SWEEP, "dtype": ("float32",)}, CROSSOVER),
                *(
                    dataclasses.replace(entry, stacks=SEED_002)
                    for entry in TRANSFORMS
                    if entry.workload != "pmap"
                ),
                dataclasses.replace(TRANSFORMS[-1], stacks=("jax:jit",)),
            ),
            # A 10000² GEMM takes seconds a call: a few blocks are all a budget can hold.
            timing={"steady_budget_s": 5.0, "warmup_budget_s": 5.0},
        ),
        Suite(
            name="stack-wars-ops",
            description=(
                "seed 001's basic operations at GPT-2 small's shapes (batch 2, seq 64, d_model "
                "768, 12 heads, d_ff 3072) on every stack, forward and with gradients"
            ),
            entries=STACK_WARS_OPS,
        ),
        Suite(
            name="transforms",
            description=(
                "seed 002's transforms: derivatives of order 1-3 and a Hessian-vector product, "
                "a loop vs vmap vs hand-vectorised code, and convolve mapped over 1, 2, 4 "
                "(simulated, on CPU) devices, on every stack that has each"
            ),
            entries=TRANSFORMS,
            timing={"steady_budget_s": 0.5, "warmup_budget_s": 1.0, "min_steady_s": 0.1},
        ),
        Suite(
            name="compile-cache",
            description=(
                "issue 13: each cell's first run with an empty persistent compile cache, then "
                "again in a fresh worker that finds the cache filled (cold-then-warm), on "
                "every stack: what JAX's and Inductor's caches save, and TensorFlow without one"
            ),
            entries=(
                SuiteEntry("gemm", {"n": (256,), "dtype": ("float32",)}),
                SuiteEntry("ffn", {**GPT2_SMALL, "d_ff": (3072,), "task": TASKS}),
                SuiteEntry(
                    "mha", {**GPT2_SMALL, "heads": (12,), "causal": (True,), "task": ("grad",)}
                ),
            ),
            # The first run is the measurement; steady state only feeds the break-even.
            timing={"steady_budget_s": 0.5, "warmup_budget_s": 1.0, "min_steady_s": 0.1},
            cache="cold-then-warm",
        ),
        Suite(
            name="models",
            description=(
                "seed 001's end-to-end models (ResNet-50, BERT-base, GPT-2 small, ViT-B/16, "
                "GPT-Neo 1.3B, LLaMA-3.1 8B), inference and one AdamW train step, every stack; "
                "--param scale=tiny runs the same cells at test size"
            ),
            entries=MODEL_ENTRIES,
            timing=MODEL_TIMING,
        ),
        Suite(
            name="unified",
            description=(
                "issue 15: Keras 3 on JAX, PyTorch and TensorFlow beside each backend's native "
                "stack in the same mode, over the op workloads and four of seed 001's models "
                "(infer and train); --param scale=tiny for test size"
            ),
            entries=tuple(
                dataclasses.replace(entry, stacks=UNIFIED_STACKS)
                for entry in (
                    *UNIFIED_OPS,
                    *(SuiteEntry(m, {"task": ("infer", "train")}) for m in UNIFIED_MODELS),
                )
            ),
            timing=MODEL_TIMING,
        ),
        Suite(
            name="stack-wars",
            description="seed 001 in full: its basic operations, then its models",
            entries=STACK_WARS_OPS + MODEL_ENTRIES,
            timing=MODEL_TIMING,
        ),
    )
}


def register_suite(suite: Suite) -> Suite:
    """Add a suite (from a --workload-file, say); a name already taken is refused."""
    if suite.name in SUITES:
        raise UsageError(f"a suite named {suite.name!r} exists already; choose another name")
    SUITES[suite.name] = suite
    return suite


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise UnknownNameError("suite", name, SUITES, "see 'stackwars list suites'")
    return SUITES[name]
