"""Suites: named lists of cells, with the timing settings that suit them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stackwars.errors import UnknownNameError


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
    )
}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise UnknownNameError("suite", name, SUITES, "see 'stackwars list suites'")
    return SUITES[name]
