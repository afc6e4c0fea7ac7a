"""The experiments of an edition: each seed question's cells, probes or claims, at each scale.

The parts run in this order, so that a budget that runs out leaves out the longest and least
asked-for: the claims (the findings) first, the models and Keras's stacks last.

A part is measured by the services every other command uses (a suite's run with
``service.execution``, ``stackwars behave``'s probes, ``stackwars claims``), so an edition
measures exactly what those commands would. ``full`` is every seed experiment at the seeds'
sizes; ``tiny`` is the same edition with each kind of experiment once at test size (a suite's
timed cells, a model with its IR captured, a probe, and one claim of each kind of statistic,
one of them asking for hardware this machine lacks).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from stackwars.errors import UsageError

CELLS, PROBES, CLAIMS = "cells", "probes", "claims"


@dataclass(frozen=True)
class Part:
    """One experiment: ``kind`` says which service measures it. ``cells``: the cells of
    ``suite`` or ``workload`` with ``params`` (``--param`` values) on ``stacks`` (None: every
    stack), as one interleaved run (``capture_ir``: each ok cell's IR captured after it);
    ``probes``: ``probes`` (empty: every probe) on ``stacks`` (None: every stack); ``claims``:
    the built-in claims matching ``claims`` (``fnmatch`` patterns), each with
    ``claim_params`` (``--param`` values for the claim ids matching the key) applied, and
    the inputs placed as ``inputs`` says. A cells part with ``reuse`` does not measure again a
    cell an earlier cells part of the edition measured ok with its inputs placed the same way:
    it lists that part's measurement, named as such."""

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
    # A second reading of claims already judged in another part: their inputs placed
    # differently (config.INPUT_MODES); the claims' ids get ``-{inputs}`` so that the two
    # readings stand as two named findings.
    inputs: str = "resident"
    reuse: bool = False


SEED_000, SEED_001, SEED_002 = "seed 000", "seed 001", "seed 002"

FULL = (
    Part(
        "claims",
        "seeds 000-002",
        "each quantitative statement of the seeds (and Keras's), judged by its 95 % interval",
        CLAIMS,
        claims=("*",),
    ),
    Part(
        "claims-per-call",
        SEED_002,
        "the 6x read the way the seed's code ran: NumPy arrays handed to the jitted function "
        "in every call, so each timed call places its inputs on the device",
        CLAIMS,
        claims=("seed002-jit-poly-6x", "seed002-jit-poly-6x-as-measured"),
        inputs="per-call",
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
        "pitfalls",
        SEED_000,
        "what async dispatch, PRNG keys, tracing and the JIT pitfalls do to a user's code",
        PROBES,
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
        # Its native cells are the models and operations parts' (what that saves: docs/log.md).
        reuse=True,
    ),
)


def _full(name: str) -> Part:
    return next(part for part in FULL if part.name == name)


TINY = (
    replace(_full("pitfalls"), probes=("value-if",), stacks="jax:jit"),
    replace(
        _full("claims"),
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
    replace(
        _full("claims-per-call"),
        claims=("seed002-jit-poly-6x",),
        claim_params=(("seed002-jit-poly-6x", ("n=64",)),),
    ),
    replace(_full("seed-blog"), params=("n=64",), stacks="numpy:eager,jax:jit"),
    replace(
        _full("models"),
        suite=None,
        workload="gpt2-small",
        params=("scale=tiny", "task=infer"),
        stacks="jax:jit",
        capture_ir=True,
    ),
)

SCALES = {"full": FULL, "tiny": TINY}


@dataclass(frozen=True)
class NotCovered:
    """Something a seed describes that no part measures, and why."""

    seed: str
    what: str
    why: str


NOT_COVERED = (
    NotCovered(
        SEED_000,
        "PyTorch's on-demand allocation 'can lead to fragmentation in long-running training jobs'",
        "every cell is a fresh worker timed for seconds to minutes; a training run of hours, "
        "with the allocator's fragmentation read over it, is no workload here (a GPU visit "
        "explained one JAX out-of-memory by the allocator's growth, docs/accelerators.md)",
    ),
    NotCovered(
        SEED_002,
        "'JAX also includes a growing version of its own SciPy package'",
        "a statement of scope, with no speed or result to check: no workload calls jax.scipy",
    ),
)


def parts_at(scale: str) -> tuple[Part, ...]:
    """The edition's parts at ``scale`` (``full`` or ``tiny``)."""
    if scale not in SCALES:
        raise UsageError(f"--scale {scale!r} is not one of {', '.join(SCALES)}; e.g. --scale tiny")
    return SCALES[scale]
