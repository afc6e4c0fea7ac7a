"""A run: its metadata and cells, and its JSON form (``--json PATH``)."""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stackwars.results.jsonio import dump, write_atomically
from stackwars.results.schema import SCHEMA_VERSION, Cell

RUN_STATUSES = ("running", "complete", "interrupted")


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


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
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "run": self.header(),
            "cells": [cell.to_dict() for cell in self.cells],
        }

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
            cells=[Cell.from_dict(cell) for cell in data.get("cells", [])],
        )
