"""``stackwars selftest``'s service: each stack's checks, run in a fresh worker, as data (typed
options in, a ``StackResult`` out, nothing printed)."""

from __future__ import annotations

from stackwars.errors import UsageError
from stackwars.frameworks import Stack
from stackwars.instruments.selftest import task
from stackwars.instruments.selftest.data import StackResult

SELFTEST_TIMEOUT_S = task.SELFTEST_TIMEOUT_S


def timeout_of(timeout_s: float | None) -> float:
    """The per-stack timeout: the default when none is given; a UsageError when not positive."""
    chosen = SELFTEST_TIMEOUT_S if timeout_s is None else timeout_s
    if chosen <= 0:
        raise UsageError(f"--timeout {chosen:g} must be a positive number of seconds")
    return chosen


def selftest_stack(stack: Stack, device: str, timeout_s: float) -> StackResult:
    """One stack's selftest on ``device`` in a fresh worker (killed past ``timeout_s``), or
    unsupported without one when the stack cannot run here."""
    return task.selftest_stack(stack, device, timeout_s)
