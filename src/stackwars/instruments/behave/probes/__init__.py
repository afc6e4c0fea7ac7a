"""Probes: small programs that show how a stack behaves when ordinary Python meets its
compiler (``stackwars behave``), written idiomatically per framework as workloads are.

A :class:`Probe` gives the arguments of each call (host NumPy arrays and Python values), a
float64 NumPy reference for one call, and per framework a builder. A builder receives the mode,
``prepare`` (the stack's own way to compile a function: ``jax.jit``, ``torch.compile``,
``tf.function``; identity in eager modes) and ``tally`` (call it where the program has a Python
side effect, such as a ``print``), and returns the function to call. It imports its framework
inside, like a workload builder: the parent imports none. The worker classifies what happened
(``instruments/behave/worker.py``); nothing about an outcome is written here.

Random draws have no reference: every framework draws its own numbers. A probe of draws gives
``expected_draws`` instead, and the worker compares the numbers its two calls return (with
``across_processes``, its one call in two fresh processes): the same numbers or new ones.
``expected_draws`` says, per framework, which of the two that framework's user expects from the
program (its documented semantics: a global state that advances, a JAX key that does not).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stackwars.errors import UnknownNameError

Prepare = Callable[[Callable[..., Any]], Callable[..., Any]]
Builder = Callable[[str, Prepare, Callable[[], None]], Callable[..., Any]]

# What two draws can be, in the words the matrix shows.
SAME = "same numbers"
NEW = "new numbers"


def _no_reference(args: tuple[Any, ...]) -> Any:
    raise TypeError("a probe of random draws has no reference: the worker compares its draws")


@dataclass(frozen=True)
class Probe:
    name: str
    description: str  # what a user expects, in one line
    calls: Callable[[], list[tuple[Any, ...]]]  # the arguments of each call, host values
    # The float64 NumPy result of one call (a probe of draws has none). When NumPy raises
    # instead (an index out of bounds), that exception is what the user expects: the worker
    # then compares the class of what the stack raised.
    reference: Callable[[tuple[Any, ...]], Any] = _no_reference
    implementations: dict[str, Builder] = field(default_factory=dict)
    # Compilations a user expects over all calls on a compiled stack (one per distinct
    # static value or shape the probe means to send).
    expected_compiles: int = 1
    # The program calls ``tally`` once per call (a print, an append): the worker checks it ran
    # on every call.
    side_effect_per_call: bool = False
    # The result's dtype is part of what the user expects: the reference's (NumPy's) dtype.
    dtype_matters: bool = False
    # What the caller's first argument holds after a call (float64, computed from the
    # arguments as they were before it), for a probe that asks whether the program changed
    # its input; None: not checked.
    input_after: Callable[[tuple[Any, ...]], Any] | None = None
    # A probe of random draws (see the module docstring): framework -> SAME or NEW.
    expected_draws: dict[str, str] = field(default_factory=dict)
    across_processes: bool = False


_REGISTRY: dict[str, Probe] = {}
# The modules that register probes, in the order the matrix shows them: seed 000's pitfalls
# first, then the families they lead to.
MODULES = ("pitfalls", "mutation", "loops", "retrace", "numerics", "prng")


def register(probe: Probe) -> Probe:
    if probe.name in _REGISTRY:
        raise ValueError(f"probe {probe.name!r} is registered twice")
    _REGISTRY[probe.name] = probe
    return probe


def registry() -> dict[str, Probe]:
    _load()
    return dict(_REGISTRY)


def get(name: str) -> Probe:
    probes = registry()
    if name not in probes:
        raise UnknownNameError("probe", name, probes, "see 'stackwars behave --list'")
    return probes[name]


def _load() -> None:
    for module in MODULES:
        # Each module registers its probes.
        importlib.import_module(f"stackwars.instruments.behave.probes.{module}")
