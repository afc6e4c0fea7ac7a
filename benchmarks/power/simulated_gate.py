"""Benchmark: the gate of `stackwars ab` on simulated sessions, the table of docs/results.md
("The gate over a whole suite"), from the harness tests/test_sequential.py asserts on (its
synthetic workers, `compare_rounds` and `decide` after every look, stopping as `ab` stops).

    python benchmarks/power/simulated_gate.py

Each row: sessions (seeded 0..N-1), what the suite holds, and how many ended pass, fail or
underpowered. The tests assert bounds on these rates; this prints the counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parents[2] / "tests"


def harness() -> ModuleType:
    """tests/test_sequential.py, loaded by path (tests/ is no package)."""
    sys.path.insert(0, str(TESTS))
    spec = importlib.util.spec_from_file_location("test_sequential", TESTS / "test_sequential.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    h = harness()
    rows = [
        (120, "A/A, the mixed suite (nine cells, time)", {}, h.SUITE, h.TIME_GATE),
        (120, "A/A, three two-speed cells only", {}, (h.two_speed,) * 3, h.TIME_GATE),
        (120, "A/A, three disturbed cells only", {}, (h.disturbed,) * 3, h.TIME_GATE),
        (60, "a quiet cell +10 % (nine cells, time)", {0: 0.10}, h.SUITE, h.TIME_GATE),
        (60, "a noisy cell +10 % (nine cells, time)", {3: 0.10}, h.SUITE, h.TIME_GATE),
        (60, "A/A, twelve cells, time and memory (24 tests)", {}, h.FRESH_SUITE, h.FRESH_GATE),
        (60, "a quiet cell +10 %, 24 tests", {0: 0.10}, h.FRESH_SUITE, h.FRESH_GATE),
    ]
    print("| sessions | what | pass | fail | underpowered |")
    print("| --- | --- | ---: | ---: | ---: |")
    for sessions, what, slowed, suite, gate in rows:
        outcomes = [h.session_outcome(seed, suite, slowed, gate)[0] for seed in range(sessions)]
        counts = [outcomes.count(name) for name in ("pass", "fail", "underpowered")]
        print(f"| {sessions} | {what} | {' | '.join(map(str, counts))} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
