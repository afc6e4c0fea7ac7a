"""What the parent asks of a timing (or IR) worker: the cell and how to measure it.

The envelope around it, its version and how the child is started are ``runner/child.py``'s.
The timing worker answers with one result cell (``results.schema.Cell``) -- also when the work
failed, since failures are data.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from stackwars.frameworks.base import RunSettings
from stackwars.results.schema import CellSpec
from stackwars.timing.timer import TimingConfig


@dataclass
class Request:
    cell: CellSpec
    settings: RunSettings
    timing: TimingConfig
    seed: int = 0
    workload_files: list[str] = field(default_factory=list)
    # --x64 auto on a cell without a dtype parameter: the worker sets settings.x64 from the
    # inputs it makes (64-bit when any is), for the stacks whose settings read it.
    x64_from_inputs: bool = False
    # The run's own parity tolerance (--rtol, --atol); None: the workload's.
    rtol: float | None = None
    atol: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Request:
        return cls(
            cell=CellSpec(**data["cell"]),
            settings=RunSettings(**data["settings"]),
            timing=TimingConfig(**data["timing"]),
            seed=data["seed"],
            workload_files=data["workload_files"],
            x64_from_inputs=data.get("x64_from_inputs", False),
            rtol=data.get("rtol"),
            atol=data.get("atol"),
        )
