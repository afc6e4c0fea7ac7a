"""The commands of ``stackwars``, found rather than listed (as asv finds its commands): every
module here but ``options.py``, and every ``command.py`` under ``stackwars/instruments/``,
declares ``COMMANDS``, its commands as ``(place in --help, add_<command>)``. ``add_<command>``
defines the command's arguments and help and names its handler (``set_defaults(handler=...)``),
which takes the parsed arguments and returns the exit status. Options several commands share
are ``options.py``'s. A new command is its module (an instrument's: its folder) and its test;
nothing here names it.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType

from stackwars import instruments
from stackwars.commands.options import Subparsers

Handler = Callable[[argparse.Namespace, list[str]], int]
Adder = Callable[[Subparsers], None]

# Modules here that hold no command.
_SHARED = {"options"}


def command_modules() -> list[ModuleType]:
    """This package's command modules, then every instrument's."""
    here = [
        f"{__name__}.{info.name}"
        for info in pkgutil.iter_modules(__path__)
        if info.name not in _SHARED
    ]
    names = here + sorted(
        instruments.role_modules("command", list(instruments.__path__), "stackwars.instruments.")
    )
    return [importlib.import_module(name) for name in names]


def discover() -> list[Adder]:
    """Every command's ``add_<command>``, in the order ``stackwars --help`` lists them."""
    found: list[tuple[int, Adder]] = []
    for module in command_modules():
        found += module.COMMANDS
    places = [place for place, _ in found]
    duplicated = {place for place in places if places.count(place) > 1}
    assert not duplicated, f"two commands claim --help's place {sorted(duplicated)}"
    return [add for _, add in sorted(found, key=lambda pair: pair[0])]
