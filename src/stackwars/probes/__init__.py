"""Probes: small programs that show how a stack behaves when ordinary Python meets its
compiler (``stackwars behave``), written idiomatically per framework as workloads are.

A :class:`Probe` gives the arguments of each call (host NumPy arrays and Python values), a
float64 NumPy reference for one call, and per framework a builder. A builder receives the mode,
``prepare`` (the stack's own way to compile a function: ``jax.jit``, ``torch.compile``,
``tf.function``; identity in eager modes) and ``tally`` (call it where the program has a Python
side effect, such as a ``print``), and returns the function to call. It imports its framework
inside, like a workload builder: the parent imports none. The worker classifies what happened
(``runner/behave_worker.py``); nothing about an outcome is written here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stackwars.errors import UnknownNameError

Prepare = Callable[[Callable[..., Any]], Callable[..., Any]]
Builder = Callable[[str, Prepare, Callable[[], None]], Callable[..., Any]]


@dataclass(frozen=True)
class Probe:
    name: str
    description: str  # what a user expects, in one line
    calls: Callable[[], list[tuple[Any, ...]]]  # the arguments of each call, host values
    reference: Callable[[tuple[Any, ...]], Any]  # float64 NumPy result of one call
    implementations: dict[str, Builder] = field(default_factory=dict)
    # Compilations a user expects over all calls on a compiled stack (one per distinct
    # static value or shape the probe means to send).
    expected_compiles: int = 1
    # The program calls ``tally`` once per call (a print, an append): the worker checks it ran
    # on every call.
    side_effect_per_call: bool = False


_REGISTRY: dict[str, Probe] = {}


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
    from stackwars.probes import pitfalls  # noqa: F401 (registers its probes)
