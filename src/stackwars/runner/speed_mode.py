"""What could set a worker's speed mode, read from Linux in the worker after its timed blocks
(``settings.speed_mode``; ``show --details`` lists it per worker).

Fresh workers of one cell land at two or three speeds (GEMM 1024² at ~7, ~10.5 or ~14 ms,
docs/evidence.md), and a comparison cannot tell a change from a worker that landed in another
mode. Candidate causes, each recorded so that a measurement can show which explains the modes:

* transparent huge pages: this kernel's THP policy (``enabled``, ``defrag``) and how much of the
  worker's anonymous memory got huge pages (``AnonHugePages``): with ``madvise``, NumPy asks
  for them on arrays of 4 MB and more, and whether it gets them depends on the free contiguous
  memory at that moment;
* the CPUs the worker's threads last ran on, and those it was allowed (a thread on a shared
  core or another cache runs at another speed);
* the machine's load average at the end (the CPU other processes used during the worker is
  ``settings.background_cores``, from the parent; page faults per call are ``cpu``).

A value this machine cannot show (not Linux, a file it may not read) is None, and shown as
unknown: recorded as missing rather than guessed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

THP = Path("/sys/kernel/mm/transparent_hugepage")
SMAPS_ROLLUP = Path("/proc/self/smaps_rollup")
TASKS = Path("/proc/self/task")
# /proc/PID/task/TID/stat: field 39 (1-based) is the CPU the thread last ran on; fields are
# counted after the command name, which is in parentheses and may hold spaces.
LAST_CPU_FIELD = 39


def speed_mode_facts() -> dict[str, Any]:
    """The worker's speed-mode signals now (module docstring)."""
    return {
        "thp_enabled": _chosen(THP / "enabled"),
        "thp_defrag": _chosen(THP / "defrag"),
        "anon_huge_pages_kb": _smaps_kb("AnonHugePages"),
        "threads_last_cpus": _last_cpus(),
        "allowed_cpus": sorted(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else None,
        "load_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _chosen(path: Path) -> str | None:
    """The bracketed choice of a kernel setting such as 'always [madvise] never'."""
    text = _read(path)
    if text is None or "[" not in text:
        return None
    return text.split("[", 1)[1].split("]", 1)[0]


def _smaps_kb(field: str) -> int | None:
    text = _read(SMAPS_ROLLUP)
    for line in (text or "").splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return None


def _last_cpus() -> list[int] | None:
    """The CPUs the worker's threads last ran on (sorted, each once)."""
    try:
        tasks = list(TASKS.iterdir())
    except OSError:
        return None
    cpus = set()
    for task in tasks:
        stat = _read(task / "stat")
        if stat is None:
            continue  # a thread that ended while we looked
        after_name = stat.rsplit(")", 1)[1].split()
        # after_name[0] is field 3 (the state): field N is after_name[N - 3].
        cpus.add(int(after_name[LAST_CPU_FIELD - 3]))
    return sorted(cpus)
