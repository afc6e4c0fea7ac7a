"""Random numbers: the cost of drawing n standard normals per call (issue 13, seed 000's PRNG).

Each framework draws the way its users do: NumPy from a ``default_rng`` Generator, JAX from a
key passed to the function, torch from its global generator (``torch.manual_seed``), TensorFlow
from its global seed (``tf.random.set_seed``, then ``tf.random.normal``). The generator is
state: a builder returns a :class:`Stateful` whose ``bind`` seeds it once from the cell's seed,
outside timing, and every timed call draws n numbers from it.

JAX is given one key and draws from it on every call: the same numbers each time, and the same
work (a jitted function does not remember results). A loop would split the key between draws;
that split is a separate, tiny computation a user may place anywhere, so it is left out (the
other libraries advance their state inside the draw, a few integer operations). torch:xla
draws through torchax, whose key is traced into the compiled function: every call draws the
same numbers there too (the ``prng-draw-twice`` probe shows it).

No two libraries draw the same numbers, so parity checks statistics (``Workload.sampled``): the
count exactly, and the mean and standard deviation within six standard errors of 0 and 1.

FLOPs: one per number drawn, so that the rate column reads as numbers drawn per second; there
is no agreed operation count for a draw (generators differ in bits per number and transform).
Bytes: the numbers written once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stackwars.workloads import register
from stackwars.workloads._inputs import DTYPES
from stackwars.workloads.base import DTYPE_BYTES, Bound, Param, Sampled, Work, Workload

# Standard errors each statistic may stray by chance: a correct generator fails once in ~10⁹.
STANDARD_ERRORS = 6.0

ToDevice = Callable[[Sequence[Any]], tuple[Any, ...]]
# Seeds the framework's generator and says what to time: (params, seed, to_device, mode).
Start = Callable[[Mapping[str, Any], int, ToDevice, str], Bound]


class _Seeded:
    """A builder's result (see ``Stateful``): ``bind`` seeds the generator from the cell's
    seed once, outside timing."""

    def __init__(self, start: Start, params: Mapping[str, Any]) -> None:
        self._start, self._params = start, params

    def bind(self, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
        return self._start(self._params, int(inputs[0][0]), to_device, mode)


def _seeded(start: Start) -> Any:
    """The builder: a function of the parameters, as every workload has (its result is not a
    function but a ``Stateful``, hence Any, as for the models)."""
    return lambda params: _Seeded(start, params)


def _numpy(params: Mapping[str, Any], seed: int, to_device: ToDevice, mode: str) -> Bound:
    import numpy as np

    rng = np.random.default_rng(seed)
    n, dtype = params["n"], params["dtype"]
    return Bound(
        fn=lambda: rng.standard_normal(n, dtype=dtype),
        args=(),
        host_outputs=lambda out: [out],
        computed_dtype="",
    )


def _jax(params: Mapping[str, Any], seed: int, to_device: ToDevice, mode: str) -> Bound:
    import jax
    import numpy as np

    (key,) = to_device([jax.random.key(seed)])
    n, dtype = params["n"], params["dtype"]
    return Bound(
        fn=lambda key: jax.random.normal(key, (n,), dtype),
        args=(key,),
        host_outputs=lambda out: [np.asarray(out)],
        computed_dtype="",
    )


def _torch(params: Mapping[str, Any], seed: int, to_device: ToDevice, mode: str) -> Bound:
    import numpy as np
    import torch

    torch.manual_seed(seed)
    # The seed, placed, says where the stack's arrays live: the numbers are drawn there
    # (through torchax: on JAX's device).
    device = to_device([np.array([seed])])[0].device
    n, dtype = params["n"], getattr(torch, params["dtype"])
    return Bound(
        fn=lambda: torch.randn(n, dtype=dtype, device=device),
        args=(),
        host_outputs=_torch_host(mode),
        computed_dtype="",
    )


def _torch_host(mode: str) -> Callable[[Any], list[Any]]:
    import numpy as np

    if mode == "xla":
        from torchax import interop

        return lambda out: [np.asarray(interop.jax_view(out))]
    return lambda out: [out.cpu().numpy()]


def _tensorflow(params: Mapping[str, Any], seed: int, to_device: ToDevice, mode: str) -> Bound:
    import tensorflow as tf

    tf.random.set_seed(seed)
    n, dtype = params["n"], params["dtype"]
    return Bound(
        fn=lambda: tf.random.normal([n], dtype=dtype),
        args=(),
        host_outputs=lambda out: [out.numpy()],
        computed_dtype="",
    )


def _seed(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    return (np.array([seed], dtype=np.int64),)


def _statistics(draws: Any) -> Any:
    import numpy as np

    return np.array([draws.size, draws.mean(), draws.std()])


def _expected(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    import numpy as np

    return np.array([params["n"], 0.0, 1.0])


def _allowed(params: Mapping[str, Any]) -> Any:
    # Standard errors of a standard normal sample's mean and standard deviation: 1/√n, 1/√(2n).
    n = params["n"]
    return [0.0, STANDARD_ERRORS / math.sqrt(n), STANDARD_ERRORS / math.sqrt(2 * n)]


def _memory(params: Mapping[str, Any]) -> int:
    # The draws on the stack with the generator's temporaries (bits, transform) and on the
    # host, then parity's float64 copy and its squares.
    n, itemsize = params["n"], DTYPE_BYTES[params["dtype"]]
    return 4 * n * itemsize + 2 * n * 8


normals = register(
    Workload(
        name="normals",
        description="n standard normal numbers drawn per call, each library's own generator",
        params=(
            Param("n", int, 10_000_000, "how many numbers one call draws", minimum=1),
            Param("dtype", str, "float32", "element type", choices=DTYPES),
        ),
        make_inputs=_seed,
        reference=_expected,
        work=lambda params: Work(
            flops=float(params["n"]), bytes=float(params["n"] * DTYPE_BYTES[params["dtype"]])
        ),
        memory_bytes=_memory,
        implementations={
            "numpy": _seeded(_numpy),
            "jax": _seeded(_jax),
            "torch": _seeded(_torch),
            "tensorflow": _seeded(_tensorflow),
        },
        tiny={"n": 10_000, "dtype": "float32"},
        sampled=Sampled(statistics=_statistics, allowed=_allowed),
    )
)
