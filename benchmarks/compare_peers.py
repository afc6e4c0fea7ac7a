"""Benchmark: stackwars against peer harnesses on the same cells, in the same session.

    python benchmarks/compare_peers.py [--quick] [--repeats 3] [--out-dir DIR] [--cells ...]
                               [--stacks ...] [--peer-sync async|always]

Cells: GEMM 256, 1024 and 3000, SELU 2000², and a ~10 µs op (SELU 32²), float32, on numpy,
jax:jit, torch:eager and tensorflow:graph. Harnesses: stackwars (its worker and protocol),
``torch.utils.benchmark.Timer.blocked_autorange``, ``timeit`` (autorange, then the median of
5 repeats), pyperf (its ``--fast`` preset, its own worker processes) and a hand-written loop
(10 warm-up calls, then up to 100 calls timed one by one, at most ~1 s). Each job (harness,
cell, stack, repeat) runs in fresh processes, one after the other, in a shuffled order; no
harness restricts threads (torch's Timer is given torch's own thread count). Peers
synchronise inside every timed call on asynchronous stacks (jax), and not where a call returns
when its work is done (``--peer-sync always`` to sync everywhere; see harness.per_call_sync).

Targets (from the issue), judged per cell in the summary:

* accuracy: stackwars within 5 % of the peers' consensus (the median of their medians), on
  cells of 1 ms and more where the peers agree within 10 %, and on the ~10 µs cell;
* repeatability: stackwars' run-to-run spread over the repeats no worse than the best peer's;
* cost: stackwars' wall time (fresh process to result, framework import included) no more
  than the fastest peer's among those at least as repeatable.

Writes ``peers-raw.json`` (every job, rewritten as each ends) and ``peers-report.md`` to the
output folder, and prints the report; ``python benchmarks/compare_peers.py --render RAW``
prints the report of a stored raw file (docs/evidence.md renders it so). ``--quick`` uses tiny
cells and short budgets to check the script end to end; its numbers mean nothing.

peers-raw.json's format (``RAW_FORMAT``): ``{"format", "settings", "jobs", "summary"}``.
History: 1 (2026-11-22, unversioned) settings held argv, budgets and cells; 2 (2026-11-29)
``format``, and settings hold ``machine`` (CPU model, fingerprint) and ``started`` (UTC).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from peers.cells import (
    FULL_CELLS,
    QUICK_CELLS,
    QUICK_STACKS,
    STACKS,
    Job,
    PeerCell,
    plan,
    select,
    select_stacks,
)
from peers.harness import QUICK_BUDGETS, PeerBudgets
from peers.jobs import Budgets, run_job
from peers.report import format_time, render

from stackwars.results import metadata
from stackwars.results.jsonio import write_atomically
from stackwars.results.run import now
from stackwars.suites import get_suite
from stackwars.timing.timer import TimingConfig

# The quick suite's short budgets, as `stackwars run` applies them.
QUICK_TIMING = dataclasses.replace(TimingConfig(), **get_suite("quick").timing)
TIMEOUT_S = 900.0
RAW_FORMAT = 2  # of peers-raw.json (the module docstring has its history)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="stackwars against peer timing harnesses")
    parser.add_argument("--quick", action="store_true", help="tiny cells, short budgets")
    parser.add_argument("--repeats", type=int, help="fresh processes per job (3; quick: 2)")
    parser.add_argument("--out-dir", type=Path, help="where to write (a new temporary folder)")
    parser.add_argument("--cells", help="comma list of cell names, e.g. gemm256,selu32")
    parser.add_argument(
        "--stacks", help=f"comma list (default {','.join(STACKS)}; quick: numpy and jax only)"
    )
    parser.add_argument(
        "--peer-sync",
        choices=("async", "always"),
        default="async",
        help="sync inside each timed peer call only on asynchronous stacks (jax), or always "
        "(TensorFlow's sync then adds ~15 µs to every call)",
    )
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 2 if args.quick else 3
    return args


def write_raw(
    path: Path, settings: dict[str, Any], records: list[dict[str, Any]], summary: Any = None
) -> None:
    data = {"format": RAW_FORMAT, "settings": settings, "jobs": records, "summary": summary}
    text = json.dumps(data, indent=1, default=str)
    write_atomically(path, text)


def run_all(
    jobs: list[Job], budgets: Budgets, raw: Path, settings: dict[str, Any]
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    started = time.monotonic()
    for index, job in enumerate(jobs, start=1):
        record = run_job(job, budgets)
        records.append(record)
        write_raw(raw, settings, records)
        shown = format_time(record["median_s"]) if "median_s" in record else record["status"]
        elapsed = time.monotonic() - started
        print(
            f"[{index}/{len(jobs)} {elapsed:.0f} s] {job.label()}: {shown}, "
            f"wall {record['wall_s']:.1f} s",
            flush=True,
        )
    return records


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    cells: tuple[PeerCell, ...] = select(QUICK_CELLS if args.quick else FULL_CELLS, args.cells)
    stacks = select_stacks(QUICK_STACKS if args.quick else STACKS, args.stacks)
    budgets = Budgets(
        timing=QUICK_TIMING if args.quick else TimingConfig(),
        peers=QUICK_BUDGETS if args.quick else PeerBudgets(),
        sync=args.peer_sync,
        timeout_s=TIMEOUT_S,
    )
    out_dir: Path = args.out_dir or Path(tempfile.mkdtemp(prefix="stackwars-peers-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    cell_list = [dataclasses.asdict(cell) for cell in cells]
    machine = metadata.machine_info()
    where = {"cpu_model": machine.get("cpu_model"), "fingerprint": metadata.fingerprint(machine)}
    settings = {"argv": argv, **dataclasses.asdict(budgets), "cells": cell_list,
                "machine": where, "started": now()}  # fmt: skip
    jobs = plan(cells, stacks, args.repeats)
    print(f"{len(jobs)} jobs, one at a time; raw records in {out_dir / 'peers-raw.json'}")
    started = time.monotonic()
    records = run_all(jobs, budgets, out_dir / "peers-raw.json", settings)
    report, summary = render(records, cells, stacks)
    total = f"\nTotal wall time: {time.monotonic() - started:.0f} s for {len(jobs)} jobs.\n"
    (out_dir / "peers-report.md").write_text(report + total, encoding="utf-8")
    write_raw(out_dir / "peers-raw.json", settings, records, summary)
    print(f"\n{report}{total}\nReport: {out_dir / 'peers-report.md'}")
    return 0


def render_raw(path: Path) -> str:
    """The report of a stored ``peers-raw.json`` (of format 2), after the machine, the date
    and the command that measured it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != RAW_FORMAT:
        raise SystemExit(f"{path} is not of format {RAW_FORMAT}: measure it again")
    settings, records = data["settings"], data["jobs"]
    cells = tuple(PeerCell(**cell) for cell in settings["cells"])
    stacks = tuple(dict.fromkeys(record["stack"] for record in records))
    machine = settings["machine"]
    command = " ".join(["python benchmarks/compare_peers.py", *settings["argv"]])
    head = (f"Machine {machine['cpu_model']} (fingerprint {machine['fingerprint']}), started "
            f"{settings['started'][:16]} UTC; `{command}`.\n\n")  # fmt: skip
    return head + render(records, cells, stacks)[0]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--render"]:
        sys.stdout.write(render_raw(Path(sys.argv[2])))
    else:
        sys.exit(main(sys.argv[1:]))
