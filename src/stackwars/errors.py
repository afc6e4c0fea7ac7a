"""Errors raised by stackwars.

Every error a user can cause says what was wrong, what is allowed, and how to fix it, in one
line. The command line prints that line and exits with status 2.

The tree::

    StackwarsError
    ├── UsageError                  bad input from the user; exit status 2
    │   ├── UnknownNameError        a workload, stack, suite, framework, mode or device name
    │   ├── ParameterError          a parameter name or value a workload does not accept
    │   ├── BudgetError             a cell that cannot fit the memory budget
    │   ├── WorkloadFileError       a --workload-file that cannot be imported
    │   ├── ClaimError              a claim (file or one-line form) that does not parse
    │   ├── StoreError              a results store that is corrupt, foreign or locked
    │   ├── RayMissingError (runner/executors.py)
    │   │                           --executor ray without Ray installed
    │   ├── RayConnectError (runner/ray_executor.py)
    │   │                           a Ray cluster that cannot be reached or joined
    │   └── ExecutorLostError (runner/tasks.py)
    │       │                       what runs the tasks is gone: the run ends interrupted
    │       └── RayHeadLostError (runner/ray_executor.py)
    │                               the Ray cluster's head stopped answering mid-run
    └── PeakError (results/peak.py) the machine's peak could not be measured or read

Failures of the work itself (an exception in a framework, a crash, a hang, running out of
memory) are never raised to the user: they become cell results with a status and a reason.
"""

from __future__ import annotations

from collections.abc import Iterable


class StackwarsError(Exception):
    """Base class of every error stackwars raises on purpose."""


class UsageError(StackwarsError):
    """The user asked for something that cannot be done as asked."""


class UnknownNameError(UsageError):
    """A name that is not in the registry it was looked up in."""

    def __init__(self, kind: str, name: str, allowed: Iterable[str], fix: str = "") -> None:
        allowed_text = ", ".join(sorted(allowed)) or "(none)"
        hint = f"; {fix}" if fix else ""
        super().__init__(f"unknown {kind} {name!r}; allowed: {allowed_text}{hint}")
        self.kind = kind
        self.name = name


class ParameterError(UsageError):
    """A workload parameter that is unknown or has a malformed or out-of-range value."""


class BudgetError(UsageError):
    """A cell whose predicted memory exceeds the memory budget."""


class WorkloadFileError(UsageError):
    """A user workload file that is missing or fails to import."""


class ClaimError(UsageError):
    """A claim that does not parse: the message names the field and shows an example."""


class StoreError(UsageError):
    """The results store cannot be used as it is (corrupt, not a database, locked); the file
    is left as it was."""
