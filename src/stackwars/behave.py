"""``stackwars behave``: every probe on every stack, each in a fresh worker, as data.

What a probe did on a stack is classified in its worker (``runner/behave_worker.py``) from
what happened; this module only plans the cells, starts the workers and collects outcomes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence

from stackwars import probes, workloads
from stackwars.config import default_memory_budget
from stackwars.frameworks import all_stacks, parse_stacks, stack_missing_reason
from stackwars.results.behave import Outcome
from stackwars.runner.child import Limits, run_child

PROBE_TIMEOUT_S = 300.0


def behave(
    names: Sequence[str] = (),
    stacks: str | None = None,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    workload_files: Sequence[str] = (),
    on_outcome: Callable[[Outcome], None] = lambda outcome: None,
) -> list[Outcome]:
    """Every probe named (all when none) on every stack given (all when None)."""
    chosen = [probes.get(name).name for name in names] or list(probes.registry())
    stack_list = parse_stacks(stacks) if stacks else all_stacks()
    for path in workload_files:
        workloads.load_workload_file(path)
    outcomes = []
    # One compile cache for the whole command: probes observe behaviour, not first-run time,
    # and a warm Inductor cache saves seconds per torch.compile worker.
    with tempfile.TemporaryDirectory(prefix="stackwars-behave-") as cache:
        for probe in chosen:
            for stack in stack_list:
                outcome = _one(probe, str(stack), timeout_s, workload_files, cache)
                on_outcome(outcome)
                outcomes.append(outcome)
    return outcomes


def _one(
    probe: str, stack: str, timeout_s: float, workload_files: Sequence[str], cache: str
) -> Outcome:
    framework, _, mode = stack.partition(":")
    missing = stack_missing_reason(framework, mode)
    if missing:
        return Outcome(probe, stack, "unsupported", missing)
    request = {
        "probe": probe,
        "stack": stack,
        "cache_dir": cache,
        "workload_files": list(workload_files),
    }
    limits = Limits(timeout_s, default_memory_budget())
    end = run_child("stackwars.runner.behave_worker", "behave", request, limits)
    if end.ok and end.result is not None:
        result = end.result
        return Outcome(probe, stack, result["outcome"], result["detail"], result.get("compiles"))
    return Outcome(probe, stack, end.status, end.detail)
