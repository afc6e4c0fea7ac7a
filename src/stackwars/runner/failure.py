"""An exception of the work as an ``error`` reason a reader can act on.

The reason leads with what went wrong, the exception's type and the first line of its message
(the last line of a traceback, not its first frame), then the fix when the cause is one this
module knows, then, after a blank line, the traceback's tail: the details. Tables show the
part before the blank line (``results.schema.reason_headline``).

Known causes, each answered with its fix:

* a module that cannot be imported by name, inside ``torch.compile``: Dynamo imports a traced
  function's module again by its name, so a module a workload file loaded from its path
  without registering it in ``sys.modules`` cannot be found;
* a framework's package missing (a workload's builder or module imports it);
* CUDA asked for where there is none (no NVIDIA driver, or a CPU build of the framework).
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Iterator

from stackwars.frameworks import FRAMEWORKS

TRACEBACK_LINES = 25
TRACEBACK_CHARS = 4000
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
# What the frameworks say when CUDA is asked for where there is none (torch, JAX, TensorFlow).
CUDA_MISSING_MARKERS = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "Unknown backend: 'gpu'",
    "Unknown backend: 'cuda'",
    "Unable to initialize backend 'cuda'",
    "CUDA driver version is insufficient",
    "could not find any device for device_type 'GPU'",
)
LOAD_MODULE_FIX = (
    "torch.compile imports a compiled function's module again by its name, and {name!r} is "
    "not importable by name (a module loaded from its file path and not registered in "
    "sys.modules); load it in the workload file with "
    "stackwars.workloads.load_module(path), which registers it, or put its folder on "
    "sys.path and import it"
)
UNKNOWN_MODULE_FIX = (
    "{name!r} is not importable here: install the package that provides it, or, for a module "
    "of your own, load it in the workload file with stackwars.workloads.load_module(path) or "
    "put its folder on sys.path"
)
CUDA_FIX = (
    "CUDA is not available here (no NVIDIA GPU or driver, or a CPU build of the framework): "
    "run on --device cpu, and keep device placement to stackwars (no .cuda() or "
    "device='cuda' in the workload), or install a CUDA build on a GPU machine "
    "(pip install 'stackwars[cuda]', docs/accelerators.md)"
)


def error_reason(exc: BaseException) -> str:
    """The reason of an ``error`` cell: headline, fix (when known), blank line, traceback."""
    fix = known_fix(exc)
    lead = f"{headline_of(exc)}\nfix: {fix}" if fix else headline_of(exc)
    tail = "".join(traceback.format_exception(exc)[-TRACEBACK_LINES:])
    return f"{lead}\n\n{tail[-TRACEBACK_CHARS:]}"


def headline_of(exc: BaseException) -> str:
    """``ValueError: message``: the type and the first non-empty line of the message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def known_fix(exc: BaseException) -> str:
    """The fix for a cause this module knows (module docstring); '' for any other."""
    chain = list(_chain(exc))
    text = "\n".join(f"{type(e).__name__}: {e}" for e in chain)
    if any(marker in text for marker in CUDA_MISSING_MARKERS):
        return CUDA_FIX
    missing = _NO_MODULE.search(text)
    if missing is None:
        return ""
    name = missing.group(1)
    framework = _framework_of(name)
    if framework:
        package = FRAMEWORKS[framework].import_name
        return f"{package} is not installed: {FRAMEWORKS[framework].install_hint()}"
    in_dynamo = any(type(e).__module__.startswith("torch._dynamo") for e in chain)
    return (LOAD_MODULE_FIX if in_dynamo else UNKNOWN_MODULE_FIX).format(name=name)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and those it was raised from or while handling, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _framework_of(module: str) -> str:
    """The framework whose package ``module`` (or its top package) is; '' for none."""
    top = module.partition(".")[0]
    return next((name for name, info in FRAMEWORKS.items() if info.import_name == top), "")
