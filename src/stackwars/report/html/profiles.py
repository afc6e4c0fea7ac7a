"""The report's per-operation profiles ("Where the time goes"): for each profiled cell, its
stacks side by side (time per category, operations and fused kernels per call, profiler
overhead, whether the categories add up to the host clock), each stack's costliest
operations, the stacks without a profile and why, and where the raw traces are.

Its inputs are a run's profiles (``run --profile``, stored with the run) and profile files
(``stackwars profile --json``, given to ``report --profiles``). Pure: display strings only,
the same rows the terminal prints (``report/profile.py``); ``layout.py`` lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stackwars.profiling.result import Profile
from stackwars.report.profile import (
    by_cell,
    caveats,
    files,
    not_profiled,
    operation_rows,
    operations_title,
    side_by_side_rows,
)
from stackwars.results.run import Run

TOP_OPERATIONS = 10
EMPTY = (
    "no profiles in these runs: 'stackwars run --profile' profiles each ok cell after timing "
    "it and stores the profiles with the run; 'stackwars profile --json FILE' writes profiles "
    "that 'stackwars report --profiles FILE' shows here"
)


@dataclass(frozen=True)
class ProfileView:
    anchor: str
    title: str
    columns: tuple[str, ...]  # "per call", then one per stack profiled
    rows: tuple[tuple[str, ...], ...]
    operations: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]  # (title, rows) a stack
    notes: tuple[str, ...]  # stacks without a profile and why; where the raw traces are


def profile_views(
    runs: Sequence[Run], extra: Sequence[tuple[str, Sequence[Profile]]] = ()
) -> tuple[ProfileView, ...]:
    """One view per profiled cell: the runs' profiles, then those of each (name, profiles)
    in ``extra``; a view's title names its run when there are several, or its file."""
    several = len(runs) > 1
    sources = [
        (f" (run {run.id})" if several else "", [Profile.from_dict(p) for p in run.profiles])
        for run in runs
    ]
    sources += [(f" ({name})", list(profiles)) for name, profiles in extra]
    views: list[ProfileView] = []
    for suffix, profiles in sources:
        for title, group in by_cell(profiles).items():
            views.append(_view(f"profile-{len(views)}", title + suffix, group))
    return tuple(views)


def _view(anchor: str, title: str, group: Sequence[Profile]) -> ProfileView:
    done = [profile for profile in group if profile.status == "ok"]
    return ProfileView(
        anchor=anchor,
        title=title,
        columns=("per call", *(profile.stack for profile in done)),
        rows=tuple(side_by_side_rows(group)),
        operations=tuple(
            (
                operations_title(profile, TOP_OPERATIONS),
                tuple(operation_rows(profile, TOP_OPERATIONS)),
            )
            for profile in done
        ),
        notes=(*(line.plain for line in not_profiled(group)), *caveats(group), *files(group)),
    )
