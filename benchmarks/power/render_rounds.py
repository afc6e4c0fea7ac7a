"""Cheap rounds (issue 54), rendered from the sessions that measured them: for each design of
a round, an A/A `stackwars ab` session with fixed rounds and its noise table, side by side.

    python benchmarks/power/render_rounds.py DIR

``DIR`` holds, per design NAME (``sequential``: the sides one after the other, as ab always
ran them; ``duet``: both at once on a core each), ``NAME.json`` (the session's ``--json``) and
``NAME-noise.json`` (its ``--write-noise``). Prints Markdown: per design the rounds, the
session's seconds and a round's, then per cell each design's paired spread (the standard
deviation of a round's log ratio) and the rounds it needs to be shown within 10 % at one look
(``timing/sequential.py``'s ``rounds_to_pass``), and what that costs in seconds at the
design's round time: the design that decides a cell fastest is the one with the fewest
seconds. docs/evidence.md holds its output between ``rendered`` markers, and
tests/test_rendered_docs.py renders it again.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from stackwars.timing.sequential import rounds_to_pass

PASS_LIMIT = 0.10  # the gate's default --pass-below
ALPHA = 0.05
DESIGNS = ("sequential", "duet")


def load(folder: Path, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    session = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    noise = json.loads((folder / f"{name}-noise.json").read_text(encoding="utf-8"))
    return session, noise


def render(folder: Path) -> str:
    found = {name: load(folder, name) for name in DESIGNS if (folder / f"{name}.json").is_file()}
    first = next(iter(found.values()))[1]
    lines = [
        f"Machine {first['machine']['cpu_model']} (fingerprint "
        f"`{first['machine']['fingerprint']}`), measured "
        f"{first['measured'][:16].replace('T', ' ')} UTC.",
        "",
        "| design | rounds | session | a round |",
        "| --- | ---: | ---: | ---: |",
    ]
    per_round = {}
    for name, (session, _) in found.items():
        rounds, elapsed = session["session"]["rounds"], session["session"]["elapsed_s"]
        per_round[name] = elapsed / rounds
        lines.append(f"| {name} | {rounds} | {elapsed:.0f} s | {per_round[name]:.0f} s |")
    header = " | ".join(f"{name}: spread, rounds, seconds" for name in found)
    lines += ["", f"| cell | {header} |", "| --- |" + " ---: |" * len(found)]
    cells = dict.fromkeys(label for _, noise in found.values() for label in noise["cells"])
    for label in cells:
        texts = []
        for name, (_, noise) in found.items():
            measured = noise["cells"].get(label)
            if measured is None:
                texts.append("not measured")
                continue
            needed = rounds_to_pass(measured["spread"], math.log1p(PASS_LIMIT), ALPHA)
            seconds = needed * per_round[name]
            texts.append(f"{measured['spread'] * 100:.1f} %, {needed}, {seconds:.0f} s")
        lines.append(f"| {label} | " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1])))
