"""Benchmark: the wall time of the default run (the quick suite on every installed stack),
measured from outside the process and rendered into the docs.

    python benchmarks/default_run.py measure --into docs/data/default-run [-- RUN_OPTIONS]
    python benchmarks/default_run.py render docs/data/default-run [--readme]

``measure`` runs ``stackwars run`` once, as the README's main job runs it on a fresh machine
(the ``stackwars`` installed beside this Python, a throw-away results database, no
environments of stackwars' own: ``STACKWARS_ENVS`` an empty folder, so no ``torch-xla:lazy``;
``RUN_OPTIONS`` appended), and times it from just before its process starts to just after it
exits: imports, every worker, the second look and the report included. Run it on an otherwise
idle machine. It writes into ``--into`` a digest of the run file (``run-<run id>.json``): that
wall time, the machine, commit and versions, and each cell's status and worker wall time (its
second look's too), the data the rendering needs; the run's samples are not kept.

``render`` prints Markdown from every digest in the folder: the newest is the current answer,
the older rows are marked as history. With ``--readme`` it prints the README's sentence on
what the main job takes. The documents hold this output between ``rendered`` markers, and
tests/test_rendered_docs.py renders it again and fails on any difference: the run's time is
never typed.

Format history (``FORMAT``): 1 (2026-11-30) first.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stackwars.results.metadata import commit_label

FORMAT = 1
# Where a cell's worker time goes, as the README explains it: the groups whose workers pay an
# import or a cold compile each, in the order the sentence names them.
GROUPS = {
    "TensorFlow": ("tensorflow:",),
    "Keras": ("keras-",),
    "torch.compile": ("torch:compile",),
    "torch:xla": ("torch:xla", "torch-xla:"),
}


def digest(run: dict[str, Any], wall_s: float, options: list[str]) -> dict[str, Any]:
    """What the rendering needs from run file ``run``, timed at ``wall_s`` from outside."""
    header = run["run"]
    machine = header["machine"]
    identity = header.get("identity", {})
    cells = []
    for cell in run["cells"]:
        looked = cell.get("settings", {}).get("second_look", {})
        cells.append(
            {
                "workload": cell["workload"],
                "params": cell["params"],
                "stack": cell["stack"],
                "status": cell["status"],
                "wall_s": cell.get("wall_s"),
                "second_look_wall_s": looked.get("wall_s"),
            }
        )
    return {
        "format": FORMAT,
        "command": shlex.join(["stackwars", "run", *options]),
        "run_id": header["id"],
        "started": header["started"],
        "wall_s": round(wall_s, 2),
        "machine": {
            "cpu_model": machine.get("cpu_model"),
            "cores": machine.get("usable_cores") or machine.get("logical_cores"),
            "fingerprint": identity.get("fingerprint"),
            "blas_env": machine.get("blas_env", {}),
        },
        "git": identity.get("git", {}),
        "versions": {k: v for k, v in header.get("versions", {}).items() if v},
        "cells": cells,
    }


def measure(into: Path, options: list[str]) -> Path:
    """Run the default run once, timed from outside; its digest's path."""
    stackwars = Path(sys.executable).parent / "stackwars"
    with tempfile.TemporaryDirectory(prefix="stackwars-default-run-") as scratch:
        run_file = Path(scratch) / "run.json"
        argv = [str(stackwars), "run", "--db", str(Path(scratch) / "results.sqlite")]
        argv += ["--json", str(run_file), *options]
        environments = Path(scratch) / "environments"
        environments.mkdir()
        environment = {**os.environ, "STACKWARS_ENVS": str(environments)}
        start = time.perf_counter()
        exit_code = subprocess.run(argv, env=environment, check=False).returncode
        wall_s = time.perf_counter() - start
        if exit_code != 0 or not run_file.exists():
            raise SystemExit(f"`{shlex.join(argv)}` exited {exit_code}: nothing recorded")
        run = json.loads(run_file.read_text(encoding="utf-8"))
    record = digest(run, wall_s, options)
    into.mkdir(parents=True, exist_ok=True)
    path = into / f"run-{record['run_id']}.json"
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def read(folder: Path) -> list[dict[str, Any]]:
    """The folder's digests, oldest first; a format this script does not know is refused."""
    records = []
    for path in sorted(folder.glob("run-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("format") != FORMAT:
            raise SystemExit(f"{path}: format {record.get('format')!r}, this script reads {FORMAT}")
        records.append(record)
    if not records:
        raise SystemExit(f"{folder}: no run-*.json (make one with `default_run.py measure`)")
    return sorted(records, key=lambda record: record["started"])


def measured(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells that started a worker (a cell planned unsupported starts none)."""
    return [cell for cell in record["cells"] if cell["wall_s"] is not None]


def group_walls(record: dict[str, Any]) -> dict[str, tuple[int, float]]:
    """Per group of ``GROUPS``, then "the others": its cells that started a worker and their
    workers' wall time."""
    found: dict[str, tuple[int, float]] = dict.fromkeys([*GROUPS, "the others"], (0, 0.0))
    for cell in measured(record):
        name = next(
            (group for group, prefixes in GROUPS.items() if cell["stack"].startswith(prefixes)),
            "the others",
        )
        count, seconds = found[name]
        found[name] = (count + 1, seconds + cell["wall_s"])
    return found


def second_look(record: dict[str, Any]) -> tuple[int, float]:
    """The second look's workers and their wall time."""
    walls = [cell["second_look_wall_s"] for cell in record["cells"] if cell["second_look_wall_s"]]
    return len(walls), sum(walls)


def cells_on_stacks(record: dict[str, Any]) -> str:
    """How many cells on how many stacks started a worker, and which did not, as a phrase."""
    started = measured(record)
    phrase = f"{len(started)} cells on {len({cell['stack'] for cell in started})} stacks"
    others = [cell for cell in record["cells"] if cell["wall_s"] is None]
    by_stack = sorted({(cell["stack"], cell["status"]) for cell in others})
    if others:
        phrase += f" (and {len(others)} {', '.join(f'{s} {t}' for s, t in by_stack)}: no worker)"
    return phrase


def provenance(record: dict[str, Any]) -> str:
    """Command, machine, date and commit of one digest."""
    machine = record["machine"]
    return (
        f"`{record['command']}` on {machine['cpu_model']} ({machine['cores']} cores, "
        f"fingerprint `{machine['fingerprint']}`), {record['started'][:10]} at "
        f"{record['started'][11:16]} UTC, stackwars {commit_label(record['git'])}"
    )


def readme_sentence(record: dict[str, Any]) -> str:
    """The README's sentence: what the newest default run took and where its time went."""
    groups = group_walls(record)
    parts = [
        f"{name}'s {count} cells {seconds:.0f} s"
        for name, (count, seconds) in groups.items()
        if count and name != "the others"
    ]
    others, others_s = groups["the others"]
    looked, looked_s = second_look(record)
    return (
        f"The run took **{record['wall_s']:.0f} s** ({provenance(record)}): "
        f"{cells_on_stacks(record)}, each a fresh worker; of the workers' time, "
        f"{', '.join(parts)}, the other {others} cells {others_s:.0f} s; the second look "
        f"{looked_s:.0f} s on {looked} cells.\n"
    )


def table(records: list[dict[str, Any]]) -> str:
    """Every digest a row, the newest first and marked current."""
    lines = [
        "| run | machine | commit | cells | wall time | workers' time by group | second look |",
        "| --- | --- | --- | --- | ---: | --- | ---: |",
    ]
    for at, record in enumerate(reversed(records)):
        groups = group_walls(record)
        spent = "; ".join(
            f"{name} {count} cells {seconds:.0f} s"
            for name, (count, seconds) in groups.items()
            if count
        )
        looked, looked_s = second_look(record)
        when = f"{record['started'][:10]} {record['started'][11:16]}"
        state = "current" if at == 0 else "history"
        lines.append(
            f"| {when} ({state}) | {record['machine']['cpu_model']} "
            f"`{record['machine']['fingerprint']}` | {str(record['git'].get('commit', ''))[:7]} "
            f"| {cells_on_stacks(record)} | **{record['wall_s']:.0f} s** | {spent} "
            f"| {looked} cells {looked_s:.0f} s |"
        )
    newest = records[-1]
    blas = ", ".join(f"{k}={v}" for k, v in newest["machine"]["blas_env"].items() if v) or "none"
    return (
        f"`{newest['command']}`, timed from outside the process "
        f"(`benchmarks/default_run.py measure`); BLAS environment of the newest run: {blas}.\n\n"
        + "\n".join(lines)
        + "\n"
    )


def main(argv: list[str]) -> None:
    split = argv.index("--") if "--" in argv else len(argv)
    own, options = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description="the default run's wall time")
    steps = parser.add_subparsers(dest="step", required=True)
    measuring = steps.add_parser("measure", help="run `stackwars run` once, timed from outside")
    measuring.add_argument("--into", type=Path, required=True, metavar="FOLDER")
    rendering = steps.add_parser("render", help="Markdown from the folder's digests")
    rendering.add_argument("folder", type=Path)
    rendering.add_argument("--readme", action="store_true", help="the README's sentence")
    args = parser.parse_args(own)
    if options and args.step != "measure":
        parser.error("run options after `--` are for `measure` alone")
    if args.step == "measure":
        print(measure(args.into, options))
        return
    records = read(args.folder)
    sys.stdout.write(readme_sentence(records[-1]) if args.readme else table(records))


if __name__ == "__main__":
    main(sys.argv[1:])
