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
    kind: str = "timing"  # or "behave": probe outcomes (results.behave.Outcome) instead of cells
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    # Claims checked with the run (``stackwars claims``): claims.verdict.ClaimResult as dicts.
    claims: list[dict[str, Any]] = field(default_factory=list)
    # Per-operation profiles of the run's cells (``run --profile``), each in a profile worker
    # after the timed cells: profiling.result.Profile as dicts.
    profiles: list[dict[str, Any]] = field(default_factory=list)

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
        if self.kind == "behave":
            return {
                "schema_version": SCHEMA_VERSION,
                "run": self.header(),
                "outcomes": self.outcomes,
            }
        data = {
            "schema_version": SCHEMA_VERSION,
            "run": self.header(),
            "cells": [cell.to_dict() for cell in self.cells],
            # Derived from the cells, for readers of the file; never read back.
            "compile": summaries_as_data(compile_summaries(self.cells)),
        }
        if self.claims:
            data["claims"] = self.claims
        if self.profiles:
            data["profiles"] = self.profiles
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
            outcomes=list(data.get("outcomes", [])),
            claims=list(data.get("claims", [])),
            profiles=list(data.get("profiles", [])),
        )
