"""stackwars: the same numerical and ML work on NumPy, JAX, PyTorch and TensorFlow, in every
execution mode, measured honestly.

The public Python API is what this module exports; everything else is private. ``run``
(``stackwars.service.execution``), ``compare`` and ``history`` (``stackwars.service.api``),
``measure`` (in-process timing) and ``reproduce`` (the seeds as one edition) are loaded on
first use, so that worker processes, which import this package, do not pay for them.
"""

from typing import TYPE_CHECKING, Any

from stackwars.errors import StackwarsError, UsageError
from stackwars.frameworks import FRAMEWORKS, Stack, all_stacks, parse_stack
from stackwars.results.frame import results_frame
from stackwars.results.run import Run
from stackwars.results.schema import SCHEMA_VERSION, Cell
from stackwars.suites import Suite, SuiteEntry, register_suite
from stackwars.version import __version__
from stackwars.workloads import Param, Work, Workload, load_workload_file, register, registry

if TYPE_CHECKING:  # for type checkers; at run time __getattr__ loads them on first use
    from stackwars.instruments.reproduce.service import reproduce
    from stackwars.service.api import Measure, Selection, compare, history
    from stackwars.service.execution import run
    from stackwars.service.inprocess import InProcessResult, measure

_SERVICES = ("Measure", "Selection", "compare", "history")
_IN_PROCESS = ("InProcessResult", "measure")


def __getattr__(name: str) -> Any:
    if name == "run":
        from stackwars.service import execution

        return execution.run
    if name == "reproduce":
        from stackwars.instruments.reproduce import service as edition

        return edition.reproduce
    if name in _SERVICES:
        from stackwars.service import api

        return getattr(api, name)
    if name in _IN_PROCESS:
        from stackwars.service import inprocess

        return getattr(inprocess, name)
    raise AttributeError(f"module 'stackwars' has no attribute {name!r}")


__all__ = [  # noqa: RUF022 (grouped: services first, resolved by __getattr__)
    "InProcessResult",
    "Measure",
    "Selection",
    "compare",
    "history",
    "measure",
    "reproduce",
    "run",
    "FRAMEWORKS",
    "SCHEMA_VERSION",
    "Cell",
    "Param",
    "Run",
    "Stack",
    "StackwarsError",
    "Suite",
    "SuiteEntry",
    "UsageError",
    "Work",
    "Workload",
    "__version__",
    "all_stacks",
    "load_workload_file",
    "parse_stack",
    "register",
    "register_suite",
    "registry",
    "results_frame",
]
