"""A run: its metadata and cells, and its JSON form (``--json PATH``)."""

from __future__ import annotations

import datetime
import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from stackwars.results.compile import compile_summaries, summaries_as_data
from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.schema import SCHEMA_VERSION, Cell

# "abandoned" is never stored: it is how a stored "running" run reads once the process
# that ran it is gone (killed, crashed, machine restarted); --resume finishes it.
RUN_STATUSES = ("running", "complete", "interrupted", "abandoned")


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def this_process() -> dict[str, Any]:
    """Who runs a run: host, pid and the process's start time (pids are reused)."""
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "process_started": psutil.Process().create_time(),
    }


def owner_alive(owner: dict[str, Any]) -> bool | None:
    """Whether the process that owns a run still runs; None when it cannot be told from here
    (another host, or a run stored before owners were recorded)."""
    if not owner or owner.get("host") != socket.gethostname():
        return None
    try:
        started = psutil.Process(int(owner["pid"])).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False
    return abs(started - float(owner["process_started"])) < 1.0


def displayed_status(header: dict[str, Any]) -> str:
    """A stored run's status as it stands now: a running run whose process is gone is
    abandoned."""
    status = header.get("status", "complete")
    if status == "running" and owner_alive(header.get("owner", {})) is False:
        return "abandoned"
    return status


@dataclass
class Kept:
    """What one instrument keeps with a run (the store's ``instrument_data``): its entries,
    plain JSON payloads in the instrument's own format of version ``format_version``."""

    format_version: int
    entries: list[dict[str, Any]] = field(default_factory=list)


# Instruments whose entries the run file holds under a key of their own, as it did before
# instruments kept their data through one seam (store version 7): instrument -> key. Every
# other instrument's are under "instruments": {name: {"format_version": n, "entries": [...]}}.
LEGACY_KEYS = {"behave": "outcomes", "claims": "claims", "profile": "profiles"}


def tally(payload: dict[str, Any]) -> str | None:
    """What ``stackwars runs`` counts an entry of a run of an instrument's own kind (a behave
    run: no cells) as: its payload's "outcome" without a trailing count ("retraced 2" and
    "retraced 3" as "retraced"); None: not counted."""
    outcome = payload.get("outcome")
    return outcome.rstrip("0123456789 ") if isinstance(outcome, str) else None


def new_run_id() -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{uuid.uuid4().hex[:6]}"


@dataclass
class Run:
    id: str
    started: str
    machine: dict[str, Any]
    versions: dict[str, Any]
    argv: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    planned: list[dict[str, Any]] = field(default_factory=list)  # every cell asked for
    finished: str | None = None
    status: str = "running"
    cells: list[Cell] = field(default_factory=list)
    owner: dict[str, Any] = field(default_factory=this_process)
    # label, hostname, machine fingerprint, git state (results.metadata.run_identity)
    identity: dict[str, Any] = field(default_factory=dict)
    # "timing" (cells) or an instrument's kind of run ("behave": probe outcomes, no cells)
    kind: str = "timing"
    # What each instrument keeps with the run, by instrument (its folder's name): claims
    # checked, profiles, behave's outcomes, IR captures, ... (``keep``, ``entries``).
    kept: dict[str, Kept] = field(default_factory=dict)

    def keep(self, instrument: str, format_version: int, payload: dict[str, Any]) -> None:
        """One entry ``instrument`` keeps with the run (in memory; the store's ``add_data``
        stores it)."""
        self.kept.setdefault(instrument, Kept(format_version)).entries.append(payload)

    def entries(self, instrument: str) -> list[dict[str, Any]]:
        """What ``instrument`` keeps with the run, in the order kept (empty: nothing)."""
        kept = self.kept.get(instrument)
        return kept.entries if kept else []

    def _legacy(self, instrument: str) -> list[dict[str, Any]]:
        return self.kept.setdefault(instrument, Kept(1)).entries

    # The run's fields before the seam, kept for code and notebooks that read them.
    @property
    def outcomes(self) -> list[dict[str, Any]]:
        """A behave run's outcomes (``instruments/behave/data.py``'s ``Outcome`` as dicts)."""
        return self._legacy("behave")

    @outcomes.setter
    def outcomes(self, entries: list[dict[str, Any]]) -> None:
        self._legacy("behave")[:] = entries

    @property
    def claims(self) -> list[dict[str, Any]]:
        """Claims checked with the run (``instruments/claims/verdict.py``'s ``ClaimResult``)."""
        return self._legacy("claims")

    @property
    def profiles(self) -> list[dict[str, Any]]:
        """Profiles of the run's cells (``run --profile``: ``profiling.result.Profile``)."""
        return self._legacy("profile")

    @profiles.setter
    def profiles(self, entries: list[dict[str, Any]]) -> None:
        self._legacy("profile")[:] = entries

    def header(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "started": self.started,
            "finished": self.finished,
            "status": self.status,
            "machine": self.machine,
            "versions": self.versions,
            "argv": self.argv,
            "options": self.options,
            "planned": self.planned,
            "owner": self.owner,
            "identity": self.identity,
            "kind": self.kind,
        }

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "run": self.header()}
        if self.kind == "behave":
            data["outcomes"] = self.entries("behave")
        else:
            data["cells"] = [cell.to_dict() for cell in self.cells]
            # Derived from the cells, for readers of the file; never read back.
            data["compile"] = summaries_as_data(compile_summaries(self.cells))
        others: dict[str, Any] = {}
        for instrument, kept in sorted(self.kept.items()):
            if not kept.entries or (instrument == "behave" and self.kind == "behave"):
                continue
            if instrument in LEGACY_KEYS and kept.format_version == 1:
                data[LEGACY_KEYS[instrument]] = kept.entries
            else:
                others[instrument] = {
                    "format_version": kept.format_version,
                    "entries": kept.entries,
                }
        if others:
            data["instruments"] = others
        return data

    def write_json(self, path: Path) -> None:
        write_atomically(path, dump(self.to_dict()))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        header = data["run"]
        return cls(
            id=header["id"],
            started=header["started"],
            machine=header.get("machine", {}),
            versions=header.get("versions", {}),
            argv=header.get("argv", []),
            options=header.get("options", {}),
            planned=header.get("planned", []),
            finished=header.get("finished"),
            status=header.get("status", "complete"),
            owner=header.get("owner", {}),
            identity=header.get("identity", {}),
            cells=[Cell.from_dict(cell) for cell in data.get("cells", [])],
            kind=header.get("kind", "timing"),
            kept=_kept_from(data),
        )


def _kept_from(data: dict[str, Any]) -> dict[str, Kept]:
    kept = {
        instrument: Kept(1, list(data[key]))
        for instrument, key in LEGACY_KEYS.items()
        if data.get(key)
    }
    for instrument, found in data.get("instruments", {}).items():
        kept[instrument] = Kept(int(found["format_version"]), list(found["entries"]))
    return kept
