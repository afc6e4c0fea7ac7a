"""``stackwars env`` as tables: the machine, versions, the BLAS environment and libraries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from stackwars.frameworks.base import DEVICE_KINDS, DeviceSupport
from stackwars.report.table import format_bytes


def render_env(info: dict[str, Any]) -> RenderableType:
    """Tables for ``stackwars env`` from :func:`collect_env`'s dict."""
    versions = {name: version or "not installed" for name, version in info["versions"].items()}
    blas = {
        name: value if value is not None else "unset" for name, value in info["blas_env"].items()
    }
    return Group(
        _key_value_table("Machine", _machine_rows(info["machine"])),
        _key_value_table("Versions", versions),
        _key_value_table("BLAS environment", blas),
        blas_library_table(info.get("blas_libraries", {})),
        device_table(info.get("devices", {})),
    )


def device_table(probed: Mapping[str, list[DeviceSupport] | str]) -> Table:
    """Per framework, the devices of each kind it sees in a fresh process, or why none (with
    the fix); a string is why the framework could not be asked."""
    kinds = list(DEVICE_KINDS)
    table = Table(
        "framework",
        *kinds,
        title="Devices (what each framework sees, in a worker of its own)",
        title_justify="left",
        title_style="bold",
        caption="Keras stacks see what their backend sees",
    )
    for framework, support in probed.items():
        # Text, not markup: the fixes name extras in brackets ('stackwars[cuda]').
        if isinstance(support, str):
            table.add_row(framework, Text(f"not asked: {support}"), *([""] * (len(kinds) - 1)))
            continue
        by_kind = {entry.kind: entry.describe() for entry in support}
        table.add_row(framework, *(Text(by_kind.get(kind, "")) for kind in kinds))
    return table


def blas_library_table(probed: dict[str, list[dict[str, Any]] | str]) -> Table:
    """Per framework, the BLAS/OpenMP libraries its process loads and the kernel each chose;
    a string is why the probe failed."""
    table = Table(
        "framework",
        "library",
        "version",
        "threads",
        "threading",
        "kernel selected",
        title="BLAS libraries (threadpoolctl, per framework process)",
        title_justify="left",
        title_style="bold",
        caption="XLA (jax, tensorflow) and oneDNN run their own kernels; listed are the "
        "libraries loaded in each framework's process, numpy's among them",
    )
    for framework, libraries in probed.items():
        if isinstance(libraries, str):
            table.add_row(framework, f"probe failed: {libraries}", "", "", "", "")
            continue
        for lib in libraries or [{}]:
            table.add_row(
                framework,
                str(lib.get("internal_api") or "none found"),
                str(lib.get("version") or ""),
                str(lib.get("num_threads") or ""),
                str(lib.get("threading_layer") or ""),
                str(lib.get("architecture") or ""),
            )
    return table


def _machine_rows(machine: dict[str, Any]) -> dict[str, str]:
    flags = machine["cpu_flags"]
    load = machine["load_average"]
    accelerators = [f"{acc['name']} ({acc['source']})" for acc in machine["accelerators"]]
    return {
        "CPU": f"{machine['cpu_model']} ({machine['arch']})",
        "cores": (
            f"{machine['logical_cores']} logical, {machine['physical_cores']} physical, "
            f"{machine['usable_cores']} usable"
        ),
        "memory": (
            f"{format_bytes(machine['memory_total_bytes'])} total, "
            f"{format_bytes(machine['memory_available_bytes'])} available"
        ),
        "CPU flags": "unknown" if flags is None else (" ".join(flags) or "none of interest"),
        "governor": machine["governor"] or "unknown",
        "load average": "unknown" if load is None else " ".join(f"{x:.2f}" for x in load),
        "OS": machine["os"],
        "Python": machine["python"],
        "accelerators": "\n".join(accelerators) or "none",
    }


def _key_value_table(title: str, rows: dict[str, str]) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", show_header=False)
    table.add_column(style="cyan")
    table.add_column()
    for key, value in rows.items():
        table.add_row(key, value)
    return table
