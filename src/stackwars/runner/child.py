"""The one way stackwars starts a child process, and the protocol every worker speaks.

A tool that is not a worker (``python -m venv``, pip, for ``stackwars env create``) is run by
:func:`run_command`: its output logged and passed on line by line, killed at its timeout.

Parent side, :func:`run_child`: write the request, wrapped in an envelope that names the
protocol version and the kind of work, to ``request.json`` in a fresh scratch folder; start
``python -m MODULE REQUEST RESULT`` there in a new session (its own process group, killed with
the parent); poll the resident memory of the whole process tree (Inductor compiles in
grandchildren) and kill the tree past the memory budget or the timeout; classify the end as a
:class:`ChildEnd`. Every path in a request must be absolute: the child runs in the scratch
folder, not in the caller's working directory.

Worker side, :func:`serve`: read the envelope, refuse another protocol version or kind as
data (a result that says why), otherwise hand the request to the worker's handler and write
its answer atomically, then exit 0; failures of the work are data too.

History of PROTOCOL_VERSION:

* 1 (2026-11-22): the timing worker's Request, unchecked; other workers had their own formats.
* 2 (2026-11-23): one envelope for every worker kind (timing, ir, selftest, peak, blas),
  checked by the worker. (2026-11-25) kind ``side``: one side's round of ``stackwars ab``,
  possibly under another Python; the envelope is unchanged.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from stackwars.results.jsonio import dump, write_atomically

PROTOCOL_VERSION = 2
POLL_S = 0.05
OUTPUT_TAIL_CHARS = 3000
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
TIMED_OUT = 124  # run_command's exit status for a tool killed at its timeout, as timeout(1)

Handler = Callable[[dict[str, Any]], Mapping[str, Any]]
Listener = Callable[[str], None]
PROGRESS_FILE = "progress.txt"  # in the worker's folder, its working directory
PROGRESS_INTERVAL_S = 0.5  # a worker reports at most this often, phase changes aside


@dataclass(frozen=True)
class Limits:
    timeout_s: float
    memory_budget: int


@dataclass
class ChildEnd:
    """How a child ended: ``ok`` with its result, or ``timeout``/``oom``/``error`` with why."""

    status: str
    result: dict[str, Any] | None
    detail: str = ""
    returncode: int | None = None
    peak_tree_rss: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Interpreter:
    """Which Python starts a worker (another virtual environment's, for an A/B session whose
    sides differ by installed versions) and the variables added to this process's
    environment for it."""

    python: str = ""  # "" is sys.executable
    environment: Mapping[str, str] = field(default_factory=dict)

    def argv(self, module: str, *paths: Path) -> list[str]:
        return [self.python or sys.executable, "-m", module, *map(str, paths)]

    def env(self) -> dict[str, str] | None:
        return {**os.environ, **self.environment} if self.environment else None


@dataclass(frozen=True)
class _How:
    on_progress: Listener | None
    interpreter: Interpreter


def run_child(
    module: str,
    kind: str,
    request: Mapping[str, Any],
    limits: Limits,
    *,
    scratch: Path | None = None,
    on_progress: Listener | None = None,
    interpreter: Interpreter | None = None,
) -> ChildEnd:
    """Run worker ``module`` on ``request`` in a fresh process under ``limits``. ``scratch``
    (a folder the caller keeps, e.g. for caches the request names) defaults to a temporary
    folder removed afterwards; ``on_progress`` hears what the worker reports it is doing;
    ``interpreter`` runs it with another Python or extra environment variables (this one's,
    as it is, by default)."""
    how = _How(on_progress, interpreter or Interpreter())
    if scratch is not None:
        return _run_in(scratch, module, kind, request, limits, how=how)
    with tempfile.TemporaryDirectory(prefix=f"stackwars-{kind}-") as folder:
        return _run_in(Path(folder), module, kind, request, limits, how=how)


def _run_in(
    folder: Path,
    module: str,
    kind: str,
    request: Mapping[str, Any],
    limits: Limits,
    *,
    how: _How,
) -> ChildEnd:
    request_path, result_path = folder / "request.json", folder / "result.json"
    envelope = {
        "protocol": PROTOCOL_VERSION,
        "kind": kind,
        "parent": os.getpid(),
        "request": request,
    }
    request_path.write_text(dump(envelope), encoding="utf-8")
    output_path = folder / "output.txt"
    argv = how.interpreter.argv(module, request_path, result_path)
    if not Path(argv[0]).exists() and os.sep in argv[0]:
        return ChildEnd("error", None, f"the worker's Python {argv[0]} does not exist")
    with output_path.open("wb") as output:
        popen = subprocess.Popen(
            argv,
            env=how.interpreter.env(),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=folder,
        )
        try:
            end = _watch(popen, limits, _ProgressReader(folder / PROGRESS_FILE, how.on_progress))
        finally:
            # Whatever interrupted the parent, no worker is left running.
            if popen.poll() is None:
                kill_tree(popen)
    end.returncode = popen.returncode
    return end if end.status != "ok" else _read(end, result_path, output_path)


def run_command(
    argv: list[str], *, timeout_s: float, log: Path, on_line: Listener | None = None
) -> int:
    """Run a tool that is not a stackwars worker (``python -m venv``, pip) to its end: its
    output appended to ``log`` and, line by line, told to ``on_line``; killed with everything
    it started past ``timeout_s`` (exit status TIMED_OUT) or when the parent is interrupted."""
    with log.open("ab") as record:
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        watchdog = threading.Timer(timeout_s, kill_tree, [popen])
        watchdog.start()
        try:
            for raw in popen.stdout or ():
                record.write(raw)
                if on_line is not None:
                    on_line(raw.decode(errors="replace").rstrip())
            code = popen.wait()
        finally:
            watchdog.cancel()
            if popen.poll() is None:
                kill_tree(popen)
            if popen.stdout is not None:
                popen.stdout.close()
    return TIMED_OUT if code == -signal.SIGKILL else code


def _read(end: ChildEnd, result_path: Path, output_path: Path) -> ChildEnd:
    tail = output_path.read_text(encoding="utf-8", errors="replace")[-OUTPUT_TAIL_CHARS:]
    if not result_path.exists():
        code = end.returncode or 0
        if code == -signal.SIGKILL:
            end.status = "oom"
            end.detail = f"killed by SIGKILL from outside (the kernel's OOM killer?)\n{tail}"
            return end
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"
        end.status, end.detail = "error", f"the worker {how} without a result\n{tail}"
        return end
    answer = json.loads(result_path.read_text(encoding="utf-8"))
    if "refused" in answer:
        end.status, end.detail = "error", answer["refused"]
        return end
    end.result = answer["result"]
    return end


def _die_with_parent(parent: int | None) -> None:
    """Ask Linux to kill this worker when its parent dies, so that a killed ``stackwars``
    never leaves a worker computing beside the next measurement. Done by the worker itself:
    a ``preexec_fn`` would make subprocess fork, which JAX in the parent warns against."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:  # it died before we asked
        os._exit(1)


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (0 once it is gone)."""
    total = 0
    try:
        members = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


def kill_tree(popen: subprocess.Popen[bytes]) -> None:
    """Kill the worker's process group (the worker and every child it started)."""
    try:
        os.killpg(popen.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    popen.wait()


class _ProgressReader:
    """Passes on what a worker last wrote to its progress file, once per change."""

    def __init__(self, path: Path, listener: Listener | None) -> None:
        self.path, self.listener, self.last = path, listener, ""

    def poll(self) -> None:
        if self.listener is None:
            return
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return
        if text and text != self.last:
            self.last = text
            self.listener(text)


class ProgressWriter:
    """Worker side: what the worker is doing, for the parent (see run_child's on_progress).
    Writes at most every PROGRESS_INTERVAL_S, unless ``force``; never inside a timed block."""

    def __init__(self, folder: Path | None = None) -> None:
        self.path = (folder or Path.cwd()) / PROGRESS_FILE
        self.written = 0.0

    def __call__(self, text: str, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.written < PROGRESS_INTERVAL_S:
            return
        self.written = now
        write_atomically(self.path, text)


def _watch(popen: subprocess.Popen[bytes], limits: Limits, progress: _ProgressReader) -> ChildEnd:
    end = ChildEnd("ok", None)
    process = psutil.Process(popen.pid)
    deadline = time.monotonic() + limits.timeout_s
    while popen.poll() is None:
        rss = tree_rss(process)
        end.peak_tree_rss = max(end.peak_tree_rss, rss)
        if rss > limits.memory_budget:
            end.status = "oom"
            end.detail = (
                f"resident memory {rss / 2**30:.2f} GiB passed the memory budget "
                f"{limits.memory_budget / 2**30:.2f} GiB; the worker was killed "
                "(raise it with --memory-budget, or use a smaller size)"
            )
        elif time.monotonic() > deadline:
            end.status = "timeout"
            end.detail = (
                f"still running after the {limits.timeout_s:g} s timeout; raise it with --timeout"
            )
        if end.status != "ok":
            kill_tree(popen)
            break
        progress.poll()
        time.sleep(POLL_S)
    return end


def serve(argv: list[str], kind: str, handle: Handler) -> int:
    """A worker's ``main``: answer the request in ``argv`` (REQUEST RESULT) with ``handle``."""
    if len(argv) != 2:
        print(f"usage: python -m <{kind} worker> REQUEST.json RESULT.json", file=sys.stderr)
        return 2
    envelope = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    _die_with_parent(envelope.get("parent"))
    refusal = _refusal(envelope, kind)
    answer = {"refused": refusal} if refusal else {"result": dict(handle(envelope["request"]))}
    write_atomically(Path(argv[1]), dump({"protocol": PROTOCOL_VERSION, **answer}))
    return 0


def _refusal(envelope: Mapping[str, Any], kind: str) -> str:
    version, asked = envelope.get("protocol"), envelope.get("kind")
    if version != PROTOCOL_VERSION:
        return (
            f"protocol mismatch: the parent speaks version {version}, this {kind} worker "
            f"{PROTOCOL_VERSION}; the parent and worker come from different stackwars installs "
            "(reinstall stackwars in one environment)"
        )
    if asked != kind:
        return f"this is the {kind} worker; the parent asked it for {asked!r} work"
    return ""
