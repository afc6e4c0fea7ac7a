"""The wall time of each cell's worker in an edition, from its sittings' progress lines.

    python benchmarks/edition_walls.py EDITION_ID PROGRESS.log [PROGRESS.log ...] > walls.json

``stackwars reproduce`` prints a line per cell with its worker's wall time (``[3/126] ok
CELL  TIME  (wall 1.61 s)``) under the line of the part the cell belongs to (``part 1/8:
claims (...)``); the edition file keeps no wall times. The logs are read in the order given
(the sittings' order): per part, each cell's wall time, the last line of a cell printed
twice (a claim's added workers, a part resumed). ``render_reuse.py`` reads the result.

Format history (``FORMAT``): 1 (2026-11-29) first: ``walls`` maps part, then cell, to seconds.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FORMAT = 1
PART = re.compile(r"^part \d+/\d+: (?P<part>\S+) ")
CELL = re.compile(r"^\[\d+/\d+\] \S+\s+(?P<cell>.+? @ \S+)\s.*\(wall (?P<wall>[0-9.]+) s\)")


def walls(logs: list[str]) -> dict[str, dict[str, float]]:
    """Per part, each cell's worker wall time, from the progress ``logs`` in order."""
    found: dict[str, dict[str, float]] = {}
    part = None
    for text in logs:
        for line in text.splitlines():
            if started := PART.match(line):
                part = started["part"]
            elif (cell := CELL.match(line)) and part is not None:
                found.setdefault(part, {})[cell["cell"]] = float(cell["wall"])
    return found


def main(edition: str, paths: list[str]) -> str:
    logs = [Path(path).read_text(encoding="utf-8") for path in paths]
    names = ", ".join(Path(path).name for path in paths)
    source = f"the progress lines of edition {edition}'s sittings ({names}), the last of a cell"
    return json.dumps({"format": FORMAT, "source": source, "walls": walls(logs)}, indent=1)


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1], sys.argv[2:]) + "\n")
