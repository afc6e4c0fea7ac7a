"""The worker's resident-set high-water mark, read and reset (Linux: ``VmHWM`` in
/proc/self/status, reset to the current resident set by writing 5 to /proc/self/clear_refs),
so that a cell's peak memory is told apart into the first run's (the import, the inputs, the
trace and the compiler's own working memory, the first execution) and the timed runs' after it
(what the work holds while it runs again and again). A reader of the whole process's peak takes
the larger of the two parts (``ru_maxrss`` is not it: Linux carries into it the peak of the
image before exec, the parent's size for a worker started from a large parent)."""

from __future__ import annotations

from pathlib import Path

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
RESET_HIGH_WATER = "5"  # clear_refs' value that resets the peak RSS (Linux 4.0 and later)


def high_water_bytes() -> int | None:
    """The process's peak resident set since it started or was last reset; None off Linux."""
    try:
        text = STATUS.read_text(encoding="ascii")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # the kernel writes kB
    return None


def reset_high_water() -> bool:
    """Reset the peak to the resident set of now; False where the kernel does not let it."""
    try:
        CLEAR_REFS.write_text(RESET_HIGH_WATER, encoding="ascii")
    except OSError:
        return False
    return True
