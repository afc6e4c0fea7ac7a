"""Seed 002's pmap ("parallelization without effort"): ``convolve`` mapped over devices.

``pmap``: ``batch`` signals, each convolved with one shared kernel (``np.convolve(signal,
kernel, mode="valid")`` row by row, in float32), split evenly over ``devices`` devices. Strong
scaling: the batch is the same whatever ``devices`` is, so devices=1 is the baseline row and
each device gets batch/devices signals. ``style`` is the API that maps:

* ``pmap`` (jax:jit): ``jax.pmap`` of the per-device convolution (``jax.vmap`` of
  ``jnp.convolve`` over that device's signals), on signals shaped (devices, batch/devices,
  length). Since JAX 0.8 ``jax.pmap`` is ``jax.jit`` of a ``shard_map``, so jax:jit's
  ``jax.jit`` around it compiles the same program, without the old jit-of-pmap warning, and
  ``stackwars ir`` shows it.
* ``sharding`` (jax:jit, torch:xla): the batched convolution written as for one device, under
  ``jax.jit``, on signals sharded along the batch by ``NamedSharding(Mesh(devices, ("d",)),
  PartitionSpec("d"))``: XLA partitions the program over the devices. torch:xla runs torch
  code this way: torchax tensors placed with ``apply_jax_(jax.device_put, sharding)``.
* ``mirrored`` (tensorflow:graph): ``tf.distribute.MirroredStrategy`` over logical devices,
  ``strategy.run`` of the per-replica convolution inside the ``tf.function``.

Each style runs only on the stacks named above, in the mode its users run it in; every other
cell is unsupported with the reason: NumPy has no devices, torch's own modes have no in-process
map over cpu devices, and a style on another framework's stack names that framework's style.

Inputs are placed once, outside timing, as each API expects them, the way a loop that calls
the map many times keeps its data (pmap refuses signals placed on one device, and jit would
compute where they are): sharded on a mesh with ``jax.device_put``, or one part per replica
with ``experimental_distribute_values_from_function``; the kernel is replicated. A timed call
leaves each device's result on its device; parity gathers them on the host.

On cpu the devices are simulated (``Workload.host_devices``: XLA's
``--xla_force_host_platform_device_count``, TensorFlow's logical cpu devices) and share the
same cores: more devices cannot compute faster, so the curve shows what the map costs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackwars.errors import ParameterError
from stackwars.workloads import register
from stackwars.workloads._inputs import in_float64, memory_estimate, normal
from stackwars.workloads.base import DTYPE_BYTES, Bound, Param, Work, Workload

STYLES = ("pmap", "sharding", "mirrored")
DEVICE_COUNTS = (1, 2, 4)
DTYPE = "float32"
# The stacks each style runs on, and the API it names (see the module docstring).
STACKS = {
    "pmap": (("jax", "jit"),),
    "sharding": (("jax", "jit"), ("torch", "xla")),
    "mirrored": (("tensorflow", "graph"),),
}
APIS = {
    "pmap": "jax.pmap",
    "sharding": "jax.jit over arrays with a NamedSharding",
    "mirrored": "tf.distribute.MirroredStrategy",
}

NO_DEVICES = "NumPy has no devices: it computes on the host alone, with no map over devices"
NO_TORCH_MAP = (
    "torch has no in-process data-parallel map over cpu devices: torch.nn.DataParallel is "
    "CUDA-only, and torch.distributed (gloo) needs one process per device, while a stackwars "
    "timing worker is one process; torch:xla runs style=sharding (torch code through torchax)"
)
# A style on its own framework but another mode.
OTHER_MODE = {
    ("pmap", "eager"): (
        "style=pmap is timed on jax:jit: since JAX 0.8 jax.pmap is jax.jit of a shard_map, so "
        "the jax.jit around it compiles the same program, which 'stackwars ir' shows; jax:eager "
        "would time that program again behind pmap's own dispatch"
    ),
    ("sharding", "eager"): (
        "style=sharding is jax.jit over sharded arrays, one program XLA partitions over the "
        "devices; jax:eager would dispatch each operation on its own: run it on jax:jit"
    ),
    ("mirrored", "eager"): (
        "running MirroredStrategy eagerly is what TensorFlow warns against ('Using "
        "MirroredStrategy eagerly has significant overhead ... wrap run inside a "
        "tf.function'): style=mirrored runs on tensorflow:graph"
    ),
    ("mirrored", "xla"): (
        "tf.function(jit_compile=True) around strategy.run compiles every replica's convolution "
        "into one XLA program for one device (its HLO holds a convolution per replica), so "
        "nothing is mapped over devices: style=mirrored runs on tensorflow:graph"
    ),
}

ToDevice = Callable[[Sequence[Any]], tuple[Any, ...]]
Place = Callable[[Mapping[str, Any], tuple[Any, ...], ToDevice], Bound]


def _uneven(params: Mapping[str, Any]) -> str:
    d, b = params["devices"], params["batch"]
    if b % d == 0:
        return ""
    return (
        f"batch={b} does not split evenly over devices={d}: give a multiple of {d} "
        "(64 splits over 1, 2 and 4)"
    )


def _unsupported(params: Mapping[str, Any], framework: str, mode: str) -> str:
    style = params["style"]
    if uneven := _uneven(params):
        return uneven
    if (framework, mode) in STACKS[style]:
        return ""
    if framework == "numpy":
        return NO_DEVICES
    if framework == "torch" and mode != "xla":
        return NO_TORCH_MAP
    if any(owner == framework for owner, _ in STACKS[style]):
        return OTHER_MODE[style, mode]
    own = " or ".join(
        f"style={other} ({owner}:{its_mode})"
        for other in STYLES
        for owner, its_mode in STACKS[other]
        if owner == framework
    )
    return (
        f"style={style} is {APIS[style]} ({', '.join(':'.join(s) for s in STACKS[style])}); "
        f"{framework}'s map over devices is {own}"
    )


def _dims(params: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(devices, batch, length, kernel), refusing a kernel longer than the signals. A batch
    the devices cannot share evenly is refused per cell, as unsupported (--find-max-batch
    asks about every batch)."""
    d, b, n, k = params["devices"], params["batch"], params["length"], params["kernel"]
    if k > n:
        raise ParameterError(
            f"pmap needs kernel <= length, got kernel={k}, length={n}: np.convolve's valid "
            "mode would swap them"
        )
    return d, b, n, k


def _inputs(params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    _, b, n, k = _dims(params)
    if uneven := _uneven(params):
        raise ParameterError(uneven)
    rng = np.random.default_rng(seed)
    return normal(rng, (b, n), DTYPE), normal(rng, (k,), DTYPE)


def _reference(params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    import numpy as np

    signals, kernel = in_float64(inputs)
    return np.stack([np.convolve(signal, kernel, mode="valid") for signal in signals])


def _outputs(params: Mapping[str, Any]) -> int:
    _, b, n, k = _dims(params)
    return b * (n - k + 1)


def _work(params: Mapping[str, Any]) -> Work:
    _, b, n, k = _dims(params)
    elements = b * n + k + _outputs(params)
    return Work(flops=2.0 * _outputs(params) * k, bytes=float(elements * DTYPE_BYTES[DTYPE]))


def _memory(params: Mapping[str, Any]) -> int:
    _, b, n, k = _dims(params)
    outputs = _outputs(params)
    # The host inputs and their placed copies, a result-sized temporary, the result on the
    # devices and gathered on the host, and the float64 reference.
    return memory_estimate(DTYPE, b * n + k, outputs, outputs)


def _on_host(parts: Sequence[Any], batch: int) -> list[Any]:
    """The devices' results as one host array of rows, in order (for parity, not timed)."""
    import numpy as np

    return [np.concatenate([np.asarray(part) for part in parts]).reshape(batch, -1)]


@dataclass(frozen=True)
class _OnDevices:
    """What a builder returns: ``bind`` places the inputs on the devices, once, outside
    timing, and names the function to time (see ``workloads/base.py``'s Stateful)."""

    params: Mapping[str, Any]
    framework: str
    place: Place | None  # None: the framework has no map over devices at all

    def bind(self, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
        reason = _unsupported(self.params, self.framework, mode)
        if reason or self.place is None:
            raise NotImplementedError(reason)
        return self.place(self.params, inputs, to_device)


def _builder(framework: str, place: Place | None) -> Callable[[Mapping[str, Any]], Any]:
    return lambda params: _OnDevices(params, framework, place)


def _jax_mesh(devices: int) -> Any:
    import jax
    import numpy as np
    from jax.sharding import Mesh

    available = jax.devices()
    if len(available) < devices:
        raise RuntimeError(
            f"devices={devices} needs {devices} {available[0].platform} devices and jax sees "
            f"{len(available)}; on cpu a worker simulates them, unless jax started earlier"
        )
    return Mesh(np.array(available[:devices]), ("d",))


def _convolve_jax(params: Mapping[str, Any], mesh: Any) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    def convolve(signal: Any, kernel: Any) -> Any:
        return jnp.convolve(signal, kernel, mode="valid")

    batched = jax.vmap(convolve, in_axes=(0, None))
    if params["style"] == "sharding":

        def convolve_sharded(signals: Any, kernel: Any) -> Any:
            return batched(signals, kernel)

        return convolve_sharded
    convolve_pmap = jax.pmap(batched, in_axes=(0, None), devices=list(mesh.devices))

    def convolve_devices(signals: Any, kernel: Any) -> Any:
        return convolve_pmap(signals, kernel)

    return convolve_devices


def _place_jax(params: Mapping[str, Any], inputs: tuple[Any, ...], to_device: ToDevice) -> Bound:
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    del to_device  # it places on one device; these go on a mesh
    d, b, n, _ = _dims(params)
    mesh = _jax_mesh(d)
    signals, kernel = inputs
    if params["style"] == "pmap":
        signals = signals.reshape(d, b // d, n)  # pmap maps over the leading axis
    placed = (
        jax.device_put(signals, NamedSharding(mesh, PartitionSpec("d"))),
        jax.device_put(kernel, NamedSharding(mesh, PartitionSpec())),
    )
    return Bound(
        fn=_convolve_jax(params, mesh),
        args=jax.block_until_ready(placed),
        host_outputs=lambda out: _on_host([out], b),
        computed_dtype=DTYPE,
    )


def _place_torch(params: Mapping[str, Any], inputs: tuple[Any, ...], to_device: ToDevice) -> Bound:
    """torch code on torch:xla, its tensors sharded the way torchax places them: a JAX
    function applied to the array each tensor wraps."""
    import jax
    import torch.nn.functional as F
    from jax.sharding import NamedSharding, PartitionSpec
    from torchax import interop

    d, b, _, _ = _dims(params)
    mesh = _jax_mesh(d)
    signals, kernel = to_device(inputs)
    signals.apply_jax_(jax.device_put, NamedSharding(mesh, PartitionSpec("d")))
    kernel.apply_jax_(jax.device_put, NamedSharding(mesh, PartitionSpec()))
    jax.block_until_ready(interop.jax_view((signals, kernel)))

    def convolve_sharded(signals: Any, kernel: Any) -> Any:
        # conv1d correlates: convolution is correlation with the kernel flipped.
        return F.conv1d(signals[:, None], kernel.flip(0)[None, None])[:, 0]

    return Bound(
        fn=convolve_sharded,
        args=(signals, kernel),
        host_outputs=lambda out: _on_host([interop.jax_view(out)], b),
        computed_dtype=DTYPE,
    )


def _place_tensorflow(
    params: Mapping[str, Any], inputs: tuple[Any, ...], to_device: ToDevice
) -> Bound:
    import tensorflow as tf

    d, b, n, _ = _dims(params)
    # The cell's device type (CPU, GPU), read from where to_device places a tensor.
    kind = tf.DeviceSpec.from_string(to_device(inputs[1:])[0].device).device_type
    names = [device.name for device in tf.config.list_logical_devices(kind)]
    if len(names) < d:
        raise RuntimeError(
            f"devices={d} needs {d} logical {kind} devices and tensorflow sees {len(names)}; "
            "on cpu a worker makes them, unless tensorflow started earlier"
        )
    strategy = tf.distribute.MirroredStrategy(devices=names[:d])
    parts = (inputs[0].reshape(d, b // d, n), [inputs[1]] * d)

    def per_replica(values: Any) -> Any:
        def value(context: Any) -> Any:
            replica = context.replica_id_in_sync_group
            with tf.device(strategy.extended.worker_devices[replica]):
                return tf.identity(values[replica])

        return strategy.experimental_distribute_values_from_function(value)

    def convolve(signals: Any, kernel: Any) -> Any:
        # conv1d correlates [batch, width, channels] with [width, in, out] filters.
        flipped = tf.reverse(kernel, [0])[:, None, None]
        return tf.nn.conv1d(signals[:, :, None], flipped, stride=1, padding="VALID")[:, :, 0]

    def convolve_replicas(signals: Any, kernel: Any) -> Any:
        return strategy.experimental_local_results(strategy.run(convolve, args=(signals, kernel)))

    return Bound(
        fn=convolve_replicas,
        args=tuple(per_replica(values) for values in parts),
        host_outputs=lambda out: _on_host(out, b),
        computed_dtype=DTYPE,
    )


pmap = register(
    Workload(
        name="pmap",
        description=(
            "seed 002's convolve mapped over 1, 2 or 4 devices (jax.pmap, jax.jit with a "
            "NamedSharding, tf.distribute.MirroredStrategy); simulated on cpu"
        ),
        params=(
            Param(
                "devices",
                int,
                2,
                "devices the batch is split over; on cpu simulated, sharing the same cores",
                choices=DEVICE_COUNTS,
            ),
            Param(
                "style",
                str,
                "pmap",
                "pmap: jax.pmap (jax:jit); sharding: jax.jit over a NamedSharding (jax:jit, "
                "torch:xla); mirrored: tf.distribute.MirroredStrategy (tensorflow:graph)",
                choices=STYLES,
            ),
            Param("batch", int, 64, "signals in all, split evenly over the devices", minimum=1),
            Param("length", int, 4096, "samples per signal", minimum=1),
            Param("kernel", int, 65, "samples in the kernel (at most length)", minimum=1),
        ),
        make_inputs=_inputs,
        reference=_reference,
        work=_work,
        memory_bytes=_memory,
        implementations={
            "numpy": _builder("numpy", None),
            "jax": _builder("jax", _place_jax),
            "torch": _builder("torch", _place_torch),
            "tensorflow": _builder("tensorflow", _place_tensorflow),
        },
        tiny={"devices": 1, "style": "pmap", "batch": 4, "length": 32, "kernel": 5},
        # Each output is a length-kernel dot product: rounding grows like its square root.
        # Measured at the defaults, max |error| / RMS(reference): jax 8e-7, tensorflow 1.5e-6,
        # against 1.6e-5 allowed.
        error_growth=lambda params: math.sqrt(params["kernel"]),
        unsupported=_unsupported,
        host_devices=lambda params: params["devices"],
    )
)
