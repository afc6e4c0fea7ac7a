"""A GEMM with a regression injected through environment variables, for the gate's tests and
its power benchmark (benchmarks/power/fresh_sessions.py). Written the way the README's "Your own
workloads" shows.

* parameter ``extra=F`` (or ``REGRESS_EXTRA=F``, added to it): the function computes the
  first ``F * n`` rows of the product twice (a real, proportional slowdown of about ``F``, in
  every framework's own code path). As a parameter, several sizes of regression run in one
  interleaved run (the power benchmark); as a variable, the cell stays the same cell (A/B).
* ``REGRESS_FAIL=1``: building the function raises (the cell ends ``error``).
* ``REGRESS_HOLD_MB=M``: the function keeps ``M`` MiB more alive while it runs (a memory
  regression).
* ``REGRESS_RECOMPILE=1`` (torch): the function reads a global that each call changes, the
  pitfall that makes torch.compile's guards fail and recompile on every call (until its
  recompile limit sends the frame to eager): the second run compiles again (the deterministic
  gate's injected recompile, results/counts.py).
* ``REGRESS_COPY=1`` (numpy, torch): the function returns a copy of its product, made while
  the product is alive (the deterministic gate's injected extra copy: the bytes a call holds
  at its peak grow by the product's size).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from stackwars.workloads import Param, Work, Workload, register


def inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    rng = np.random.default_rng(seed)
    n = params["n"]
    return tuple(rng.standard_normal((n, n)).astype("float32") for _ in range(2))


def reference(params: Mapping[str, Any], xs: tuple[Any, ...]) -> Any:
    return xs[0].astype("float64") @ xs[1].astype("float64")


def _extra_rows(params: Mapping[str, Any]) -> int:
    if os.environ.get("REGRESS_FAIL"):
        raise RuntimeError("REGRESS_FAIL is set: this candidate is broken on purpose")
    fraction = params["extra"] + float(os.environ.get("REGRESS_EXTRA", "0"))
    return round(params["n"] * fraction)


def _held() -> Any:
    import numpy as np

    megabytes = int(os.environ.get("REGRESS_HOLD_MB", "0"))
    return np.ones(megabytes * 2**18, dtype=np.float32) if megabytes else None


def _copies() -> bool:
    return bool(os.environ.get("REGRESS_COPY"))


def numpy_impl(params: Mapping[str, Any]) -> Any:
    extra, held, copies = _extra_rows(params), _held(), _copies()

    def gemm(a: Any, b: Any) -> Any:
        out = a @ b
        if extra:
            out[:extra] = a[:extra] @ b
        return out.copy() if copies else out

    gemm.held = held  # type: ignore[attr-defined]  # alive as long as the function
    return gemm


CALLS = [0]  # read by the torch function under REGRESS_RECOMPILE: a guard that always fails


def torch_impl(params: Mapping[str, Any]) -> Any:
    import torch

    extra, held, copies = _extra_rows(params), _held(), _copies()
    recompile = bool(os.environ.get("REGRESS_RECOMPILE"))

    def gemm(a: Any, b: Any) -> Any:
        out = a @ b
        if extra:
            out = torch.cat([a[:extra] @ b, out[extra:]])
        if recompile:
            CALLS[0] += 1
            out = out * (1 + 0 * CALLS[0])
        return out.clone() if copies else out

    gemm.held = held  # type: ignore[attr-defined]
    return gemm


def jax_impl(params: Mapping[str, Any]) -> Any:
    import jax.numpy as jnp

    extra, held = _extra_rows(params), _held()

    def gemm(a: Any, b: Any) -> Any:
        out = a @ b
        if extra:
            out = jnp.concatenate([a[:extra] @ b, out[extra:]])
        return out

    gemm.held = held  # type: ignore[attr-defined]
    return gemm


register(
    Workload(
        name="regressed-gemm",
        description="GEMM n×n, float32; REGRESS_EXTRA computes a fraction of its rows twice",
        params=(
            Param("n", int, 512, "matrix size", minimum=1),
            Param("extra", float, 0.0, "fraction of rows computed twice", minimum=0.0),
        ),
        make_inputs=inputs,
        reference=reference,
        work=lambda params: Work(flops=2 * params["n"] ** 3, bytes=12 * params["n"] ** 2),
        memory_bytes=lambda params: 16 * params["n"] ** 2,
        implementations={"numpy": numpy_impl, "torch": torch_impl, "jax": jax_impl},
    )
)
