"""A new instrument is one folder and its tests: a tiny one, written here into a folder of its
own on the instruments' path, is found by the CLI and obeys the layer check, with no central
list edited (docs/developing.md, "How to add an instrument")."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stackwars import instruments
from stackwars.cli import main

TINY_COMMAND = '''"""stackwars tiny: says how many stacks there are (a test's instrument)."""

from __future__ import annotations

import argparse

from stackwars.commands.options import Subparsers
from stackwars.frameworks import all_stacks


def _tiny(args: argparse.Namespace, argv: list[str]) -> int:
    print(f"{len(all_stacks())} stacks")
    return 0


def add_tiny(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("tiny", help="count the stacks")
    parser.set_defaults(handler=_tiny)


COMMANDS = ((1000, add_tiny),)
'''


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""A test\'s instrument."""\n', encoding="utf-8")
    (folder / "command.py").write_text(TINY_COMMAND, encoding="utf-8")
    monkeypatch.setattr(instruments, "__path__", [*instruments.__path__, str(tmp_path)])
    yield folder
    for name in [n for n in sys.modules if n.startswith("stackwars.instruments.tiny")]:
        del sys.modules[name]


def test_a_new_instruments_folder_is_a_new_command(
    tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tiny"]) == 0
    assert capsys.readouterr().out.endswith(" stacks\n")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "tiny" in capsys.readouterr().out


def test_the_layer_check_holds_a_new_instrument_to_its_folder(tiny: Path) -> None:
    from test_layers import INSTRUMENTS, edge_violation, imported_modules

    # Where the folder would be in the package: the check reads roles from the path alone.
    command = INSTRUMENTS / "tiny" / "command.py"
    imports = imported_modules(tiny / "command.py")
    assert imports >= {"stackwars.commands.options", "stackwars.frameworks"}
    assert [m for m in imports if edge_violation(command, m)] == []
    assert edge_violation(command, "stackwars.instruments.behave.service")
    assert edge_violation(INSTRUMENTS / "tiny" / "render.py", "stackwars.instruments.tiny.task")
