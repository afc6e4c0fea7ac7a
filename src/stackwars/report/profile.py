"""``stackwars profile`` in the terminal: the stacks side by side (time per category, operations
per call, threads, profiler overhead), then each stack's costliest operations, and what each
profiler cannot see or noticed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from stackwars.profiling.categories import CATEGORIES
from stackwars.profiling.result import ADDS_UP_ABSOLUTE_S, ADDS_UP_RELATIVE, Profile
from stackwars.report.table import format_seconds, shorten
from stackwars.results.schema import reason_headline

HLO_WIDTH = 60
ADDS_UP_CAPTION = (
    "The categories add up to the traced call time (the profiler's annotation around each "
    "call); 'adds up' says whether that agrees with the host clock's time of the same calls "
    f"within max({ADDS_UP_RELATIVE:.0%}, {ADDS_UP_ABSOLUTE_S * 1e6:.0f} µs). Overhead/idle is "
    "the time no traced operation ran: dispatch, Python, synchronisation, waiting."
)


def _share(part: float, whole: float | None) -> str:
    return f" ({part / whole * 100:.0f}%)" if whole else ""


def _per_call(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


def _overhead(profile: Profile) -> str:
    overhead = profile.overhead
    return "" if overhead is None else f"{overhead * 100:+.0f}%"


def _adds_up(profile: Profile) -> str:
    check = profile.adds_up
    if check is None:
        return ""
    verdict = "yes" if check.within else "NO"
    return f"{verdict} (host {format_seconds(check.measured_s)})"


def _category(name: str) -> Callable[[Profile], str]:
    def value(profile: Profile) -> str:
        seconds = profile.categories[name]
        return format_seconds(seconds) + _share(seconds, profile.traced_s) if seconds else "-"

    return value


ROWS: list[tuple[str, Callable[[Profile], str]]] = [
    ("steady, unprofiled", lambda p: format_seconds(p.steady_s)),
    ("profiled (median)", lambda p: format_seconds(p.profiled_s)),
    ("profiler overhead", _overhead),
    *((category, _category(category)) for category in CATEGORIES),
    ("= traced per call", lambda p: format_seconds(p.traced_s)),
    ("operations per call", lambda p: _per_call(p.ops_per_call)),
    ("of them fused kernels", lambda p: _per_call(p.fusions_per_call)),
    ("page faults (unprofiled)", lambda p: _per_call(p.cpu.get("page_faults_per_call"))),
    ("system CPU (unprofiled)", lambda p: format_seconds(p.cpu.get("sys_s_per_call"))),
    ("XLA executables", lambda p: str(len(p.xla_modules)) if p.xla_modules else ""),
    ("threads active", lambda p: str(len(p.threads)) if p.threads else ""),
    ("XLA ops named from HLO", lambda p: "" if p.hlo_joined is None else f"{p.hlo_joined:.0%}"),
    ("adds up to host clock", _adds_up),
]


def by_cell(profiles: Sequence[Profile]) -> dict[str, list[Profile]]:
    """Profiles grouped by the cell they profiled (``gemm(n=256, dtype=float32) @ cpu``), each
    group's stacks in the order given."""
    groups: dict[str, list[Profile]] = {}
    for profile in profiles:
        params = ", ".join(f"{key}={value}" for key, value in profile.params.items())
        groups.setdefault(f"{profile.workload}({params}) @ {profile.device}", []).append(profile)
    return groups


def side_by_side_rows(profiles: Sequence[Profile]) -> list[tuple[str, ...]]:
    """One row per ROWS entry, a column per stack that was profiled (status ok)."""
    done = [p for p in profiles if p.status == "ok"]
    return [(label, *(value(p) for p in done)) for label, value in ROWS]


def side_by_side(profiles: Sequence[Profile], title: str) -> Table:
    """One column per stack that was profiled."""
    done = [p for p in profiles if p.status == "ok"]
    table = Table("per call", *(p.stack for p in done), title=title, caption=ADDS_UP_CAPTION)
    for row in side_by_side_rows(profiles):
        table.add_row(*row)
    return table


OPERATION_COLUMNS = ("operation", "category", "per call", "self", "share", "inclusive", "HLO")


def operations_title(profile: Profile, top: int) -> str:
    return f"{profile.stack}: {min(top, len(profile.ops))} of {len(profile.ops)} operations"


def operation_rows(profile: Profile, top: int) -> list[tuple[str, ...]]:
    """A stack's ``top`` operations by their share of the call, as display strings."""
    return [
        (
            shorten(row.name, 50),
            row.category,
            f"{row.per_call:.3g}",
            format_seconds(row.self_s),
            _share(row.self_s, profile.traced_s).strip(" ()"),
            format_seconds(row.total_s),
            shorten(row.hlo, HLO_WIDTH),
        )
        for row in profile.ops[:top]
    ]


def operations(profile: Profile, top: int) -> Table:
    """A stack's ``top`` operations by their share of the call."""
    table = Table(*OPERATION_COLUMNS, title=operations_title(profile, top))
    for row in operation_rows(profile, top):
        table.add_row(*row)
    return table


def not_profiled(profiles: Sequence[Profile]) -> list[Text]:
    """One line per stack without a profile, with why."""
    lines = []
    for profile in profiles:
        if profile.status != "ok":
            reason = reason_headline(profile.reason)
            style = "dim" if profile.status == "unsupported" else "red"
            lines.append(Text(f"{profile.stack}: {profile.status}: {shorten(reason, 600)}", style))
    return lines


def caveats(profiles: Sequence[Profile]) -> list[str]:
    """Per profiled stack, what its profiler cannot see and what it noticed in this trace (a
    call with nothing traced, operations it could not name)."""
    lines = []
    for profile in (found for found in profiles if found.status == "ok"):
        if profile.blind_spots:
            lines.append(f"{profile.stack}: cannot see: {profile.blind_spots}")
        lines.extend(f"{profile.stack}: {note}" for note in profile.notes)
    return lines


def files(profiles: Sequence[Profile]) -> list[str]:
    """Where each stack's raw trace is, and what opens it."""
    return [
        f"{profile.stack}: {what} {path}"
        for profile in profiles
        for what, path in profile.files.items()
    ]


def after_run(profiles: Sequence[Profile]) -> list[RenderableType]:
    """run --profile's output: per cell, its stacks side by side; then the stacks without a
    profile and where the raw traces are."""
    shown: list[RenderableType] = [
        side_by_side(group, f"{title}: profiled after the run")
        for title, group in by_cell(profiles).items()
        if any(found.status == "ok" for found in group)
    ]
    shown.extend(not_profiled(profiles))
    shown.extend(Text(line, "dim") for line in caveats(profiles))
    shown.extend(Text(line) for line in files(profiles))
    return shown
