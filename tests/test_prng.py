"""Seed 000's PRNG section: probes of random draws (same numbers or new ones, from runs) and
the normals workload, whose parity is statistical."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stackwars import workloads
from stackwars.frameworks.base import RunSettings
from stackwars.frameworks.numpy import NumpyFramework
from stackwars.instruments.behave import probes
from stackwars.instruments.behave.probes import NEW, SAME
from stackwars.instruments.behave.service import behave
from stackwars.instruments.behave.worker import draws_relation, observe_draws
from stackwars.results.schema import CellSpec
from stackwars.runner import parity
from stackwars.runner.protocol import Request
from stackwars.runner.worker import CellRun
from stackwars.timing.timer import TimingConfig

PRNG = ["prng-seed-twice", "prng-processes", "prng-draw-twice", "prng-generator", "prng-split"]
TINY_TIMING = TimingConfig(
    steady_budget_s=0.02, min_steady_s=0.0, warmup_budget_s=0.02, min_blocks=3
)


def test_the_outcome_is_the_relation_seen_or_silently_different() -> None:
    assert draws_relation(SAME, "jax", [1.0, 2.0], [1.0, 2.0], "call")["outcome"] == SAME
    assert draws_relation(NEW, "torch", [1.0, 2.0], [3.0, 4.0], "call")["outcome"] == NEW
    broken = draws_relation(NEW, "torch", [1.0, 2.0], [1.0, 2.0], "process")
    assert broken["outcome"] == "silently different"
    assert broken["detail"].startswith("same numbers where a torch user expects new numbers")
    assert "process 1 drew 1 2; process 2 drew 1 2" in broken["detail"]
    # Bit for bit: a draw that differs in one number is a new draw.
    assert draws_relation(SAME, "jax", [1.0, 2.0], [1.0, 2.5], "call")["outcome"] != SAME


def test_every_prng_probe_says_what_each_framework_expects() -> None:
    for name in PRNG:
        probe = probes.get(name)
        assert set(probe.expected_draws) == set(probe.implementations), name
        assert set(probe.expected_draws.values()) <= {SAME, NEW}, name
        assert len(probe.calls()) == (1 if probe.across_processes else 2), name
    with pytest.raises(TypeError, match="no reference"):
        probes.get("prng-seed-twice").reference(())


def _observe(name: str, earlier: Any = None) -> dict[str, Any]:
    probe = probes.get(name)
    build = probe.implementations["numpy"]
    return observe_draws(probe, NumpyFramework(), "eager", build, earlier)


def test_numpy_draws_in_process_as_seed_000_says_torch_does() -> None:
    assert _observe("prng-draw-twice")["outcome"] == NEW
    assert _observe("prng-seed-twice")["outcome"] == SAME
    first = _observe("prng-processes")
    assert first["outcome"] == "drew" and len(first["draws"][0]) == 4
    assert _observe("prng-processes", first["draws"])["outcome"] == SAME
    other = [[v + 1 for v in first["draws"][0]]]
    assert _observe("prng-processes", other)["outcome"] == "silently different"


# One process per stack observes every PRNG probe as a behave worker does (the framework
# started once, not once per probe: behave's fresh worker per cell is tested in test_behave.py
# and test_probes.py). prng-processes runs first in each process, as in the fresh worker the
# product gives it, and a second process draws again to compare.
PRNG_DRIVER = """
import json, sys
from stackwars.frameworks import implementation_for, parse_stack
from stackwars.instruments.behave import probes
from stackwars.instruments.behave.worker import observe_draws, start_framework

stack, cache_dir, names, earlier = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
stack = parse_stack(stack)
framework = start_framework(stack.framework, stack.mode, cache_dir)
found = {}
for name in names.split(","):
    probe = probes.get(name)
    build = implementation_for(probe.implementations, stack.framework)
    if build is None:
        found[name] = {"outcome": "unsupported"}
    else:
        found[name] = observe_draws(probe, framework, stack.mode, build, earlier.get(name))
print(json.dumps(found))
"""


def observed(stack: str, names: list[str], earlier: dict[str, Any], folder: Path) -> dict[str, Any]:
    argv = [sys.executable, "-c", PRNG_DRIVER, stack, str(folder), ",".join(names)]
    done = subprocess.run(
        [*argv, json.dumps(earlier)], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_seed_000s_prng_statements_hold_on_every_framework(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    found: dict[tuple[str, str], str] = {}
    order = ["prng-processes", *(name for name in PRNG if name != "prng-processes")]
    for stack in ("numpy:eager", "jax:jit", "torch:eager", "tensorflow:eager"):
        first = observed(stack, order, {}, tmp_path)
        assert first["prng-processes"]["outcome"] == "drew", first["prng-processes"]
        second = observed(
            stack, order[:1], {"prng-processes": first.pop("prng-processes")["draws"]}, tmp_path
        )
        framework = stack.split(":")[0]
        for name, outcome in {**first, **second}.items():
            found[name, framework] = outcome["outcome"]
    # A global state advances with every draw; a JAX key gives the same numbers until split.
    for framework, relation in {"numpy": NEW, "jax": SAME, "torch": NEW, "tensorflow": NEW}.items():
        assert found["prng-draw-twice", framework] == relation, framework
        assert found["prng-generator", framework] == relation, framework
        # The same seed gives the same numbers again, in this process and in another.
        assert found["prng-seed-twice", framework] == SAME, framework
        assert found["prng-processes", framework] == SAME, framework
    assert found["prng-split", "jax"] == NEW
    assert found["prng-split", "torch"] == "unsupported"  # torch has no way to split


@pytest.mark.slow
def test_behave_runs_a_probe_across_processes_in_two_fresh_workers() -> None:
    """The parent's part: the first worker's draws handed to the second, one outcome stored."""
    [outcome] = behave(["prng-processes"], "numpy:eager")
    assert (outcome.probe, outcome.outcome) == ("prng-processes", SAME)
    assert outcome.detail.startswith("process 1 drew ")


def _draws(n: int, scale: float = 1.0, shift: float = 0.0) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [(rng.standard_normal(n) * scale + shift).astype(np.float32)]


@pytest.mark.parametrize(
    ("outputs", "reason"),
    [
        (_draws(10_000, scale=2.0), "± 0, 0.06, 0.04243 expected"),
        (_draws(10_000, shift=0.1), "where 1e+04, 0, 1"),
        (_draws(9_999), "statistics 9999"),
        ([np.full(10_000, np.nan, dtype=np.float32)], "nan"),
    ],
    ids=["scaled", "shifted", "short", "nan"],
)
def test_normals_parity_fails_on_wrong_draws(outputs: list[np.ndarray], reason: str) -> None:
    normals = workloads.get("normals")
    params = normals.resolve(normals.tiny)
    reference = normals.reference(params, normals.make_inputs(params, 0))
    good, why = parity.check(normals, params, _draws(10_000), reference)
    assert good.ok and why == "" and good.reference == "expected statistics"
    bad, why = parity.check(normals, params, outputs, reference)
    assert bad.ok is False and reason in why


def test_a_stack_drawing_wrong_numbers_is_a_mismatch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    normals = workloads.get("normals")
    right: Any = normals.implementations["numpy"]  # returns a Stateful, not a function

    def doubled(params: Mapping[str, Any]) -> Any:
        class Doubled:
            def bind(self, inputs: Any, to_device: Any, mode: str) -> Any:
                bound = right(params).bind(inputs, to_device, mode)
                draw = bound.fn
                return dataclasses.replace(bound, fn=lambda: 2 * draw())

        return Doubled()

    wrong = dataclasses.replace(normals, name="normals-doubled", implementations={"numpy": doubled})
    monkeypatch.setitem(workloads.registry(), wrong.name, wrong)
    spec = CellSpec(wrong.name, wrong.resolve(wrong.tiny), "numpy:eager")
    cell = CellRun(Request(spec, RunSettings(cache_dir=str(tmp_path)), TINY_TIMING)).run()
    assert cell.status == "mismatch", cell.reason
    assert "statistics" in cell.reason
