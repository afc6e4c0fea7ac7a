"""Peer runner: time one cell with one peer harness, in this (fresh) process.

Usage: ``python benchmarks/peers/harness.py --job JOB.json --result RESULT.json``. Run by path
in its own process by ``benchmarks/compare_peers.py``, and again by pyperf for its workers, so it
imports nothing from ``benchmarks``: the job file says everything.

The timed function is the one a stackwars worker times: the workload's builder for the
framework, with the mode applied by stackwars' own Framework object (``jax.jit``,
``tf.function``), the same environment, settings and inputs (``workload.make_inputs``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackwars import workloads
from stackwars.frameworks import load_framework
from stackwars.frameworks.base import Framework, RunSettings
from stackwars.results.schema import CellSpec
from stackwars.runner.session import wants_x64
from stackwars.runner.worker import home_environment

Call = Callable[[], Any]
PEERS = ("torch_timer", "timeit", "pyperf", "hand_loop")


@dataclass(frozen=True)
class PeerBudgets:
    """How long each peer measures; every peer's own default unless marked otherwise."""

    torch_min_run_time_s: float = 0.2  # blocked_autorange's default
    timeit_repeat: int = 5
    hand_warmup_calls: int = 10
    hand_calls: int = 100
    hand_max_s: float = 1.0  # stop sooner for slow calls (GEMM 3000 would take 17 s)
    # pyperf's --fast preset (10 processes of 2 values, 1 warm-up): its default of 20
    # processes re-imports TensorFlow 21 times (~70 s) per job.
    pyperf_processes: int = 10
    pyperf_values: int = 2
    pyperf_min_time_s: float = 0.1


QUICK_BUDGETS = PeerBudgets(
    torch_min_run_time_s=0.05,
    timeit_repeat=3,
    hand_calls=50,
    hand_max_s=0.2,
    pyperf_processes=2,
    pyperf_min_time_s=0.01,
)


def prepare(job: dict[str, Any]) -> tuple[Call, Framework]:
    """What a stackwars worker does up to its first call, then one untimed call.

    The untimed call keeps compilation (jax.jit, tf.function tracing) out of every peer, as
    their users do; stackwars reports its first run separately.
    """
    framework_name, _, mode = job["stack"].partition(":")
    workload = workloads.get(job["workload"])
    params = workload.resolve(job["params"])
    spec = CellSpec(job["workload"], dict(params), job["stack"])
    settings = RunSettings(cache_dir=job["cache_dir"], x64=wants_x64(spec, "auto"))
    framework = load_framework(framework_name)
    os.environ.update({**home_environment(settings), **framework.environment(settings)})
    framework.load()
    framework.init(settings)
    arrays = framework.to_device(workload.make_inputs(params, job["seed"]))
    fn = framework.prepare(workload.implementations[framework_name](params), mode)
    framework.sync(fn(*arrays))
    sync = per_call_sync(framework, job["sync"])
    if sync is None:
        return lambda: fn(*arrays), framework
    return lambda: sync(fn(*arrays)), framework


def per_call_sync(framework: Framework, policy: str) -> Callable[[Any], Any] | None:
    """The sync inside each timed call: only where a call may return before its work is done
    (``async``), or always. NumPy, torch and TensorFlow on CPU return when done (a 2000²
    tf.function GEMM: 135 ms to return, then 0.3 ms to sync), and TensorFlow's
    sync_devices costs ~15 µs a call, more than the ~10 µs cell itself."""
    if policy == "async" and not framework.is_async():
        return None
    if framework.name == "jax":
        import jax

        # Bound directly: stackwars' sync looks jax up on each call, once per block there.
        return jax.block_until_ready
    return framework.sync


def torch_timer(call: Call, budgets: PeerBudgets) -> dict[str, Any]:
    import torch
    from torch.utils import benchmark

    # The Timer runs with 1 thread unless told otherwise: give it the threads torch uses.
    timer = benchmark.Timer("call()", globals={"call": call}, num_threads=torch.get_num_threads())
    measured = timer.blocked_autorange(min_run_time=budgets.torch_min_run_time_s)
    return result(
        measured.median, measured.iqr / measured.median, "IQR/median", len(measured.times)
    )


def timeit_peer(call: Call, budgets: PeerBudgets) -> dict[str, Any]:
    """autorange picks the loop count (a repeat lasts >= 0.2 s); the result is the median,
    over ``timeit_repeat`` repeats, of each repeat's time divided by the loop count."""
    timer = timeit.Timer("call()", globals={"call": call})
    number, _ = timer.autorange()
    per_call = [total / number for total in timer.repeat(budgets.timeit_repeat, number)]
    median = statistics.median(per_call)
    spread = (max(per_call) - min(per_call)) / median
    return result(median, spread, f"range/median of {len(per_call)} repeats", len(per_call))


def hand_loop(call: Call, budgets: PeerBudgets) -> dict[str, Any]:
    """What a user writes: warm up, then time each call with perf_counter, for
    ``hand_calls`` calls or until ``hand_max_s`` has passed (at least 5 calls)."""
    for _ in range(budgets.hand_warmup_calls):
        call()
    times: list[float] = []
    deadline = time.perf_counter() + budgets.hand_max_s
    while len(times) < budgets.hand_calls and (len(times) < 5 or time.perf_counter() < deadline):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    quartiles = statistics.quantiles(times, n=4)
    return result(median, (quartiles[2] - quartiles[0]) / median, "IQR/median", len(times))


def result(median_s: float, precision: float, kind: str, samples: int) -> dict[str, Any]:
    return {
        "median_s": median_s,
        "precision": precision,
        "precision_kind": kind,
        "samples": samples,
    }


def run_pyperf(job: dict[str, Any], argv: list[str], budgets: PeerBudgets) -> None:
    """pyperf's own method: this process is its manager, and it re-runs this script (with
    ``--worker``) in fresh processes that calibrate, warm up and measure."""
    import pyperf

    def forward(command: list[str], args: argparse.Namespace) -> None:
        command.extend(["--job", args.job])

    runner = pyperf.Runner(
        processes=budgets.pyperf_processes,
        values=budgets.pyperf_values,
        min_time=budgets.pyperf_min_time_s,
        add_cmdline_args=forward,
    )
    runner.argparser.add_argument("--job", required=True)
    runner.argparser.add_argument("--result")
    args = runner.parse_args([*argv, "--quiet"])
    call: Call = prepare(job)[0] if args.worker else (lambda: None)
    bench = runner.bench_func(f"{job['workload']}-{job['stack']}", call)
    if args.worker or bench is None:  # a worker's values go to its manager through a pipe
        return
    measured = result(bench.median(), bench.stdev() / bench.mean(), "std/mean", bench.get_nvalue())
    Path(args.result).write_text(json.dumps(measured), encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--job", required=True)
    parser.add_argument("--result")
    known, _ = parser.parse_known_args(argv)
    job = json.loads(Path(known.job).read_text(encoding="utf-8"))
    budgets = PeerBudgets(**job["budgets"])
    if job["harness"] == "pyperf":
        run_pyperf(job, argv, budgets)
        return 0
    peer = {"torch_timer": torch_timer, "timeit": timeit_peer, "hand_loop": hand_loop}
    call, framework = prepare(job)
    measured = peer[job["harness"]](call, budgets)
    measured["runtime"] = framework.runtime_settings()
    Path(known.result).write_text(json.dumps(measured, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
