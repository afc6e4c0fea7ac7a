"""What each command does, given parsed arguments; each returns the exit status."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from stackwars.commands import (
    ab,
    behave,
    claims,
    compare,
    history,
    ir,
    listing,
    profile,
    report,
    results,
    run,
    selftest,
)

Handler = Callable[[argparse.Namespace, list[str]], int]

HANDLERS: dict[str, Handler] = {
    "run": run.run,
    "rerun": run.rerun,
    "list": listing.list_things,
    "env": listing.env,
    "runs": results.runs,
    "show": results.show,
    "export": results.export,
    "import": results.import_run,
    "compare": compare.compare,
    "history": history.history,
    "ir": ir.ir,
    "profile": profile.profile,
    "selftest": selftest.selftest,
    "behave": behave.behave_command,
    "claims": claims.claims,
    "claim": claims.claim,
    "report": report.report,
    "ab": ab.ab_command,
}


def dispatch(command: str, args: argparse.Namespace, argv: list[str]) -> int:
    return HANDLERS[command](args, argv)
