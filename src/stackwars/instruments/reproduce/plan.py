"""The experiments of an edition: each seed question's cells, probes or claims, at each scale.

A part is measured by the services every other command uses (a suite's run with
``service.execution``, ``stackwars behave``'s probes, ``stackwars claims``), so an edition
measures exactly what those commands would. ``full`` is every seed experiment at the seeds'
sizes; ``tiny`` is the same edition with each kind of experiment once at test size (a suite's
timed cells, a model with its IR captured, a probe, and one claim of each kind of statistic,
one of them asking for hardware this machine lacks).
"""

from __future__ import annotations

from dataclasses import dataclass

from stackwars.errors import UsageError

CELLS, PROBES, CLAIMS = "cells", "probes", "claims"


@dataclass(frozen=True)
class Part:
    """One experiment: ``kind`` says which service measures it. ``cells``: the cells of
    ``suite`` or ``workload`` with ``params`` (``--param`` values) on ``stacks`` (None: every
    stack), as one interleaved run (``capture_ir``: each ok cell's IR captured after it);
    ``probes``: ``probes`` (empty: every probe) on ``stacks`` (None: every stack); ``claims``:
    the built-in claims matching ``claims`` (``fnmatch`` patterns), each with
    ``claim_params`` (``--param`` values for the claim ids matching the key) applied."""

    name: str
    seed: str  # "seed 000"
    question: str  # what the seed asks that this part answers
    kind: str
    suite: str | None = None
    workload: str | None = None
    params: tuple[str, ...] = ()
    stacks: str | None = None
    capture_ir: bool = False
    probes: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    claim_params: tuple[tuple[str, tuple[str, ...]], ...] = ()


SEED_000, SEED_001, SEED_002 = "seed 000", "seed 001", "seed 002"

FULL = (
    Part(
        "pitfalls",
        SEED_000,
        "what async dispatch, PRNG keys, tracing and the JIT pitfalls do to a user's code",
        PROBES,
    ),
    Part(
        "claims",
        "seeds 000-002",
        "each quantitative statement of the seeds (and Keras's), judged by its 95 % interval",
        CLAIMS,
        claims=("*",),
    ),
    Part(
        "seed-blog",
        SEED_000,
        "do NumPy, JAX, PyTorch and TensorFlow perform alike at GEMM 3000² on CPU, and what "
        "jit buys on SELU 3000², result on the device and copied to host",
        CELLS,
        suite="seed-blog",
    ),
    Part(
        "stack-wars-ops",
        SEED_001,
        "GEMM, FFN and MHA at GPT-2 small's shapes on every stack, and the StableHLO each "
        "compiler is given (captured after the run)",
        CELLS,
        suite="stack-wars-ops",
        capture_ir=True,
    ),
    Part(
        "numpy-vs-jax",
        SEED_002,
        "when JAX beats NumPy and by how much: 10000² poly and GEMM, the sweeps where they "
        "cross, grad, vmap and pmap",
        CELLS,
        suite="numpy-vs-jax",
    ),
    Part(
        "models",
        SEED_001,
        "the six models' first run, steady state, memory and out-of-memory on every stack",
        CELLS,
        suite="models",
    ),
    Part(
        "unified",
        SEED_001,
        "the next step: Keras 3 on each backend beside that backend's native stack",
        CELLS,
        suite="unified",
    ),
)

TINY = (
    Part(
        "pitfalls",
        SEED_000,
        FULL[0].question,
        PROBES,
        probes=("value-if",),
        stacks="jax:jit",
    ),
    Part(
        "claims",
        "seeds 000-002",
        FULL[1].question,
        CLAIMS,
        claims=(
            "seed002-jit-poly-6x",  # a factor of steady times
            "seed001-ops-jax-steady-after-one",  # a count
            "seed002-crossover-gemm",  # a crossover
            "seed001-stablehlo-lines-jax",  # IR lines
            "seed000-gpu-27x",  # hardware this machine lacks
        ),
        claim_params=(
            ("seed002-jit-poly-6x", ("n=64",)),
            ("seed001-ops-jax-steady-after-one", ("d_model=64", "d_ff=128")),
            ("seed002-crossover-gemm", ("n=32,64",)),
            ("seed001-stablehlo-lines-jax", ("scale=tiny", "seq=8")),
        ),
    ),
    Part(
        "seed-blog",
        SEED_000,
        FULL[2].question,
        CELLS,
        suite="seed-blog",
        params=("n=64",),
        stacks="numpy:eager,jax:jit",
    ),
    Part(
        "models",
        SEED_001,
        FULL[5].question,
        CELLS,
        workload="gpt2-small",
        params=("scale=tiny", "task=infer"),
        stacks="jax:jit",
        capture_ir=True,
    ),
)

SCALES = {"full": FULL, "tiny": TINY}


def parts_at(scale: str) -> tuple[Part, ...]:
    """The edition's parts at ``scale`` (``full`` or ``tiny``)."""
    if scale not in SCALES:
        raise UsageError(f"--scale {scale!r} is not one of {', '.join(SCALES)}; e.g. --scale tiny")
    return SCALES[scale]
