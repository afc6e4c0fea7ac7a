"""The command line's surface: every command, its one-line help and its options, as a
snapshot (tests/data/cli_options.json). Moving where a parser is built must not change what
a user can type; a new or changed option updates the snapshot on purpose."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from stackwars.cli import build_parser

SNAPSHOT = Path(__file__).parent / "data" / "cli_options.json"


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any]:
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    """Each argument as the user writes it: its option strings, or a positional's name."""
    return [
        ", ".join(action.option_strings) or str(action.metavar or action.dest)
        for action in parser._actions
    ]


def surface() -> dict[str, Any]:
    parser = build_parser()
    commands = _subparsers(parser)
    helps = {choice.dest: choice.help for choice in commands._choices_actions}
    return {
        "options": _arguments(parser),
        "commands": {
            name: {"help": helps[name], "arguments": _arguments(sub)}
            for name, sub in commands.choices.items()
        },
    }


def test_every_command_and_option_is_as_recorded() -> None:
    assert surface() == json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_every_command_names_its_handler() -> None:
    for name, parser in _subparsers(build_parser()).choices.items():
        assert callable(parser.get_default("handler")), name


def test_every_command_s_help_formats() -> None:
    """A stray '%' in a help text breaks only that command's --help, at the user's hands."""
    for name, parser in _subparsers(build_parser()).choices.items():
        assert parser.format_help().startswith(f"usage: stackwars {name}"), name
