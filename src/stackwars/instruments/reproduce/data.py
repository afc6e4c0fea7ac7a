"""An edition's file: what each finding needs (statistics, intervals, counts, verdicts) and
where it came from (machine, date, commit, command, run ids), without raw samples or parity
arrays, so that a full edition stays a few hundred kB and can live in the repository.

The file is JSON: ``{"format": EDITION_FORMAT, "edition": {...}, "parts": [...]}``; the runs
themselves stay in the results store, named by each part's ``run_id``.

Format history (``EDITION_FORMAT``):

* 1 (2026-11-28): first format: the edition's provenance; per part its status, run, time,
  cells (one entry per cell, its workers merged), the IR captured (lines and operations per
  stage), the probes' outcomes and the claims' results.
* 2 (2026-11-28): each part keeps ``source``, the commit of the stackwars that measured it:
  a part run by ``--resume`` may be measured by newer code than the edition began with.
  Format 1 files still read (their parts' source is the edition's).
* 3 (2026-11-29): each part keeps ``command``, the command line that measured it (a
  ``--resume``'s, not the one that began the edition), and ``earlier``, the sessions that
  measured a cells part before a resume continued its run (started, source, command, seconds).
  Formats 1 and 2 still read (their parts' command is unknown, ``None``; a format 2 part
  continued by a resume names only its last session).
* 4 (2026-11-29): a cell a part lists from an earlier part instead of measuring it again
  (``Part.reuse``: the unified part's native cells) carries ``measured_in``, that part's name,
  and ``run_id``, its run; a cell that ran also keeps ``first_run_peak_rss_bytes`` and
  ``timed_peak_rss_bytes`` (the worker's peak up to the end of the first run, and after it).
  Formats 1 to 3 still read (none of their cells was reused, none has the split peaks).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stackwars.errors import UsageError
from stackwars.ir.analyse import analyse
from stackwars.ir.normalise import normalise
from stackwars.results.aggregate import merge_repeats, workers_by_cell
from stackwars.results.captures import RunCapture
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.schema import Cell

EDITION_FORMAT = 4
# A format 1 part has no source of its own (the edition's); formats 1 and 2 keep no part's command.
READABLE_FORMATS = (1, 2, 3, 4)
DONE, NOT_RUN, INTERRUPTED = "done", "not run", "interrupted"
# Each part's run keeps the edition under this instrument and key (``Store.add_data``), so
# that show and the report of any of them show its findings (render/__init__.py).
INSTRUMENT, KEY = "reproduce", "edition"
REASON_CHARS = 300  # of a failed cell's reason: its last line says why
TOP_OPS = 12  # the operations an IR entry keeps, most frequent first


@dataclass
class PartResult:
    """One part as the edition keeps it; ``status`` is ``done``, ``not run`` (``reason`` says
    why: the time budget, or what stopped it) or ``interrupted``."""

    name: str
    seed: str
    question: str
    kind: str
    status: str = NOT_RUN
    reason: str = ""
    run_id: str | None = None
    started: str | None = None
    duration_s: float | None = None
    source: dict[str, Any] | None = None  # git commit and dirty flag of the code that measured it
    command: list[str] | None = None  # the command line that measured it (a resume's own)
    # The sessions that measured this cells part before a resume continued its run, oldest
    # first: {"started", "source", "command", "duration_s"}; the run holds their cells too.
    earlier: list[dict[str, Any]] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)
    ir: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Edition:
    """An edition: its provenance and its parts, in the order they ran."""

    id: str
    scale: str
    started: str
    budget_s: float
    command: list[str]
    stackwars: str
    source: dict[str, Any] | None  # git commit and dirty flag of the stackwars that ran it
    machine: dict[str, Any]
    versions: dict[str, Any]
    parts: list[PartResult] = field(default_factory=list)
    ended: str | None = None
    duration_s: float | None = None
    file_format: int = EDITION_FORMAT  # the format it was read in; written in the current one

    def part(self, name: str) -> PartResult | None:
        return next((part for part in self.parts if part.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        parts = data.pop("parts")
        del data["file_format"]
        return {"format": EDITION_FORMAT, "edition": data, "parts": parts}

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, dump(self.to_dict()) + "\n")


def read_edition(path: Path) -> Edition:
    """The edition in ``path``; a file of another format is refused with what to do."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read the edition {path}: {exc}") from exc
    return edition_from_dict(data, str(path))


def edition_from_dict(data: Any, where: str) -> Edition:
    """The edition a file (or a run's kept entry, ``where`` names it) holds."""
    found = data.get("format") if isinstance(data, dict) else None
    if found not in READABLE_FORMATS:
        raise UsageError(
            f"{where} is edition format {found!r}; this stackwars reads formats "
            f"{', '.join(map(str, READABLE_FORMATS))}: run 'stackwars reproduce' again to make one"
        )
    parts = [PartResult(**part) for part in data["parts"]]
    return Edition(**data["edition"], parts=parts, file_format=found)


def compact_cells(cells: Iterable[Cell]) -> list[dict[str, Any]]:
    """One entry per cell of a run, its workers merged: status (the first worker that did not
    end ok decides it), the steady median with its 95 % interval across workers, the first
    and second run, runs to steady, compilations, memory, parity and the node it ran on."""
    cells = list(cells)
    merged = {cell.key(): cell for cell in merge_repeats(cells) if cell.status == "ok"}
    entries = []
    for key, workers in workers_by_cell(cells).items():
        failed = next((cell for cell in workers if cell.status != "ok"), None)
        entries.append(_entry(failed or merged.get(key) or workers[0], workers, failed))
    return entries


def _entry(cell: Cell, workers: Sequence[Cell], failed: Cell | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "cell": cell.label(),
        "workload": cell.workload,
        "params": cell.params,
        "stack": cell.stack,
        "device": cell.device,
        "to_host": cell.to_host,
        "status": cell.status,
        "reason": cell.reason.strip()[-REASON_CHARS:] if failed else "",
        "workers": len(workers),
        "nodes": sorted({str(w.node.get("fingerprint", "")) for w in workers} - {""}),
    }
    if failed is not None:
        entry["predicted_bytes"] = cell.memory.predicted_bytes
        return entry
    steady = cell.steady
    entry |= {
        "steady_s": steady.median_s,
        "ci95_s": [steady.ci95_low_s, steady.ci95_high_s],
        "stable": steady.stable,
        "first_run_s": _median(w.times.first_run_s for w in workers),
        "second_run_s": _median(w.times.second_run_s for w in workers),
        "import_s": _median(w.times.import_s for w in workers),
        "first_run_breakdown": cell.first_run_breakdown,
        "runs_to_steady": [w.runs_to_steady for w in workers],
        "compiles": dataclasses.asdict(cell.compiles),
        "peak_rss_bytes": _median(w.memory.peak_rss_bytes for w in workers),
        "first_run_peak_rss_bytes": _median(w.memory.first_run_peak_rss_bytes for w in workers),
        "timed_peak_rss_bytes": _median(w.memory.timed_peak_rss_bytes for w in workers),
        "rss_after_import_bytes": _median(w.memory.rss_after_import_bytes for w in workers),
        "device_peak_bytes": _median(w.memory.device_peak_bytes for w in workers),
        "predicted_bytes": cell.memory.predicted_bytes,
        "parity_ok": cell.parity.ok,
        "max_rel_err": cell.parity.max_rel_err,
        "computed_dtype": cell.parity.computed_dtype,
        "gflops": cell.gflops,
    }
    return entry


def _median(values: Iterable[float | int | None]) -> float | None:
    known = [float(value) for value in values if value is not None]
    return statistics.median(known) if known else None


def compact_ir(captures: Iterable[RunCapture]) -> list[dict[str, Any]]:
    """Each captured stage's size (normalised lines, parameters) and its most frequent
    operations, per cell; the texts themselves stay in the store."""
    entries = []
    for capture in captures:
        for stage, text in sorted(capture.texts.items()):
            found = analyse(normalise(text))
            entries.append(
                {
                    "cell": capture.cell.label(),
                    "stack": capture.cell.stack,
                    "stage": stage,
                    "lines": found.lines,
                    "parameters": found.parameters,
                    "ops": dict(found.ops.most_common(TOP_OPS)),
                }
            )
        for stage, why in sorted(capture.unavailable.items()):
            entries.append(
                {"cell": capture.cell.label(), "stack": capture.cell.stack, "stage": stage,
                 "unavailable": why.strip()[-REASON_CHARS:]}
            )  # fmt: skip
    return entries
