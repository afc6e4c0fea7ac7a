"""The commands of ``stackwars``. Each module here owns its commands: ``add_<command>`` defines
the command's arguments and help and names its handler (``set_defaults(handler=...)``), which
takes the parsed arguments and returns the exit status. Options several commands share are
``options.py``'s. A new command is its module, its line in ``COMMANDS`` and its test."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from stackwars.bisect import command as bisect
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
from stackwars.commands.options import Subparsers

Handler = Callable[[argparse.Namespace, list[str]], int]

# In the order ``stackwars --help`` lists them.
COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    run.add_run,
    listing.add_list,
    listing.add_env,
    run.add_rerun,
    behave.add_behave,
    claims.add_claims,
    claims.add_claim,
    results.add_runs,
    results.add_show,
    results.add_export,
    results.add_import,
    compare.add_compare,
    history.add_history,
    report.add_report,
    ir.add_ir,
    ab.add_ab,
    bisect.add_bisect,
    profile.add_profile,
    selftest.add_selftest,
)
