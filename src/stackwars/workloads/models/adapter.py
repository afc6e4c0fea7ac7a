"""A :class:`ModelSpec` as a :class:`Workload`: parameters, seeded weights and inputs, the float64
NumPy reference, work counts, memory prediction, and one stateful builder per framework.

Parameters: ``scale`` (full as published, tiny for tests), ``task`` (infer: the forward;
train: loss, backward and one AdamW step), ``batch``, ``seq`` (token models), ``image``
(image models; 0 keeps the config's size) and ``dtype`` (float32, bfloat16).

Inputs, in order: every canonical parameter (``spec.layout`` order), every buffer, the model
input, and for training the labels. Host weights are float32 even for bfloat16 cells: NumPy has
no bfloat16, so each stack casts on its device, outside timing.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackwars import frameworks
from stackwars.errors import ParameterError
from stackwars.workloads.base import DTYPE_BYTES, Bound, Param, Work, Workload
from stackwars.workloads.models import memory
from stackwars.workloads.models.spec import Config, ModelSpec, count

ToDevice = Callable[[Sequence[Any]], tuple[Any, ...]]
TASKS = ("infer", "train")
DTYPES = ("float32", "bfloat16")
SEED_001_BATCH = 2
SEED_001_SEQ = 64
# Bytes a train step moves per parameter, in parameter-sized units: weights read by the forward
# and the backward, the gradient written and read, both AdamW moments read and written, and the
# weights written.
TRAIN_TRAFFIC_PER_PARAM = 8


def config_for(spec: ModelSpec, params: Mapping[str, Any]) -> Config:
    """The spec's config at ``scale``, with the image size overridden when asked."""
    config = dict(spec.configs[str(params["scale"])])
    if spec.inputs == "images" and int(params.get("image", 0)):
        config["image"] = int(params["image"])
        try:
            spec.layout(config)  # the layout is where a model says which sizes it can take
        except ValueError as exc:
            raise ParameterError(f"{spec.name}: {exc}") from None
    positions = config.get("positions")
    if spec.inputs == "tokens" and positions is not None and int(params["seq"]) > positions:
        raise ParameterError(
            f"seq={params['seq']} exceeds {spec.name}'s {positions} positions at "
            f"scale={params['scale']}; use seq<={positions}"
        )
    return config


class Float64View(Mapping[str, Any]):
    """Canonical arrays converted to float64 one at a time, when the reference reads them, so
    that a billion-parameter reference never holds a float64 copy of every weight."""

    def __init__(self, arrays: Mapping[str, Any]) -> None:
        self._arrays = arrays

    def __getitem__(self, name: str) -> Any:
        import numpy as np

        return np.asarray(self._arrays[name], dtype=np.float64)

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)


@dataclass(frozen=True)
class ModelCell:
    """One model at one parameter setting, as a worker's builder sees it."""

    spec: ModelSpec
    params: Mapping[str, Any]
    framework: str

    @property
    def config(self) -> Config:
        return config_for(self.spec, self.params)

    @property
    def train(self) -> bool:
        return self.params["task"] == "train"

    @property
    def dtype(self) -> str:
        return str(self.params["dtype"])

    def split(self, arrays: tuple[Any, ...]) -> tuple[dict[str, Any], dict[str, Any], tuple]:
        """(canonical params, canonical buffers, the rest: inputs and maybe labels)."""
        config = self.config
        names, buffer_names = list(self.spec.layout(config)), list(self.spec.buffers(config))
        weights = dict(zip(names, arrays, strict=False))
        rest = arrays[len(names) :]
        buffers = dict(zip(buffer_names, rest, strict=False))
        return weights, buffers, tuple(rest[len(buffer_names) :])

    def bind(self, inputs: tuple[Any, ...], to_device: ToDevice, mode: str) -> Bound:
        """Load the host ``inputs`` into the framework (``to_device`` places arrays on the
        cell's device) and say what to time; see ``Bound``."""
        runner = importlib.import_module(f"{__package__}.{runner_module(self.framework)}")
        return runner.bind(self, inputs, to_device, mode)

    def family_module(self, code: str | None = None) -> Any:
        """The family's implementation written in ``code`` (default: this cell's framework's;
        "keras": the Keras models), importing what it is written with."""
        suffix = code or frameworks.FRAMEWORKS[self.framework].code_key
        return importlib.import_module(f"{__package__}.{self.spec.family}_{suffix}")


def _params(spec: ModelSpec) -> tuple[Param, ...]:
    shape: tuple[Param, ...]
    if spec.inputs == "tokens":
        shape = (Param("seq", int, SEED_001_SEQ, "tokens per sequence", minimum=1),)
    else:
        shape = (Param("image", int, 0, "image height and width (0: the model's)", minimum=0),)
    return (
        Param(
            "scale", str, "full", "full: as published; tiny: for tests", choices=("full", "tiny")
        ),
        Param("task", str, "infer", "infer: forward; train: loss, backward, AdamW", choices=TASKS),
        Param("batch", int, SEED_001_BATCH, "examples per step", minimum=1),
        *shape,
        Param("dtype", str, "float32", "parameter and activation type", choices=DTYPES),
    )


def _make_inputs(spec: ModelSpec, params: Mapping[str, Any], seed: int) -> tuple[Any, ...]:
    import numpy as np

    config = config_for(spec, params)
    rng = np.random.default_rng(seed)
    host = np.float32
    arrays = [
        spec.init(name, shape, rng).astype(host, copy=False)
        for layout in (spec.layout(config), spec.buffers(config))
        for name, shape in layout.items()
    ]
    batch = int(params["batch"])
    if spec.inputs == "tokens":
        shape = (batch, int(params["seq"]))
        arrays.append(rng.integers(0, config["vocab"], shape, dtype=np.int32))
        label_shape, classes = shape, config["vocab"]
    else:
        size = config["image"]
        arrays.append(rng.standard_normal((batch, size, size, 3)).astype(host))
        label_shape, classes = (batch,), config["classes"]
    if params["task"] == "train":
        arrays.append(rng.integers(0, classes, label_shape, dtype=np.int32))
    return tuple(arrays)


def _reference(spec: ModelSpec, params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    """The float64 NumPy forward for inference; ``None`` for training, which the parent checks
    across stacks (NumPy has no autodiff)."""
    if params["task"] == "train":
        return None
    cell = ModelCell(spec, params, "numpy")
    weights, buffers, rest = cell.split(inputs)
    import numpy as np

    x = np.asarray(rest[0], dtype=np.float64) if spec.inputs == "images" else rest[0]
    return spec.forward(cell.config, Float64View(weights), Float64View(buffers), x)


def _control(spec: ModelSpec, params: Mapping[str, Any], inputs: tuple[Any, ...]) -> Any:
    """The NumPy forward in float32 on the same weights: the float32 control (see Workload)."""
    if params["task"] == "train":
        return None
    weights, buffers, rest = ModelCell(spec, params, "numpy").split(inputs)
    return spec.forward(config_for(spec, params), weights, buffers, rest[0])


def _tokens(spec: ModelSpec, params: Mapping[str, Any]) -> tuple[int, int]:
    return int(params["batch"]), int(params.get("seq", 0))


def _work(spec: ModelSpec, params: Mapping[str, Any]) -> Work:
    config = config_for(spec, params)
    flops = spec.forward_flops(config, *_tokens(spec, params))
    weight_bytes = count(spec.layout(config)) * DTYPE_BYTES[str(params["dtype"])]
    if params["task"] == "train":
        # Backward costs two forwards (input and weight gradients); AdamW's update is elementwise.
        flops += spec.loss_flops(config, *_tokens(spec, params))
        return Work(flops=3 * flops, bytes=float(TRAIN_TRAFFIC_PER_PARAM * weight_bytes))
    return Work(flops=flops, bytes=float(weight_bytes))


def _memory_for(spec: ModelSpec, params: Mapping[str, Any], framework: str) -> tuple[int, str]:
    prediction = memory.predict(spec, config_for(spec, params), params, framework)
    return prediction.total, prediction.describe()


def _device_memory_for(
    spec: ModelSpec, params: Mapping[str, Any], framework: str
) -> tuple[int, str]:
    prediction = memory.predict(spec, config_for(spec, params), params, framework).on_device()
    return prediction.total, prediction.describe()


def _device_slack_for(
    spec: ModelSpec, params: Mapping[str, Any], framework: str
) -> tuple[int, str]:
    return memory.cached_free_blocks(spec, config_for(spec, params), params, framework)


def _error_growth(spec: ModelSpec, params: Mapping[str, Any]) -> float:
    """Rounding grows with the length of the sums and the depth: the fourth root of the
    parameter count tracks both across these models in float32 (measured errors in
    docs/log.md). In bfloat16 the error is dominated by rounding the weights themselves
    (norm gains near 1 lose their deviation), at any size: measured max |err| / RMS against
    float64 is 0.01-0.035 for the tiny BERT, ViT and ResNet, 0.15 for the tiny LLaMA, 0.04-0.055
    for GPT-2 small and 0.11-0.14 for GPT-Neo 1.3B on torch, jax.jit and tf. The bfloat16 factor
    (at least 10, so rtol 0.2, growing with the eighth root of the count) passes those and still
    fails a wrong model, whose error is of the order of the RMS itself."""
    n_params = count(spec.layout(config_for(spec, params)))
    if params["dtype"] == "bfloat16":
        return max(10.0, n_params**0.125)
    return max(2.0, n_params**0.25)


def unsupported_reason(params: Mapping[str, Any], framework: str, mode: str) -> str:
    """Why a stack cannot run a model cell ('' when it can)."""
    if framework == "numpy" and params["task"] == "train":
        return "NumPy has no autodiff, so the numpy stack runs task=infer only"
    if framework == "numpy" and params["dtype"] != "float32":
        return f"NumPy has no {params['dtype']}; the numpy stack runs float32"
    return ""


def runner_module(framework: str) -> str:
    """The module that runs models on ``framework``: ``run_<its code key>`` (run_keras for
    every Keras stack)."""
    return f"run_{frameworks.FRAMEWORKS[framework].code_key}"


def model_frameworks() -> tuple[str, ...]:
    """The registered frameworks that run models: those with a runner module here (found
    without importing it, nor its framework)."""
    return tuple(
        name
        for name in frameworks.FRAMEWORKS
        if importlib.util.find_spec(f"{__package__}.{runner_module(name)}") is not None
    )


def _builder(spec: ModelSpec, framework: str) -> Any:
    return lambda params: ModelCell(spec, params, framework)


def _summary(spec: ModelSpec) -> str:
    full = spec.parameter_count("full")
    return f"{full:,} parameters ({full / 1e6:.1f} M); tiny: {spec.parameter_count('tiny'):,}"


def as_workload(spec: ModelSpec) -> Workload:
    runners = model_frameworks()
    tiny: dict[str, Any] = {"scale": "tiny", "task": "infer", "batch": 2, "dtype": "float32"}
    if spec.inputs == "tokens":
        tiny["seq"] = 8
    else:
        tiny["image"] = 0
    return Workload(
        name=spec.name,
        description=spec.description,
        params=_params(spec),
        make_inputs=lambda params, seed: _make_inputs(spec, params, seed),
        reference=lambda params, inputs: _reference(spec, params, inputs),
        control=lambda params, inputs: _control(spec, params, inputs),
        work=lambda params: _work(spec, params),
        # Without a framework: the largest of the frameworks' predictions.
        memory_bytes=lambda params: max(_memory_for(spec, params, fw)[0] for fw in runners),
        implementations={fw: _builder(spec, fw) for fw in runners},
        tiny=tiny,
        error_growth=lambda params: _error_growth(spec, params),
        memory_for=lambda params, framework: _memory_for(spec, params, framework),
        device_memory_for=lambda params, framework: _device_memory_for(spec, params, framework),
        device_slack_for=lambda params, framework: _device_slack_for(spec, params, framework),
        unsupported=unsupported_reason,
        summary=lambda: _summary(spec),
        defaults_given=lambda given: _tiny_defaults(tiny, given),
    )


def _tiny_defaults(tiny: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """At scale=tiny, the test-size values for what was not given: the published sizes (seq
    64) do not fit a tiny model (32 positions)."""
    return dict(tiny) if given.get("scale") == "tiny" else {}
