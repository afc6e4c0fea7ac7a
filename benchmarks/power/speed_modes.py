"""Benchmark: which recorded signal explains workers that land at two speeds (issue 34, item 7).

    python benchmarks/power/speed_modes.py measure --out DIR [--workers 24] [-- RUN_OPTIONS]
    python benchmarks/power/speed_modes.py analyse DIR/*.json

``measure`` runs GEMM 1024² on numpy:eager and torch:eager in ``--workers`` fresh workers each
(``stackwars run --repeat N``, interleaved), keeping the run's JSON in ``DIR``; extra run
options (e.g. ``--thp off``) go after ``--``. Run it on a quiet machine.

``analyse`` splits each cell's workers into speed modes at the largest gap between their sorted
log medians (a mode when the gap is over 5 % and each side holds at least two workers), then
asks of each signal the worker recorded (``settings.speed_mode``: huge pages, the CPUs its
threads last ran on; ``cpu.page_faults_per_call``; the load beside it) whether it separates the
modes: a signal explains the modes when the workers of the fast and the slow mode fall on two
sides of one threshold of it (perfect separation), and it is reported with how many workers it
misplaces otherwise. A signal that explains nothing is said so: the modes are then not the
work of any recorded cause.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

CELLS = ["--workload", "gemm", "--param", "n=1024", "--stacks", "numpy:eager,torch:eager"]
MODE_GAP = 0.05  # a gap between sorted log medians that separates two speed modes
Signal = Callable[[dict[str, Any]], float | None]


def _mode(worker: dict[str, Any]) -> dict[str, Any]:
    return (worker.get("settings") or {}).get("speed_mode") or {}


def _cpu_count(worker: dict[str, Any]) -> float | None:
    cpus = _mode(worker).get("threads_last_cpus")
    return None if cpus is None else float(len(cpus))


SIGNALS: dict[str, Signal] = {
    "huge pages (kB)": lambda w: _mode(w).get("anon_huge_pages_kb"),
    "CPUs its threads last ran on": _cpu_count,
    "lowest CPU its threads last ran on": lambda w: min(_mode(w).get("threads_last_cpus") or [0]),
    "page faults a call": lambda w: (w.get("cpu") or {}).get("page_faults_per_call"),
    "load (1 min)": lambda w: _mode(w).get("load_1min"),
    "other processes (cores)": lambda w: (w.get("settings") or {}).get("background_cores"),
}


def median_of(worker: dict[str, Any]) -> float:
    return statistics.median(worker["steady"]["samples_s"])


def split_modes(workers: list[dict[str, Any]]) -> tuple[list[dict], list[dict]] | None:
    """The fast and the slow mode at the largest gap, or None when there is one mode."""
    ordered = sorted(workers, key=median_of)
    logs = [math.log(median_of(w)) for w in ordered]
    gaps = [(logs[i + 1] - logs[i], i + 1) for i in range(1, len(logs) - 2)]
    if not gaps:
        return None
    gap, at = max(gaps)
    return (ordered[:at], ordered[at:]) if gap > math.log1p(MODE_GAP) else None


def misplaced(fast: list[float], slow: list[float]) -> int:
    """The fewest workers on the wrong side of any one threshold (either direction)."""
    values = sorted({*fast, *slow})
    best = len(fast) + len(slow)
    for cut in [values[0] - 1, *values]:
        below_fast = sum(v <= cut for v in fast)
        below_slow = sum(v <= cut for v in slow)
        # fast below the cut and slow above, or the other way round
        best = min(best, (len(fast) - below_fast) + below_slow, below_fast + len(slow) - below_slow)
    return best


def analyse(paths: list[str]) -> None:
    for path in paths:
        with open(path, encoding="utf-8") as file:
            cells = json.load(file)["cells"]
        groups: dict[str, list[dict[str, Any]]] = {}
        for cell in cells:
            if cell["status"] == "ok" and cell["steady"]["samples_s"]:
                groups.setdefault(
                    f"{cell['workload']} {cell['params']} {cell['stack']}", []
                ).append(cell)
        for label, workers in groups.items():
            medians = sorted(1e3 * median_of(w) for w in workers)
            print(f"{path}: {label}: {len(workers)} workers, medians {medians[0]:.2f}–"
                  f"{medians[-1]:.2f} ms")  # fmt: skip
            modes = split_modes(workers)
            if modes is None:
                print("  one speed mode (no gap over 5 %)")
                continue
            fast, slow = modes
            print(f"  two modes: {len(fast)} fast (≤ {1e3 * median_of(fast[-1]):.2f} ms), "
                  f"{len(slow)} slow (≥ {1e3 * median_of(slow[0]):.2f} ms)")  # fmt: skip
            for name, signal in SIGNALS.items():
                a = [v for v in map(signal, fast) if v is not None]
                b = [v for v in map(signal, slow) if v is not None]
                if len(a) < len(fast) or len(b) < len(slow):
                    print(f"  {name}: not recorded for every worker")
                    continue
                wrong = misplaced([float(v) for v in a], [float(v) for v in b])
                verdict = "separates the modes" if wrong == 0 else f"misplaces {wrong} workers"
                print(f"  {name}: fast {statistics.median(a):.3g}, slow "
                      f"{statistics.median(b):.3g}; {verdict}")  # fmt: skip


def measure(out: Path, workers: int, extra: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"speed-modes-{len(list(out.glob('*.json'))):02d}.json"
    argv = [sys.executable, "-m", "stackwars", "run", *CELLS, "--repeat", str(workers)]
    subprocess.run([*argv, "--json", str(path), "--quiet", *extra], check=True)
    analyse([str(path)])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    measuring = commands.add_parser("measure")
    measuring.add_argument("--out", type=Path, required=True)
    measuring.add_argument("--workers", type=int, default=24)
    measuring.add_argument("extra", nargs="*")
    analysing = commands.add_parser("analyse")
    analysing.add_argument("paths", nargs="+")
    args = parser.parse_args()
    if args.command == "measure":
        measure(args.out, args.workers, [a for a in args.extra if a != "--"])
    else:
        analyse(args.paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
