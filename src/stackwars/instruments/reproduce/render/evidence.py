"""Why a verdict came out as it did: for each claim, what the edition holds about the cells it
was judged from, in one sentence under the verdict, chosen by the claim's statistic:

* ``first-run``: the first run split into its stages (trace, lower, compile, execute, as each
  framework reports them) and the compilations it made;
* ``steady``, ``ir-lines``: the steady time, its compute rate, whether steady state still
  compiled, and the IR the compiler emitted (lines and most frequent operations);
* ``runs-to-steady``, ``second-run-compiles``, ``graphs-per-call``: the compilations of the
  first run, the second and steady state, and each worker's runs to steady;
* ``memory``, ``held-memory``: the peak, what the process held after its imports, the
  difference (what the work held), the device's peak and what the plan predicted.

What the edition does not hold (per-operation profiles, page faults) is not guessed at: the
sentence says only what was measured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from stackwars.instruments.claims.verdict import ClaimResult
from stackwars.instruments.reproduce.data import PartResult
from stackwars.report.table import format_bytes, format_seconds

IR_STAGES = ("stablehlo", "hlo")  # the stage a finding names, when a cell has several
IR_OPS = 3  # operations named per IR, most frequent first
REASON_CHARS = 120

Entry = dict[str, Any]


@dataclass(frozen=True)
class Evidence:
    """The cells of one part (the claim's own: a per-call reading's cells are not the resident
    reading's) and the IR every part of the edition captured, by cell label."""

    cells: dict[str, Entry]
    ir: dict[str, list[Entry]]

    @classmethod
    def of(cls, part: PartResult, parts: Iterable[PartResult]) -> Evidence:
        ir: dict[str, list[Entry]] = {}
        for each in parts:
            for entry in each.ir:
                if "unavailable" not in entry:
                    ir.setdefault(entry["cell"], []).append(entry)
        return cls({entry["cell"]: entry for entry in part.cells}, ir)

    def why(self, claim: ClaimResult) -> str:
        """The evidence sentence for ``claim``; empty when none of its cells was measured."""
        if claim.statistic == "crossover":
            swept = [label for label in claim.cells if label in self.cells]
            return f"{len(swept)} cells along the sweep; their times are in the evidence below"
        facts = FACTS.get(claim.statistic, _steady)
        said = []
        for label in dict.fromkeys(claim.cells):
            entry, ir = self.cells.get(label), self.ir.get(label, [])
            if entry is not None:
                said.append(f"{entry['stack']}: {_failed(entry) or facts(entry, ir)}")
            elif ir:  # an IR claim's cell is captured, not timed, in its part
                said.append(f"{ir[0]['stack']}: {_ir(ir)}")
        return "; ".join(said)


def _failed(entry: Entry) -> str:
    if entry["status"] == "ok":
        return ""
    reason = str(entry.get("reason") or "").strip().splitlines()
    return f"{entry['status']} ({reason[-1][-REASON_CHARS:]})" if reason else entry["status"]


def _first_run(entry: Entry, ir: list[Entry]) -> str:
    stages = {
        name.removesuffix("_s").replace("_", " "): seconds
        for name, seconds in (entry.get("first_run_breakdown") or {}).items()
        if not name.startswith("of_compile.")
    }
    split = " + ".join(f"{name} {format_seconds(s)}" for name, s in stages.items())
    total = f"first run {format_seconds(entry.get('first_run_s'))}"
    return ", ".join(
        filter(None, [f"{total} = {split}" if split else total, _compiles(entry, "first_run")])
    )


def _steady(entry: Entry, ir: list[Entry]) -> str:
    rate = f" at {entry['gflops']:.3g} GFLOP/s" if entry.get("gflops") else ""
    said = [f"steady {format_seconds(entry.get('steady_s'))}{rate}"]
    steady = (entry.get("compiles") or {}).get("steady")
    if steady is not None and not str(entry["stack"]).endswith(":eager"):
        said.append("no compilation in steady state" if steady == 0 else
                    f"{steady} compilations in steady state")  # fmt: skip
    return ", ".join([*said, _ir(ir)] if ir else said)


def _ir_lines(entry: Entry, ir: list[Entry]) -> str:
    return _ir(ir) or "no IR kept for this cell"


def _ir(ir: list[Entry]) -> str:
    if not ir:
        return ""
    chosen = next((e for stage in IR_STAGES for e in ir if e["stage"] == stage), ir[0])
    ops = ", ".join(f"{name} ×{n}" for name, n in list(chosen["ops"].items())[:IR_OPS])
    return f"{chosen['stage']} {chosen['lines']} lines ({ops})"


def _compilations(entry: Entry, ir: list[Entry]) -> str:
    counts = entry.get("compiles") or {}
    said = ", ".join(
        f"{run.replace('_', ' ')} {counts[run]}" for run in ("first_run", "second_run", "steady")
        if counts.get(run) is not None
    )  # fmt: skip
    runs = ", ".join(str(n) for n in entry.get("runs_to_steady") or [] if n is not None)
    second = (f"second run {format_seconds(entry.get('second_run_s'))} against steady "
              f"{format_seconds(entry.get('steady_s'))}")  # fmt: skip
    return "; ".join(filter(None, [
        f"compilations: {said}" if said else "compilations not counted by this stack",
        f"runs to steady per worker {runs}" if runs else "", second,
    ]))  # fmt: skip


def _compiles(entry: Entry, run: str) -> str:
    count = (entry.get("compiles") or {}).get(run)
    return "" if count is None else f"{count} compilation{'s' if count != 1 else ''}"


def _memory(entry: Entry, ir: list[Entry]) -> str:
    peak, after = entry.get("peak_rss_bytes"), entry.get("rss_after_import_bytes")
    said = [f"peak RSS {format_bytes(peak)}"]
    if peak is not None and after is not None:
        said.append(f"{format_bytes(after)} after imports, so the work held "
                    f"{format_bytes(max(0.0, peak - after))}")  # fmt: skip
    first, timed = entry.get("first_run_peak_rss_bytes"), entry.get("timed_peak_rss_bytes")
    if first is not None and timed is not None:
        said.append(f"the first run's peak (the compiler's working memory included) "
                    f"{format_bytes(first)}, the timed runs' {format_bytes(timed)}")  # fmt: skip
    if entry.get("device_peak_bytes") is not None:
        said.append(f"device peak {format_bytes(entry['device_peak_bytes'])}")
    if entry.get("predicted_bytes") is not None:
        said.append(f"the plan predicted {format_bytes(entry['predicted_bytes'])}")
    return ", ".join(said)


FACTS: dict[str, Callable[[Entry, list[Entry]], str]] = {
    "steady": _steady,
    "first-run": _first_run,
    "memory": _memory,
    "held-memory": _memory,
    "runs-to-steady": _compilations,
    "second-run-compiles": _compilations,
    "graphs-per-call": _compilations,
    "ir-lines": _ir_lines,
}
