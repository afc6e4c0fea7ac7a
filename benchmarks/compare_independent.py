"""Benchmark: stackwars against scripts it did not prepare (benchmarks/independent/).

    python benchmarks/compare_independent.py [--quick] [--processes 3] [--out-dir DIR]
                                             [--cells gemm256,...] [--stacks numpy:eager,...]
                                             [--keras [--backends jax,torch]]

benchmarks/compare_peers.py compares harnesses on the function stackwars prepared, so a cost
added by stackwars' own set-up (its builders, Framework objects, environment) is shared by
every peer and invisible. Here each framework's script in benchmarks/independent/ is what a
user of that framework writes, importing nothing from stackwars: it builds its own inputs (for
BERT-base its own model, random weights), applies its own mode, warms up, then times single
calls with perf_counter and reports their median.

A cell is a workload with its parameters: gemm and selu at one size, and ``bert64``, BERT-base
inference (``stackwars run --workload bert-base --param task=infer --param batch=2 --param
seq=64 --param dtype=float32``). Each stack has one script: numpy_user.py, jax_user.py,
torch_user.py, tensorflow_user.py, and for the Keras stacks (keras-jax:jit, keras-torch:eager)
keras_user.py on that backend; a stack runs only the cells its script writes (the Keras stacks
and BERT: jax, torch and Keras only). Each planned cell and stack runs ``--processes`` fresh
independent processes and as many fresh stackwars workers (``stackwars run``, one worker each,
default budgets), one at a time, in an order shuffled with a fixed seed. stackwars' number is
its steady median, or on asynchronous stacks (jax, keras-jax) its call+sync latency
(``times.latency_s``): the independent script waits for every call there. A cell's verdict is
``met`` when it lasts 1 ms or more, the independent processes agree within 10 % (max/min - 1)
and stackwars is within 5 % of their median. Where a Keras stack and its backend's native
stack both ran a cell, the report adds the Keras/native ratio of medians on each side: how
much the Keras layer costs according to stackwars, and according to the users' scripts.

``--keras`` runs just that: bert64 on jax:jit, keras-jax:jit, torch:eager and
keras-torch:eager (``--backends jax``: the JAX pair only). The full measurement of it:

    python benchmarks/compare_independent.py --keras --processes 3 --out-dir keras-independent

Writes ``independent-raw.json`` (every job, rewritten as each ends) and
``independent-report.md`` to the output folder, and prints the report (rendered by
benchmarks/independent_report.py); ``python benchmarks/compare_independent.py --render RAW``
prints the report of a stored raw file (docs/evidence.md renders its tables so). ``--quick``
(gemm 64, selu 32 and a tiny BERT with 16 tokens, on numpy:eager and jax:jit unless told,
short budgets) checks the script; its numbers mean nothing. This script imports nothing from
stackwars: it runs it as a user does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from independent_report import format_time, render

SCRIPTS = Path(__file__).resolve().with_name("independent")
# independent-raw.json's layout. History: 1 (unversioned): jobs had ``workload`` and ``n``;
# 2: a top-level ``version``; jobs have ``workload`` and ``params`` (stackwars' --param values);
# 3 (2026-11-29): stackwars' jobs have ``machine`` (its CPU model and fingerprint) and
# ``started`` (UTC), from its run's record, so that a rendered report names both.
RAW_VERSION = 3


@dataclass(frozen=True)
class Cell:
    label: str  # as the report names it
    workload: str  # stackwars' workload
    params: tuple[tuple[str, str], ...]  # stackwars' --param values
    script_args: tuple[str, ...]  # the same, as the independent scripts take it


@dataclass(frozen=True)
class Script:
    name: str  # in benchmarks/independent/
    args: tuple[str, ...]  # what comes before the cell's arguments
    workloads: frozenset[str]  # the stackwars workloads it writes


def matrix(workload: str, n: int) -> Cell:
    params = (("n", str(n)), ("dtype", "float32"))
    return Cell(f"{workload} n={n}", workload, params, ("--workload", workload, "--n", str(n)))


def bert(scale: str, seq: int) -> Cell:
    """BERT-base inference of 2 sequences of ``seq`` tokens; scale tiny is the test size."""
    params = (("task", "infer"), ("batch", "2"), ("seq", str(seq)), ("dtype", "float32"))
    script_args = ("--workload", "bert", "--scale", scale, "--batch", "2", "--seq", str(seq))
    tiny = (("scale", "tiny"),) if scale == "tiny" else ()
    label = f"bert-base{' tiny' if tiny else ''} infer b=2 s={seq}"
    return Cell(label, "bert-base", params + tiny, script_args)


# The full cells, then the quick ones (the tiny BERT has 32 positions: 16 tokens).
KNOWN_CELLS = {
    "gemm256": matrix("gemm", 256),
    "gemm1024": matrix("gemm", 1024),
    "selu2000": matrix("selu", 2000),
    "gemm3000": matrix("gemm", 3000),
    "bert64": bert("full", 64),
    "gemm64": matrix("gemm", 64),
    "selu32": matrix("selu", 32),
    "bert16-tiny": bert("tiny", 16),
}
CELLS, QUICK_CELLS = list(KNOWN_CELLS)[:5], list(KNOWN_CELLS)[5:]
MATRIX, BERT = frozenset({"gemm", "selu"}), frozenset({"bert-base"})
STACKS = {
    "numpy:eager": Script("numpy_user.py", (), MATRIX),
    "jax:jit": Script("jax_user.py", (), MATRIX | BERT),
    "torch:eager": Script("torch_user.py", (), MATRIX | BERT),
    "tensorflow:graph": Script("tensorflow_user.py", (), MATRIX),
    "keras-jax:jit": Script("keras_user.py", ("--backend", "jax"), BERT),
    "keras-torch:eager": Script("keras_user.py", ("--backend", "torch"), BERT),
}
QUICK_STACKS = ["numpy:eager", "jax:jit"]
# Per backend: its Keras stack and its native stack, whose ratio the report shows.
KERAS_PAIRS = (("jax", "keras-jax:jit", "jax:jit"), ("torch", "keras-torch:eager", "torch:eager"))
KERAS_STACKS = [stack for _, keras, native in KERAS_PAIRS for stack in (native, keras)]
SECONDS, QUICK_SECONDS = 2.0, 0.1  # independent scripts' timing budget
QUICK_BUDGET = "0.1"  # stackwars --budget under --quick (its default otherwise)
SHUFFLE_SEED = 0
TIMEOUT_S = 1200.0  # per job; stackwars stops its own worker at 900 s
TAIL = 1500


@dataclass(frozen=True)
class Job:
    side: str  # "stackwars" or "independent"
    cell: str
    stack: str
    process: int


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="stackwars against independent user scripts")
    parser.add_argument("--quick", action="store_true", help="tiny cells, short budgets")
    parser.add_argument("--processes", type=int, default=3, help="fresh processes per side")
    parser.add_argument("--out-dir", type=Path, help="where to write (a new temporary folder)")
    parser.add_argument("--cells", help=f"comma list of {', '.join(KNOWN_CELLS)}")
    parser.add_argument("--stacks", help=f"comma list of {', '.join(STACKS)}")
    parser.add_argument(
        "--keras",
        action="store_true",
        help=f"BERT-base on {', '.join(KERAS_STACKS)} only (bert16-tiny under --quick)",
    )
    backends = [backend for backend, _, _ in KERAS_PAIRS]
    parser.add_argument(
        "--backends",
        help=f"with --keras: comma list of {', '.join(backends)} (default: all), each backend's "
        "Keras stack and native stack",
    )
    args = parser.parse_args(argv)
    if args.keras and (args.cells or args.stacks):
        parser.error("--keras chooses the cells and stacks: give --keras or --cells/--stacks")
    if args.backends and not args.keras:
        parser.error("--backends chooses Keras backends: give it with --keras")
    return args


def choose(names: str | None, default: list[str], known: list[str], what: str) -> list[str]:
    if names is None:
        return default
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SystemExit(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return wanted


def selection(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The cells and stacks asked for (or the defaults)."""
    if args.keras:
        known = [backend for backend, _, _ in KERAS_PAIRS]
        backends = choose(args.backends, known, known, "backend")
        stacks = [
            stack
            for backend, keras, native in KERAS_PAIRS
            if backend in backends
            for stack in (native, keras)
        ]
        return ["bert16-tiny" if args.quick else "bert64"], stacks
    cells = choose(args.cells, QUICK_CELLS if args.quick else CELLS, [*KNOWN_CELLS], "cell")
    stacks = choose(args.stacks, QUICK_STACKS if args.quick else [*STACKS], [*STACKS], "stack")
    return cells, stacks


def pairs(cells: list[str], stacks: list[str], named: list[str]) -> list[tuple[str, str]]:
    """Every (cell, stack) whose script writes the cell's workload; refuses a cell or stack
    in ``named`` (what the user listed) that would then run nothing."""
    planned = [
        (cell, stack)
        for cell in cells
        for stack in stacks
        if KNOWN_CELLS[cell].workload in STACKS[stack].workloads
    ]
    idle = [name for name in named if not any(name in pair for pair in planned)]
    if idle:
        runs = "; ".join(f"{s} runs {', '.join(sorted(x.workloads))}" for s, x in STACKS.items())
        raise SystemExit(
            f"nothing to run for {', '.join(idle)}: no chosen cell and stack go together "
            f"there ({runs}); choose cells and stacks that do, or --keras for BERT-base on "
            f"the Keras stacks and their backends"
        )
    return planned


def plan(planned: list[tuple[str, str]], processes: int) -> list[Job]:
    jobs = [
        Job(side, cell, stack, process)
        for cell, stack in planned
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
    script, mode = STACKS[job.stack], job.stack.partition(":")[2]
    command = [sys.executable, str(SCRIPTS / script.name), *script.args]
    command += KNOWN_CELLS[job.cell].script_args
    code, out, err = run([*command, "--mode", mode, "--seconds", str(seconds)], scratch)
    lines = out.strip().splitlines()
    if code != 0 or not lines:
        return {"status": "error", "detail": (out + err)[-TAIL:]}
    return {"status": "ok", **json.loads(lines[-1])}


def stackwars(job: Job, quick: bool, scratch: Path, db: Path) -> dict[str, Any]:
    out, cell = scratch / "run.json", KNOWN_CELLS[job.cell]
    command = [sys.executable, "-m", "stackwars", "run", "--workload", cell.workload]
    for name, value in cell.params:
        command += ["--param", f"{name}={value}"]
    command += ["--stacks", job.stack]
    command += ["--json", str(out), "--db", str(db), "--quiet"]
    code, stdout, stderr = run([*command, *(["--budget", QUICK_BUDGET] if quick else [])], scratch)
    if not out.exists():
        return {"status": "error", "detail": f"exit {code}: {(stdout + stderr)[-TAIL:]}"}
    data = json.loads(out.read_text(encoding="utf-8"))
    measured, run_record = data["cells"][0], data["run"]
    where = {
        "machine": f"{run_record['machine']['cpu_model']} "
        f"(fingerprint {run_record['identity']['fingerprint']})",
        "started": run_record["started"],
    }
    latency, steady = measured["times"].get("latency_s"), measured["steady"]["median_s"]
    if measured["status"] != "ok" or not steady:
        return {"status": measured["status"], "detail": measured["reason"][-TAIL:], **where}
    return {
        **where,
        "status": "ok",
        "median_s": latency or steady,
        "measure": "call+sync latency" if latency else "steady median",
        "steady_median_s": steady,
        "stable": measured["steady"]["stable"],
        "warnings": measured["warnings"],
    }


def run_job(job: Job, quick: bool, db: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="stackwars-independent-") as scratch:
        start = time.monotonic()
        if job.side == "stackwars":
            measured = stackwars(job, quick, Path(scratch), db)
        else:
            measured = independent(job, QUICK_SECONDS if quick else SECONDS, Path(scratch))
    wall_s = time.monotonic() - start
    cell = KNOWN_CELLS[job.cell]
    described = {**asdict(job), "workload": cell.workload, "params": dict(cell.params)}
    return {**described, "wall_s": wall_s, "load_1min": os.getloadavg()[0], **measured}


def write_raw(path: Path, settings: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Write atomically: a reader never sees half a file, an interrupt keeps the last one."""
    text = json.dumps({"version": RAW_VERSION, "settings": settings, "jobs": records}, indent=1)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


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
            shown = f"{format_time(record.get('median_s'))} ({record['status']})"
            progress = f"[{index}/{len(jobs)} {time.monotonic() - started:.0f} s]"
            print(f"{progress} {job.side} {job.cell} {job.stack}: {shown}", flush=True)
    return records


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    cells, stacks = selection(args)
    named = [*(cells if args.cells else []), *(stacks if args.stacks else [])]
    planned = pairs(cells, stacks, named)
    out_dir: Path = args.out_dir or Path(tempfile.mkdtemp(prefix="stackwars-independent-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = plan(planned, args.processes)
    raw = out_dir / "independent-raw.json"
    settings = {
        "argv": argv,
        "cells": cells,
        "stacks": stacks,
        "planned": planned,
        "processes": args.processes,
        "independent_seconds": QUICK_SECONDS if args.quick else SECONDS,
        "stackwars_budget_s": QUICK_BUDGET if args.quick else "default",
    }
    print(f"{len(jobs)} jobs, one at a time; raw records in {raw}", flush=True)
    records = run_all(jobs, args.quick, raw, settings)
    labels = {name: cell.label for name, cell in KNOWN_CELLS.items()}
    report = render(records, planned, labels, KERAS_PAIRS)
    (out_dir / "independent-report.md").write_text(report, encoding="utf-8")
    print(f"\n{report}\nReport: {out_dir / 'independent-report.md'}")
    return 0


def render_raw(path: Path) -> str:
    """The report of a stored ``independent-raw.json`` (of format 3), after the machine and
    the dates its stackwars jobs record and the command that measured it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("version") != RAW_VERSION:
        raise SystemExit(f"{path} is not of format {RAW_VERSION}: measure it again")
    settings, records = data["settings"], data["jobs"]
    ours = [r for r in records if r["side"] == "stackwars" and "started" in r]
    machines = sorted({r["machine"] for r in ours})
    when = f"{min(r['started'] for r in ours)[:16]} to {max(r['started'] for r in ours)[:16]} UTC"
    command = " ".join(["python benchmarks/compare_independent.py", *settings["argv"]])
    planned = [(cell, stack) for cell, stack in settings["planned"]]
    labels = {name: cell.label for name, cell in KNOWN_CELLS.items()}
    head = f"Machine {', '.join(machines)}; stackwars' jobs {when}; `{command}`.\n\n"
    return head + render(records, planned, labels, KERAS_PAIRS)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--render"]:
        sys.stdout.write(render_raw(Path(sys.argv[2])))
    else:
        sys.exit(main(sys.argv[1:]))
