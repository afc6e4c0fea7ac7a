"""Benchmark: the regression gate's false alarms and power, on real workers.

    python benchmarks/power/power_gate.py collect --out DIR   # ~10 min: the pool
    python benchmarks/power/power_gate.py drift --out DIR     # ~5 min: separate runs
    python benchmarks/power/power_gate.py analyse --out DIR   # seconds: DIR/power-gate.md

``collect`` measures one interleaved run of GEMM 512² (``regressed_gemm.py``) with known
regressions injected through the workload file (``extra`` = 0, 5, 10, 20 % of the rows
computed twice) on numpy:eager, torch:eager and jax:jit, ``--repeat 24`` fresh workers each.

``analyse`` replays the gate on those workers: each trial draws the workers of a session
without replacement (for 0 %, the 24 unregressed workers split in two random halves) and
feeds them round by round to the rule ``stackwars ab`` applies (compare from round 3 at
alpha / looks, stop when every cell is settled, at most 10 rounds, ``--fail-above 5``); the
gate's failure rate under 0 % is its false-alarm rate, under 10 % its power. For contrast, the
one-look gate of two ``--repeat 3`` runs (the first 3 workers a side) on the same draws. The
trials share workers (a pool of 24), so the rates' uncertainty is larger than a binomial over
trials suggests; the Wilson interval shown is over trials, and says so.

``drift`` measures issue 29's situation: 6 separate runs of the unregressed cells
(``--repeat 3``), each followed by other work (a different run), then estimates the
run-to-run standard deviation (one-way random-effects analysis of the per-worker log
medians) and counts false alarms over every pair of runs, with and without the drift term.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from stackwars.results.comparison import ComparisonRow, Gate
from stackwars.results.schema import Cell
from stackwars.service import ab, api
from stackwars.timing.compare import DEFAULT_RUN_DRIFT, compare

WORKLOAD = Path(__file__).with_name("regressed_gemm.py")
STACKS = "numpy:eager,torch:eager,jax:jit"
EXTRAS = (0.0, 0.05, 0.1, 0.2)
GATE = Gate(fail_above=5.0)
SESSION = ab.Session((), ab.Side("baseline"), ab.Side("candidate"), Path())


def stackwars(*argv: str) -> None:
    command = [sys.executable, "-m", "stackwars", *argv, "--quiet"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def cells_args(extras: str, n: int, stacks: str) -> list[str]:
    return [
        "--workload-file", str(WORKLOAD), "--workload", "regressed-gemm",
        "--param", f"n={n}", "--param", f"extra={extras}", "--stacks", stacks,
    ]  # fmt: skip


def collect(out: Path, repeat: int, n: int, budget: float, stacks: str) -> None:
    extras = ",".join(f"{x:g}" for x in EXTRAS)
    stackwars(
        "run", *cells_args(extras, n, stacks), "--repeat", str(repeat), "--budget", str(budget),
        "--json", str(out / "pool.json"), "--db", str(out / "pool.sqlite"),
    )  # fmt: skip


def drift(out: Path, runs: int, n: int, budget: float, stacks: str) -> None:
    for index in range(runs):
        stackwars(
            "run", *cells_args("0", n, stacks), "--repeat", "3", "--budget", str(budget),
            "--json", str(out / f"drift-{index}.json"), "--db", str(out / "drift.sqlite"),
        )  # fmt: skip
        # Other work between the runs, as on a machine that does more than benchmark.
        stackwars(
            "run", "--workload", "mha", "--stacks", "torch:eager,jax:jit",
            "--db", str(out / "other.sqlite"),
        )  # fmt: skip


def pools(path: Path) -> dict[tuple[str, float], list[Cell]]:
    found: dict[tuple[str, float], list[Cell]] = {}
    for cell in api.read_run_file(path).cells:
        if cell.status == "ok" and cell.steady.samples_s:
            found.setdefault((cell.stack, float(cell.params["extra"])), []).append(cell)
    return found


def session_decision(base: list[Cell], cand: list[Cell]) -> tuple[bool, int, float]:
    """The adaptive gate on these workers in this order: (failed, rounds, worker seconds)."""
    for rounds in range(SESSION.min_rounds, SESSION.max_rounds + 1):
        result = compare(
            [c.steady.samples_s for c in base[:rounds]],
            [c.steady.samples_s for c in cand[:rounds]],
            alpha=SESSION.alpha,
        )
        row = ComparisonRow("cell", None, None, result)
        if ab.settled(row, GATE) or rounds == SESSION.max_rounds:
            seconds = sum((c.wall_s or 0.0) for c in base[:rounds] + cand[:rounds])
            return result.fails_gate(GATE.fail_above or 0), rounds, seconds
    raise AssertionError("unreachable")


def one_look(base: list[Cell], cand: list[Cell]) -> bool:
    result = compare([c.steady.samples_s for c in base[:3]], [c.steady.samples_s for c in cand[:3]])
    return result.fails_gate(GATE.fail_above or 0)


def wilson(hits: int, trials: int) -> str:
    z = 1.96
    p = hits / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials**2)) / (1 + z * z / trials)
    return f"{p:.0%} [{max(0, centre - half):.0%}, {min(1, centre + half):.0%}]"


def trial_sides(
    pool: dict[tuple[str, float], list[Cell]], stack: str, extra: float, rng: random.Random
) -> tuple[list[Cell], list[Cell]]:
    base = rng.sample(pool[(stack, 0.0)], len(pool[(stack, 0.0)]))
    if extra == 0.0:
        half = len(base) // 2
        return base[:half], base[half:]
    return base, rng.sample(pool[(stack, extra)], len(pool[(stack, extra)]))


def measured_change(pool: dict[tuple[str, float], list[Cell]], stack: str, extra: float) -> float:
    def median(cells: list[Cell]) -> float:
        return statistics.median(statistics.median(c.steady.samples_s) for c in cells)

    return median(pool[(stack, extra)]) / median(pool[(stack, 0.0)]) - 1


def power_table(pool: dict[tuple[str, float], list[Cell]], trials: int, stacks: str) -> list[str]:
    lines = [
        "| stack | injected | measured change | gate fails (adaptive, 95 % Wilson over "
        "trials) | rounds (mean) | worker time per session | one look, --repeat 3 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    rng = random.Random(0)
    for stack in stacks.split(","):
        for extra in EXTRAS:
            results = [
                session_decision(*trial_sides(pool, stack, extra, rng)) for _ in range(trials)
            ]
            looks = [one_look(*trial_sides(pool, stack, extra, rng)) for _ in range(trials)]
            fails = sum(failed for failed, _, _ in results)
            rounds = statistics.mean(r for _, r, _ in results)
            seconds = statistics.mean(s for _, _, s in results)
            lines.append(
                f"| {stack} | {extra:.0%} | {measured_change(pool, stack, extra):+.1%} | "
                f"{wilson(fails, trials)} | {rounds:.1f} | {seconds:.0f} s | "
                f"{wilson(sum(looks), trials)} |"
            )
    return lines


def drift_table(out: Path, stacks: str) -> list[str]:
    runs = [api.read_run_file(path) for path in sorted(out.glob("drift-*.json"))]
    lines = [
        f"{len(runs)} separate runs, 3 workers each, other work between them.",
        "",
        "| stack | run-to-run sd (ANOVA) | between workers in a run | A/A pairs | alarms "
        f"without drift | alarms with --run-drift {DEFAULT_RUN_DRIFT:.0%} |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for stack in stacks.split(","):
        groups = [[c for c in run.cells if c.stack == stack and c.status == "ok"] for run in runs]
        logs = [[math.log(statistics.median(c.steady.samples_s)) for c in g] for g in groups]
        within = statistics.mean(statistics.variance(g) for g in logs)
        means = [statistics.mean(g) for g in logs]
        per_run = statistics.variance(means) - within / 3
        pairs = list(itertools.combinations(groups, 2))
        samples = [
            ([c.steady.samples_s for c in a], [c.steady.samples_s for c in b]) for a, b in pairs
        ]
        blind = sum(compare(a, b).fails_gate(5) for a, b in samples)
        counted = sum(compare(a, b, run_drift=DEFAULT_RUN_DRIFT).fails_gate(5) for a, b in samples)
        lines.append(
            f"| {stack} | {math.sqrt(max(per_run, 0)):.1%} | {math.sqrt(within):.1%} | "
            f"{len(pairs)} | {blind} | {counted} |"
        )
    return lines


def analyse(out: Path, trials: int, stacks: str) -> str:
    parts: list[Any] = ["## The gate's power", ""]
    if (out / "pool.json").is_file():
        parts += power_table(pools(out / "pool.json"), trials, stacks)
    if list(out.glob("drift-*.json")):
        parts += ["", "## Run-to-run drift", "", *drift_table(out, stacks)]
    text = "\n".join(parts) + "\n"
    (out / "power-gate.md").write_text(text, encoding="utf-8")
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("step", choices=("collect", "drift", "analyse"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=24)
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--budget", type=float, default=0.3)
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--stacks", default=STACKS)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.step == "collect":
        collect(args.out, args.repeat, args.n, args.budget, args.stacks)
    elif args.step == "drift":
        drift(args.out, args.runs, args.n, args.budget, args.stacks)
    else:
        print(analyse(args.out, args.trials, args.stacks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
