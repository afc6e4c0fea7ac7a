"""Benchmark: the regression gate on real A/A pairs (identical code measured twice).

    python benchmarks/aa_gate.py [--pairs 3] [--repeat 3] [--budget 2] [--out-dir DIR]

Each pair is two runs of the same cells, one after the other, each with ``--repeat`` fresh
workers per cell: by default ``stackwars run --workload gemm --param n=512 --stacks
numpy:eager,jax:jit,torch:eager``, the reproduction in issue 12. Every pair is compared the
way a CI job would (``stackwars compare A B --fail-above 5``) and, for contrast, with
within-process statistics. A false alarm is a cell the gate calls a regression. Writes
``aa-gate.md`` and ``aa-gate.json`` to the output folder and prints the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from stackwars.results.comparison import FAIL, ComparisonRow, Gate, decide
from stackwars.service import api

CELLS = ["--workload", "gemm", "--param", "n=512", "--stacks", "numpy:eager,jax:jit,torch:eager"]
FAIL_ABOVE = 5.0


def run_once(db: Path, repeat: int, budget: float) -> str:
    """One run of the cells; its id."""
    argv = [sys.executable, "-m", "stackwars", "run", *CELLS, "--repeat", str(repeat)]
    argv += ["--budget", str(budget), "--db", str(db), "--quiet"]
    subprocess.run(argv, check=True, capture_output=True, text=True)
    return api.open_store(str(db), must_exist=True).load_run("latest").id


def judged(rows: list[ComparisonRow]) -> list[dict[str, Any]]:
    states = decide(rows, Gate(fail_above=FAIL_ABOVE)).states
    return [
        {
            "cell": row.label,
            "verdict": row.result.verdict if row.result else row.note,
            "ratio": row.result.ratio if row.result else None,
            "false_alarm": state == FAIL,
        }
        for row, state in zip(rows, states, strict=True)
    ]


def pair(db: Path, repeat: int, budget: float) -> dict[str, Any]:
    first, second = run_once(db, repeat, budget), run_once(db, repeat, budget)
    by_worker = list(api.compare(first, second, db=str(db)).verdict.rows)
    pooled = list(api.compare(first, second, db=str(db), within_process=True).verdict.rows)
    return {"runs": [first, second], "gate": judged(by_worker), "within": judged(pooled)}


def render(pairs: list[dict[str, Any]], repeat: int) -> str:
    lines = [
        f"A/A pairs: {len(pairs)}, {repeat} worker(s) per cell and run, --fail-above "
        f"{FAIL_ABOVE:g} %",
        "",
        "| pair | cell | gate verdict (workers) | ratio | within-process verdict | ratio |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for index, item in enumerate(pairs, 1):
        for gate, within in zip(item["gate"], item["within"], strict=True):
            lines.append(
                f"| {index} | {gate['cell']} | {gate['verdict']} | {gate['ratio']:.3f} | "
                f"{within['verdict']} | {within['ratio']:.3f} |"
            )
    for name in ("gate", "within"):
        rows = [row for item in pairs for row in item[name]]
        alarms = sum(row["false_alarm"] for row in rows)
        lines.append("")
        lines.append(f"{name}: {alarms} false alarm(s) in {len(rows)} cell comparisons")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--budget", type=float, default=2.0, help="steady budget per cell, s")
    parser.add_argument("--out-dir", type=Path, default=Path("aa-gate"))
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    pairs = []
    with tempfile.TemporaryDirectory(prefix="stackwars-aa-") as scratch:
        for index in range(args.pairs):
            pairs.append(pair(Path(scratch) / "db.sqlite", args.repeat, args.budget))
            print(f"pair {index + 1}/{args.pairs} done", file=sys.stderr)
    (args.out_dir / "aa-gate.json").write_text(json.dumps(pairs, indent=1), encoding="utf-8")
    report = render(pairs, args.repeat)
    (args.out_dir / "aa-gate.md").write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
