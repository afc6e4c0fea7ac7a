"""The worker protocol: what the parent hands a worker, and where the worker answers.

The parent writes a :class:`Request` as JSON to a file and starts
``python -m stackwars.runner.worker REQUEST RESULT``. The worker writes one result cell
(``results.schema.Cell``) as JSON to RESULT, atomically, and exits 0 -- also when the work
failed, since failures are data. Anything else (no RESULT, a signal, a non-zero exit) is
judged by the parent from the exit status and the tail of the worker's output.

History of PROTOCOL_VERSION:

* 1 (2026-11-22): first version.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import cell_key
from stackwars.timing.timer import TimingConfig

PROTOCOL_VERSION = 1


@dataclass(frozen=True)
class CellSpec:
    """What to measure: workload, parameters, stack, device, and whether results go to host."""

    workload: str
    params: dict[str, Any]
    stack: str
    device: str = "cpu"
    to_host: bool = False
    repeat: int = 0  # which of the --repeat fresh workers this is

    @property
    def framework(self) -> str:
        return self.stack.partition(":")[0]

    @property
    def mode(self) -> str:
        return self.stack.partition(":")[2]

    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        host = " →host" if self.to_host else ""
        return f"{self.workload}({params}) on {self.stack}{host} @ {self.device}"

    def key(self) -> tuple[str, str, str, str, bool]:
        return cell_key(self.workload, self.params, self.stack, self.device, self.to_host)


@dataclass
class Request:
    cell: CellSpec
    settings: RunSettings
    timing: TimingConfig
    seed: int = 0
    workload_files: list[str] = field(default_factory=list)
    version: int = PROTOCOL_VERSION

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Request:
        data = json.loads(text)
        return cls(
            cell=CellSpec(**data["cell"]),
            settings=RunSettings(**data["settings"]),
            timing=TimingConfig(**data["timing"]),
            seed=data["seed"],
            workload_files=data["workload_files"],
            version=data["version"],
        )
