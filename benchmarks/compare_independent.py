"""Benchmark: stackwars against scripts it did not prepare (benchmarks/independent/).

    python benchmarks/compare_independent.py [--quick] [--processes 3] [--out-dir DIR]
                                             [--cells gemm256,...] [--stacks numpy:eager,...]

benchmarks/compare_peers.py compares harnesses on the function stackwars prepared, so a cost
added by stackwars' own set-up (its builders, Framework objects, environment) is shared by
every peer and invisible. Here each framework's script in benchmarks/independent/ is what a
user of that framework writes, importing nothing from stackwars: it builds its own inputs,
applies its own mode, warms up, then times single calls with perf_counter and reports their
median.

Each cell and stack runs ``--processes`` fresh independent processes and as many fresh
stackwars workers (``stackwars run``, one worker each, default budgets), one at a time, in an
order shuffled with a fixed seed. stackwars' number is its steady median, or on asynchronous
stacks (jax) its call+sync latency (``times.latency_s``): the independent script waits for
every call there. A cell's verdict is ``met`` when it lasts 1 ms or more, the independent
processes agree within 10 % (max/min - 1) and stackwars is within 5 % of their median.

Writes ``independent-raw.json`` (every job, rewritten as each ends) and
``independent-report.md`` to the output folder, and prints the report. ``--quick`` (gemm 64
and selu 32 on numpy:eager and jax:jit, short budgets) checks the script; its numbers mean
nothing. This script imports nothing from stackwars: it runs it as a user does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().with_name("independent")
STACKS = ("numpy:eager", "jax:jit", "torch:eager", "tensorflow:graph")
QUICK_STACKS = STACKS[:2]
# The full cells, then the quick ones; a cell's name is its workload and n (gemm256).
SIZES = (("gemm", 256), ("gemm", 1024), ("selu", 2000), ("gemm", 3000), ("gemm", 64), ("selu", 32))
KNOWN_CELLS = {f"{workload}{n}": (workload, n) for workload, n in SIZES}
CELLS, QUICK_CELLS = list(KNOWN_CELLS)[:4], list(KNOWN_CELLS)[4:]
SECONDS, QUICK_SECONDS = 2.0, 0.1  # independent scripts' timing budget
QUICK_BUDGET = "0.1"  # stackwars --budget under --quick (its default otherwise)
SHUFFLE_SEED = 0
TIMEOUT_S = 1200.0  # per job; stackwars stops its own worker at 900 s
LONG_CELL_S, AGREE, TARGET = 1e-3, 0.10, 0.05
TAIL = 1500


@dataclass(frozen=True)
class Job:
    side: str  # "stackwars" or "independent"
    cell: str
    workload: str
    n: int
    stack: str
    process: int


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="stackwars against independent user scripts")
    parser.add_argument("--quick", action="store_true", help="tiny cells, short budgets")
    parser.add_argument("--processes", type=int, default=3, help="fresh processes per side")
    parser.add_argument("--out-dir", type=Path, help="where to write (a new temporary folder)")
    parser.add_argument("--cells", help=f"comma list of {', '.join(KNOWN_CELLS)}")
    parser.add_argument("--stacks", help=f"comma list of {', '.join(STACKS)}")
    return parser.parse_args(argv)


def choose(names: str | None, default: list[str], known: Sequence[str], what: str) -> list[str]:
    if names is None:
        return default
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SystemExit(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return wanted


def plan(cells: list[str], stacks: list[str], processes: int) -> list[Job]:
    jobs = [
        Job(side, cell, *KNOWN_CELLS[cell], stack, process)
        for cell in cells
        for stack in stacks
        for side in ("stackwars", "independent")
        for process in range(processes)
    ]
    random.Random(SHUFFLE_SEED).shuffle(jobs)
    return jobs


def run(command: list[str], cwd: Path) -> tuple[int | None, str, str]:
    """Return code (None on timeout), stdout and stderr of a command."""
    try:
        done = subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {TIMEOUT_S:g} s"
    return done.returncode, done.stdout, done.stderr


def independent(job: Job, seconds: float, scratch: Path) -> dict[str, Any]:
    framework, _, mode = job.stack.partition(":")
    script = SCRIPTS / f"{framework}_user.py"
    command = [sys.executable, str(script), "--workload", job.workload, "--n", str(job.n)]
    code, out, err = run([*command, "--mode", mode, "--seconds", str(seconds)], scratch)
    lines = out.strip().splitlines()
    if code != 0 or not lines:
        return {"status": "error", "detail": (out + err)[-TAIL:]}
    return {"status": "ok", **json.loads(lines[-1])}


def stackwars(job: Job, quick: bool, scratch: Path, db: Path) -> dict[str, Any]:
    out = scratch / "run.json"
    command = [sys.executable, "-m", "stackwars", "run", "--workload", job.workload]
    command += ["--param", f"n={job.n}", "--param", "dtype=float32", "--stacks", job.stack]
    command += ["--json", str(out), "--db", str(db), "--quiet"]
    code, stdout, stderr = run([*command, *(["--budget", QUICK_BUDGET] if quick else [])], scratch)
    if not out.exists():
        return {"status": "error", "detail": f"exit {code}: {(stdout + stderr)[-TAIL:]}"}
    cell = json.loads(out.read_text(encoding="utf-8"))["cells"][0]
    latency, steady = cell["times"].get("latency_s"), cell["steady"]["median_s"]
    if cell["status"] != "ok" or not steady:
        return {"status": cell["status"], "detail": cell["reason"][-TAIL:]}
    return {
        "status": "ok",
        "median_s": latency or steady,
        "measure": "call+sync latency" if latency else "steady median",
        "steady_median_s": steady,
        "stable": cell["steady"]["stable"],
        "warnings": cell["warnings"],
    }


def run_job(job: Job, quick: bool, db: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="stackwars-independent-") as scratch:
        start = time.monotonic()
        if job.side == "stackwars":
            measured = stackwars(job, quick, Path(scratch), db)
        else:
            measured = independent(job, QUICK_SECONDS if quick else SECONDS, Path(scratch))
    wall_s = time.monotonic() - start
    return {**asdict(job), "wall_s": wall_s, "load_1min": os.getloadavg()[0], **measured}


def write_raw(path: Path, settings: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write atomically: a reader never sees half a file, an interrupt keeps the last one."""
    text = json.dumps({"settings": settings, "jobs": records}, indent=1)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def _pct(value: float | None, signed: bool = False) -> str:
    return "–" if value is None else f"{100 * value:{'+' if signed else ''}.1f} %"


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if seconds >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-6:.4g} µs"


def _spread(medians: list[float]) -> float | None:
    return max(medians) / min(medians) - 1 if len(medians) >= 2 else None


def verdict(ours: float | None, theirs: float | None, spread: float | None) -> str:
    if ours is None or theirs is None:
        return "no data (see independent-raw.json)"
    if theirs < LONG_CELL_S:
        return "n/a (< 1 ms)"
    if spread is None:
        return "n/a (fewer than 2 independent processes)"
    if spread > AGREE:
        return f"n/a (independent spread {_pct(spread)})"
    deviation = ours / theirs - 1
    if abs(deviation) <= TARGET:
        return "met"
    if deviation > 0:
        return f"MISSED: stackwars is slower, by {_pct(deviation)} of the independent time"
    return f"MISSED: the independent script is slower; stackwars is {_pct(-deviation)} faster"


def row(records: list[dict[str, Any]], cell: str, stack: str) -> str:
    def medians(side: str) -> list[float]:
        return [
            r["median_s"]
            for r in records
            if (r["side"], r["cell"], r["stack"], r["status"]) == (side, cell, stack, "ok")
        ]

    ours, theirs = medians("stackwars"), medians("independent")
    our_median = statistics.median(ours) if ours else None
    their_median = statistics.median(theirs) if theirs else None
    deviation = our_median / their_median - 1 if our_median and their_median else None
    workload, n = KNOWN_CELLS[cell]
    measure = next((r["measure"] for r in records if r.get("measure")), "–")
    spread = _spread(theirs)
    return (
        f"| {workload} n={n} | {stack} | {_time(our_median)} ({measure}) | {_time(their_median)} "
        f"| {_pct(spread)} | {_pct(_spread(ours))} | {_pct(deviation, True)} "
        f"| {verdict(our_median, their_median, spread)} |"
    )


def _last_line(record: dict[str, Any]) -> str:
    lines = [line.strip() for line in record.get("detail", "").splitlines() if line.strip()]
    return f"{record['status']}: {(lines[-1] if lines else '')[:200]}"


def render(records: list[dict[str, Any]], cells: list[str], stacks: list[str]) -> str:
    loads = [r["load_1min"] for r in records]
    lines = [
        "| cell | stack | stackwars | independent | indep. spread | stackwars spread "
        "| stackwars dev. | verdict |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for cell in cells:
        for stack in stacks:
            mine = [r for r in records if r["cell"] == cell and r["stack"] == stack]
            lines.append(row(mine, cell, stack))
    failed = [r for r in records if r["status"] != "ok"]
    notes = [f"- {r['side']} {r['cell']} {r['stack']}: {_last_line(r)}" for r in failed]
    ours = [r for r in records if r["side"] == "stackwars" and r["status"] == "ok"]
    shared = sum(any(w.startswith("background load") for w in r["warnings"]) for r in ours)
    summary = (
        f"Medians over fresh processes; spread = max/min - 1. Load average (1 min) at job "
        f"ends: median {statistics.median(loads):.2f}, max {max(loads):.2f}; stackwars "
        f"warned of background load in {shared} of its {len(ours)} workers."
    )
    return "\n".join([*lines, "", summary, *notes]) + "\n"


def run_all(
    jobs: list[Job], quick: bool, raw: Path, settings: dict[str, Any]
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="stackwars-independent-db-") as db_dir:
        for index, job in enumerate(jobs, start=1):
            record = run_job(job, quick, Path(db_dir) / "stackwars.sqlite")
            records.append(record)
            write_raw(raw, settings, records)
            shown = f"{_time(record.get('median_s'))} ({record['status']})"
            progress = f"[{index}/{len(jobs)} {time.monotonic() - started:.0f} s]"
            print(f"{progress} {job.side} {job.cell} {job.stack}: {shown}", flush=True)
    return records


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    cells = choose(args.cells, QUICK_CELLS if args.quick else CELLS, [*KNOWN_CELLS], "cell")
    stacks = choose(args.stacks, [*(QUICK_STACKS if args.quick else STACKS)], STACKS, "stack")
    out_dir: Path = args.out_dir or Path(tempfile.mkdtemp(prefix="stackwars-independent-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = plan(cells, stacks, args.processes)
    raw = out_dir / "independent-raw.json"
    settings = {
        "argv": argv,
        "cells": cells,
        "stacks": stacks,
        "processes": args.processes,
        "independent_seconds": QUICK_SECONDS if args.quick else SECONDS,
        "stackwars_budget_s": QUICK_BUDGET if args.quick else "default",
    }
    print(f"{len(jobs)} jobs, one at a time; raw records in {raw}", flush=True)
    records = run_all(jobs, args.quick, raw, settings)
    report = render(records, cells, stacks)
    (out_dir / "independent-report.md").write_text(report, encoding="utf-8")
    print(f"\n{report}\nReport: {out_dir / 'independent-report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
