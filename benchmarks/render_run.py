"""What ``stackwars run`` printed for a stored run file, rendered again from that file.

    python benchmarks/render_run.py docs/data/readme-example/gemm-256.json

Prints Markdown: one line naming the command, machine, date and commit the run file records,
then, as a ``text`` block, the tables the run printed (the project's own rendering: the
steady tables merged over workers, the second look's line, what compiling buys) as it prints
them into a file or a pipe. The README holds this output between ``rendered`` markers, and
tests/test_rendered_docs.py renders it again and fails on any difference: the example's
output is never typed.
"""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from stackwars.report.console import WIDE_OUTPUT
from stackwars.report.derived import derived_tables
from stackwars.report.sampling import second_look_line
from stackwars.report.table import build_tables, render_rich
from stackwars.results.aggregate import merge_repeats
from stackwars.results.metadata import commit_label
from stackwars.results.run import Run

GIB = 2**30


def command(argv: list[str]) -> str:
    """The command as the user typed it: ``stackwars ...``, without ``--json PATH`` (where
    the run file went)."""
    args = list(argv[1:])
    if "--json" in args:
        at = args.index("--json")
        del args[at : at + 2]
    return shlex.join(["stackwars", *args])


def provenance(run: Run) -> str:
    """Machine, date and commit, from the run file's header."""
    machine: dict[str, Any] = run.machine
    cores = machine.get("usable_cores") or machine.get("logical_cores")
    memory = machine.get("memory_total_bytes", 0) / GIB
    commit = commit_label(run.identity.get("git"))
    return (
        f"`{command(run.argv)}` on {machine.get('cpu_model', 'an unknown CPU')} "
        f"({cores} cores, {memory:.1f} GiB, {machine.get('os', '').split('-')[0]}), "
        f"{run.started[:10]} at {run.started[11:16]} UTC, stackwars {commit} (run {run.id}):"
    )


def render(path: Path) -> str:
    """The run's provenance line and its printed tables, as Markdown."""
    run = Run.from_dict(json.loads(path.read_text(encoding="utf-8")))
    out = io.StringIO()
    console = Console(file=out, width=WIDE_OUTPUT, color_system=None, force_terminal=False)
    merged = merge_repeats(run.cells)
    console.print(render_rich(build_tables(merged)))  # no roofline: no peak was measured
    if any("second_look" in cell.settings for cell in merged):
        console.print(second_look_line(merged))
    for table in derived_tables(run.cells)[0]:
        console.print(table)
    text = "\n".join(line.rstrip() for line in out.getvalue().splitlines())
    return f"{provenance(run)}\n\n```text\n{text}\n```\n"


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1])))
