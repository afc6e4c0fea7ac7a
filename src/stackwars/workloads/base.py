"""Workloads: named computations with parameters, inputs, a reference and implementations.

A :class:`Workload` is plain data plus functions. The parent process uses its parameters,
work counts and memory estimate to plan; a worker uses the rest. Contract (checked for every
registered workload by ``tests/test_workload_contract.py``):

* ``make_inputs(params, seed)`` returns NumPy arrays, the same numbers for every stack.
* ``reference(params, inputs)`` computes the result in float64 NumPy; its arrays are compared,
  in order, with the flattened result of every implementation.
* ``implementations[framework](params)`` returns a function of the device arrays, written the
  way that framework's users write it. It must import its framework inside the builder: this
  module and the workload modules are imported by the parent, which imports no framework.
* ``work(params)`` gives analytic FLOPs and bytes moved; ``memory_bytes(params)`` the data the
  computation needs beyond the framework's own footprint, used to refuse cells that cannot fit.
* ``tiny`` are parameters small enough for tests.

Stateful workloads (the end-to-end models) differ in two ways. A builder may return a
:class:`Stateful`, whose ``bind(inputs, to_device, mode) -> Bound`` loads the arrays that are
state (weights, optimizer state) into the framework's own objects once, outside timing, and
says which function to time on which arguments, how to restore the state before the parity
call, and which arrays parity compares. And ``reference`` may return ``None``: no single
process can compute the reference (a train step: NumPy has no autodiff), so the parent
compares the stacks with each other.

A workload whose result is random draws (``sampled``) has no elementwise reference either: no
two frameworks draw the same numbers. Parity then compares statistics of each output (its
count, mean, spread) with the values ``reference`` returns for them, each within what chance
alone moves it at those parameters (see :class:`Sampled`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from stackwars.errors import ParameterError
from stackwars.frameworks import implementation_for

ParamValue = int | float | str | bool
Params = dict[str, ParamValue]
Builder = Callable[[Mapping[str, Any]], Callable[..., Any]]

DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}

# Relative tolerance by the dtype a stack computed in, scaled per workload by a factor that
# reflects accumulation depth (e.g. sqrt(k) for a length-k dot product).
#
# float64, from rounding analysis: every operation rounds its exact result by a relative
# u = 2**-53 (1.1e-16) at most, so an expression of n operations is within about kappa * n * u
# of the exact value (Higham, Accuracy and Stability of Numerical Algorithms, ch. 3), kappa
# being its condition number (cancellation between terms, a denominator near zero). Two
# correct implementations (other operation orders, fused multiply-adds, transcendental
# functions a few ulp apart) may each be that far off. The default admits kappa * n up to 1e8:
# a long elementwise expression (n ~ 1e3 operations) with moderate cancellation (kappa ~ 1e5),
# rtol = 1e8 * u ~ 1e-8. It still tells a float64 result from one that went through float32
# anywhere (rounding to float32 alone errs by up to 6e-8, twice rtol * (RMS + |ref|) for an
# element of typical size) and from a wrong formula (docs/methodology.md, "Parity").
FLOAT64_CONDITION_TIMES_OPERATIONS = 1e8
FLOAT64_UNIT_ROUNDOFF = 2.0**-53
BASE_RTOL = {
    "float64": FLOAT64_CONDITION_TIMES_OPERATIONS * FLOAT64_UNIT_ROUNDOFF,
    "float32": 2e-6,
    "bfloat16": 2e-2,
    "float16": 2e-3,
}


@dataclass(frozen=True)
class Bound:
    """A stateful workload made ready on one stack (see the module docstring)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    # Host arrays (float32 or float64, in order) parity compares, from one call's output.
    host_outputs: Callable[[Any], list[Any]]
    computed_dtype: str  # '' when the host arrays keep the dtype computed: parity reads it
    # Puts the state back as bind left it, so that the parity call repeats the first step.
    reset: Callable[[], None] = lambda: None


@runtime_checkable
class Stateful(Protocol):
    """What a stateful workload's builder returns (see the module docstring)."""

    def bind(
        self,
        inputs: tuple[Any, ...],
        to_device: Callable[[Sequence[Any]], tuple[Any, ...]],
        mode: str,
    ) -> Bound:
        """Load ``inputs`` (``to_device`` places arrays on the cell's device) into the
        framework's own objects, once, outside timing, and say what to time."""
        ...


@dataclass(frozen=True)
class Sampled:
    """How parity checks a result made of random draws (see the module docstring)."""

    # One output's draws (float64, flattened) -> its statistics, a 1-D array whose expected
    # values the workload's ``reference`` returns.
    statistics: Callable[[Any], Any]
    # Per statistic, the absolute difference chance alone may cause at these parameters (e.g.
    # six standard errors: a correct generator fails about once in 10⁹ checks).
    allowed: Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Param:
    """A workload parameter: its type, default, and the values it accepts."""

    name: str
    kind: type
    default: ParamValue
    help: str
    choices: tuple[ParamValue, ...] = ()
    minimum: float | None = None

    def parse(self, text: str) -> ParamValue:
        value = self._convert(text.strip())
        if self.choices and value not in self.choices:
            allowed = ", ".join(map(str, self.choices))
            raise ParameterError(f"{self.name}={text!r} is not one of: {allowed}")
        if self.minimum is not None and isinstance(value, int | float) and value < self.minimum:
            raise ParameterError(f"{self.name}={text!r} is below the minimum {self.minimum}")
        return value

    def _convert(self, text: str) -> ParamValue:
        try:
            if self.kind is bool:
                return {"true": True, "false": False, "1": True, "0": False}[text.lower()]
            if self.kind is int:
                return int(text.replace("_", ""))
            if self.kind is float:
                return float(text)
        except (KeyError, ValueError):
            article = "an" if self.kind is int else "a"
            raise ParameterError(
                f"{self.name}={text!r} is not {article} {self.kind.__name__}; "
                f"example: {self.name}={self.default}"
            ) from None
        return text


@dataclass(frozen=True)
class Work:
    flops: float
    bytes: float


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float  # absolute, in the units of the reference


@dataclass(frozen=True)
class Workload:
    """A named computation; see the module docstring for the contract."""

    name: str
    description: str
    params: tuple[Param, ...]
    make_inputs: Callable[[Mapping[str, Any], int], tuple[Any, ...]]
    reference: Callable[[Mapping[str, Any], tuple[Any, ...]], Any]
    work: Callable[[Mapping[str, Any]], Work]
    memory_bytes: Callable[[Mapping[str, Any]], int]
    implementations: dict[str, Builder]
    tiny: Params = field(default_factory=dict)
    # Multiplies BASE_RTOL; e.g. accumulation depth for reductions and matmuls.
    error_growth: Callable[[Mapping[str, Any]], float] = lambda params: 1.0
    source: str = "builtin"
    # Per-framework prediction (bytes, and how they add up) for workloads whose memory depends
    # on how a framework holds state; when set, planning uses it instead of memory_bytes.
    memory_for: Callable[[Mapping[str, Any], str], tuple[int, str]] | None = None
    # The part of memory_for an accelerator holds (the rest stays on the host); None: all of
    # memory_bytes goes to the device (inputs, results, temporaries), the host keeps the
    # NumPy inputs and the results it reads back.
    device_memory_for: Callable[[Mapping[str, Any], str], tuple[int, str]] | None = None
    # What the framework's device allocator keeps reserved but unused beside device_memory_for
    # at the peak (bytes, and why); the device must hold it too. None: nothing known.
    device_slack_for: Callable[[Mapping[str, Any], str], tuple[int, str]] | None = None
    # The same computation as the reference but in float32 NumPy, for workloads whose rounding
    # error no simple rule predicts (deep models): how far it lands from the reference is what
    # float32 alone does to this result, and parity allows a float32 stack a multiple of that.
    control: Callable[[Mapping[str, Any], tuple[Any, ...]], Any] | None = None
    # Why a stack cannot run these parameters (framework, mode -> reason, '' when it can):
    # decided in the parent so that such cells never start a worker.
    unsupported: Callable[[Mapping[str, Any], str, str], str] = lambda params, fw, mode: ""
    # A line for 'stackwars list workloads' (the models show their parameter counts).
    summary: Callable[[], str] = lambda: ""
    # Defaults that depend on the values given (a model's scale=tiny brings sizes that fit the
    # tiny model): given values -> defaults to use instead of the parameters' own.
    defaults_given: Callable[[Mapping[str, Any]], Params] = lambda given: {}
    # Devices the framework must show on a cpu host for these parameters (a map over devices,
    # workloads/pmap.py); the worker sets RunSettings.host_devices from it before the
    # framework starts, since simulated devices can only be made then.
    host_devices: Callable[[Mapping[str, Any]], int] = lambda params: 1
    # Set for a result made of random draws: parity compares statistics, not elements.
    sampled: Sampled | None = None

    def builder(self, framework: str) -> Builder | None:
        """The implementation for ``framework``: its own, else its family's (the Keras stacks
        share one written with ``keras.ops``); None when there is neither."""
        return implementation_for(self.implementations, framework)

    def param(self, name: str) -> Param:
        for param in self.params:
            if param.name == name:
                return param
        allowed = ", ".join(p.name for p in self.params) or "(none)"
        raise ParameterError(
            f"workload {self.name!r} has no parameter {name!r}; allowed: {allowed}"
        )

    def defaults(self) -> Params:
        return {param.name: param.default for param in self.params}

    def resolve(self, given: Mapping[str, ParamValue]) -> Params:
        """Defaults (adjusted to ``given`` by ``defaults_given``) overlaid with ``given``;
        unknown names are refused."""
        for name in given:
            self.param(name)
        return {**self.defaults(), **self.defaults_given(given), **given}

    def tolerance(self, params: Mapping[str, Any], computed_dtype: str, scale: float) -> Tolerance:
        """Tolerance for a result computed in ``computed_dtype``; ``scale`` is the RMS of the
        reference, so that errors near zero are judged against the result's magnitude."""
        rtol = BASE_RTOL.get(computed_dtype, BASE_RTOL["float32"]) * self.error_growth(params)
        return Tolerance(rtol=rtol, atol=rtol * scale)
