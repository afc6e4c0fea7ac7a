"""The instruments: each a subject of its own, end to end, in a folder of its own, its files
named by role (ARCHITECTURE.md's table). No instrument is imported here: what finds their files
of one role (``commands.discover``: ``command.py``; ``report/sections.py``: ``render.py``) walks
these folders on disk with :func:`role_modules`, so that only those files are imported."""

from __future__ import annotations

import pkgutil
from collections.abc import Iterator
from pathlib import Path


def role_modules(role: str, folders: list[str], prefix: str) -> Iterator[str]:
    """The dotted names of the modules called ``role`` under ``folders`` (``prefix`` names
    them), found on disk so that nothing else of an instrument, its workers above all, is
    imported."""
    for info in pkgutil.iter_modules(folders):
        if info.name == role:  # a module of that role, or a folder of it (its package)
            yield f"{prefix}{info.name}"
        elif info.ispkg:
            inner = [str(Path(folder) / info.name) for folder in folders]
            yield from role_modules(
                role, [f for f in inner if Path(f).is_dir()], f"{prefix}{info.name}."
            )
