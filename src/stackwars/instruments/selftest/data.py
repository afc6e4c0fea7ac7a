"""A selftest as data: each check of a stack, and what the worker answered or why it did not."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Check:
    """One check's outcome: passed is None when it does not apply to the stack."""

    name: str
    passed: bool | None
    numbers: dict[str, float]
    message: str


@dataclass
class StackResult:
    """One stack's selftest: status ok (checks ran), unsupported, error, oom or timeout."""

    stack: str
    status: str
    reason: str = ""
    checks: list[Check] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StackResult:
        checks = [Check(**check) for check in data["checks"]]
        return cls(data["stack"], data["status"], data["reason"], checks)

    def failures(self) -> list[str]:
        """A line per failed check, or for a worker that did not finish."""
        if self.status not in ("ok", "unsupported"):
            return [f"FAILED: {self.stack} worker ({self.status}): {self.reason}"]
        return [
            f"FAILED: {self.stack} {check.name}: {check.message}"
            for check in self.checks
            if check.passed is False
        ]
