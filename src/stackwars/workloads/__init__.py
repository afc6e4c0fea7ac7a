"""The workload registry.

Every module in this package (other than ``base``) defines workloads and calls :func:`register`
when imported; :func:`registry` imports them all on first use, so adding a workload is adding
one module. Users add their own from a Python file with :func:`load_workload_file`; such a file
loads the modules a project already has (one per framework, say) with :func:`load_module`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
import sys
import traceback
from pathlib import Path
from types import ModuleType

from stackwars.errors import UnknownNameError, WorkloadFileError
from stackwars.workloads.base import Param, Params, Tolerance, Work, Workload

__all__ = [
    "Param",
    "Params",
    "Tolerance",
    "Work",
    "Workload",
    "get",
    "load_module",
    "load_workload_file",
    "register",
    "registry",
]

_REGISTRY: dict[str, Workload] = {}
_BUILTINS_LOADED = False
_FILES_LOADED: dict[Path, list[str]] = {}
_loading_from: str | None = None


def register(workload: Workload) -> Workload:
    """Add a workload; a second workload with the same name is refused."""
    if _loading_from is not None:
        workload = dataclasses.replace(workload, source=_loading_from)
    existing = _REGISTRY.get(workload.name)
    if existing is not None and existing is not workload:
        raise WorkloadFileError(
            f"workload {workload.name!r} from {workload.source} is already defined by "
            f"{existing.source}; give it another name"
        )
    _REGISTRY[workload.name] = workload
    return workload


def registry() -> dict[str, Workload]:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        for module in pkgutil.iter_modules(__path__):
            if module.name != "base":
                importlib.import_module(f"{__name__}.{module.name}")
    return _REGISTRY


def get(name: str) -> Workload:
    workloads = registry()
    if name not in workloads:
        raise UnknownNameError(
            "workload", name, workloads, "see 'stackwars list workloads' or add --workload-file"
        )
    return workloads[name]


def load_workload_file(path: str) -> list[Workload]:
    """Import a user's workload file (once per process); return the workloads it registered."""
    file = Path(path).resolve()
    if file in _FILES_LOADED:
        return [_REGISTRY[name] for name in _FILES_LOADED[file]]
    if not file.is_file():
        raise WorkloadFileError(f"workload file {path!r} does not exist; give a path to a .py file")
    registry()
    before = set(_REGISTRY)
    _import_file(file, path)
    added = [name for name in _REGISTRY if name not in before]
    if not added:
        raise WorkloadFileError(
            f"workload file {path!r} registered no workload; "
            "call stackwars.workloads.register(Workload(...)) in it"
        )
    _FILES_LOADED[file] = added
    return [_REGISTRY[name] for name in added]


def _import_file(file: Path, path: str) -> None:
    global _loading_from
    module_name = f"stackwars_user_workloads_{abs(hash(str(file)))}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise WorkloadFileError(f"workload file {path!r} is not a Python file; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    _loading_from = str(file)
    try:
        spec.loader.exec_module(module)
    except WorkloadFileError:
        raise
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        raise WorkloadFileError(
            f"workload file {path!r} failed to import: {type(exc).__name__}: {exc} "
            f"(line {where.lineno}); fix the file and run again"
        ) from exc
    finally:
        _loading_from = None


def load_module(path: str | Path) -> ModuleType:
    """Import the Python file at ``path`` as the module named after it (``kernels/fast.py``:
    ``fast``), registered in ``sys.modules`` and imported once per process. Registered, because
    tools import a function's module again by its name: torch.compile (Dynamo) fails with
    ``ModuleNotFoundError`` on a module loaded from a path that ``sys.modules`` does not hold.
    A name another module holds already is refused, naming both files."""
    file = Path(path).resolve()
    held = sys.modules.get(file.stem)
    if held is not None:
        if Path(getattr(held, "__file__", "") or "").resolve() == file:
            return held
        raise WorkloadFileError(
            f"module {path} would be named {file.stem!r}, which {held.__name__} from "
            f"{getattr(held, '__file__', 'a built-in')} already is; rename the file"
        )
    spec = importlib.util.spec_from_file_location(file.stem, file)
    if not file.is_file() or spec is None or spec.loader is None:
        raise WorkloadFileError(f"module {path} is not a Python file; give the path of a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[file.stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[file.stem]  # a later attempt imports it afresh, not half-loaded
        raise
    return module
