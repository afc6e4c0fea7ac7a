"""What a run records about where it ran: the machine, package versions, BLAS environment.

The parent process calls these, and it must never import a framework (a framework import
costs seconds, hundreds of MB and can grab a GPU): versions come from package metadata and
accelerators from device files and ``nvidia-smi``, never from the frameworks themselves.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psutil

from stackwars.frameworks import FRAMEWORKS, installed_version
from stackwars.version import __version__

CPU_FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "asimd", "sve")
EXTRA_DISTRIBUTIONS = ("jaxlib", "keras", "flax", "torchax", "ml_dtypes", "psutil", "rich")
BLAS_VARIABLES = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)
NVIDIA_SMI_TIMEOUT_S = 5.0

_CPUINFO = Path("/proc/cpuinfo")
_GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
_NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")


def collect_env() -> dict[str, Any]:
    """Everything ``stackwars env`` shows and a run records."""
    return {
        "machine": machine_info(),
        "versions": framework_versions(),
        "blas_env": blas_environment(),
    }


# What makes two machines the same for timing: hardware, not the software being compared.
FINGERPRINT_KEYS = ("cpu_model", "arch", "logical_cores", "usable_cores", "memory_total_gib")
GIT_TIMEOUT_S = 5.0


def fingerprint(machine: dict[str, Any]) -> str:
    """A short hash of a machine_info() dict's hardware (CPU, cores, memory, accelerators)."""
    facts = {key: machine.get(key) for key in FINGERPRINT_KEYS}
    facts["memory_total_gib"] = round((machine.get("memory_total_bytes") or 0) / 2**30)
    facts["accelerators"] = sorted(acc.get("name", "") for acc in machine.get("accelerators", []))
    text = json.dumps(facts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def git_state(folder: Path) -> dict[str, Any] | None:
    """Commit, branch and whether the working tree has changes, when ``folder`` is in a git
    repository (None otherwise, or when git is missing)."""
    if shutil.which("git") is None:
        return None

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args],
                check=False,
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": bool(status),
    }


def commit_label(git: dict[str, Any] | None) -> str:
    """A stored git state (``git_state``'s) as documents name it: the short commit, "with
    uncommitted changes" when the tree was dirty; "unknown" when none was recorded."""
    commit = str((git or {}).get("commit", ""))[:7] or "unknown"
    return f"{commit} with uncommitted changes" if (git or {}).get("dirty") else commit


def run_identity(label: str = "", folder: Path | None = None) -> dict[str, Any]:
    """Where and from what a run came: hostname, the machine's fingerprint, the git state of
    the working folder, and the user's label."""
    machine = machine_info()
    return {
        "label": label,
        "hostname": platform.node(),
        "fingerprint": fingerprint(machine),
        "git": git_state(folder or Path.cwd()),
    }


# What a cell records about the machine it ran on (with its host, fingerprint and versions).
NODE_KEYS = (
    "cpu_model",
    "arch",
    "logical_cores",
    "physical_cores",
    "usable_cores",
    "cpu_flags",
    "memory_total_bytes",
    "accelerators",
)


def node_info() -> dict[str, Any]:
    """The machine this process runs on, as each cell records it: host name, fingerprint, the
    hardware the fingerprint is made of, and the library versions installed here (a cluster's
    nodes may differ in both)."""
    machine = machine_info()
    return {
        "hostname": platform.node(),
        "fingerprint": fingerprint(machine),
        **{key: machine[key] for key in NODE_KEYS},
        "versions": framework_versions(),
    }


def machine_info() -> dict[str, Any]:
    memory = psutil.virtual_memory()
    cpu = parse_cpuinfo(_read_text(_CPUINFO))
    governor = _read_text(_GOVERNOR)
    return {
        "cpu_model": cpu["cpu_model"] or platform.processor() or platform.machine() or "unknown",
        "arch": platform.machine(),
        "logical_cores": os.cpu_count() or 0,
        "physical_cores": psutil.cpu_count(logical=False),
        "usable_cores": _usable_cores(),
        "memory_total_bytes": memory.total,
        "memory_available_bytes": memory.available,
        "cpu_flags": cpu["cpu_flags"],
        "governor": governor.strip() if governor else None,
        "load_average": _load_average(),
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "accelerators": detect_accelerators(),
    }


def parse_cpuinfo(text: str | None) -> dict[str, Any]:
    """The CPU model and the flags of interest it has; None for what the text does not say.

    x86 kernels write ``model name`` and ``flags``; ARM kernels ``Features`` and, on some
    boards, ``Hardware`` or ``Model`` instead of a model name.
    """
    model = _field(text, ("model name", "Hardware", "Model", "cpu model"))
    flags_text = _field(text, ("flags", "Features"))
    flags = None
    if flags_text is not None:
        present = set(flags_text.split())
        flags = [flag for flag in CPU_FLAGS_OF_INTEREST if flag in present]
    return {"cpu_model": model or None, "cpu_flags": flags}


def _field(text: str | None, keys: tuple[str, ...]) -> str | None:
    """The value of the first ``key: value`` line whose key is one of ``keys``."""
    for line in (text or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in keys:
            return value.strip()
    return None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _usable_cores() -> int | None:
    """Cores this process may run on: fewer than logical cores under taskset or a cpuset."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return len(os.sched_getaffinity(0))


def _load_average() -> list[float] | None:
    try:
        return [round(load, 2) for load in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def detect_accelerators() -> list[dict[str, str]]:
    """NVIDIA GPUs and TPUs seen from the operating system; [] when there are none."""
    return [*_nvidia_gpus(), *_tpus()]


def _nvidia_gpus() -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for information in sorted(_NVIDIA_PROC.glob("*/information")):
        name = (
            _field(_read_text(information), ("Model",)) or f"NVIDIA GPU {information.parent.name}"
        )
        found.append(_accelerator("gpu", "nvidia", name, str(information)))
    return found or _nvidia_smi()


def _nvidia_smi() -> list[dict[str, str]]:
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return []
    try:
        listing = subprocess.run(
            [executable, "-L"],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    # Lines look like "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)".
    return [
        _accelerator("gpu", "nvidia", line.partition(": ")[2].split(" (UUID")[0], "nvidia-smi -L")
        for line in listing.stdout.splitlines()
        if line.startswith("GPU ")
    ]


def _tpus() -> list[dict[str, str]]:
    accel = sorted(Path("/dev").glob("accel[0-9]*"))
    if accel:
        return [_accelerator("tpu", "google", path.name, str(path)) for path in accel]
    # Recent TPU generations appear only as VFIO groups, but so does any passed-through PCI
    # device: say "possible" rather than claim a TPU.
    vfio = Path("/dev/vfio")
    groups = sorted(path for path in vfio.glob("*") if path.name.isdigit()) if vfio.is_dir() else []
    return [
        _accelerator("tpu", "google", f"possible TPU (vfio group {path.name})", str(path))
        for path in groups
    ]


def gpu_memory_bytes() -> list[int]:
    """Each NVIDIA GPU's memory in bytes, in nvidia-smi's index order; [] without nvidia-smi
    (no frameworks imported: the parent plans device budgets with it)."""
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return []
    query = [executable, "--query-gpu=memory.total", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run(
            query, capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return parse_gpu_memory(done.stdout) if done.returncode == 0 else []


def parse_gpu_memory(text: str) -> list[int]:
    """nvidia-smi's ``memory.total`` column without units (MiB, one GPU a line) -> bytes;
    a line that is not a number (``[N/A]``) ends the list there, so indices stay right."""
    found = []
    for line in text.splitlines():
        if not line.strip().isdigit():
            break
        found.append(int(line.strip()) * 2**20)
    return found


def _accelerator(kind: str, vendor: str, name: str, source: str) -> dict[str, str]:
    return {"kind": kind, "vendor": vendor, "name": name, "source": source}


def framework_versions() -> dict[str, str | None]:
    """Installed version of each framework and of the packages that shape its numbers."""
    versions = {name: installed_version(name) for name in FRAMEWORKS}
    versions.update({name: _distribution_version(name) for name in EXTRA_DISTRIBUTIONS})
    # The code running, also from a source tree on PYTHONPATH with no distribution installed.
    versions["stackwars"] = __version__
    return versions


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def blas_environment() -> dict[str, str | None]:
    """BLAS and OpenMP variables: they change numpy's (and others') speed, so they are recorded."""
    return {name: os.environ.get(name) for name in BLAS_VARIABLES}
