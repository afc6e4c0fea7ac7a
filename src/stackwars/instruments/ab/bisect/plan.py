"""What a bisection will do, before anything runs: the stacks it times, the released versions
from good to bad (from the package index's answer), and the environment and pins of each.

Pure: the index's answer comes in as text (``service.py`` asks pip), so a recorded answer
plans exactly as a live one.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackwars.errors import UnknownNameError, UsageError
from stackwars.frameworks import FRAMEWORKS, Stack, parse_stacks, split_stack

# Final releases only (0.9.2, 0.9.0.1): a pre-release or a local build is not a release a user
# upgrades through, and its order among releases needs PEP 440's full rules.
RELEASE = re.compile(r"^\d+(\.\d+)*$")
AVAILABLE = "Available versions:"
# --good and --bad may be dates: the release a user had on that day.
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def release(text: str) -> tuple[int, ...]:
    """A release as numbers to order by (``0.10.0`` after ``0.9.2``; ``1.0`` is ``1.0.0``)."""
    if not RELEASE.match(text):
        raise UsageError(
            f"version {text!r}: give a released version such as 0.9.2 (digits and dots; "
            "pre-releases are not bisected)"
        )
    numbers = [int(part) for part in text.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def index_versions(answer: str, package: str) -> list[str]:
    """The releases in ``pip index versions PACKAGE``'s answer, oldest first."""
    for line in answer.splitlines():
        if line.startswith(AVAILABLE):
            listed = [item.strip() for item in line[len(AVAILABLE) :].split(",")]
            return sorted((v for v in listed if RELEASE.match(v)), key=release)
    raise UsageError(
        f"the package index answered no versions of {package} ('{AVAILABLE}' missing); "
        "fix: check that pip reaches the index (pip index versions " + package + "), or "
        "give the versions with --versions"
    )


def is_date(text: str) -> bool:
    return bool(DATE.match(text))


def upload_dates(answer: str, package: str) -> dict[str, datetime.date]:
    """Each final release's first upload day, from PyPI's JSON answer for ``package``
    (``https://pypi.org/pypi/PACKAGE/json``); releases whose files were all yanked left out."""
    try:
        releases = json.loads(answer)["releases"]
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"PyPI's answer about {package} has no releases ({exc}); fix: give versions, not "
            "dates, as --good and --bad"
        ) from None
    dates = {}
    for version, files in releases.items():
        kept = [f["upload_time_iso_8601"] for f in files if not f.get("yanked")]
        if RELEASE.match(version) and kept:
            dates[version] = datetime.date.fromisoformat(min(kept)[:10])
    return dates


def release_on(day: str, uploads: Mapping[str, datetime.date], option: str) -> str:
    """The newest release uploaded on or before ``day`` (YYYY-MM-DD): what a user who
    upgraded that day had."""
    try:
        when = datetime.date.fromisoformat(day)
    except ValueError:
        raise UsageError(f"{option} {day}: not a date; write it as YYYY-MM-DD") from None
    before = [v for v, uploaded in uploads.items() if uploaded <= when]
    if not before:
        first = min(uploads.values(), default=None)
        raise UsageError(f"{option} {day}: no release was uploaded by then (the first: {first})")
    return max(before, key=release)


@dataclass(frozen=True)
class Plan:
    """The stacks of one framework, and its releases from ``versions[0]`` (good) to
    ``versions[-1]`` (bad), each in environment ``<framework>-<version>``."""

    framework: str
    stacks: tuple[Stack, ...]
    versions: tuple[str, ...]
    extra_pins: tuple[str, ...] = ()
    # Releases between that the index has, but not for this Python (their Requires-Python).
    other_python: tuple[str, ...] = ()

    @property
    def good(self) -> str:
        return self.versions[0]

    @property
    def bad(self) -> str:
        return self.versions[-1]

    def environment(self, version: str) -> str:
        return f"{self.framework}-{version}"

    def pins(self, version: str) -> tuple[str, ...]:
        together = packages(self.framework)
        return (*(f"{package}=={version}" for package in together), *self.extra_pins)

    def stacks_in(self, version: str) -> str:
        """The --stacks of a run in ``version``'s environment."""
        where = self.environment(version)
        return ",".join(str(Stack(s.framework, s.mode, where)) for s in self.stacks)


def _span(releases: Sequence[str], shown: int = 5) -> str:
    """The releases in a line: the oldest and the newest few (a long history is hundreds)."""
    if len(releases) <= shown + 1:
        return ", ".join(releases)
    return f"{releases[0]}, ..., {', '.join(releases[-shown:])}"


def packages(framework: str) -> tuple[str, ...]:
    """The distributions pinned at each release of ``framework``, the first its own."""
    return FRAMEWORKS[framework].release_packages


def framework_of(stacks_text: str) -> tuple[str, tuple[Stack, ...]]:
    """The one framework the stacks belong to, and the stacks; a UsageError otherwise."""
    framework = split_stack(stacks_text.split(",", maxsplit=1)[0])[0]
    if framework not in FRAMEWORKS:
        raise UnknownNameError("framework", framework, FRAMEWORKS)
    if not packages(framework):
        bisectable = [name for name, info in FRAMEWORKS.items() if info.release_packages]
        why = FRAMEWORKS[framework].release_note
        raise UsageError(
            f"{framework} cannot be bisected ({why}); bisect one of {', '.join(bisectable)}"
        )
    stacks = tuple(parse_stacks(stacks_text))
    if {s.framework for s in stacks} != {framework} or any(s.environment for s in stacks):
        raise UsageError(
            f"--stacks {stacks_text}: name modes of one framework without an environment "
            "(e.g. jax:eager,jax:jit); bisect makes an environment per version"
        )
    return framework, stacks


def plan(
    stacks_text: str,
    good: str,
    bad: str,
    available: Sequence[str],
    extra_pins: Sequence[str],
    *,
    elsewhere: Sequence[str] = (),
) -> Plan:
    """The releases from ``good`` to ``bad`` among ``available`` (and ``elsewhere``: those
    only other Pythons can install); a UsageError for bad input."""
    framework, stacks = framework_of(stacks_text)
    if release(good) >= release(bad):
        raise UsageError(
            f"--good {good} is not older than --bad {bad}: give the earlier release (without "
            "the change) as --good and the later one as --bad"
        )
    known = {release(v): v for v in available}
    offered = _span([known[key] for key in sorted(known)])
    other_pythons = {release(v) for v in elsewhere} - set(known)
    for name, version in (("--good", good), ("--bad", bad)):
        if release(version) in other_pythons:
            raise UsageError(
                f"{name} {version}: the package index has it for other Pythons only (its "
                "Requires-Python); run stackwars under a Python it supports, or bisect "
                f"releases this one can install: {offered}"
            )
        if release(version) not in known:
            raise UsageError(
                f"{name} {version}: no such release of {packages(framework)[0]} among "
                f"those offered (by the package index, or --versions): {offered}"
            )
    every = {release(v): v for v in elsewhere} | known
    chosen = [v for key, v in sorted(every.items()) if release(good) <= key <= release(bad)]
    other_python = tuple(v for v in chosen if release(v) not in known)
    return Plan(framework, stacks, tuple(chosen), tuple(extra_pins), other_python)
