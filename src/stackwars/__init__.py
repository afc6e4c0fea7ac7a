"""stackwars: the same numerical and ML work on NumPy, JAX, PyTorch and TensorFlow, in every
execution mode, measured honestly.

The public Python API is what this module exports; everything else is private. ``run``,
``compare`` and ``history`` (from ``stackwars.api``) are loaded on first use, so that worker
processes, which import this package, do not pay for the service layer.
"""

from typing import Any

from stackwars.errors import StackwarsError, UsageError
from stackwars.frameworks import FRAMEWORKS, Stack, all_stacks, parse_stack
from stackwars.results.frame import results_frame
from stackwars.results.run import Run
from stackwars.results.schema import SCHEMA_VERSION, Cell
from stackwars.workloads import Param, Work, Workload, load_workload_file, register, registry

__version__ = "0.1.0"

_SERVICES = ("Measure", "Selection", "compare", "history", "run")


def __getattr__(name: str) -> Any:
    if name in _SERVICES:
        from stackwars import api

        return getattr(api, name)
    raise AttributeError(f"module 'stackwars' has no attribute {name!r}")


__all__ = [  # noqa: PLE0604 (the services are resolved by __getattr__)
    *_SERVICES,
    "FRAMEWORKS",
    "SCHEMA_VERSION",
    "Cell",
    "Param",
    "Run",
    "Stack",
    "StackwarsError",
    "UsageError",
    "Work",
    "Workload",
    "__version__",
    "all_stacks",
    "load_workload_file",
    "parse_stack",
    "register",
    "registry",
    "results_frame",
]
