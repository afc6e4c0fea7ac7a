"""The selftest worker: proves, in a fresh process, that one stack's timed block includes the
completion of its work.

Usage: ``python -m stackwars.instruments.selftest.worker REQUEST.json RESULT.json``, where the
request is ``{"stack": "jax:jit", "device": "cpu", "cache_dir": FOLDER}``. The result is
``{"stack", "device", "status", "reason", "checks"}``: status ``ok`` (the checks ran, whatever
they found), ``unsupported`` (the framework cannot be imported) or ``error``/``oom``. Like
``worker.py``, the worker exits non-zero only when it cannot write its result.

The timing protocol (``timing/timer.py``) times a block of calls and one ``sync`` of the last
output, which is right only if ``sync`` really waits and the device runs calls in order. The
work here is a chain of ``x = tanh(x @ w)`` (``Framework.selftest_step``, in the framework's own
operations): each call needs the previous one's output, so the last output being ready means
every call is done. It is timed two ways, on a size where one call takes at least
``MIN_CALL_S``: ``CHAIN`` calls each synchronised, and ``CHAIN`` calls with one sync at the end
(the protocol's block). The size is calibrated first (a fourth check says whether a call
reached its minimum time, or the largest size stayed under it), then three checks:

* physical: a synchronised call cannot beat a generous bound on the device's FLOP rate; a
  sync that does not wait times only the dispatch and yields an impossible rate;
* chain: the block with one sync takes about as long as the calls synchronised one by one
  (``CHAIN`` times one synchronised call), since dependent calls cannot overlap;
* dispatch (asynchronous stacks only): the calls of the block return well before its sync
  does; if they do not, the stack's sync waited for nothing or its calls are not asynchronous.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stackwars.frameworks import FRAMEWORKS, load_framework, split_stack
from stackwars.frameworks.base import Framework, RunSettings, split_device
from stackwars.instruments.selftest.data import Check
from stackwars.runner.child import serve
from stackwars.runner.worker import classify, home_environment

FIRST_N = 256
MAX_N = 4096
# A GPU or TPU runs a 4096² float32 GEMM in a few ms (an H100: about 3 ms at full float32
# precision); their memory holds 16384² matrices (1 GiB each) with ease.
ACCELERATOR_MAX_N = 16384
# Long enough that dispatch and sync overheads (µs to a fraction of a ms) are a small part of
# a call, short enough that the whole selftest of a stack takes seconds.
MIN_CALL_S = 5e-3
# On an accelerator the fixed cost of a call (dispatch, launch, sync: tens of µs) is measured,
# and a call must take OVERHEAD_MULTIPLE times it, at least MIN_ACCELERATOR_CALL_S and at most
# MIN_CALL_S: a fast device reaches that at sizes it can hold. On the cpu, MIN_CALL_S always:
# other processes on a shared machine add ms to short calls (see CALIBRATION_CALLS).
OVERHEAD_MULTIPLE = 50
MIN_ACCELERATOR_CALL_S = 1e-3
OVERHEAD_N = 8  # a GEMM of this size is all fixed cost
# Past a size too small, the next is aimed at AIM times the minimum call time (the margin a
# busier moment needs to stay above it), on multiples of SIZE_STEP (whole SIMD tiles).
AIM = 1.5
SIZE_STEP = 64
# Other processes only add time, so one fast call shows that a size is too small; a size is
# taken only when this many calls were all slow. Three calls at n = 256 (0.3 ms of work) all
# took over 5 ms while another benchmark ran, and blocks of such short calls are mostly noise.
CALIBRATION_CALLS = 10
CHAIN = 8
# Each time is the fastest of REPEATS: other processes only ever add time, and on this shared
# 2-core machine they added so much that medians failed (numpy's single calls at n = 256 took
# 16 ms, 20x their time in a chain, while another benchmark ran).
REPEATS = 7
# More rounds of REPEATS only while a check fails: a busy spell can spoil every run of one
# block in a round (torch's 8 synchronised calls at n = 256 took 14 ms at best, 6x the chain,
# with the load average at 5). Fastest times only get closer to the truth with more runs; a
# sync that does not wait fails every round.
MAX_ROUNDS = 3
# Both blocks run the same CHAIN calls and differ only in where they synchronise, so with a
# working sync their ratio is about 1 (0.87 to 1.14 measured here, 0.69 to 1.32 while other
# benchmarks ran: thread pools lose whole scheduler slices, and each sync may wait for one).
# The slack covers such a busy shared machine. Far below: each sync costs time of its own
# (a fixed wait); far above: a sync given a call's output returned before that call was done.
CHAIN_LOW, CHAIN_HIGH = 0.6, 1.5
# An asynchronous call returns once its work is queued (tens of µs here) while the work takes
# MIN_CALL_S or more; a sync that does not wait makes the two times equal.
DISPATCH_MAX_FRACTION = 0.5
# Upper bounds on float32 FLOP/s, generous so that no real device fails: per CPU core, about
# 2x a 4 GHz core with two AVX-512 FMA units (256 GFLOP/s); for a GPU or TPU, over 4x the
# dense TF32/bf16 rate of the fastest accelerators (about 1e15). A sync that does not wait
# times a dispatch of tens of µs, i.e. 1e13-1e16 FLOP/s for the GEMMs chosen here.
CPU_CORE_FLOPS_LIMIT = 5e11
ACCELERATOR_FLOPS_LIMIT = 5e15
# A gain above 1 keeps the chained values away from 0 (and from slow subnormals) while tanh
# keeps them bounded, however long the chain.
GAIN = 2.0


Clock = Callable[[], float]


def flops_limit(device: str) -> float:
    kind, _ = split_device(device)
    if kind == "cpu":
        return CPU_CORE_FLOPS_LIMIT * (os.cpu_count() or 1)
    return ACCELERATOR_FLOPS_LIMIT


def gemm_flops(n: int) -> float:
    """The GEMM's 2n³; tanh is left out, so that the rate is a lower bound."""
    return 2.0 * n**3


class Chain:
    """The prepared step on device inputs of size n, and its timings."""

    def __init__(
        self,
        framework: Framework,
        step: Callable[..., Any],
        n: int,
        clock: Clock = time.perf_counter,
    ) -> None:
        import numpy as np

        rng = np.random.default_rng(0)
        x = rng.standard_normal((n, n)).astype(np.float32)
        w = (rng.standard_normal((n, n)) * (GAIN / np.sqrt(n))).astype(np.float32)
        self.framework, self.step, self.n, self.clock = framework, step, n, clock
        self.x, self.w = framework.to_device([x, w])

    def single_s(self) -> float:
        """One call, synchronised."""
        start = self.clock()
        self.framework.sync(self.step(self.x, self.w))
        return self.clock() - start

    def synced_s(self) -> float:
        """CHAIN dependent calls, each synchronised."""
        out = self.x
        start = self.clock()
        for _ in range(CHAIN):
            out = self.step(out, self.w)
            self.framework.sync(out)
        return self.clock() - start

    def chained_s(self) -> tuple[float, float]:
        """CHAIN dependent calls, then one sync: (until the last returned, until synchronised)."""
        out = self.x
        start = self.clock()
        for _ in range(CHAIN):
            out = self.step(out, self.w)
        dispatched = self.clock()
        self.framework.sync(out)
        return dispatched - start, self.clock() - start


@dataclass(frozen=True)
class Calibration:
    """The size chosen, how long its fastest synchronised call took, and what it had to take."""

    n: int
    call_s: float
    min_call_s: float
    overhead_s: float | None  # an accelerator's fixed cost per call; None on the cpu

    @property
    def reached(self) -> bool:
        return self.call_s >= self.min_call_s


def min_call_s(device: str, overhead_s: float | None) -> float:
    """The time a calibrated call must take on ``device``, given its fixed cost per call."""
    if split_device(device)[0] == "cpu" or overhead_s is None:
        return MIN_CALL_S
    return min(MIN_CALL_S, max(MIN_ACCELERATOR_CALL_S, OVERHEAD_MULTIPLE * overhead_s))


def calibrate(
    framework: Framework,
    step: Callable[..., Any],
    device: str,
    max_n: int,
    clock: Clock = time.perf_counter,
) -> tuple[Chain, Calibration]:
    """From FIRST_N, sizes grown by :func:`next_size` (up to max_n) until one whose
    synchronised calls all take the device's minimum call time (:func:`min_call_s`)."""
    overhead_s = None
    if split_device(device)[0] != "cpu":
        tiny = Chain(framework, step, OVERHEAD_N, clock)
        tiny.single_s()  # compiles for this size, when the mode compiles
        overhead_s = min(tiny.single_s() for _ in range(CALIBRATION_CALLS))
    required = min_call_s(device, overhead_s)
    n = FIRST_N
    while True:
        chain = Chain(framework, step, n, clock)
        chain.single_s()  # compiles for this size, when the mode compiles
        # Other processes only add time: one call under the minimum shows n is too small.
        fastest = min(chain.single_s() for _ in range(CALIBRATION_CALLS))
        if n >= max_n or fastest >= required:
            return chain, Calibration(n, fastest, required, overhead_s)
        n = next_size(n, fastest, required, max_n)


def next_size(n: int, call_s: float, required_s: float, max_n: int) -> int:
    """The size to try after ``n``, whose call took ``call_s`` < ``required_s``: where the
    GEMM's n³ says a call takes ``AIM`` times the minimum, up to a multiple of SIZE_STEP, at most
    double ``n`` (small sizes are mostly fixed cost, which the n³ law overrates) and at most
    ``max_n``. Doubling alone overshoots up to 8-fold: 1024² at 4.5 ms became 2048² at 36 ms,
    and every timed block of the checks paid for it."""
    aimed = n * (AIM * required_s / max(call_s, 1e-12)) ** (1 / 3)
    stepped = SIZE_STEP * math.ceil(aimed / SIZE_STEP)
    return min(max_n, 2 * n, stepped)


def check_calibration(calibration: Calibration) -> Check:
    """Passed when a call reached its minimum time; None (not conclusive) when the largest
    size allowed stayed under it: the other checks then time calls near their overheads."""
    numbers = {
        "n": calibration.n,
        "call_s": calibration.call_s,
        "min_call_s": calibration.min_call_s,
        **({"overhead_s": calibration.overhead_s} if calibration.overhead_s is not None else {}),
    }
    took = (
        f"n={calibration.n}: a synchronised call took {calibration.call_s * 1e3:.3g} ms at "
        f"best, the minimum is {calibration.min_call_s * 1e3:.3g} ms"
    )
    if calibration.overhead_s is not None:
        took += f" ({OVERHEAD_MULTIPLE}x the {calibration.overhead_s * 1e6:.3g} µs a call costs)"
    if calibration.reached:
        return Check("calibration", True, numbers, took)
    return Check(
        "calibration",
        None,
        numbers,
        f"{took}: not reached at the largest size allowed; the checks below time calls "
        "close to their overheads",
    )


def check_physical(n: int, call_s: float, limit: float, runs: int) -> Check:
    flops = gemm_flops(n)
    rate = flops / call_s
    passed = rate <= limit
    verdict = "within" if passed else "ABOVE"
    cause = "" if passed else ": the sync did not wait for the work"
    return Check(
        "physical",
        passed,
        {"n": n, "flops": flops, "call_s": call_s, "flops_per_s": rate, "limit": limit},
        f"a synchronised call (n={n}, {flops:.2e} FLOPs) took {call_s * 1e3:.3g} ms (best of "
        f"{runs}): {rate:.2e} FLOP/s, {verdict} the bound {limit:.2e} FLOP/s{cause}",
    )


def check_chain(synced_s: float, chain_s: float, runs: int) -> Check:
    ratio = chain_s / synced_s
    passed = CHAIN_LOW <= ratio <= CHAIN_HIGH
    cause = ""
    if ratio < CHAIN_LOW:
        cause = ": the sync takes time of its own (a fixed wait?)"
    elif ratio > CHAIN_HIGH:
        cause = ": a sync returned before the work it was given was done"
    return Check(
        "chain",
        passed,
        {"calls": CHAIN, "synced_s": synced_s, "chain_s": chain_s, "ratio": ratio, "runs": runs},
        f"{CHAIN} dependent calls and one sync took {chain_s * 1e3:.3g} ms, {ratio:.2f}x the "
        f"{synced_s * 1e3:.3g} ms of {CHAIN} synchronised calls (best of {runs}); allowed "
        f"[{CHAIN_LOW}, {CHAIN_HIGH}]{cause}",
    )


def check_dispatch(is_async: bool, dispatch_s: float, chain_s: float) -> Check:
    fraction = dispatch_s / chain_s
    numbers = {"dispatch_s": dispatch_s, "chain_s": chain_s, "fraction": fraction}
    times = (
        f"{CHAIN} calls returned after {dispatch_s * 1e3:.3g} ms, synchronised after "
        f"{chain_s * 1e3:.3g} ms ({fraction:.2f})"
    )
    if not is_async:
        return Check("dispatch", None, numbers, f"not applicable (synchronous stack): {times}")
    passed = fraction < DISPATCH_MAX_FRACTION
    verdict = "below" if passed else "NOT below"
    cause = "" if passed else ": the sync waited for nothing, or the calls for their work"
    return Check("dispatch", passed, numbers, f"{times}, {verdict} {DISPATCH_MAX_FRACTION}{cause}")


@dataclass
class Timings:
    """Every run so far of both blocks; the checks use the fastest."""

    synced: list[float] = field(default_factory=list)
    chained: list[tuple[float, float]] = field(default_factory=list)

    def add_runs(self, chain: Chain) -> None:
        # Interleaved, so that a busy spell of a shared machine slows both blocks alike.
        for _ in range(REPEATS):
            self.synced.append(chain.synced_s())
            self.chained.append(chain.chained_s())

    def checks(self, n: int, device: str, is_async: bool) -> list[Check]:
        runs = len(self.synced)
        synced_s = min(self.synced)
        dispatch_s, chain_s = min(self.chained, key=lambda timing: timing[1])
        return [
            check_physical(n, synced_s / CHAIN, flops_limit(device), runs),
            check_chain(synced_s, chain_s, runs),
            check_dispatch(is_async, dispatch_s, chain_s),
        ]


def run_checks(
    framework: Framework, mode: str, device: str, *, max_n: int | None = None
) -> list[Check]:
    """The calibration and the three checks on a framework after ``init``; ``max_n`` bounds
    the calibration (None: MAX_N on the cpu, ACCELERATOR_MAX_N elsewhere)."""
    step = framework.prepare(framework.selftest_step(), mode)
    if max_n is None:
        max_n = MAX_N if split_device(device)[0] == "cpu" else ACCELERATOR_MAX_N
    chain, calibration = calibrate(framework, step, device, max_n)
    timings = Timings()
    timings.add_runs(chain)
    checks = timings.checks(chain.n, device, framework.is_async())
    for _ in range(MAX_ROUNDS - 1):
        if all(check.passed is not False for check in checks):
            break
        timings.add_runs(chain)
        checks = timings.checks(chain.n, device, framework.is_async())
    return [check_calibration(calibration), *checks]


class Unsupported(Exception):
    """The framework cannot be imported here; the message says how to install it."""


def _prepared_framework(name: str, mode: str, settings: RunSettings) -> Framework:
    """The framework set up as worker.py does: environment before load, then load and init."""
    framework = load_framework(name, mode)
    os.environ.update({**home_environment(settings), **framework.environment(settings)})
    # tempfile caches the temporary folder; make it see a TMPDIR set just now.
    tempfile.tempdir = None
    try:
        framework.load()
    except ImportError as exc:
        raise Unsupported(f"{exc}; fix: {FRAMEWORKS[name].install_hint(mode)}") from exc
    framework.init(settings)
    return framework


def run_request(request: dict[str, Any]) -> dict[str, Any]:
    """The result for one request; every failure becomes a status with a reason."""
    stack, device = request["stack"], request["device"]
    name, mode, _ = split_stack(stack)
    result: dict[str, Any] = {"stack": stack, "device": device, "status": "ok", "reason": ""}
    settings = RunSettings(device=device, cache_dir=request["cache_dir"])
    try:
        checks = run_checks(_prepared_framework(name, mode, settings), mode, device)
    except Unsupported as exc:
        return result | {"status": "unsupported", "reason": str(exc), "checks": []}
    except Exception as exc:
        failed = classify(exc)
        return result | {"status": failed.status, "reason": failed.reason, "checks": []}
    return result | {"checks": [dataclasses.asdict(check) for check in checks]}


def main(argv: list[str]) -> int:
    return serve(argv, "selftest", run_request)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
