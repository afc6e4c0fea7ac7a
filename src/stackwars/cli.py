"""The ``stackwars`` command: the root parser and dispatch only; each command's arguments are
its command module's, found by ``commands.discover``.

Exit status: 0 when every cell ran, whatever its status (failures are data); 1 with
``--strict`` when a cell is not ok; 2 on bad input (a bare ``stackwars`` too: it prints the
help); 130 when interrupted: by Ctrl-C, or by SIGTERM, which a command handles as Ctrl-C
(finished cells kept, the run marked interrupted): it is what a CI runner cancelling a job
and a plain ``kill`` send, and the only one of the two that reaches a job started with
``nohup ... &``, which ignores SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from stackwars import commands
from stackwars.errors import UsageError
from stackwars.version import __version__

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
NO_COMMAND = "stackwars: no command given; 'stackwars run' runs the quick suite"


class _StoreOnce(argparse._StoreAction):
    """argparse's default action, except that an option given twice is refused: argparse
    would keep the last value and silently drop the first (``--workload a --workload b``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given: dict[str, Any] = namespace.__dict__.setdefault("_given_once", {})
        if self.dest in given and option_string:
            parser.error(
                f"{option_string} was given twice ({given[self.dest]!r}, then {values!r}); give "
                "it once (options that take several values take a comma list)"
            )
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Argument groups share this registry, so every plain option is stored once.
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"stackwars: error: {message}; see '{self.prog} --help'\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="stackwars",
        description=(
            "Run the same work on NumPy, JAX, PyTorch and TensorFlow in every execution mode, "
            "and report first run, runs to steady state, steady state with its uncertainty, "
            "memory and parity."
        ),
    )
    parser.add_argument("--version", action="version", version=f"stackwars {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in commands.discover():
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # a bare 'stackwars' starts nothing: a run takes minutes
        parser.print_help(sys.stderr)
        print(f"\n{NO_COMMAND}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with _sigterm_as_interrupt():
            handler: commands.Handler = args.handler
            return handler(args, list(sys.argv if argv is None else argv))
    except UsageError as exc:
        print(f"stackwars: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("stackwars: interrupted; finished cells are stored", file=sys.stderr)
        return EXIT_INTERRUPTED


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt while a command runs (module docstring); only the main
    thread can set a handler, so elsewhere (a notebook's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
