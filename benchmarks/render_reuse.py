"""What an edition's reuse saves, rendered from the edition and its cells' wall times.

    python benchmarks/render_reuse.py EDITION.json WALLS.json

(docs/log.md: an edition's folder, ``docs/data/edition/`` or ``docs/data/editions/ID/``).

The edition file says which cells each part measured; ``walls.json`` keeps each cell's worker
wall time as the edition's progress lines printed it (the edition file keeps no wall times).
For every part that reuses (``plan.py``'s ``Part.reuse``), the cells an earlier cells part of
the same edition had measured (``service.measured_before``, the rule ``stackwars reproduce``
applies) are counted per source part with the wall time they took; then the edition's time
less that (an edition measured before the rule, which measured them again) or what measuring
them again would have added (one that listed them, each naming the part that measured it).
docs/log.md holds its output between ``rendered`` markers, and tests/test_rendered_docs.py
renders it again.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from stackwars.instruments.reproduce.data import Edition, read_edition
from stackwars.instruments.reproduce.plan import parts_at
from stackwars.instruments.reproduce.service import entry_key, measured_before


def render(edition_path: Path, walls_path: Path) -> str:
    edition = read_edition(edition_path)
    walls = json.loads(walls_path.read_text(encoding="utf-8"))["walls"]
    plan = {part.name: part for part in parts_at(edition.scale)}
    rows = ["| part | cells an earlier part measured | from | their workers' wall time |"]
    rows.append("| --- | ---: | --- | ---: |")
    saved = 0.0
    for index, kept in enumerate(edition.parts):
        if kept.name not in plan or not plan[kept.name].reuse:
            continue
        earlier = measured_before(plan[kept.name], edition.parts[:index], plan)
        chosen = [cell for cell in kept.cells if entry_key(cell) in earlier]
        by_source: dict[str, list[float]] = defaultdict(list)
        for cell in chosen:
            source = earlier[entry_key(cell)]["measured_in"]
            # A cell the part listed ran only in its source part; one it measured, here too.
            ran_in = source if cell.get("measured_in") else kept.name
            by_source[source].append(walls[ran_in][cell["cell"]])
        for source, seconds in by_source.items():
            rows.append(f"| {kept.name} | {len(seconds)} of {len(kept.cells)} | {source} | "
                        f"{sum(seconds):,.0f} s |")  # fmt: skip
            saved += sum(seconds)
    return "\n".join([*rows, "", total(edition, saved)]) + "\n"


def total(edition: Edition, saved: float) -> str:
    """The edition's time with and without the chosen cells' workers: an edition that listed
    them measured without them; one that measured them again would have saved that."""
    took = edition.duration_s or 0.0
    listed = any(cell.get("measured_in") for part in edition.parts for cell in part.cells)
    if listed:
        return (f"Edition `{edition.id}` took {took:,.0f} s; measuring those cells again "
                f"would have added about {saved:,.0f} s.")  # fmt: skip
    return (f"Edition `{edition.id}` took {took:,.0f} s; without those cells' workers, "
            f"{took - saved:,.0f} s (about {(took - saved) / 3600:.1f} h).")  # fmt: skip


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1]), Path(sys.argv[2])))
