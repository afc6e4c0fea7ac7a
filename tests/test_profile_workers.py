"""Profiles of real stacks, each in its profile worker, at test size: gemm, selu, mha and the
smallest model (GPT-2 at scale=tiny) over jax:jit, torch:eager, torch:compile, torch:xla,
tensorflow:graph and tensorflow:xla (the stacks and workloads issue 27 names), and numpy, which
has no profiler. Checked: the answer's structure, the categories adding up to the traced time and
that time to the host clock's within the stated tolerance, the raw trace on disk and readable,
XLA's operations named from the optimized HLO.

Not all 24 pairs: each stack is profiled on two workloads and each workload on three stacks
(every profiler and every workload's categories, an XLA stack and a torch stack on each
workload), 12 cases. The other 12 cost about 45 s of the serial pass and reach no code these
do: a profile's path depends on the stack (its profiler, its IR) and on the workload's
operations (its categories), not on the pair. ``benchmarks/`` has no such limit: ``stackwars
profile`` on every pair is a user's command."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from stackwars.config import RunOptions
from stackwars.instruments.profile.service import profile_cells
from stackwars.instruments.profile.task import profile_stack
from stackwars.profiling.categories import CATEGORIES, ELEMENTWISE, MATMUL
from stackwars.profiling.result import Profile
from stackwars.timing.timer import TimingConfig

# Serial: each case checks the profiler's call windows against the host clock (within 10 % or
# 50 µs, over calls of tens of microseconds); a second worker competing for the two cores can
# preempt a call between the two clocks' readings. (The one failure seen, mha on torch:xla,
# was not that: its IR came from another lowering than the one XLA ran, fixed since.)
pytestmark = [pytest.mark.slow, pytest.mark.serial]
CALLS = 5
MHA = ("batch=1", "seq=32", "heads=2", "d_model=32")
# workload, parameters, a category the work must show time in, the stacks it is profiled on.
# Sizes large enough that TensorFlow's graph executor deems the kernels expensive and traces
# them in every call (at 48² it traced the matmul in some calls only: the blind spot TF_PROFILER
# states, which a profile's notes name). SELU stays on torch:compile: Inductor's fused kernel.
WORKLOADS = [
    # GEMM at 512²: torch's profiler adds about 50 µs to each traced call (54 µs on
    # 2026-11-28's AMD EPYC beside a 135 µs call at 128²; 53 µs beside 440 µs at 256² in a
    # clean-clone run, 12 % over 10 %): the call must outweigh that fixed cost for the traced
    # time to add up within 10 % (at 512² a call is ~3 ms, the cost under 2 %).
    ("gemm", ("n=512",), MATMUL, ("torch:eager", "torch:xla", "tensorflow:graph")),
    ("selu", ("n=128",), ELEMENTWISE, ("torch:compile", "tensorflow:xla", "jax:jit")),
    ("mha", MHA, MATMUL, ("jax:jit", "torch:xla", "tensorflow:graph")),
    ("gpt2-small", ("scale=tiny",), MATMUL, ("torch:eager", "torch:compile", "tensorflow:xla")),
]
STACKS = (
    "jax:jit",
    "torch:eager",
    "torch:compile",
    "torch:xla",
    "tensorflow:graph",
    "tensorflow:xla",
)
CASES = [(w, params, stack, busy) for w, params, busy, stacks in WORKLOADS for stack in stacks]
XLA = ("jax:jit", "torch:xla", "tensorflow:xla")
OPTIONS = RunOptions(
    timeout_s=300,
    timing=TimingConfig(steady_budget_s=0.1, min_steady_s=0.05, warmup_budget_s=1.0),
)


def profile(workload: str, params: tuple[str, ...], stack: str, out: Path) -> Profile:
    (spec,) = profile_cells(workload, params, stack)
    return profile_stack(spec, OPTIONS, out, CALLS)


def read_trace(path: Path) -> dict[str, object]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


@pytest.mark.parametrize(
    ("workload", "params", "stack", "busy"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES]
)
def test_a_stack_is_profiled_and_its_categories_add_up(
    workload: str, params: tuple[str, ...], stack: str, busy: str, tmp_path: Path
) -> None:
    found = profile(workload, params, stack, tmp_path)
    assert found.status == "ok", found.reason
    assert found.calls == CALLS and found.blind_spots
    assert found.steady_s and found.profiled_s and found.overhead is not None
    assert list(found.categories) == list(CATEGORIES)
    assert all(seconds >= 0 for seconds in found.categories.values())
    assert found.traced_s is not None
    assert sum(found.categories.values()) == pytest.approx(found.traced_s, rel=1e-9)
    assert found.adds_up is not None and found.adds_up.within, found.adds_up
    assert found.categories[busy] > 0, found.categories
    assert found.ops and found.ops_per_call and found.ops_per_call >= 1 and found.threads
    events = read_trace(Path(found.files["chrome"]))["traceEvents"]
    assert isinstance(events, list) and events
    if "tensorboard" in found.files:
        assert list(Path(found.files["tensorboard"]).glob("plugins/profile/*/*.xplane.pb"))
    if stack in XLA:
        assert found.hlo_joined is not None and found.hlo_joined > 0.9, found.hlo_joined
        assert (
            Path(found.files["optimized_hlo"]).read_text(encoding="utf-8").startswith("HloModule")
        )
        assert any(row.hlo for row in found.ops)
    if stack == "torch:compile" and busy == ELEMENTWISE:
        assert found.fusions_per_call and found.fusions_per_call >= 1  # Inductor's kernel


def test_the_cases_profile_each_stack_twice_and_each_workload_on_three_stacks() -> None:
    stacks = [case[2] for case in CASES]
    assert {stack: stacks.count(stack) for stack in STACKS} == dict.fromkeys(STACKS, 2)
    for _, _, _, on in WORKLOADS:
        assert len(set(on)) == 3 and set(on) & set(XLA) and any(s.startswith("torch") for s in on)


def test_numpy_is_reported_without_a_profile_and_says_what_a_python_profiler_misses(
    tmp_path: Path,
) -> None:
    found = profile("gemm", ("n=48",), "numpy:eager", tmp_path)
    assert found.status == "unsupported"
    assert "no profiler of its own" in found.reason and "cProfile" in found.reason
    assert not list(tmp_path.iterdir())  # no worker ran
